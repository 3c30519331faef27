"""Run the real Snakemake pipeline in a temporary copy of the project."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from conftest import ADAM, BURN_BINARY, ROOT, SGD, TEST_CPU_PATH

PROJECT_FILES = (
    "Snakefile",
    "config.yaml",
    "pyproject.toml",
    "src",
    "workflow",
    "rust",
    "profiles",
)
EXPERIMENTS = ("sgd", "adam", "momentum", "pitfall")  # those of small_pipeline_config()
TABLES = ("steps", "config_diff", "replay", "counterfactual", "probe", "lrs", "layers")
EXPECTED = [
    "results/data/cnn1d.safetensors",
    "results/bin/parity-train",
    *[
        f"results/runs/{e}/{fw}-{dt}.json"
        for e in EXPERIMENTS
        for fw in ("torch", "burn")
        for dt in ("f32", "f64")
    ],
    *[f"results/compare/{e}-{dt}.txt" for e in EXPERIMENTS for dt in ("f32", "f64")],
    *[f"results/tables/{t}_{e}.{x}" for t in TABLES for e in EXPERIMENTS for x in ("csv", "md")],
    *[f"results/plots/{p}_{e}.png" for p in ("gaps", "losses", "layers") for e in EXPERIMENTS],
    "results/tables/bias_correction.csv",
    "results/tables/bias_correction.md",
    "results/provenance.json",
    "results/report.md",
    "results/report.html",
    "results/verdicts.html",
    *[f"results/pages/{e}.html" for e in EXPERIMENTS],
    *[f"results/html/{e}/{t}.html" for t in TABLES for e in EXPERIMENTS],
    *[f"results/html/{e}/compare_{dt}.html" for e in EXPERIMENTS for dt in ("f32", "f64")],
    "results/html/bias_correction.html",
]


def small_pipeline_config(**overrides) -> dict:
    config = {
        "steps": 6,
        "batch_size": 16,
        "threads": 1,
        "cpu_path": TEST_CPU_PATH,
        "report_steps": [1, 2, 5],
        "tolerance": {"f32": 1e-6, "f64": 1e-12},
        # No proving runs of pitfall's and momentum's fixes here: the default config's test
        # runs them (test_default_config.py), this small run stays four experiments.
        "prove_fixes": False,
        "experiments": {
            "sgd": dict(SGD),
            "adam": dict(ADAM),
            # Burn keeps its default SGD dampening (0.1) where PyTorch uses 0.
            "momentum": dict(SGD, lr=0.1, momentum=0.9, keep_defaults={"burn": ["dampening"]}),
            # Burn keeps its default Adam epsilon (1e-5) where PyTorch uses 1e-8.
            "pitfall": dict(ADAM, keep_defaults={"burn": ["eps"]}, tolerance={"f32": 1e-5}),
        },
    }
    config.update(overrides)
    return config


def copy_project(
    dest: Path, config: dict, config_name: str = "config.yaml", trainer_built: bool = True
) -> Path:
    """A copy of the project's pipeline files (no results/, no build output) with `config`
    as its config.yaml, or under `config_name` beside the project's own config.yaml.

    trainer_built: the suite's Burn trainer (conftest.BURN_BINARY, the `burn_binary`
    fixture's build of these same sources) is placed as the copy's results/bin/parity-train,
    newer than its sources, so that the copy's pipeline finds its build_burn job done. Cargo
    would otherwise compile the trainer again for each copy (another source folder: 25 s on
    2 cores, holding the shared target folder's lock while the other copies wait). False
    where the build itself is under test."""
    for name in PROJECT_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(
                src, dest / name, ignore=shutil.ignore_patterns("target", "__pycache__")
            )
        elif src.exists():
            shutil.copy2(src, dest / name)
    (dest / config_name).write_text(yaml.safe_dump(config, sort_keys=False))
    if trainer_built and BURN_BINARY.is_file():
        (dest / "results" / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy(BURN_BINARY, dest / "results" / "bin" / "parity-train")  # mtime: now
    return dest


def snakemake(
    workdir: Path, *args: str, check: bool = True, env: dict | None = None
) -> subprocess.CompletedProcess:
    # Share the project's cargo target dir: only the crate itself is recompiled for the copy.
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "rust" / "target"), **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def planned_jobs(workdir: Path) -> Counter:
    """Jobs a dry run would execute, as Counter of (rule, experiment wildcard or None)."""
    out = snakemake(workdir, "--dry-run", "--cores", "1").stdout
    jobs: Counter = Counter()
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", out):
        match = re.match(r"(?:local)?rule (\w+):", block)
        if not match:
            continue
        wildcards = re.search(r"wildcards: .*?experiment=(\w+)", block)
        jobs[match.group(1), wildcards.group(1) if wildcards else None] += 1
    return jobs


def rules(jobs: Counter) -> Counter:
    counts: Counter = Counter()
    for (rule, _), n in jobs.items():
        counts[rule] += n
    return counts


@contextmanager
def edited(path: Path, change) -> Iterator[None]:
    """Apply `change` to a file's text, then restore its text and modification time."""
    stat, text = path.stat(), path.read_text()
    path.write_text(change(text))
    try:
        yield
    finally:
        path.write_text(text)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@dataclass(frozen=True)
class Job:
    """One job of a dry run, as Snakemake prints it (with -p for the shell command)."""

    rule: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    reason: str
    shell: str

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return self.rule, self.outputs


_RULE = re.compile(r"(?:local)?rule (\w+):$")
_FIELD = re.compile(r"    (\w+): (.*)$")
_END_OF_JOB = re.compile(r"\[.*\d{4}\]$|Job stats:|Reasons:|This was a dry-run")


def dry_run(workdir: Path, *args: str) -> list[Job]:
    """The jobs `snakemake --dry-run -p` plans, with their files, reasons and commands."""
    out = snakemake(workdir, "--dry-run", "--printshellcmds", "--cores", "1", *args).stdout
    jobs: list[Job] = []
    fields: dict | None = None
    shell: list[str] | None = None

    def close() -> None:
        if fields is not None:
            jobs.append(
                Job(
                    rule=fields["rule"],
                    inputs=tuple(f for f in fields.get("input", "").split(", ") if f),
                    outputs=tuple(f for f in fields.get("output", "").split(", ") if f),
                    reason=fields.get("reason", ""),
                    shell="\n".join(shell or []),
                )
            )

    for line in out.splitlines():
        if match := _RULE.match(line):
            close()
            fields, shell = {"rule": match.group(1)}, None
        elif fields is None:
            continue
        elif _END_OF_JOB.match(line):
            close()
            fields = shell = None
        elif shell is not None:
            shell.append(line)
        elif line.startswith("Shell command:"):
            shell = [line.removeprefix("Shell command:").strip()]
        elif match := _FIELD.match(line):
            fields[match.group(1)] = match.group(2)
    close()
    return jobs
