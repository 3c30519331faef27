"""The resolved spec, typed: one experiment as config/resolve.py fills it in, once.

Every default is filled in by `resolve.experiment_spec`; a reader of a `Spec` (the PyTorch
trainer, the port check, the config diff) takes its fields as they are and re-decides
nothing. On disk a spec is JSON (results/specs/{experiment}.json, `Spec.as_dict`), the
form the Burn trainer deserializes into its own typed structs (rust/src/config.rs);
`Spec.from_dict` reads it back, refusing in one line a file that is not one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from torch_burn_parity.config.parity_config import ConfigError
from torch_burn_parity.optimizers import REGISTRY


@dataclass(frozen=True)
class Group:
    """One parameter group: its exact parameter names (model order), its optimizer, every
    hyperparameter, the framework defaults kept, and what each framework is asked for."""

    params: list[str]
    optimizer: str
    hyperparameters: dict[str, Any]
    keep_defaults: dict[str, list[str]]
    requested: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class PortDeclaration:
    """A user's own port (models/port.py): what the Burn side checks its module against,
    PyTorch's names and shapes in the weights file's order, and the layers recorded."""

    name: str
    params: list[dict[str, Any]]  # {"name": …, "shape": […]}, the parameters
    buffers: list[dict[str, Any]]  # the same for the buffers (running statistics)
    layers: list[str]


@dataclass(frozen=True)
class Spec:
    """One experiment fully resolved: what both trainers run."""

    name: str
    optimizer: str
    hyperparameters: dict[str, Any]  # every one of the optimizer's, optional ones filled in
    keep_defaults: dict[str, list[str]]  # per framework: the keys left at its own default
    schedule: dict[str, Any]  # {"kind": …, then its keys in a fixed order}
    clip_grad: dict[str, float] | None  # {"norm" | "value": threshold}, or no clipping
    burn_backend: str
    model: str
    model_size: dict[str, Any]  # every size key, the defaults filled in
    data: str
    loss: str
    label_smoothing: float
    probe_steps: list[int]  # the layer record's steps, step 1 among them, sorted
    record_steps: list[int]  # the steps whose tensors both trainers record
    steps: int
    batch_size: int
    threads: int
    cpu_path: str
    requested: dict[str, dict[str, Any]]  # per framework: the values it is asked to use
    param_groups: list[Group]
    burn_fixes: list[str] = field(default_factory=list)
    port: PortDeclaration | None = None

    def entries(self) -> list[Spec | Group]:
        """The experiment's own optimizer choice, then its groups' (the trainers' order)."""
        return [self, *self.param_groups]

    def as_dict(self) -> dict[str, Any]:
        """The spec as JSON holds it: `burn_fixes` and `port` only when there are some, so
        that other experiments' spec files stay as they were."""
        data = asdict(self)
        if not self.burn_fixes:
            del data["burn_fixes"]
        if self.port is None:
            del data["port"]
        return data

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Spec:
        """A spec from its JSON form, or ConfigError naming ``where`` and the first problem."""
        missing = [f.name for f in REQUIRED if not isinstance(data, dict) or f.name not in data]
        if missing:
            raise ConfigError(
                f"{where}: not a resolved spec (missing {', '.join(missing)}); write one with"
                " python -m torch_burn_parity.config.resolve CONFIG EXPERIMENT"
            )
        groups = data["param_groups"] if isinstance(data["param_groups"], list) else None
        if groups is None or not all(isinstance(g, dict) for g in groups):
            raise ConfigError(f"{where}: param_groups must be a list of groups")
        for at, entry in [("", data), *((f"param_groups[{i}]: ", g) for i, g in enumerate(groups))]:
            optimizer_problem(where, at, entry)
        for name, (kinds, words) in KINDS.items():
            if name in data and not _is(data[name], kinds):
                raise ConfigError(f"{where}: {name} must be {words}, got {data[name]!r}")
        given = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        given["param_groups"] = [
            part_of(Group, g, f"{where}: param_groups[{i}]") for i, g in enumerate(groups)
        ]
        if data.get("port") is not None:
            given["port"] = part_of(PortDeclaration, data["port"], f"{where}: port")
        return cls(**given)


def part_of(kind: type, data: dict[str, Any], where: str) -> Any:
    """A Group or PortDeclaration from its JSON object, or ConfigError naming the first key
    it lacks."""
    missing = [f.name for f in fields(kind) if f.name not in data]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(missing)}")
    return kind(*(data[f.name] for f in fields(kind)))


REQUIRED = [f for f in fields(Spec) if f.name not in ("burn_fixes", "port")]

# The JSON kind of each field, in words for the refusal (a bool is no number here).
KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    **{
        k: ((str,), "a string")
        for k in ("name", "optimizer", "burn_backend", "model", "data", "loss", "cpu_path")
    },
    **{
        k: ((dict,), "a mapping")
        for k in ("hyperparameters", "keep_defaults", "schedule", "model_size", "requested")
    },
    **{k: ((list,), "a list") for k in ("probe_steps", "record_steps", "burn_fixes")},
    **{k: ((int,), "an integer") for k in ("steps", "batch_size", "threads")},
    "label_smoothing": ((int, float), "a number"),
    "clip_grad": ((dict, type(None)), "a mapping or null"),
    "port": ((dict, type(None)), "a mapping or null"),
}


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    return not isinstance(value, bool) and isinstance(value, kinds)


def optimizer_problem(where: str, at: str, entry: dict[str, Any]) -> None:
    """ConfigError when an entry (the experiment's or a group's) names no known optimizer,
    or lacks one of its hyperparameters."""
    optimizer = REGISTRY.get(entry.get("optimizer"))
    if optimizer is None:
        raise ConfigError(
            f"{where}: {at}unknown optimizer {entry.get('optimizer')!r}"
            f" (known: {', '.join(REGISTRY)})"
        )
    held = entry.get("hyperparameters") or {}
    absent = [k for k in optimizer.hyperparameters if k not in held]
    if absent:
        raise ConfigError(
            f"{where}: {at}hyperparameters of {optimizer.name}: missing {', '.join(absent)}"
        )
