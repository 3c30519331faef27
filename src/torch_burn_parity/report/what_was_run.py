"""The report's "What was run" section: hyperparameters, versions, threads, backends, inputs."""

from __future__ import annotations

import pandas as pd

from torch_burn_parity.io.parity_io import DTYPES
from torch_burn_parity.models.model_specs import DEFAULT_MODEL
from torch_burn_parity.models.port import Port, is_port
from torch_burn_parity.report.experiment import Experiment
from torch_burn_parity.report.markdown import md_table, setting


def hyperparameter_table(config: dict, tolerances: dict, skip: set[str]) -> str:
    """The experiments as configured (those of large sweeps are in their sweep's summary).
    Empty cells say why they are empty."""
    by_optimizer: dict[str, list[dict]] = {}
    for name, exp in config["experiments"].items():
        if name in skip:
            continue
        row = {"experiment": name}
        row.update({k: setting(k, v) for k, v in exp.items() if k != "description"})
        if is_port(exp.get("model")):  # your own port: its name, module and crate
            found = Port.of(exp["model"])
            row["model"] = f"{found.name} (your port: `{found.module}`, crate `{found.crate}`)"
        row.setdefault("keep_defaults", "none")
        row.setdefault("tolerance", "default: " + setting("tolerance", tolerances[name]))
        row.setdefault("probe", "automatic")
        by_optimizer.setdefault(exp["optimizer"], []).append(row)
    if not by_optimizer:
        return "Every experiment belongs to a sweep: see the sweep sections."
    unset = {
        "schedule": "constant",
        "clip_grad": "none",
        "amsgrad": "false (default)",
        "burn_backend": "flex (default)",
        "model": f"{DEFAULT_MODEL} (default)",
        "probe_steps": "[1] (default)",
        "param_groups": "none",
    }
    tables = [
        md_table(pd.DataFrame(rows).drop(columns="optimizer").fillna(unset).fillna("—"))
        for rows in by_optimizer.values()
    ]
    if len(tables) == 1:
        return tables[0]
    return "\n\n".join(
        f"**{optimizer}**\n\n{table}" for optimizer, table in zip(by_optimizer, tables, strict=True)
    )


def threads(info: dict, framework: str) -> str:
    return ", ".join(str(t) for t in info["threads"].get(framework, [])) or "?"


# Burn's names of the backends a run file's meta.backend records.
BACKEND_NAMES = {"flex": "Flex", "ndarray": "NdArray"}


def burn_backends(experiments: list[Experiment]) -> str:
    """The Burn backends the runs used, from their meta.backend (a run file without one comes
    from a trainer that had only Flex): 'Flex CPU backend', or, when they differ, which
    experiments ran on which."""
    used: dict[str, list[str]] = {}
    for x in experiments:
        for backend in sorted({x.runs["burn", dt]["meta"].get("backend", "flex") for dt in DTYPES}):
            used.setdefault(BACKEND_NAMES.get(backend, backend), []).append(x.name)
    if len(used) <= 1:
        return f"{next(iter(used), 'Flex')} CPU backend"
    parts = []
    for name, members in sorted(used.items(), key=lambda item: -len(item[1])):
        which = ", ".join(members) if len(members) <= 3 else f"{len(members)} experiments"
        parts.append(f"{name} for {which}")
    return "CPU backends: " + "; ".join(parts)


def provenance_lines(info: dict, experiments: list[Experiment]) -> list[str]:
    torch_meta = experiments[0].runs["torch", "f32"]["meta"]
    git = info["git"]
    commit = "not a git checkout"
    if git["commit"]:
        commit = f"`{git['commit'][:12]}`" + (" (uncommitted changes)" if git["dirty"] else "")
    return [
        f"- PyTorch {info['torch']} (CPU kernels: {torch_meta.get('torch_cpu_capability')}),"
        f" threads {threads(info, 'torch')}; Python {info['python']};"
        f" Snakemake {info['snakemake']}",
        f"- Burn {info['burn']} ({burn_backends(experiments)}), threads {threads(info, 'burn')};"
        f" {info['rustc']}",
        f"- CPU: {info['cpu']['model']}; SIMD: {', '.join(info['cpu']['simd']) or 'none found'}"
        f"; {info['platform']}",
        f"- Project commit {commit}; SHA-256 of the effective config (all experiments; each"
        " run's meta holds that of its own experiment's settings)"
        f" `{info['config_sha256'][:16]}…`",
        input_line(experiments),
    ]


def input_line(experiments: list[Experiment]) -> str:
    """The SHA-256 of the inputs the runs read: one dataset for all, or one per model."""
    by_model: dict[str, set[str]] = {}
    for x in experiments:
        for run in x.runs.values():
            by_model.setdefault(x.model, set()).add(run["meta"]["input_sha256"])
    if len(by_model) <= 1:
        hashes = set().union(*by_model.values())
        return f"- Input (dataset and initial weights) SHA-256: `{', '.join(sorted(hashes))}`" + (
            " — shared by every run" if len(hashes) == 1 else " — **runs disagree on inputs**"
        )
    shown = "; ".join(f"{model} `{', '.join(sorted(h))}`" for model, h in sorted(by_model.items()))
    agree = all(len(h) == 1 for h in by_model.values())
    return f"- Input (dataset and initial weights) SHA-256, one dataset per model: {shown}" + (
        " — shared by every run of that model"
        if agree
        else " — **runs of one model disagree on inputs**"
    )
