"""Check your own port once, before any job trains it: both sides against the weights file
and the data, each refusal on one line.

    python -m torch_burn_parity.training.check_port --spec SPEC --data DATA --binary BIN \\
        --out results/ports/PORT.checked

The PyTorch side builds your module and loads the weights file into it as the trainer does
(models.build: every tensor of the file a parameter of the module, of its shape; the data's
x through one forward, its layers seen by hooks); the Burn side runs your binary's `check`
mode (the same matching against your Burn module, the input and the layers its forward
records). Both run, so that one run names every refusal of both sides, and where both take
the port, the layers each records must be the same, in the same order (the spec's
`layers` may be globs, each side expanding them); the trainings of the port's experiments wait for
the file this writes, so none starts on a port either side refuses.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import torch

from torch_burn_parity.config.parity_config import ConfigError
from torch_burn_parity.config.resolve import read_spec
from torch_burn_parity.config.spec import Spec
from torch_burn_parity.io.parity_io import FormatError, read_dataset
from torch_burn_parity.models.model_specs import ModelError
from torch_burn_parity.models.models import build, inputs
from torch_burn_parity.models.port_torch import hooked_forward


def torch_check(spec: Spec, arrays: dict) -> tuple[str | None, list[str]]:
    """Why PyTorch cannot train the port on these arrays (one line, or None), and the layers
    its hooks record on the first batch, in the order they run."""
    try:
        model = build(spec.model, arrays, torch.float32, spec.model_size)
        x, _ = inputs(arrays, torch.float32)
        with torch.no_grad():
            _, layers, _, _ = hooked_forward(model.train(), x[: spec.batch_size])
    except ModelError as exc:
        return str(exc), []
    return None, layers


def burn_check(binary: Path, spec: Path, data: Path) -> tuple[str | None, list[str]]:
    """Why the port's Burn binary refuses it (its one line, or None), and the layers its
    forward records (the `layers: […]` line of its check mode)."""
    proc = subprocess.run([str(binary), "check", "--spec", str(spec), "--data", str(data)],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        if not lines:
            return f"{binary} check: exit {proc.returncode}, no message", []
        return lines[-1].removeprefix(f"{binary.name} check: "), []
    for line in proc.stdout.splitlines():
        if line.startswith("layers: "):
            return None, json.loads(line.removeprefix("layers: "))
    return f"{binary} check: no `layers:` line (a binary older than this check)", []


def layers_differ(torch_layers: list[str], burn_layers: list[str]) -> str | None:
    """The recorded layers of the two sides, where they differ: both lists and the first
    difference (one line), or None."""
    if torch_layers == burn_layers:
        return None
    k = next(i for i in range(max(len(torch_layers), len(burn_layers)))
             if torch_layers[i : i + 1] != burn_layers[i : i + 1])  # fmt: skip
    first = [(side[k] if k < len(side) else "nothing") for side in (torch_layers, burn_layers)]
    return (f"PyTorch's hooks record the layers [{', '.join(torch_layers)}], Burn's forward"
            f" [{', '.join(burn_layers)}] (layer {k}: PyTorch's {first[0]}, Burn's"
            f" {first[1]})")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, type=Path, help="a resolved experiment")
    parser.add_argument("--data", required=True, type=Path, help="the port's dataset file")
    parser.add_argument("--binary", required=True, type=Path, help="the port's Burn binary")
    parser.add_argument("--out", required=True, type=Path, help="written when both accept")
    args = parser.parse_args(argv)
    try:
        spec = read_spec(args.spec)
        arrays, _ = read_dataset(args.data)
    except (ConfigError, FormatError, FileNotFoundError) as exc:
        sys.exit(f"check_port: {exc}")
    name = spec.port.name if spec.port is not None else spec.model
    args.out.unlink(missing_ok=True)
    torch_refusal, torch_layers = torch_check(spec, arrays)
    burn_refusal, burn_layers = burn_check(args.binary, args.spec, args.data)
    refusals = {"PyTorch side": torch_refusal, "Burn side": burn_refusal}
    if torch_refusal is None and burn_refusal is None:
        refusals["both sides"] = layers_differ(torch_layers, burn_layers)
    refused = {side: why for side, why in refusals.items() if why is not None}
    if refused:
        for side, why in refused.items():
            print(f"check_port: port {name}, {side}: {why}", file=sys.stderr)
        sys.exit(2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"port": name, "checked_with": str(args.spec)}) + "\n")
    print(f"check_port: port {name}: PyTorch and Burn take its weights and data, and both"
          f" record the layers {', '.join(torch_layers)}")  # fmt: skip


if __name__ == "__main__":
    main()
