#!/usr/bin/env python3
"""Rule `train_torch`: an experiment's PyTorch runs, one per dtype, in one process.

    python workflow/scripts/train_torch.py --spec results/specs/sgd.json --dtype f32 f64 \
        --data results/data/cnn1d.safetensors \
        --out results/runs/sgd/torch-f32.json results/runs/sgd/torch-f64.json

Its code: src/torch_burn_parity/training/train_torch.py.
"""

from torch_burn_parity.training.train_torch import main

if __name__ == "__main__":
    main()
