"""The losses both trainers compute (an experiment's `loss`), without importing torch: the
config checks and the spec read these names; models/models.py computes them.

cross_entropy: PyTorch's cross_entropy, Burn's CrossEntropyLoss, over class labels (I64
`y`). mse: PyTorch's mse_loss, Burn's MseLoss with Reduction::Mean, over float targets (F32
`y`). Each is the mean over the output.
"""

DEFAULT_LOSS = "cross_entropy"
# The dtype of `y` each loss takes (the schema's `loss` enum lists the same names).
TARGET_DTYPE = {"cross_entropy": "I64", "mse": "F32"}
