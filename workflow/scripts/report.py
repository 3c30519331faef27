"""Assemble results/report.md from the pipeline's outputs.

    python workflow/scripts/report.py --config results/specs/report_config.json \\
        --results results --out results/report.md

Reads the compare outputs, the tables (steps, config diff, replay, counterfactual, probe,
bias correction), the run files, the plots and provenance.json. Every number and verdict
in the report is computed here from those files; nothing is typed in.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import verdict as vd  # noqa: E402
from gaps import flat_names, param_matrix  # noqa: E402
from parity_io import FormatError, experiment_block, write_text_atomic  # noqa: E402

DTYPES = ("f32", "f64")
RUNS = [(fw, dt) for fw in ("torch", "burn") for dt in DTYPES]


def e(x: float) -> str:
    """A gap as the tables print it."""
    return "NaN" if x != x else f"{x:.2e}"


def compare_verdict(text: str) -> tuple[str, str]:
    """(worst, OK|MISMATCH) from the last line of a compare output."""
    last = text.strip().splitlines()[-1]  # worst=3.52e-06 tol=1e-06 MISMATCH
    fields = dict(part.split("=", 1) for part in last.split()[:2])
    return fields["worst"], last.split()[-1]


def demote(md: str) -> str:
    """Render a table's own '### title' one level lower inside an experiment section."""
    return md.replace("### ", "#### ", 1).rstrip()


class Experiment:
    """Everything the report says about one experiment, read from the pipeline's files."""

    def __init__(self, name: str, spec: dict, results: Path, tolerances: dict) -> None:
        tables = results / "tables"
        self.name, self.spec, self.tolerances = name, spec, tolerances
        self.steps = pd.read_csv(tables / f"steps_{name}.csv")
        self.config_diff = pd.read_csv(tables / f"config_diff_{name}.csv", keep_default_na=False)
        self.replay = pd.read_csv(tables / f"replay_{name}.csv")
        self.counterfactual = pd.read_csv(tables / f"counterfactual_{name}.csv")
        self.probe = pd.read_csv(tables / f"probe_{name}.csv")
        self.md = {
            key: (tables / f"{key}_{name}.md").read_text()
            for key in ("steps", "config_diff", "replay", "counterfactual", "probe")
        }
        self.compare = {dt: (results / "compare" / f"{name}-{dt}.txt").read_text() for dt in DTYPES}
        self.runs = {
            (fw, dt): experiment_block(results / "runs" / name / f"{fw}-{dt}.json", name)
            for fw, dt in RUNS
        }
        s = self.steps
        differing = self.config_diff[self.config_diff["status"] == "differs"]
        stored = self.config_diff[self.config_diff["status"] == "f32 storage"]["hyperparameter"]
        self.cause = vd.cause(self.optimizer, differing.to_dict("records"), list(stored))
        self.verdict = vd.classify(
            s["f64_f64"],
            s["torch_f64"],
            s["burn_f64"],
            [self.replay["dparam"], self.counterfactual["dparam"]],
            self.cause,
        )
        if self.divergence():
            self.verdict.label = vd.DIVERGED

    @property
    def optimizer(self) -> str:
        return self.runs["torch", "f32"]["meta"]["optimizer"]

    def verdict_line(self) -> str:
        v = self.verdict
        if v.label == vd.DIVERGED:
            return f"{v.label}: {'; '.join(self.divergence())}"
        if v.label == vd.EXPLAINED:
            return f"{v.label} by {v.cause}"
        if v.label == vd.UNEXPLAINED:
            step = v.first_above_floor
            return (
                f"{v.label}: the f64 gap leaves the rounding floor at step {step}"
                f" (`{self.where_f64(step)}`)"
            )
        return v.label

    def where_f64(self, step: int) -> str:
        """The parameter with the largest torch-f64 vs burn-f64 gap after `step`."""
        torch64 = param_matrix(self.runs["torch", "f64"])[step - 1]
        burn64 = param_matrix(self.runs["burn", "f64"])[step - 1]
        diff = np.nan_to_num(np.abs(torch64 - burn64), nan=np.inf)
        return flat_names(self.runs["torch", "f64"])[int(np.argmax(diff))]

    def divergence(self) -> list[str]:
        """'torch f32 diverged at step 5' for each run whose loss or parameters went non-finite."""
        lines = []
        for fw, dt in RUNS:
            run = self.runs[fw, dt]
            losses = np.asarray(run["losses"], dtype=float)
            finite = np.isfinite(losses) & np.isfinite(param_matrix(run)).all(axis=1)
            if not finite.all():
                step = int(np.argmin(finite))
                lines.append(
                    f"{fw} {dt} diverged at step {step + 1} (loss {losses[step]:.3g} at that step)"
                )
        return lines

    def evidence(self) -> list[str]:
        s, v = self.steps, self.verdict
        n = len(s)
        out = []
        if v.label == vd.DIVERGED:
            out.append(
                "A run went non-finite, so the gaps below compare overflowing numbers and say"
                " nothing about the arithmetic; lower the learning rate to compare the frameworks."
            )
        elif v.label == vd.EQUIVALENT:
            out.append(
                f"In f64 the frameworks agree to {e(v.f64_gap)} at worst, under the rounding"
                f" floor of {e(v.floor)} that f64 arithmetic explains. The f32 gap (up to"
                f" {e(s['dparam'].max())}) is therefore rounding: each framework's own"
                f" f32-vs-f64 gap reaches {e(s['torch_f64'].max())} (PyTorch) and"
                f" {e(s['burn_f64'].max())} (Burn)."
            )
        else:
            first = v.first_above_floor
            out.append(
                f"In f64 a gap of {e(v.f64_gap)} remains, far above the rounding floor of"
                f" {e(v.floor)}. It leaves the floor at step {first}"
                f" (at `{self.where_f64(first)}`) and grows {vd.growth(s['f64_f64']):.3g}× from"
                f" step 1 to step {n}: a difference in the arithmetic, not rounding."
            )
        r, c = self.replay, self.counterfactual
        replay_worst = int(np.nanargmax(r["dparam"])) if r["dparam"].notna().any() else 0
        out.append(
            f"Replay: Burn's update rule run on the PyTorch side in f64, with the values Burn"
            f" held{' and the factors it recorded' if self.optimizer == 'adam' else ''},"
            f" reproduces Burn's f64 run to {e(r['dparam'].max())} at worst over {n} steps"
            f" (step {r['step'].iloc[replay_worst]}, `{r['where'].iloc[replay_worst]}`)."
        )
        out.append(
            f"Counterfactual: the same rule with PyTorch's hyperparameters"
            f"{', factors in f64,' if self.optimizer == 'adam' else ''} reproduces PyTorch's"
            f" f64 run to {e(c['dparam'].max())}; with Burn's values in f64 arithmetic it is"
            f" {e(c['dparam_held_f64'].max())} away from PyTorch."
        )
        if v.label == vd.EXPLAINED and self.optimizer == "adam" and "config diff" not in v.cause:
            share = c["dparam_held_f64"].max() / v.f64_gap
            out.append(
                f"So the f32 storage of β₁, β₂ and ε accounts for {e(c['dparam_held_f64'].max())}"
                f" ({share:.1%} of the gap) and the f32 evaluation of the bias-correction factors"
                " for the rest: computing them in f64 from the configured betas would close it."
            )
        if v.label == vd.EXPLAINED and "config diff" in v.cause:
            out.append(
                "The configs differ in effect: the rows marked `differs` in the config diff above"
                " are the cause; passing the same value to both frameworks closes the gap."
            )
        tol32 = self.tolerances["f32"]
        first32 = vd.first_step_above(s["dparam"], tol32)
        out.append(
            f"The f32 parameter gap first exceeds the f32 tolerance {tol32:g} at step {first32}"
            f" and grows {vd.growth(s['dparam']):.3g}× over the run."
            if first32
            else f"The f32 parameter gap stays within the f32 tolerance {tol32:g} at every step."
        )
        preds = {fw: self.runs[fw, "f32"]["final"]["predictions"] for fw in ("torch", "burn")}
        same = sum(a == b for a, b in zip(preds["torch"], preds["burn"], strict=True))
        out.append(
            f"After training the two f32 models classify {same} of {len(preds['torch'])} samples"
            f" the same way (correct: PyTorch {self.runs['torch', 'f32']['final']['correct']},"
            f" Burn {self.runs['burn', 'f32']['final']['correct']})."
        )
        out += [f"Divergence: {line}." for line in self.divergence()]
        return out

    def probe_reading(self) -> str:
        p = self.probe.set_index(["framework", "dtype"])
        name = p["parameter"].iloc[0]
        torch32, burn32 = p.loc[("torch", "f32")], p.loc[("burn", "f32")]
        g64 = p.loc[("torch", "f64"), "grad"]
        column = self.steps["torch_f64"].iloc[0]
        text = (
            f"At step 1, `{name}` has an f64 gradient of {g64:.4g}; the f32 gradient is off by"
            f" {torch32['grad_rel_err']:.2e} (PyTorch) and {burn32['grad_rel_err']:.2e} (Burn)"
            " relative — a small gradient made of terms that nearly cancel keeps few correct f32"
            f" digits. Its step-1 update is {p.loc[('torch', 'f64'), 'update']:.4g} in f64."
        )
        if self.optimizer == "adam":
            text += (
                " Adam's first update is ≈ −lr·g/(|g| + ε), about −lr whatever the size of g, so"
                " the parameter moves by a full step while its gradient's error still reaches the"
                f" update: in PyTorch the f32 update differs from the f64 one by"
                f" {e(torch32['update_diff'])}, which is {torch32['update_diff'] / column:.0%} of"
                f" the `torch-f64` column at step 1 ({e(column)})."
            )
        else:
            text += (
                f" SGD's update is −lr·g, so the gradient's error moves it by only"
                f" {e(torch32['update_diff'])} (PyTorch f32 vs f64)."
            )
        return text

    def gap_table(self) -> str:
        """For each gap series: its largest value, first step over the tolerance, growth."""
        labels = {
            "dparam": ("f32: torch vs burn", "f32"),
            "torch_f64": ("torch: f32 vs f64", "f32"),
            "burn_f64": ("burn: f32 vs f64", "f32"),
            "f64_f64": ("f64: torch vs burn", "f64"),
        }
        rows = []
        for column, (label, dtype) in labels.items():
            gaps, tol = self.steps[column], self.tolerances[dtype]
            first = vd.first_step_above(gaps, tol)
            rows.append({"gap": label, "max": e(gaps.max()), "tolerance": f"{tol:g} ({dtype})",
                         "first step above": str(first) if first else "never",
                         "growth (last / step 1)": f"{vd.growth(gaps):.3g}"})  # fmt: skip
        return pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True)

    def summary_row(self) -> dict:
        s, v = self.steps, self.verdict
        return {
            "experiment": self.name,
            "optimizer": self.optimizer,
            "verdict": v.label,
            "max f64-f64": e(v.f64_gap),
            "rounding floor": e(v.floor),
            "replay": e(v.replay_gap) if v.replay_gap is not None else "",
            "max f32 gap": e(s["dparam"].max()),
            **{f"compare {dt}": " ".join(compare_verdict(self.compare[dt])) for dt in DTYPES},
        }

    def section(self) -> str:
        parts = [f"## Experiment `{self.name}` ({self.optimizer})\n"]
        if self.spec.get("description"):
            parts.append(f"*{self.spec['description'].strip()}*\n")
        parts.append(demote(self.md["config_diff"]) + "\n")
        parts.append(f"**Verdict: {self.verdict_line()}.**\n")
        parts += [f"- {line}" for line in self.evidence()]
        for dt in DTYPES:
            parts.append(
                f"\n**Compare, {dt}** (tol {self.tolerances[dt]:g}):\n\n```text\n"
                f"{self.compare[dt].rstrip()}\n```"
            )
        parts.append("\n" + self.gap_table())
        parts.append("\n" + demote(self.md["steps"]))
        parts.append(
            "\nColumns: `max|dparam|` torch f32 vs burn f32; `torch-f64` torch f32 vs torch f64;"
            " `burn-f64` burn f32 vs burn f64; `f64-f64` torch f64 vs burn f64 (max |Δ| over all"
            " parameters after the step).\n"
        )
        parts.append(f"![gaps]({Path('plots') / f'gaps_{self.name}.png'})")
        parts.append(f"![losses]({Path('plots') / f'losses_{self.name}.png'})\n")
        parts.append(demote(self.md["replay"]) + "\n")
        parts.append(demote(self.md["counterfactual"]) + "\n")
        parts.append(demote(self.md["probe"]) + "\n")
        parts.append(self.probe_reading() + "\n")
        return "\n".join(parts)


def hyperparameter_table(config: dict) -> str:
    rows = []
    for name, exp in config["experiments"].items():
        row = {"experiment": name}
        row.update(
            {
                k: v if isinstance(v, str) else json.dumps(v)
                for k, v in exp.items()
                if k != "description"
            }
        )
        rows.append(row)
    return pd.DataFrame(rows).fillna("").to_markdown(index=False)


def threads(info: dict, framework: str) -> str:
    return ", ".join(str(t) for t in info["threads"].get(framework, [])) or "?"


def provenance_lines(info: dict, experiments: list[Experiment]) -> list[str]:
    hashes = {run["meta"]["input_sha256"] for x in experiments for run in x.runs.values()}
    torch_meta = experiments[0].runs["torch", "f32"]["meta"]
    git = info["git"]
    commit = "not a git checkout"
    if git["commit"]:
        commit = f"`{git['commit'][:12]}`" + (" (uncommitted changes)" if git["dirty"] else "")
    return [
        f"- PyTorch {info['torch']} (CPU kernels: {torch_meta.get('torch_cpu_capability')}),"
        f" threads {threads(info, 'torch')}; Python {info['python']};"
        f" Snakemake {info['snakemake']}",
        f"- Burn {info['burn']} (Flex CPU backend), threads {threads(info, 'burn')};"
        f" {info['rustc']}",
        f"- CPU: {info['cpu']['model']}; SIMD: {', '.join(info['cpu']['simd']) or 'none found'}"
        f"; {info['platform']}",
        f"- Project commit {commit}; effective config SHA-256 `{info['config_sha256'][:16]}…`",
        f"- Input (dataset and initial weights) SHA-256: `{', '.join(sorted(hashes))}`"
        + (" — shared by every run" if len(hashes) == 1 else " — **runs disagree on inputs**"),
    ]


def bias_section(results: Path) -> str:
    frame = pd.read_csv(results / "tables" / "bias_correction.csv")
    md = (results / "tables" / "bias_correction.md").read_text().replace("### ", "## ", 1)
    if frame.empty:
        return md
    reading = []
    for name, group in frame.groupby("experiment", sort=False):
        later = group[group["t"] >= 2]["rel_err"].abs()
        first = f"`{name}`: {e(abs(group['rel_err'].iloc[0]))} relative at t=1"
        reading.append(
            first + (f", {e(later.min())} to {e(later.max())} from t=2 on." if len(later) else ".")
        )
    return (
        md.rstrip()
        + "\n\nBurn keeps β₁, β₂ and ε as f32 and evaluates `sqrt(1 − β₂^t) / (1 − β₁^t)` in f32;"
        " PyTorch evaluates its factors in f64. Burn's combined factor differs from its f64"
        " value by " + " ".join(reading) + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="report_config.json")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    effective = json.loads(args.config.read_text())
    config = effective["config"]
    try:
        info = json.loads((args.results / "provenance.json").read_text())
        experiments = [
            Experiment(name, spec, args.results, effective["tolerances"][name])
            for name, spec in config["experiments"].items()
        ]
    except (FormatError, FileNotFoundError, KeyError, json.JSONDecodeError) as exc:
        sys.exit(f"report: {exc}")
    summary = pd.DataFrame([x.summary_row() for x in experiments])
    summary = summary.to_markdown(index=False, disable_numparse=True)
    parts = [
        "# PyTorch ↔ Burn training parity\n",
        "The same 1-D CNN, trained from the same data and initial weights by PyTorch and by"
        f" Burn, {config['steps']} steps per run (batches of {config['batch_size']} in rotation),"
        " in f32 and in f64. Every number below is computed from this pipeline run.\n",
        "## Verdicts\n",
        *[f"- `{x.name}`: {x.verdict_line()}." for x in experiments],
        "",
        summary + "\n",
        f"The rounding floor is {vd.SAFETY:g} × 2⁻²⁹ × the larger of the two f32-vs-f64 gaps"
        " (a running maximum): what f64 rounding can explain. `replay` is the largest gap left by"
        " the replays of Burn's update rule (see each experiment).\n",
        "## What was run\n",
        *provenance_lines(info, experiments),
        "",
        hyperparameter_table(config) + "\n",
        *[x.section() for x in experiments],
        bias_section(args.results),
    ]
    write_text_atomic(args.out, "\n".join(parts))
    print(f"report: {len(experiments)} experiment(s) -> {args.out}")


if __name__ == "__main__":
    main()
