"""Shared file formats of the parity pipeline: the dataset file and the run files.

Imported by every script in this folder and by the tests. Rules that run a script list
this module as an input too, so that editing a format reruns everything that reads it.

Dataset file (written by make_data.py, read by both trainers; one per model)
-----------------------------------------------------------------------------
A safetensors file (https://huggingface.co/docs/safetensors), so that both languages read
exactly the same bits and Burn loads the weights as its users load PyTorch's, through
burn-store's SafetensorsStore::

    x  [N, *sample] F32 (values) or I64 (token ids),  y  [N] or [N, positions] I64,
    then the model's parameters and buffers (F32, PyTorch names and shapes; model_specs.py)
    __metadata__  {"format": "torch-burn-parity dataset", "model": <model tag>,
                   "data": <dataset name, when not sine>}

The data (datasets/): sine x [96, 1, 16], y [96]; digits x [1797, 1, 8, 8], y [1797]; text
x and y [N, context] token ids. A sine file has no "data" key: its bytes are those it had
before there was any other dataset.

safetensors lays the arrays out by dtype and name; read_dataset gives them back as x, y, then
the model's order (that of the tag in the metadata). Only x and y are checked here; each
model checks its own.

Run files (results/runs/{experiment}/{framework}-{dtype}.json)
---------------------------------------------------------------
``{"<experiment>": RunBlock}``, its fields typed in run_file.py. Floats are JSON numbers,
except non-finite ones, which JSON cannot hold: they are written as the strings "NaN",
"Infinity" and "-Infinity" and decoded back to floats by ``read_run``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import safetensors
import safetensors.numpy

# model_specs is torch-free (names, shapes, formulas): importing it keeps this module light.
from torch_burn_parity.io.run_file import REQUIRED
from torch_burn_parity.io.run_tensors import TensorFileError, Tensors, attach
from torch_burn_parity.models.model_specs import ModelError, model_of, parse_tag

# An experiment's four runs: each framework at each precision, in this order.
FRAMEWORKS = ("torch", "burn")
DTYPES = ("f32", "f64")
RUNS = [(framework, dtype) for framework in FRAMEWORKS for dtype in DTYPES]
FRAMEWORK_NAMES = {"torch": "PyTorch", "burn": "Burn"}

# The arrays every dataset file holds, first; a model's parameters and buffers follow, and
# each model checks its own (model_specs.py, models.py).
DATASET_ARRAYS = ("x", "y")
NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class FormatError(ValueError):
    """A dataset or run file that does not have the expected form."""


# --------------------------------------------------------------------------- atomic writes


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    A reader (or a later pipeline run) sees either the old file or the whole new one,
    never a truncated one, even if this process is killed mid-write.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Temporary files left by a writer that was killed: never trusted, never kept.
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual mode
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    write_atomic(path, text.encode("utf-8"))


# --------------------------------------------------------------------------- CSV tables


def read_text(path: str | os.PathLike, what: str = "file", form: str = "text") -> str:
    """A UTF-8 text file, or a FormatError naming it: '…: table not found', '…: not a CSV
    table (not UTF-8 text at byte 3)', '…: cannot read the run file (Permission denied)'."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(f"{path}: {what} not found") from None
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: not {form} (not UTF-8 text at byte {exc.start})") from None
    except OSError as exc:
        raise FormatError(f"{path}: cannot read the {what} ({exc.strerror})") from None


def read_table_text(path: str | os.PathLike) -> str:
    """The text of a CSV table the pipeline wrote, refused when it cannot be whole.

    Raises FormatError naming the file when it is missing, not text, or cut off (no final
    newline, or a row with fewer or more fields than the header): a damaged table is never
    read as a shorter one.
    """
    path = Path(path)
    text = read_text(path, "table", "a CSV table")
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise FormatError(f"{path}: not a CSV table ({exc})") from None
    if not rows or not text.endswith("\n") or any(len(r) != len(rows[0]) for r in rows):
        raise FormatError(f"{path}: truncated table (a row is cut off)")
    return text


def read_table(path: str | os.PathLike, **options):
    """A CSV table of the pipeline's as a pandas DataFrame, refused (FormatError naming it)
    when missing or cut off. pandas is imported here only: the trainers never need it."""
    import pandas as pd

    return pd.read_csv(io.StringIO(read_table_text(path)), **options)


# --------------------------------------------------------------------------- dataset file


DATASET_FORMAT = "torch-burn-parity dataset"
# Each array's dtype (safetensors' names): y's I64, x's F32 or (token ids) I64, every other
# one's F32.
DATASET_DTYPES = {"F32": "<f4", "I64": "<i8"}


def dataset_dtype(name: str, tokens: bool = False, float_targets: bool = False) -> str:
    if name == "y":
        return "F32" if float_targets else "I64"
    return "I64" if name == "x" and tokens else "F32"


def encode_dataset(
    arrays: dict[str, tuple[list[int], Any]],
    model: str,
    data: str = "sine",
    tokens: bool = False,
    float_targets: bool = False,
) -> bytes:
    """The dataset file of ``{name: (shape, flat_values)}`` for the model tagged ``model``
    on dataset ``data`` (x token ids when ``tokens``; y float targets, for mse, when
    ``float_targets``).

    y (and x of tokens) is written as I64 and every other array as F32: f64 values are
    rounded to f32 here, once (numpy rounds to nearest even). Written by
    safetensors.numpy.save; the bytes are the same every time once the metadata's keys are
    sorted (see _sorted_metadata).
    """
    tensors = {}
    for name, (shape, values) in arrays.items():
        dtype = dataset_dtype(name, tokens, float_targets)
        flat = np.asarray(values, dtype=DATASET_DTYPES[dtype])
        if flat.ndim != 1 or flat.size != math.prod(shape):
            raise ValueError(f"{name}: shape {shape} does not hold {flat.size} values")
        tensors[name] = flat.reshape(shape)
    metadata = {"format": DATASET_FORMAT, "model": model}
    if data != "sine":
        metadata["data"] = data
    blob = safetensors.numpy.save(tensors, metadata=metadata)
    return _sorted_metadata(blob)


def _sorted_metadata(blob: bytes) -> bytes:
    """A safetensors file with its header's metadata keys sorted.

    safetensors 0.8.0 writes `__metadata__` from a Rust HashMap, in an order that changes
    from one process to the next (safetensors/safetensors#584), so two saves of the same
    arrays differ in their header. The header is written again with the keys sorted and the
    same padding; the arrays and their offsets do not move.
    """
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8 : 8 + n])
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    if len(text) > n:
        raise ValueError(f"a sorted header of {len(text)} bytes does not fit in {n}")
    return blob[:8] + text.ljust(n) + blob[8 + n :]


def _model_order(model: Any) -> tuple[str, ...]:
    """The parameters and buffers of the model tag ``model`` in its order; none when the
    tag is missing or not a model's (the model's own checks then refuse the file)."""
    try:
        return parse_tag(model).state_names if isinstance(model, str) else ()
    except ModelError:
        return ()


def decode_dataset(blob: bytes, source: str = "dataset") -> dict[str, tuple[list[int], list]]:
    """Decode a dataset file into ``{name: (shape, flat_values)}``: x, y, then the model's
    parameters and buffers in its order (the metadata's model tag), then any other array
    in the file's order.

    f32 values come back as Python floats (exact widenings), i64 values as ints. Refused
    (FormatError naming ``source``, one line) when it is not a safetensors file, lacks x or
    y, or holds an array of another dtype than the format's (y I64, or F32 targets; x F32 or
    I64; every other F32).
    """
    try:
        tensors = safetensors.numpy.load(blob)
        header = json.loads(blob[8 : 8 + int.from_bytes(blob[:8], "little")])
    except (safetensors.SafetensorError, ValueError) as exc:
        reason = str(exc).removeprefix("Error while deserializing: ").splitlines()[0]
        raise FormatError(f"{source}: not a safetensors file, or truncated ({reason})") from None
    missing = [a for a in DATASET_ARRAYS if a not in tensors]
    if missing:
        raise FormatError(f"{source}: missing arrays {missing}")
    in_file = sorted(tensors, key=lambda name: header[name]["data_offsets"][0])
    for name in in_file:
        dtype, want = header[name]["dtype"], dataset_dtype(name)
        if name in ("x", "y") and dtype in ("F32", "I64"):
            continue  # x: values or token ids; y: labels or (mse) float targets
        if dtype != want:
            raise FormatError(f"{source}: array {name!r} is {dtype}, expected {want}")
    model = _model_order(header.get("__metadata__", {}).get("model"))
    order = [*DATASET_ARRAYS, *(n for n in model if n in tensors)]
    order += [n for n in in_file if n not in order]
    return {n: (list(tensors[n].shape), tensors[n].reshape(-1).tolist()) for n in order}


def read_dataset(path: str | os.PathLike) -> tuple[dict[str, tuple[list[int], list]], str]:
    """Read a dataset file; return its arrays (decode_dataset) and the SHA-256 of its exact
    bytes."""
    try:
        blob = Path(path).read_bytes()
    except FileNotFoundError:
        raise FormatError(f"{path}: dataset file not found") from None
    except OSError as exc:
        raise FormatError(f"{path}: cannot read the dataset file ({exc.strerror})") from None
    return decode_dataset(blob, str(path)), hashlib.sha256(blob).hexdigest()


# --------------------------------------------------------------------------- run files


def _encode_nonfinite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _encode_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode_nonfinite(v) for v in value]
    return value


def _decode_nonfinite(value: Any) -> Any:
    if isinstance(value, str) and value in NONFINITE:
        return NONFINITE[value]
    if isinstance(value, dict):
        return {k: _decode_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_nonfinite(v) for v in value]
    return value


def dump_run(run: dict[str, Any]) -> str:
    """Serialise a run file: non-finite floats as strings, keys in a fixed order."""
    return json.dumps(_encode_nonfinite(run), allow_nan=False, separators=(",", ":")) + "\n"


def write_run(path: str | os.PathLike, run: dict[str, Any]) -> None:
    write_text_atomic(path, dump_run(run))


def read_run(path: str | os.PathLike) -> dict[str, Any]:
    """Read a run file (or the seed's pt.json/burn.json), decoding non-finite values; a
    block's tensors are read from its tensors file as they are used (run_tensors.attach).

    Raises FormatError naming the file when it is missing, unreadable, not valid JSON or
    not an object.
    """
    path = Path(path)
    text = read_text(path, "run file", "valid JSON")
    try:
        data = json.loads(text, parse_constant=lambda c: NONFINITE[c])
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict) or not data:
        raise FormatError(f"{path}: expected a JSON object {{experiment: {{...}}}}")
    data = _decode_nonfinite(data)
    for experiment, block in data.items():
        try:  # the tensors file beside it (run_tensors.py), when the block names one
            if isinstance(block, dict):
                attach(block, path)
        except (TensorFileError, KeyError, TypeError) as exc:
            raise FormatError(f"{path}: experiment {experiment!r}: {exc}") from None
    return data


def step_count(series: Any, name: str) -> int:
    """How many steps a trajectory holds for ``name``, without reading a tensors file's."""
    return series.steps(name) if isinstance(series, Tensors) else len(series[name])


def row_of(series: Any, name: str, index: int) -> Any:
    """Row ``index`` of the trajectory of ``name`` (a tensors file's: that row only)."""
    return series.row(name, index) if isinstance(series, Tensors) else series[name][index]


def experiment_block(path: str | os.PathLike, experiment: str | None = None) -> dict[str, Any]:
    """The one experiment block of a pipeline run file, checked for the fields analyses use.

    The trajectory must hold one entry per recorded step (its tensors file's `steps`; inline,
    every step) for every parameter (params and grads) and every buffer (buffers) of the
    block's model (`meta.model`, absent: cnn1d).
    """
    data = read_run(path)
    if experiment is None:
        if len(data) != 1:
            raise FormatError(f"{path}: expected one experiment, found {sorted(data)}")
        (experiment,) = data
    if experiment not in data:
        raise FormatError(f"{path}: no experiment {experiment!r} (has {sorted(data)})")
    block = data[experiment]
    for key in REQUIRED:
        if key not in block:
            raise FormatError(f"{path}: experiment {experiment!r} has no {key!r} field")
    try:
        model = model_of(block)
    except ModelError as exc:
        raise FormatError(f"{path}: experiment {experiment!r}: {exc}") from None
    steps = len(block["tensors"]["steps"]) if "tensors" in block else len(block["losses"])
    params, buffers = model.param_names, model.buffer_names
    for kind, names in (("params", params), ("grads", params), ("buffers", buffers)):
        for name in names:
            series = block["trajectory"].get(kind, {})
            inline = not isinstance(series, Tensors)  # a list per step, or not a list at all
            if (
                name not in series
                or (inline and not isinstance(series[name], list))
                or step_count(series, name) != steps
            ):
                raise FormatError(
                    f"{path}: trajectory.{kind}.{name} must hold one entry per recorded step"
                    f" ({steps})"
                )
    return block
