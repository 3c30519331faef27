"""The run file's fields, typed: what one training run records, on both sides.

A run file is ``{"<experiment>": RunBlock}`` (parity_io.write_run / read_run; non-finite
floats as the strings "NaN", "Infinity", "-Infinity"). The PyTorch trainer builds these
types (training/train_torch.py); the Burn trainer writes the same fields from its own typed
definition (rust/src/runfile.rs). Parameters and buffers are keyed by PyTorch's names, in
the model's order, their values flat in PyTorch's layout.
"""

# No `from __future__ import annotations`: NotRequired must be evaluated for
# RunBlock.__required_keys__ (the checks and tests read it).
from typing import Any, NotRequired, TypedDict

from torch_burn_parity.models.losses import DEFAULT_LOSS

Floats = list[float]


class Final(TypedDict):
    """The whole dataset after training, in eval mode."""

    loss: float
    correct: int | None  # rows predicted right; None for a regression (loss mse)
    predictions: list[int] | None  # argmax of each row's output; None for a regression


class Trajectory(TypedDict):
    """After each step (gradients: of that step's backward, before any clipping)."""

    params: dict[str, list[Floats]]
    grads: dict[str, list[Floats]]
    buffers: dict[str, list[Floats]]  # running statistics (empty for a model without)


class GroupMeta(TypedDict):
    """One parameter group (config/param_groups.py) as the framework holds it."""

    params: list[str]  # exact PyTorch names
    optimizer: str
    hyperparameters: dict[str, Any]  # read back from the framework's optimizer


class Meta(TypedDict):
    """How the run was made: the values each framework held, read back from it."""

    framework: str  # "torch" or "burn"
    framework_version: str
    dtype: str  # "f32" or "f64"
    model: str
    model_size: dict[str, int]  # the size keys, read back from the built modules
    data: str  # the dataset: "sine", "digits" or "text"
    layer_hyperparameters: dict[str, Any]  # read back from the built modules
    loss: dict[str, Any]  # {"name": cross_entropy | mse, "label_smoothing": ε as held}
    optimizer: str  # the experiment's own (parameters in no group)
    hyperparameters: dict[str, Any]  # its values as the framework holds them
    param_groups: list[GroupMeta]  # [] without groups
    kept_defaults: list[str]  # hyperparameters left to the framework's defaults
    schedule: dict[str, Any]  # {"kind": ...} and what the scheduler holds
    clip_grad: dict[str, float] | None
    clip_scope: str | None
    steps: int
    batch_size: int
    threads: int
    cpu: dict[str, Any]
    cpu_path: dict[str, Any]  # the config's setting and the kernels taken
    input_sha256: str  # of the dataset file
    config_sha256: str  # of the resolved spec
    git: dict[str, Any]
    # PyTorch only
    python: NotRequired[str]
    torch_cpu_capability: NotRequired[str]
    # Burn only
    backend: NotRequired[str]  # "flex" or "ndarray"
    rustc: NotRequired[str]
    burn_shapes: NotRequired[dict[str, list[list[int]]]]  # each tensor Burn holds, per name
    fault: NotRequired[dict[str, Any]]  # a test's injected perturbation
    burn_fixes: NotRequired[list[str]]  # what the trainer did by hand (config/burn_fixes.py)
    lr_scales: NotRequired[dict[str, list[float]]]  # muon_lr_per_parameter: per Burn tensor


class RunBlock(TypedDict):
    """One run of one experiment at one precision."""

    losses: Floats  # the training loss of each step's batch
    lrs: Floats  # the lr each step used
    # The L2 norm of each parameter ("params", after the step) and of its gradient ("grads",
    # before clipping) after every step, in f64. Absent from a bare run (--bare).
    norms: NotRequired[dict[str, dict[str, Floats]]]
    final: Final
    # The run's tensors: in the tensors file `tensors` names (io/run_tensors.py; the
    # pipeline's), or inline as the three fields below (a test's in-memory run, the seed's).
    tensors: NotRequired[dict[str, Any]]  # file, dtype, steps (the recorded), bytes
    params: NotRequired[dict[str, Floats]]  # after the last step
    buffers: NotRequired[dict[str, Floats]]
    trajectory: NotRequired[Trajectory]  # one entry per recorded step
    layers: list[dict[str, Any]]  # the layer record at each probe step (models.py)
    meta: Meta
    # Burn only: the per-step scalars its update evaluates in f32 (Adam; AdamW's bias
    # corrections in `burn_scalars`, `{}` for AdaGrad, RMSProp and Muon; none for SGD).
    adam_factors: NotRequired[dict[str, Floats]]
    burn_scalars: NotRequired[dict[str, Floats]]


# What every analysis reads; a file without one of them is refused (experiment_block). The
# seed's own files hold only losses, final and params, which compare.py reads.
REQUIRED = ("losses", "final", "params", "trajectory", "meta")


def loss_of(meta: dict) -> str:
    """The loss a run trained with (cross-entropy for run files that do not name it)."""
    return (meta.get("loss") or {}).get("name", DEFAULT_LOSS)


def smoothing_of(meta: dict) -> float:
    """The label smoothing a run's loss used, as its framework held it (0 when absent)."""
    return (meta.get("loss") or {}).get("label_smoothing", 0.0)
