"""Write the example port's weights and data files, as a user would from their own project.

    uv run python examples/byo/make_files.py

weights.safetensors: TinyMlp's state_dict at torch.manual_seed(0) (PyTorch's own init), F32.
data.safetensors: x [320, 64] F32, the first 320 of scikit-learn's 8×8 digits flattened and
scaled by 1/16; y [320] I64, their labels.
"""

from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file as save_arrays
from safetensors.torch import save_file
from sklearn.datasets import load_digits

HERE = Path(__file__).resolve().parent


def main() -> None:
    import sys

    sys.path.insert(0, str(HERE / "torch"))
    from tiny_mlp import TinyMlp

    torch.manual_seed(0)
    save_file(TinyMlp().state_dict(), HERE / "weights.safetensors")
    digits = load_digits()
    x = (digits.data[:320] / 16).astype(np.float32)
    y = digits.target[:320].astype(np.int64)
    save_arrays({"x": x, "y": y}, HERE / "data.safetensors")
    print(f"wrote {HERE / 'weights.safetensors'} and {HERE / 'data.safetensors'}")


if __name__ == "__main__":
    main()
