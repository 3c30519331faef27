"""The PyTorch side of a run: the dataset and the trainer."""
