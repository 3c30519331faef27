"""PyTorch ↔ Burn training parity: does a port train the same, step for step?

The folders follow the flow of a run: config (read, check, resolve) → models and io (what
both frameworks build and the files they exchange) → training (the PyTorch trainer) →
analysis (what differs, and where) → judgement (what it means) → report (what a person
reads). tooling holds the process helpers the workflow runs around them.
"""
