"""Where a result came from: software versions, Burn backends, CPU, threads, git commit,
config hash.

    python -m torch_burn_parity.report.provenance --config results/specs/report/config.json \\
        --runs results/runs/*/*.json --out results/provenance.json

The same code on another CPU can give different numbers (other SIMD kernels, FMA or not),
so the report names the machine (machine.py, which the trainer's run `meta` uses too).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import re
import sys
from importlib import metadata
from pathlib import Path

from torch_burn_parity.config.cpu_path import DEFAULT, describe, environment
from torch_burn_parity.config.machine import ROOT, command_output, cpu, git_state
from torch_burn_parity.io.parity_io import FormatError, experiment_block, write_text_atomic


def burn_version(lock: Path = ROOT / "rust" / "Cargo.lock") -> str | None:
    try:
        text = lock.read_text()
    except OSError:
        return None
    match = re.search(r'name = "burn"\nversion = "([^"]+)"', text)
    return match.group(1) if match else None


def version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def run_threads(runs: list[Path]) -> dict[str, set]:
    """{framework: thread counts} over the run files; FormatError naming a bad file."""
    threads: dict[str, set] = {}
    for path in runs:
        meta = experiment_block(path)["meta"]
        if not isinstance(meta, dict) or "framework" not in meta or "threads" not in meta:
            raise FormatError(f"{path}: meta must hold 'framework' and 'threads'")
        threads.setdefault(meta["framework"], set()).add(meta["threads"])
    return threads


def run_backends(runs: list[Path]) -> list[str]:
    """The Burn backends the Burn run files record (meta.backend), sorted. A run file without
    one comes from a trainer that had only Flex."""
    return sorted(
        {
            meta.get("backend", "flex")
            for meta in (experiment_block(path)["meta"] for path in runs)
            if meta.get("framework") == "burn"
        }
    )


def run_cpu_paths(runs: list[Path]) -> dict[str, list[str]]:
    """{framework: the CPU paths its run files record (cpu_path.describe), sorted}."""
    paths: dict[str, set[str]] = {}
    for path in runs:
        meta = experiment_block(path)["meta"]
        paths.setdefault(meta.get("framework", "unknown"), set()).add(describe(meta))
    return {fw: sorted(p) for fw, p in sorted(paths.items())}


def config_hash(path: Path) -> str:
    """SHA-256 of the effective config file, once it is known to be whole (valid JSON)."""
    try:
        blob = path.read_bytes()
        json.loads(blob)
    except OSError as exc:
        raise FormatError(f"{path}: cannot read the config ({exc.strerror})") from None
    except ValueError as exc:  # JSONDecodeError, or bytes that are not text
        raise FormatError(f"{path}: not a JSON config ({exc})") from None
    return hashlib.sha256(blob).hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="effective config (JSON)")
    parser.add_argument("--runs", nargs="+", type=Path, default=[])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        threads = run_threads(args.runs)
        backends = run_backends(args.runs)
        cpu_paths = run_cpu_paths(args.runs)
        config_sha256 = config_hash(args.config)
        setting = json.loads(args.config.read_text())["config"].get("cpu_path", DEFAULT)
    except FormatError as exc:
        sys.exit(f"provenance: {exc}")
    info = {
        "python": platform.python_version(),
        "torch": version("torch"),
        "snakemake": version("snakemake"),
        "burn": burn_version(),
        "burn_backends": backends,
        "rustc": command_output("rustc", "--version"),
        "platform": platform.platform(),
        "cpu": cpu(),
        "cpu_path": {"setting": setting, "environment": environment(), "runs": cpu_paths},
        "threads": {fw: sorted(t) for fw, t in sorted(threads.items())},
        "git": git_state(),
        "config_sha256": config_sha256,
    }
    write_text_atomic(args.out, json.dumps(info, indent=2) + "\n")
    print(f"provenance -> {args.out}")


if __name__ == "__main__":
    main()
