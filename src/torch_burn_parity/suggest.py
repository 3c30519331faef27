"""The known key a mistyped config key was most likely meant to be ("did you mean …?").

Shared by the config checks (config/check_config.py, parity_config.py, param_groups.py), the
sweep expansion (config/sweeps.py) and the models' size and port checks (models/model_specs.py,
port.py); it imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import difflib

# Other names people give a hyperparameter: long forms, and Burn's own field names
# (AdamConfig.beta_1/beta_2/epsilon, WeightDecayConfig.penalty).
ALIASES = {
    "learning_rate": "lr",
    "learningrate": "lr",
    "epsilon": "eps",
    "beta": "betas",
    "beta_1": "betas",
    "beta_2": "betas",
    "beta1": "betas",
    "beta2": "betas",
    "penalty": "weight_decay",
    "decay": "weight_decay",
    "optimiser": "optimizer",
    "ams_grad": "amsgrad",
    "rho": "alpha",  # RMSProp's smoothing constant as Keras names it
    "initial_accumulator": "initial_accumulator_value",
    # schedules: the names of PyTorch's and Burn's schedulers
    "scheduler": "schedule",
    "lr_scheduler": "schedule",
    "lr_schedule": "schedule",
    "eta_min": "min_lr",
    "t_max": "num_steps",
    "total_iters": "num_steps",
    "num_iters": "num_steps",
    "end_lr": "final_lr",
    # clipping: PyTorch's and Burn's names
    "grad_clipping": "clip_grad",
    "gradient_clipping": "clip_grad",
    "clip_grad_norm": "clip_grad",
    "max_norm": "norm",
    "clip_value": "value",
}


def closest_key(key: str, known: list[str]) -> str | None:
    """The known key `key` was most likely meant to be: another spelling, an alias, a close
    match (difflib), or the same initials (learning_rate → lr)."""
    norm = str(key).lower().replace("-", "_").replace(" ", "_")
    if norm in known:
        return norm
    if ALIASES.get(norm) in known:
        return ALIASES[norm]
    match = difflib.get_close_matches(norm, known, n=1, cutoff=0.6)
    if match:
        return match[0]

    def initials(name: str) -> str:
        return "".join(part[0] for part in name.split("_") if part)

    for candidate in known:
        if len(candidate) > 1 and candidate in (initials(norm), norm.replace("_", "")):
            return candidate
        if "_" in candidate and initials(candidate) == norm:
            return candidate
    return None
