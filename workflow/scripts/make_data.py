#!/usr/bin/env python3
"""Rule `make_data`: one model's dataset file, shared by both trainers (inputs and initial
weights).

    python workflow/scripts/make_data.py --model cnn1d --out results/data/cnn1d.safetensors

Its code: src/torch_burn_parity/training/make_data.py.
"""

from torch_burn_parity.training.make_data import main

if __name__ == "__main__":
    main()
