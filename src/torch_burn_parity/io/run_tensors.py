"""A run's tensors in safetensors, beside its JSON: written row by row, read one tensor at a time.

A run file `results/runs/{experiment}/{framework}-{dtype}.json` keeps the metadata and the
short series (losses, lrs, final, meta, the layer record's steps and names); every tensor is
in `{framework}-{dtype}.safetensors` beside it, in the run's own precision (F32 or F64: the
values as the framework held them, no text encoding), under these keys (PyTorch's names and
layouts, the model's order):

    params/{name}                  [*shape]      after the last step
    buffers/{name}                 [*shape]      running statistics after the last step
    trajectory/params/{name}       [S, *shape]   after each recorded step
    trajectory/grads/{name}        [S, *shape]   each recorded step's gradients, before clipping
    trajectory/buffers/{name}      [S, *shape]
    layers/{step}/outputs/{k}      [numel]       layer k's output at a probe step
    layers/{step}/input_grads/{k}  [numel]       dLoss/d(layer k's input) there
    layers/{step}/inputs/{k}       [numel]       a port's: layer k's input there (PyTorch)
    layers/{step}/output_grads/{k} [numel]       a port's: dLoss/d(layer k's output) there

S is the number of recorded steps, the spec's `record_steps` (the JSON's `tensors.steps`;
config/record.py). The JSON's `tensors` says
which file, its dtype, those steps and the file's size in bytes (a file that does not match is
refused). Both trainers write the file the same way: its header first, from the shapes they
know before step 1, then each row in place as the step ends, so neither holds a trajectory in
memory (rust/src/tensors.rs is the Burn side). The format is safetensors' own (an 8-byte
little-endian header length, a JSON header padded with spaces to 8 bytes, the data), which
the `safetensors` packages read.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# The run's precision → safetensors' dtype name and numpy's little-endian type.
DTYPES = {"f32": ("F32", "<f4"), "f64": ("F64", "<f8")}
FORMAT = "torch-burn-parity run tensors"


class TensorFileError(ValueError):
    """A tensors file that is missing, not safetensors, or not the one its run file names."""


def tensors_path(run_path: str | os.PathLike) -> Path:
    """The tensors file beside a run file: the same name with `.safetensors`."""
    return Path(run_path).with_suffix(".safetensors")


class TensorWriter:
    """Writes a safetensors file: the tensors declared up front (``shapes``) filled in any
    order, a trajectory row by row; the ``late`` ones (whose shapes are known only when they
    come, the layer record) appended after them. `close()` writes the header and moves the
    file into place, so a crash leaves no file.

    The header's room is reserved at the start for every key, declared and late, with the
    largest shape and offsets it could hold; what it does not use is spaces (safetensors pads
    its header with spaces: any reader takes them)."""

    def __init__(
        self,
        path: str | os.PathLike,
        shapes: Mapping[str, list[int]],
        dtype: str,
        metadata: Mapping[str, str] | None = None,
        late: list[str] = (),
    ) -> None:
        self.path = Path(path)
        self.name, self.np_type = DTYPES[dtype]
        self.itemsize = np.dtype(self.np_type).itemsize
        self.metadata = {"format": FORMAT, **(metadata or {})}
        self.shapes: dict[str, list[int]] = {}
        self.offsets: dict[str, tuple[int, int]] = {}
        self.end = 0
        for key, shape in shapes.items():
            self._place(key, list(shape))
        self.late = list(late)
        # Each shape as wide as it could be written (at least 4 dimensions: the Burn
        # writer reserves the same room, so both write the same header).
        widest = {k: [10**15] * max(4, len(shapes.get(k, []))) for k in [*shapes, *self.late]}
        self.reserved = len(self._header(widest, {k: (10**18, 10**18) for k in widest}))
        self.tmp = self.path.with_name(f".{self.path.name}.tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(self.tmp, "wb")  # noqa: SIM115 (closed by close() or abort())
        self.file.truncate(8 + self.reserved + self.end)  # zeros until written

    def _place(self, key: str, shape: list[int]) -> tuple[int, int]:
        begin, self.end = self.end, self.end + math.prod(shape) * self.itemsize
        self.shapes[key], self.offsets[key] = shape, (begin, self.end)
        return begin, self.end

    def _header(self, shapes: Mapping[str, list[int]], offsets: Mapping) -> bytes:
        header: dict[str, Any] = {"__metadata__": self.metadata}
        for key, shape in shapes.items():
            header[key] = {"dtype": self.name, "shape": shape, "data_offsets": list(offsets[key])}
        text = json.dumps(header, separators=(",", ":")).encode()
        return text + b" " * (-len(text) % 8)

    def _put(self, begin: int, data: np.ndarray) -> None:
        self.file.seek(8 + self.reserved + begin)
        self.file.write(data.tobytes())

    def write(self, key: str, values: Any, row: int | None = None) -> None:
        """Declared tensor ``key``'s values (any array-like, flattened), or its row ``row``
        (an index of its first dimension) when given."""
        data = np.ascontiguousarray(values, dtype=self.np_type).reshape(-1)
        begin, end = self.offsets[key]
        if row is not None:
            width = math.prod(self.shapes[key][1:]) * self.itemsize
            begin, end = begin + row * width, begin + (row + 1) * width
        if data.nbytes != end - begin:
            raise ValueError(f"{key}: {data.size} values do not fill {end - begin} bytes")
        self._put(begin, data)

    def add(self, key: str, values: Any) -> None:
        """Late tensor ``key``, flat, after everything placed so far."""
        if key not in self.late or key in self.shapes:
            raise ValueError(f"{key}: not a late tensor of this file, or added twice")
        data = np.ascontiguousarray(values, dtype=self.np_type).reshape(-1)
        begin, _ = self._place(key, [data.size])
        self._put(begin, data)

    def close(self) -> int:
        """Writes the header, moves the file into place; returns its size in bytes."""
        missing = [k for k in self.late if k not in self.shapes]
        if missing:
            self.abort()
            raise ValueError(f"{self.path}: late tensors never added: {missing[:3]}")
        text = self._header(self.shapes, self.offsets)
        if len(text) > self.reserved:
            self.abort()
            raise ValueError(f"{self.path}: a {len(text)}-byte header overflows its room")
        text += b" " * (self.reserved - len(text))
        self.file.seek(0)
        self.file.write(len(text).to_bytes(8, "little") + text)
        size = 8 + self.reserved + self.end
        self.file.truncate(size)
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.tmp, self.path)
        return size

    def abort(self) -> None:
        self.file.close()
        self.tmp.unlink(missing_ok=True)


class TensorFile:
    """A safetensors file read a tensor, a row or a block of columns at a time, with plain
    reads at the header's offsets (no memory map: a map's pages count as the reader's memory
    once touched, and an analysis touches every byte of four runs)."""

    def __init__(self, path: str | os.PathLike, size: int | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise TensorFileError(f"{self.path}: tensors file not found")
        found = self.path.stat().st_size
        if size is not None and found != size:
            raise TensorFileError(
                f"{self.path}: {found} bytes, its run file says {size}"
                " (a tensors file from another run, or cut short)"
            )
        self.fd = os.open(self.path, os.O_RDONLY)
        try:
            length = int.from_bytes(os.pread(self.fd, 8, 0), "little")
            if not 0 < length <= found - 8:
                raise ValueError(f"header length {length} in a file of {found} bytes")
            header = json.loads(os.pread(self.fd, length, 8))
            header.pop("__metadata__", None)
            self.entries = {
                key: self._entry(key, e, found - 8 - length) for key, e in header.items()
            }
        except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
            os.close(self.fd)
            raise TensorFileError(f"{self.path}: not a safetensors file ({exc})") from None
        self.start = 8 + length
        # The keys in the order their data lies in the file: the model's.
        self.ordered = sorted(self.entries, key=lambda k: self.entries[k][2])
        self.keys = set(self.ordered)

    @staticmethod
    def _entry(key: str, entry: dict, data_bytes: int) -> tuple[np.dtype, list[int], int]:
        """(numpy dtype, shape, data offset) of one header entry, checked."""
        types = {name: np.dtype(code) for name, code in DTYPES.values()}
        dtype, shape = types[entry["dtype"]], [int(n) for n in entry["shape"]]
        begin, end = (int(x) for x in entry["data_offsets"])
        if end - begin != math.prod(shape) * dtype.itemsize or not 0 <= begin <= end <= data_bytes:
            raise ValueError(f"{key}: offsets {begin}..{end} do not hold shape {shape}")
        return dtype, shape, begin

    def __del__(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            os.close(self.fd)

    def shape(self, key: str) -> list[int]:
        return list(self._lookup(key)[1])

    def _lookup(self, key: str) -> tuple[np.dtype, list[int], int]:
        if key not in self.entries:
            raise TensorFileError(f"{self.path}: no tensor {key!r}")
        return self.entries[key]

    def _read(self, dtype: np.dtype, offset: int, count: int) -> np.ndarray:
        data = os.pread(self.fd, count * dtype.itemsize, self.start + offset)
        return np.frombuffer(data, dtype=dtype, count=count).astype(np.float64)

    def get(self, key: str) -> np.ndarray:
        """Tensor ``key``, as f64 (exact for F32), in its shape."""
        dtype, shape, begin = self._lookup(key)
        return self._read(dtype, begin, math.prod(shape)).reshape(shape)

    def row(self, key: str, index: int) -> np.ndarray:
        """Row ``index`` of tensor ``key``'s first dimension, flat, as f64."""
        dtype, shape, begin = self._lookup(key)
        width = math.prod(shape[1:])
        if not 0 <= index < shape[0]:
            raise IndexError(f"{key}: row {index} of {shape[0]}")
        return self._read(dtype, begin + index * width * dtype.itemsize, width)

    def columns(self, key: str, start: int, stop: int) -> np.ndarray:
        """[:, start:stop] of tensor ``key`` (its second dimension: a trajectory's tensor's
        first), as [rows, m] f64: one read per row of just those bytes."""
        dtype, shape, begin = self._lookup(key)
        if len(shape) == 1:  # a scalar's trajectory: [steps]
            return self.get(key).reshape(-1, 1)
        inner = math.prod(shape[2:])
        width, size = math.prod(shape[1:]), dtype.itemsize
        count = (stop - start) * inner
        rows = [
            self._read(dtype, begin + (r * width + start * inner) * size, count)
            for r in range(shape[0])
        ]
        return np.stack(rows) if rows else np.zeros((0, count))


class Tensors(Mapping):
    """{name: array} over the tensors whose keys start with ``prefix``, read on access:
    flat for a single state (`params/…`), one flat row per recorded step for a trajectory."""

    def __init__(self, file: TensorFile, prefix: str, rows: bool) -> None:
        self.file, self.prefix, self.rows = file, prefix, rows
        self.names = [k[len(prefix) :] for k in file.ordered if k.startswith(prefix)]
        self.known = frozenset(self.names)

    def __contains__(self, name: object) -> bool:
        # Mapping's own `in` would read the tensor (it calls __getitem__): a check of the
        # file's keys must not read a trajectory of steps × parameters values.
        return name in self.known

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.known:
            raise KeyError(name)
        values = self.file.get(self.prefix + name)
        return values.reshape(values.shape[0], -1) if self.rows else values.reshape(-1)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def steps(self, name: str) -> int:
        """How many rows the trajectory of ``name`` holds, without reading it."""
        return self.file.shape(self.prefix + name)[0]

    def row(self, name: str, index: int) -> np.ndarray:
        """Row ``index`` of the trajectory of ``name``, flat, reading that row only."""
        return self.file.row(self.prefix + name, index)

    def columns(self, name: str, start: int, stop: int) -> np.ndarray:
        """[:, start:stop] of the trajectory of ``name`` (its tensor's first dimension), as
        [steps, m], reading those values only."""
        return self.file.columns(self.prefix + name, start, stop)


class LayerValues(Sequence):
    """One probe step's per-layer values (outputs or input gradients), read on access."""

    def __init__(self, file: TensorFile, prefix: str, count: int) -> None:
        self.file, self.prefix, self.count = file, prefix, count

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(self.count)[k]]
        return self.file.get(f"{self.prefix}{range(self.count)[k]}")

    def __len__(self) -> int:
        return self.count


def attach(block: dict[str, Any], run_path: str | os.PathLike) -> dict[str, Any]:
    """The block with its tensors in place (`params`, `buffers`, `trajectory`, each layer
    record's `outputs` and `input_grads`), read from the file its `tensors` names as they are
    used. A block without `tensors` (the seed's files, a test's inline JSON) is returned as
    it is."""
    spec = block.get("tensors")
    if spec is None:
        return block
    file = TensorFile(Path(run_path).parent / spec["file"], spec.get("bytes"))
    block["params"] = Tensors(file, "params/", rows=False)
    block["buffers"] = Tensors(file, "buffers/", rows=False)
    block["trajectory"] = {
        kind: Tensors(file, f"trajectory/{kind}/", rows=True)
        for kind in ("params", "grads", "buffers")
    }
    for record in block.get("layers", []):
        for field in ("outputs", "input_grads"):  # one per layer each
            prefix = f"layers/{record['step']}/{field}/"
            record[field] = LayerValues(file, prefix, len(record["names"]))
    return block


def materialize(block: dict[str, Any]) -> dict[str, Any]:
    """A copy of an attached block with every tensor read into lists, as an inline run file
    holds them (no `tensors`): to compare two runs whole, or to write one back as JSON. Its
    trajectories keep their recorded rows (every step unless `record` chose fewer)."""
    out = {key: value for key, value in block.items() if key != "tensors"}
    if "tensors" not in block:
        return out
    flat = lambda values: np.asarray(values).reshape(-1).tolist()  # noqa: E731
    out["params"] = {name: flat(v) for name, v in block["params"].items()}
    out["buffers"] = {name: flat(v) for name, v in block["buffers"].items()}
    out["trajectory"] = {
        kind: {name: np.asarray(v).tolist() for name, v in series.items()}
        for kind, series in block["trajectory"].items()
    }
    out["layers"] = [
        {**record, **{f: [flat(v) for v in record[f]] for f in ("outputs", "input_grads")}}
        for record in block["layers"]
    ]
    return out


# A layer record's per-layer fields: every model's, then a port's own two (its layers need
# not run one after the other, so their inputs are not the previous layer's outputs).
LAYER_FIELDS = ("outputs", "input_grads")
PORT_LAYER_FIELDS = (*LAYER_FIELDS, "inputs", "output_grads")


class RunRecorder:
    """What a trainer records of its tensors, step by step: into the run's tensors file when
    given one (the pipeline), else into the run file's JSON lists (a test's inline run).

    ``finish`` returns the run block's tensor fields: `tensors` (the file), or `params`,
    `buffers`, `trajectory` and the layer record's values inline."""

    def __init__(
        self,
        path: str | os.PathLike | None,
        dtype: str,
        params: Mapping[str, list[int]],
        buffers: Mapping[str, list[int]],
        record_steps: list[int],
        probe_steps: list[int],
        layer_count: int,
        layer_fields: tuple[str, ...] = LAYER_FIELDS,
    ) -> None:
        self.path, self.dtype, self.record_steps = path, dtype, list(record_steps)
        self.rows = {step - 1: row for row, step in enumerate(self.record_steps)}
        steps = len(self.record_steps)
        self.params, self.buffers = dict(params), dict(buffers)
        kinds = {"params": self.params, "grads": self.params, "buffers": self.buffers}
        self.inline: dict[str, dict[str, list]] = {k: {n: [] for n in v} for k, v in kinds.items()}
        self.layers: list[dict[str, Any]] = []
        self.writer = None
        if path is not None:
            shapes = {f"params/{n}": s for n, s in self.params.items()}
            shapes |= {f"buffers/{n}": s for n, s in self.buffers.items()}
            for kind, names in kinds.items():
                shapes |= {f"trajectory/{kind}/{n}": [steps, *s] for n, s in names.items()}
            late = [
                f"layers/{step}/{field}/{k}"
                for step in probe_steps
                for field in layer_fields
                for k in range(layer_count)
            ]
            self.writer = TensorWriter(tensors_path(path), shapes, dtype, late=late)
        self.layer_fields = layer_fields

    def records(self, step: int) -> bool:
        """Whether 0-based ``step`` is one of the recorded steps."""
        return step in self.rows

    def row(self, kind: str, name: str, step: int, values: np.ndarray) -> None:
        """Trajectory ``kind`` (params, grads, buffers) of ``name`` after 0-based ``step``,
        a recorded one."""
        if self.writer is None:
            self.inline[kind][name].append(np.asarray(values).reshape(-1).tolist())
        else:
            self.writer.write(f"trajectory/{kind}/{name}", values, row=self.rows[step])

    def layer(self, record: dict[str, Any]) -> None:
        """One probe step's layer record ({step, names, outputs, input_grads}, and a port's
        inputs and output_grads)."""
        if self.writer is None:
            self.layers.append(record)
            return
        for field in self.layer_fields:
            for k, values in enumerate(record[field]):
                self.writer.add(f"layers/{record['step']}/{field}/{k}", values)
        self.layers.append({"step": record["step"], "names": record["names"]})

    def finish(
        self, params: Mapping[str, np.ndarray], buffers: Mapping[str, np.ndarray]
    ) -> dict[str, Any]:
        """The run block's tensor fields, given the state after the last step."""
        if self.writer is None:
            flat = lambda v: np.asarray(v).reshape(-1).tolist()  # noqa: E731
            return {
                "params": {n: flat(v) for n, v in params.items()},
                "buffers": {n: flat(v) for n, v in buffers.items()},
                "trajectory": self.inline,
                "layers": self.layers,
            }
        for kind, values in (("params", params), ("buffers", buffers)):
            for name, v in values.items():
                self.writer.write(f"{kind}/{name}", v)
        # An older run file goes first: a crash between this rename and the run file's own
        # never pairs the new tensors with an old run.
        Path(self.path).unlink(missing_ok=True)
        size = self.writer.close()
        tensors = {"file": tensors_path(self.path).name, "dtype": DTYPES[self.dtype][0],
                   "steps": self.record_steps, "bytes": size}  # fmt: skip
        return {"tensors": tensors, "layers": self.layers}

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.abort()
