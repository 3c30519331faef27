"""The models both frameworks train: names, shapes and initial values, and the PyTorch modules."""
