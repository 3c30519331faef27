"""Assemble results/report.md from the pipeline's outputs.

    python -m torch_burn_parity.report.report --config results/specs/report/config.json \\
        --results results --data results/data/cnn1d.safetensors results/data/cnn_bn.safetensors \\
        --out results/report.md

Reads the compare outputs, the tables (steps, config diff, replay, counterfactual, probe,
learning rates, layers where the runs hold a layer record, bias correction), the run files,
the dataset files (--data, one per model: the shapes), the plots and provenance.json. Every
number and verdict in the report is computed here from those files; nothing is typed in.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from torch_burn_parity.config.parity_config import ConfigError
from torch_burn_parity.config.proving import SUFFIX, original
from torch_burn_parity.config.resolve import read_spec
from torch_burn_parity.io.parity_io import (
    FormatError,
    read_text,
    write_text_atomic,
)
from torch_burn_parity.judgement import effect as ef
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.models.model_specs import DEFAULT_MODEL, ModelSpec, model_of
from torch_burn_parity.report.actions import actions_section
from torch_burn_parity.report.atlas import atlas_section
from torch_burn_parity.report.cpu_section import cpu_section
from torch_burn_parity.report.experiment import Experiment
from torch_burn_parity.report.experiment_files import dataset_shapes
from torch_burn_parity.report.headline import headline
from torch_burn_parity.report.markdown import md_table
from torch_burn_parity.report.summaries import FULL_SECTIONS_UP_TO, bias_section, sweep_section
from torch_burn_parity.report.what_was_run import hyperparameter_table, provenance_lines

TEMPLATES = Path(__file__).with_name("templates")


def fault_text(fault: dict) -> str:
    """'fc.weight flat index 67 += 1e-09 after step 3', or for a layer's output 'the output
    of relu, flat index 3, += 1e-06 in the forward of step 1'."""
    if "layer" in fault:
        return (
            f"the output of {fault['layer']}, flat index {fault['index']}, += {fault['delta']:g}"
            f" in the forward of step {fault['step']}"
        )
    return (
        f"{fault['parameter']} flat index {fault['index']} += {fault['delta']:g}"
        f" after step {fault['step']}"
    )


def render(template: str, **context) -> str:
    """A template of report/templates/ filled in: the prose is there, the numbers here."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,  # a missing value is an error, never a blank
        autoescape=False,  # Markdown, not HTML
    )
    return environment.get_template(template).render(**context)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="report_config.json")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument(
        "--data", required=True, type=Path, nargs="+", help="the dataset files (shapes)"
    )
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        text = build(args)
    except (ConfigError, FormatError, OSError, KeyError, ValueError) as exc:
        sys.exit(f"report: {exc}")
    write_text_atomic(args.out, text)
    print(f"report: {args.out}")


def read_json(path: Path) -> dict:
    """A JSON file of the pipeline's, or a FormatError naming it."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def verdict_records(path: Path) -> dict[str, dict]:
    """results/verdicts.json by experiment (judgement/judge.py's records)."""
    try:
        return {r["experiment"]: r for r in read_json(path)["experiments"]}
    except (KeyError, TypeError):
        raise FormatError(f"{path}: not a verdicts file (no experiments' records)") from None


def missing_record(results: Path, name: str) -> dict:
    raise FormatError(f"{results / 'verdicts.json'}: no verdict record of experiment {name}")


def what_was_trained(models: list[ModelSpec]) -> str:
    """The report's opening words: 'The same 1-D CNN' (the seed's model alone), 'The same
    small models (`cnn1d`, `cnn_bn`, `transformer`)', or, where any model is not at its
    default size or is a user's port (of any size: ResNet-18's 11 M parameters), each
    model's tag and parameter count."""
    tags = sorted({m.tag: m for m in models}.values(), key=lambda m: (m.param_count, m.tag))
    if [m.tag for m in tags] in ([], [DEFAULT_MODEL]):
        return "The same 1-D CNN"
    plural = "s" if len(tags) > 1 else ""
    if all(m.tag == m.name and m.port is None for m in tags):
        return f"The same small model{plural} (" + ", ".join(f"`{m.tag}`" for m in tags) + ")"
    sized = ", ".join(f"`{m.tag}`: {m.param_count:,} parameters" for m in tags)
    return f"The same model{plural} ({sized})"


def pair_up(experiments: list[Experiment]) -> None:
    """Give each experiment that leaves values to Burn's defaults the experiment passing the
    same optimizer PyTorch's values on the same model and backend, when the run has one, and
    its proving run's record when it has one."""
    plain = {
        (x.optimizer, x.model, x.spec.burn_backend): x
        for x in experiments
        if x.is_plain and not x.spec.param_groups and not original(x.name)
    }
    for x in experiments:
        if any(x.spec.keep_defaults.values()):
            twin = plain.get((x.optimizer, x.model, x.spec.burn_backend))
            x.paired = twin.record if twin else None
    # and each its proving run's record: the fix applied on Burn's side (config/proving.py)
    by_name = {x.name: x for x in experiments}
    for x in experiments:
        proof = by_name.get(x.name + SUFFIX)
        x.proof = proof.record if proof else None


def build(args: argparse.Namespace) -> str:
    """The whole report's text, from the files under --results."""
    effective = read_json(args.config)
    config = effective["config"]
    sweeps = effective.get("sweeps", {})
    # Experiments of a large sweep get no section of their own: the sweep's section sums
    # them up from its summary and links their tables.
    summarised = {n for members in sweeps.values() if len(members) > FULL_SECTIONS_UP_TO
                  for n in members}  # fmt: skip
    info = read_json(args.results / "provenance.json")
    records = verdict_records(args.results / "verdicts.json")
    shapes = dataset_shapes(args.data)
    experiments = [
        Experiment(
            name, read_spec(args.results / "specs" / f"{name}.json"), args.results,
            effective["tolerances"][name], shapes, config["report_steps"],
            records.get(name) or missing_record(args.results, name),
            entry.get("description", ""),
        )
        for name, entry in config["experiments"].items()
        if name not in summarised
    ]  # fmt: skip
    pair_up(experiments)
    sweep_parts = [
        sweep_section(args.results, name, members, len(members) > FULL_SECTIONS_UP_TO)
        for name, members in sweeps.items()
    ]
    summary = pd.DataFrame([x.summary_row() for x in experiments])
    summary = md_table(summary) if experiments else "No experiment outside the sweeps."
    shown: dict[str, str] = {}
    faults = sorted(
        {
            f"`{x.name}` ({fw} {dt}: {fault_text(f)})"
            for x in experiments
            for (fw, dt), run in x.runs.items()
            if (f := run["meta"].get("fault"))
        }
    )
    return render(
        "report.md.j2",
        what=what_was_trained([model_of(x.runs["torch", "f32"]) for x in experiments]),
        steps=config["steps"],
        batch_size=config["batch_size"],
        faults="; ".join(faults),
        headline=headline([x.record for x in experiments]),
        actions=actions_section(experiments),
        atlas=atlas_section(experiments) if len({x.optimizer for x in experiments}) > 1 else "",
        summary=summary,
        safety=f"{vd.SAFETY:g}",
        no_effect_digits=ef.NO_EFFECT_DIGITS,
        marginal=f"{ef.MARGINAL:g}",
        absolute_floor=f"{vd.ABSOLUTE_FLOOR:.2g}",
        provenance="\n".join(provenance_lines(info, experiments)),
        hyperparameters=hyperparameter_table(config, effective["tolerances"], summarised),
        cpu=cpu_section(
            [run["meta"] for x in experiments for run in x.runs.values()],
            max(
                (x.verdict.f64_gap for x in experiments if x.verdict.label == vd.EQUIVALENT),
                default=None,
            ),
        ),
        layers=any(x.has_layers for x in experiments),
        buffers=any(x.buffer_names for x in experiments),
        sweeps=sweep_parts,
        sections=[x.section(shown) for x in experiments],
        bias=bias_section(args.results, config["report_steps"]),
    )


if __name__ == "__main__":
    main()
