"""What to change in a port, per cause of a difference: the setting that removes it (on the
Burn side, or the PyTorch side), or that nothing can, and the evidence either way.

Each cause a verdict names (verdict.causes, the record's `causes`) is of one kind, told by
the words verdict.py starts it with. The evidence is the measurement behind its share (the
replay variant that adds exactly that choice of Burn's to PyTorch's run), and for values
Burn was left to choose, the paired experiment of the same run that passes PyTorch's values
to both, when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass

# What each kind of cause is, by the start of its name (verdict.py, judge.py): (prefix,
# kind, the change that removes it, or why nothing can: one of the two is None).
KINDS = (
    ("config diff:", "values",
     "pass PyTorch's values to Burn explicitly (its config's `with_*` setters) instead of"
     " leaving Burn's defaults", None),
    ("Burn's f32 storage", "f32 storage", None,
     "Burn 0.22.1 keeps these hyperparameters as f32 fields; no setting widens them"),
    ("Burn's held hyperparameters", "held values", None,
     "Burn holds PyTorch's values exactly (none differs, none rounded to f32)"),
    ("Burn's f32 evaluation", "f32 arithmetic", None,
     "Burn evaluates these factors in f32 inside its update whatever the tensors' dtype"),
    ("Burn's f32 arithmetic", "f32 arithmetic", None,
     "Burn's update does this arithmetic in f32 whatever the tensors' dtype"),
    ("Burn's smoothed targets", "loss precision",
     "compute the smoothed cross-entropy yourself in the run's float dtype: targets"
     " one_hot·(1 − ε) + ε/C built as tensors of that dtype, then −mean(sum(log_softmax(logits)"
     " · targets)), instead of CrossEntropyLossConfig::with_smoothing:"
     " `smoothed_cross_entropy(logits, labels, eps)`, as rust/src/by_hand.rs writes it", None),
    ("the schedule", "schedule",
     "pass PyTorch's lr of each step to Burn's `step(lr, …)` (the scheduler's output is just"
     " that argument): PyTorch's recursion written as a Burn `LrScheduler`,"
     " `ModuleLrScheduler::new(TorchSchedule::new(schedule, lr))`, as rust/src/by_hand.rs"
     " writes it", None),
    ("the clipping scope", "clipping",
     "clip all gradients by one global norm yourself before Burn's step, and attach no"
     " clipping to Burn's optimizer (Burn clips each parameter tensor by its own norm):"
     " `grads = clip_by_global_norm(&model, grads, max_norm)` before `optim.step`, as"
     " rust/src/by_hand.rs writes it", None),
    ("the clipping:", "clipping", None,
     "nothing to change: both clamp each element; only the f32-held threshold differs"),
    ("the layer setting", "layer settings",
     "build that Burn layer with PyTorch's value (its config's `with_*` setter)", None),
    ("the running-", "running statistics", None,
     "Burn 0.22.1's BatchNorm updates its running variance with the biased batch variance and"
     " has no setting for the unbiased one; it changes the evaluation state, not training"),
    ("Muon's lr adjustment", "Muon lr adjustment",
     "give each Muon parameter of Burn's the lr that makes lr × factor PyTorch's:"
     " `optim.step(scaled_lr(lr, &scales), model, grads)`, each tensor's scale PyTorch's"
     " factor ÷ Burn's, as rust/src/by_hand.rs writes it (exact without a weight decay, which"
     " Burn's Muon applies with the same lr)", None),
    ("Muon's Newton–Schulz", "Muon precision", None,
     "PyTorch orthogonalises in bfloat16 and has no setting for another dtype; Burn in the"
     " tensor's dtype and has no setting for bfloat16"),
)  # fmt: skip


@dataclass(frozen=True)
class Fix:
    cause: str
    share: float
    kind: str
    fix: str | None  # the change that removes it, or None when nothing can
    why_not: str | None  # when nothing can: why
    evidence: str


def kind_of(cause: str) -> tuple[str, str | None, str | None]:
    """(kind, the fix or None, why nothing can or None) of a cause by its name's start."""
    for prefix, kind, fix, why_not in KINDS:
        if cause.startswith(prefix):
            return kind, fix, why_not
    return "other", None, "not a cause this module knows: see the experiment's tables"


# The counterfactual-table column that measures each kind (replay.py's chain), in words.
MEASURED_BY = {
    "values": "the counterfactual with Burn's held values (`dparam_held_f64`)",
    "f32 storage": "the counterfactual with Burn's held values (`dparam_held_f64`)",
    "held values": "the counterfactual with Burn's held values (`dparam_held_f64`)",
    "loss precision": "the counterfactual with Burn's smoothed targets (`dparam_burn_loss`)",
    "schedule": "the counterfactual with Burn's lrs (`dparam_burn_lrs`)",
    "clipping": "the counterfactual with Burn's clipping (`dparam_burn_clipping`)",
    "running statistics": "the counterfactual with Burn's estimator (`dparam_burn_running_stats`)",
    "layer settings": "the counterfactual with Burn's layer setting (`dparam_burn_layer[…]`)",
    "Muon lr adjustment": "the counterfactual with Burn's lr factors (`dparam_burn_lr_adjustment`)",
    "Muon precision": "the counterfactual with Burn's Newton–Schulz (`dparam_burn_newton_schulz`)",
    "f32 arithmetic": "the remainder (the f64 variants leave it, the replay with Burn's f32"
    " scalars closes it)",
}


def fixes(record: dict, paired: dict | None = None) -> list[Fix]:
    """The fix of each cause of an explained verdict (none for another verdict). paired:
    the record of the experiment of the same run that passes PyTorch's values to both
    frameworks (same optimizer, model and backend), when there is one."""
    if record["verdict"] != "algorithmic difference, explained":
        return []
    found = []
    for cause in record["causes"]:
        kind, fix, why_not = kind_of(cause["cause"])
        measured = MEASURED_BY.get(kind, "its share")
        key = one_value(cause["cause"]) if kind == "values" else None
        if key:  # a value with a link of its own in the chain (analysis/held_values.py)
            measured = f"the counterfactual with Burn's {key} (`dparam_burn_value[{key}]`)"
        evidence = f"{measured} accounts for {cause['share']:.1%} of {gap_of(record, cause)}"
        if kind == "values" and paired is not None:
            still = [c["cause"] for c in paired["causes"] if c["cause"].startswith("config diff:")]
            evidence += (
                f"; `{paired['experiment']}` passes PyTorch's values to both: {paired['verdict']}"
                + (", still with a config-diff cause" if still else ", with no config-diff cause")
                + f", f64 gap {paired['f64_gap']:.2e} against {record['f64_gap']:.2e} here"
            )
        if kind == "layer settings":
            fix = layer_fix(cause["cause"]) or fix
        if kind == "values":
            fix = value_fix(cause["cause"], record.get("optimizer", "")) or fix
        found.append(Fix(cause["cause"], cause["share"], kind, fix, why_not, evidence))
    return found


def gap_of(record: dict, cause: dict) -> str:
    """Which gap a cause's share is of: its part's, for a model whose parameters and buffers
    are judged apart (judgement/record_parts.py), else the whole."""
    if not record.get("split"):
        return "the gap"
    return "the parameter gap" if cause.get("part") == "training" else "the buffers' gap"


def layer_fix(cause: str) -> str | None:
    """The Burn line that gives a layer PyTorch's setting, from the cause's words
    (analysis/layer_settings.py `cause`: 'the layer setting norm.eps (torch 0.001, burn
    1e-05)'); None for a setting without one here."""
    key, _, values = cause.removeprefix("the layer setting ").partition(" (torch ")
    layer, _, setting = key.rpartition(".")
    value = values.split(", burn ")[0]
    if setting == "eps":
        return (
            f"build Burn's `{layer}` with PyTorch's epsilon: its config's `.with_epsilon({value})`"
        )
    if setting == "momentum":
        setter = f"BatchNormConfig::new(…).with_momentum({value})"
        return f"build Burn's `{layer}` with PyTorch's momentum: `{setter}`"
    if setting == "sqrt_d_k":
        return (
            f"no setting of Burn's `{layer}` reaches it: its MultiHeadAttention divides the"
            " scores by the f32 square root of d_k (burn-nn src/modules/attention/mha.rs line"
            " 290); a head width whose square root is exact in f32 (4, 16, 64, 256) makes the"
            " two the same"
        )
    if setting == "backward":
        return (
            f"run on Burn's Flex backend (`burn_backend: flex`): NdArray differentiates"
            f" `{layer}`'s exact GELU as its tanh approximation (burn-backend"
            " src/backend/ops/activation.rs lines 98–128), which no setting of the layer"
            " reaches"
        )
    if setting == "approximate":
        gelu = "Gelu::new_approximate()" if value == "tanh" else "Gelu::new()"
        return f"build Burn's `{layer}` as PyTorch's GELU ({value}): `{gelu}`"
    return None


# Burn 0.22.1's setter for one optimizer value (burn-optim src/optim/*.rs configs), by
# PyTorch's name; {v} is PyTorch's value. Weight decay is an Option<WeightDecayConfig>
# except in AdamWConfig, which holds the f32 itself.
SETTERS = {
    "eps": ".with_epsilon({v})",
    "alpha": ".with_alpha({v})",
    "centered": ".with_centered({v})",
    "amsgrad": ".with_amsgrad({v})",
    "lr_decay": ".with_lr_decay({v})",
    "weight_decay": ".with_weight_decay(Some(WeightDecayConfig::new({v})))",
}
CONFIGS = {"adam": "AdamConfig", "adamw": "AdamWConfig", "rmsprop": "RmsPropConfig",
           "adagrad": "AdaGradConfig", "sgd": "SgdConfig", "muon": "MuonConfig"}  # fmt: skip


def one_value(cause: str) -> str | None:
    """The hyperparameter a values cause names when it names exactly one ('config diff: eps
    (torch 1e-08, burn 1e-05)': eps), else None."""
    if not cause.startswith("config diff: ") or ";" in cause or ", with " in cause:
        return None
    return cause.removeprefix("config diff: ").partition(" (torch ")[0]


def value_fix(cause: str, optimizer: str) -> str | None:
    """The Burn line that passes PyTorch's value of one hyperparameter, from a cause naming
    exactly one ('config diff: eps (torch 1e-08, burn 1e-05)'); None for several, a group's
    or a value without a setter here."""
    key = one_value(cause)
    value = cause.partition(" (torch ")[2].rpartition(", burn ")[0]
    if key is None or optimizer not in CONFIGS or not value:
        return None
    if key == "weight_decay" and optimizer == "adamw":
        setter = f".with_weight_decay({value})"
    elif key == "momentum" and optimizer == "rmsprop":
        setter = f".with_momentum({value})"
    elif key == "betas":
        beta_1, beta_2 = value.strip("[]").split(", ")
        setter = f".with_beta_1({beta_1}).with_beta_2({beta_2})"
    elif key in SETTERS:
        setter = SETTERS[key].format(v=value)
    else:
        return None
    return f"pass PyTorch's {key} to Burn: `{CONFIGS[optimizer]}::new(){setter}`"
