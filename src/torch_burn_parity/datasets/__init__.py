"""The datasets an experiment trains on (`data:`): sine, digits, text."""
