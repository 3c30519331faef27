"""Write the ResNet-18 port's weights and data, as a user would from their own project.

    uv run python examples/ports/resnet18/make_files.py

weights.safetensors: torchvision's resnet18(num_classes=10) at torch.manual_seed(0)
(torchvision's own init), its state_dict (running statistics and batch counters included), F32.
data.safetensors: x [64, 3, 32, 32] F32, the first 64 of scikit-learn's 8×8 digits scaled by
1/16, each pixel repeated 4×4 (nearest neighbour, exact) and the grey copied into three
channels; y [64] I64, their labels.
"""

from pathlib import Path

import numpy as np
import torch
import torchvision
from safetensors.numpy import save_file as save_arrays
from safetensors.torch import save_file
from sklearn.datasets import load_digits

HERE = Path(__file__).resolve().parent
SAMPLES = 64


def main() -> None:
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    save_file(model.state_dict(), HERE / "weights.safetensors")
    digits = load_digits()
    images = (digits.images[:SAMPLES] / 16).astype(np.float32)  # [N, 8, 8]
    big = images.repeat(4, axis=1).repeat(4, axis=2)  # [N, 32, 32]
    x = np.ascontiguousarray(np.repeat(big[:, None], 3, axis=1))  # [N, 3, 32, 32]
    y = digits.target[:SAMPLES].astype(np.int64)
    save_arrays({"x": x, "y": y}, HERE / "data.safetensors")
    print(f"wrote {HERE / 'weights.safetensors'} and {HERE / 'data.safetensors'}")


if __name__ == "__main__":
    main()
