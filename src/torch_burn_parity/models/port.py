"""Your own port: a PyTorch module named by import path, its Burn port in your own crate,
your initial weights and your data — an experiment's `model` given as a mapping with `torch`:

    model:
      name: tiny_mlp                                   # the model's name in the report
      torch: {module: "tiny_mlp:TinyMlp", path: examples/byo/torch, kwargs: {hidden: 32}}
      # or a library's model built from its config class: module(config(**kwargs))
      # torch: {module: "transformers:GPT2LMHeadModel", config: "transformers:GPT2Config",
      #         kwargs: {n_layer: 2}}
      burn: {crate: examples/byo/burn, bin: byo-parity}
      init: examples/byo/weights.safetensors           # PyTorch names, F32
      data: examples/byo/data.safetensors              # x [N, ...] F32 (or I64 ids), y [N] I64
      layers: [fc1, act, norm, fc2]                    # submodules recorded: dotted names, globs

This module is torch-free: it checks such a mapping (one line per problem, before any job)
and turns it into the ModelSpec every reader of the pipeline takes a model as: parameters and
buffers in the weights file's order, the layers named, the input the data gives.

The weights file is the module's `state_dict()`. Its buffers are told from its parameters by
name, as PyTorch's norms name them: a BatchNorm's `running_mean` and `running_var` are
buffers (loaded, recorded and compared as the built-in `cnn_bn`'s are); its
`num_batches_tracked` (I64) is a counter that neither trainer reads with a momentum set, and is
left out. Both sides check that split against the module itself before any training
(port_torch.new, the Burn side's resolve.rs). The
Snakefile registers every port of the config (`register`); its jobs inherit the register
through the environment (PARITY_PORTS), so that `model_specs.spec(name)` finds a port by
name in every process, as it finds the built-in models.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from torch_burn_parity.models.layer_names import syntax_problem
from torch_burn_parity.models.port_crate import crate_problems
from torch_burn_parity.suggest import closest_key

ENV = "PARITY_PORTS"
KEYS = ("name", "torch", "burn", "init", "data", "layers")
TORCH_KEYS = ("module", "config", "path", "kwargs")
BURN_KEYS = ("crate", "bin")
NAME = re.compile(r"[a-z][a-z0-9_]*")
MODULE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
FLOAT_DTYPES = ("F32",)
# The last segment of a buffer's name in a state_dict (PyTorch's _BatchNorm), and of the
# counter beside them that is no state of training with a momentum set.
RUNNING_STATS = ("running_mean", "running_var")
COUNTER = "num_batches_tracked"
Problem = tuple[tuple[str | int, ...], str]


@dataclass(frozen=True)
class Port:
    """One port as the config gives it."""

    name: str
    module: str  # "package.module:Class"
    path: str | None  # a folder put first on sys.path to import it (relative: to the project)
    kwargs: dict[str, Any]  # the module's keyword arguments, or its config class's
    crate: str  # the Burn crate's folder (its Cargo.toml)
    bin: str  # the crate's binary that calls parity_train::port::main
    init: str
    data: str
    layers: tuple[str, ...]
    config: str | None = None  # "package.module:Config": the module is module(Config(**kwargs))

    @staticmethod
    def of(value: Mapping[str, Any]) -> Port:
        torch, burn = value["torch"], value["burn"]
        return Port(
            name=value["name"],
            module=torch["module"],
            path=torch.get("path"),
            kwargs=dict(torch.get("kwargs") or {}),
            crate=burn["crate"],
            bin=burn["bin"],
            init=value["init"],
            data=value["data"],
            layers=tuple(value["layers"]),
            config=torch.get("config"),
        )

    def as_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "torch": {"module": self.module, "path": self.path, "kwargs": self.kwargs}
            | ({"config": self.config} if self.config is not None else {}),
            "burn": {"crate": self.crate, "bin": self.bin},
            "init": self.init,
            "data": self.data,
            "layers": list(self.layers),
        }


def is_buffer(name: str) -> bool:
    """Whether a weights file's tensor is a running statistic (a buffer), by its name."""
    return name.rsplit(".", 1)[-1] in RUNNING_STATS


def is_counter(name: str) -> bool:
    """Whether a weights file's tensor is a BatchNorm's batch counter (left out)."""
    return name.rsplit(".", 1)[-1] == COUNTER


def is_port(value: Any) -> bool:
    """Whether a config's `model` value is a port (a mapping with `torch`)."""
    return isinstance(value, Mapping) and "torch" in value


def header(path: str | os.PathLike) -> dict[str, Any]:
    """A safetensors file's header without its metadata, entries in the file's order;
    ValueError (one line) when it is not one."""
    try:
        with open(path, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if not 2 <= size <= 100_000_000:
                raise ValueError("not a safetensors file (no header)")
            entries = json.loads(f.read(size))
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a safetensors file ({exc})") from None
    if not isinstance(entries, dict):
        raise ValueError("not a safetensors file")
    entries.pop("__metadata__", None)
    return dict(sorted(entries.items(), key=lambda kv: kv[1]["data_offsets"][0]))


def read_arrays(path: str | os.PathLike, names: list[str] | None = None) -> dict[str, np.ndarray]:
    """Arrays of a safetensors file (all, or ``names``), as numpy arrays."""
    import safetensors.numpy

    arrays = safetensors.numpy.load_file(str(path))
    return {n: arrays[n] for n in (names or list(arrays))}


def _files_problems(at: tuple, value: Mapping[str, Any]) -> list[Problem]:
    """The weights and the data files: present, safetensors, of the dtypes the trainers read."""
    problems: list[Problem] = []
    try:
        init = header(value["init"])
        if not init:
            problems.append(((*at, "init"), f"{value['init']}: holds no tensor"))
        for name, entry in init.items():
            if is_counter(name) and entry["dtype"] == "I64":
                continue
            if entry["dtype"] not in FLOAT_DTYPES:
                why = f"tensor {name!r} is {entry['dtype']}; the initial weights are read as F32"
                problems.append(((*at, "init"), f"{value['init']}: {why}"))
                break
    except ValueError as exc:
        problems.append(((*at, "init"), f"{value['init']}: {exc}"))
    try:
        data = header(value["data"])
        for array, dtypes in (("x", ("F32", "I64")), ("y", ("I64", "F32"))):
            if array not in data:
                problems.append(((*at, "data"), f"{value['data']}: no array {array!r}"
                                 " (x: the inputs, y: the labels or targets)"))  # fmt: skip
            elif data[array]["dtype"] not in dtypes:
                why = f"array {array!r} is {data[array]['dtype']}, expected {' or '.join(dtypes)}"
                problems.append(((*at, "data"), f"{value['data']}: {why}"))
        if not problems and data["x"]["shape"][:1] != data["y"]["shape"][:1]:
            problems.append(((*at, "data"), f"{value['data']}: x has {data['x']['shape'][0]}"
                             f" samples, y {data['y']['shape'][0]}"))  # fmt: skip
    except ValueError as exc:
        problems.append(((*at, "data"), f"{value['data']}: {exc}"))
    return problems


def _keys_problems(at: tuple, value: Mapping[str, Any], known: tuple[str, ...]) -> list[Problem]:
    problems: list[Problem] = []
    for key in value:
        if key not in known:
            close = closest_key(str(key), known)
            hint = f"; did you mean {close!r}?" if close else ""
            problems.append(((*at, key), f"unknown key (known: {', '.join(known)}){hint}"))
    return problems


def port_problems(at: tuple, value: Mapping[str, Any], builtin: tuple[str, ...]) -> list[Problem]:
    """Why a port mapping cannot be run, one (path, message) per problem; [] when it can.
    ``builtin``: the built-in models' names, which a port may not take."""
    problems = _keys_problems(at, value, KEYS)
    # a key misspelt is named once, with its spelling (not also as missing)
    meant = {closest_key(str(k), KEYS) for k in value if k not in KEYS}
    missing = [k for k in KEYS if k not in value and k not in meant]
    problems += [((*at, k), f"a port needs `{k}` ({_WHAT[k]})") for k in missing]
    name = value.get("name")
    if isinstance(name, str) and (not NAME.fullmatch(name) or name in builtin):
        why = "a built-in model's" if name in builtin else "not lowercase letters, digits and _"
        problems.append(((*at, "name"), f"{name!r}: {why} (the port's name names its files)"))
    torch, burn = value.get("torch"), value.get("burn")
    if isinstance(torch, Mapping):
        problems += _keys_problems((*at, "torch"), torch, TORCH_KEYS)
        module = torch.get("module")
        if not (isinstance(module, str) and MODULE.fullmatch(module)):
            problems.append(((*at, "torch", "module"), f"{module!r}: not an import path"
                             " and a class, e.g. 'mypkg.net:Net'"))  # fmt: skip
        config = torch.get("config")
        if config is not None and not (isinstance(config, str) and MODULE.fullmatch(config)):
            problems.append(((*at, "torch", "config"), f"{config!r}: not an import path and a"
                             " config class, e.g. 'transformers:GPT2Config'"))  # fmt: skip
        path = torch.get("path")
        if path is not None and not Path(str(path)).is_dir():
            problems.append(((*at, "torch", "path"), f"{path}: no such folder"))
        if not isinstance(torch.get("kwargs", {}), Mapping):
            problems.append(((*at, "torch", "kwargs"), "not a mapping of keyword arguments"))
    elif torch is not None:
        problems.append(((*at, "torch"), "a mapping: {module: 'pkg.mod:Class', path, kwargs}"))
    if isinstance(burn, Mapping):
        problems += _keys_problems((*at, "burn"), burn, BURN_KEYS)
        crate = burn.get("crate")
        if isinstance(crate, str):
            problems += [((*at, "burn", "crate"), why) for why in crate_problems(crate)]
        if not isinstance(burn.get("bin"), str):
            problems.append(((*at, "burn", "bin"), "the crate's binary that runs the port"))
    elif burn is not None:
        problems.append(((*at, "burn"), "a mapping: {crate: folder, bin: binary name}"))
    layers = value.get("layers")
    if "layers" in value and not (
        isinstance(layers, list) and layers and all(isinstance(x, str) for x in layers)
    ):
        problems.append(((*at, "layers"), "a list of the module's submodule names"))
    elif isinstance(layers, list):
        problems += [((*at, "layers"), why) for why in map(syntax_problem, layers) if why]
    if isinstance(value.get("init"), str) and isinstance(value.get("data"), str):
        problems += _files_problems(at, value)
    return problems


_WHAT = {
    "name": "the model's name in the report",
    "torch": "{module: 'pkg.mod:Class', config: 'pkg:Config', path: folder, kwargs: {...}}",
    "burn": "{crate: folder, bin: binary}",
    "init": "a safetensors file of the initial weights, PyTorch's names",
    "data": "a safetensors file of x and y",
    "layers": "the submodules recorded: dotted names or globs, e.g. 'blocks.*.mlp'",
}


def spec_fields(port: Port) -> dict[str, Any]:
    """The fields of a port's ModelSpec (model_specs.port_spec builds it): its parameters,
    then its buffers (running statistics), each in the weights file's order with PyTorch's
    shapes, its layers, the input its data gives; initial values from the weights file (f32
    widened exactly to f64)."""
    init, data = header(port.init), header(port.data)
    shapes = {name: list(entry["shape"]) for name, entry in init.items() if not is_counter(name)}
    params = tuple(n for n in shapes if not is_buffer(n))
    buffers = tuple(n for n in shapes if is_buffer(n))
    y = read_arrays(port.data, ["y"])["y"]
    tokens = data["x"]["dtype"] == "I64"
    # the output's width: the classes of I64 labels, or that of F32 targets (mse)
    if y.dtype.kind == "f":
        classes = int(y.shape[1]) if y.ndim > 1 else 1
    else:
        classes = int(y.max()) + 1 if y.size else 0

    def formulas() -> dict[str, np.ndarray]:
        arrays = read_arrays(port.init)
        return {n: arrays[n].astype(np.float64).reshape(-1) for n in shapes}

    return dict(
        name=port.name,
        size={},
        param_names=params,
        buffer_names=buffers,
        layers=port.layers,
        state_shapes={n: shapes[n] for n in params + buffers},
        formulas=formulas,
        sample=tuple(data["x"]["shape"][1:]),
        tokens=tokens,
        classes=classes,
        port=port,
    )


def input_arrays(port: Port) -> dict[str, tuple[list[int], Any]]:
    """x and y of the port's data as {name: (shape, flat values)}."""
    arrays = read_arrays(port.data, ["x", "y"])
    return {n: (list(a.shape), a.reshape(-1)) for n, a in arrays.items()}


# --- the register, shared with every job through the environment ---------------------


def register(ports: list[Port]) -> None:
    """Make these ports known by name in this process and in every process it starts."""
    os.environ[ENV] = json.dumps({p.name: p.as_config() for p in ports}, sort_keys=True)


def registered() -> dict[str, Port]:
    """The ports known by name: those the Snakefile registered (PARITY_PORTS)."""
    text = os.environ.get(ENV)
    return {n: Port.of(v) for n, v in json.loads(text).items()} if text else {}


def register_ports(experiments: Mapping[str, Any]) -> dict[str, Port]:
    """Register the ports of a config's (checked) experiments by name, and return them;
    ValueError when one name is given two different ports."""
    ports: dict[str, Port] = {}
    for name, exp in experiments.items():
        if isinstance(exp, Mapping) and is_port(exp.get("model")):
            found = Port.of(exp["model"])
            if found.name in ports and ports[found.name] != found:
                raise ValueError(f"experiments.{name}.model: port {found.name!r} is given"
                                 " twice with different settings")  # fmt: skip
            ports[found.name] = found
    register(list(ports.values()))
    # Each port's PyTorch folder on the jobs' import path, after this project's sources:
    # your module imports as it does in your own project.
    folders = [str(Path(p.path).resolve()) for p in ports.values() if p.path is not None]
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [*filter(None, paths), *(f for f in dict.fromkeys(folders) if f not in paths)]
    )
    return ports
