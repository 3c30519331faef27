"""The config: its schema checks, the rules between keys, sweeps, and the CPU path."""
