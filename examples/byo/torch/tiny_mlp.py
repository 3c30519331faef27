"""The PyTorch module of the example port: a small MLP on 64 features in 10 classes."""

from torch import nn


class TinyMlp(nn.Module):
    def __init__(self, features: int = 64, hidden: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.act = nn.Tanh()
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(self.norm(self.act(self.fc1(x))))
