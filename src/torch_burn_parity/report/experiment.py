"""One experiment's section of the report: what its files (experiment_files.py) show."""

from __future__ import annotations

import numpy as np
import pandas as pd

from torch_burn_parity.analysis.gaps import report_steps_of
from torch_burn_parity.config import burn_fixes
from torch_burn_parity.io.parity_io import DTYPES
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.models.model_specs import DEFAULT_MODEL, model_of
from torch_burn_parity.report import depth_plot, readings, shares
from torch_burn_parity.report import verdict_text as vt
from torch_burn_parity.report.actions import anchor
from torch_burn_parity.report.experiment_files import ExperimentFiles
from torch_burn_parity.report.headline import effect_cell, margin_cell
from torch_burn_parity.report.markdown import (
    COMPARE_LINE,
    body,
    compare_verdict,
    distinct,
    md_table,
    setting,
    trend,
)
from torch_burn_parity.report.verdict_text import e


class Experiment(ExperimentFiles):
    """Everything the report says about one experiment: its section, from its files."""

    def over(self) -> str:
        """The steps the per-step tables cover, in words: '100 steps', or 'the 12 recorded
        steps of 100'."""
        n, rows = self.step_count, len(self.steps)
        return f"{n} steps" if rows == n else f"the {rows} recorded steps of {n}"

    def evidence(self) -> list[str]:
        s, v = self.steps, self.verdict
        n = self.step_count
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
            far = "far above" if self.record["far_above_floor"] else "above"
            out.append(
                f"In f64 a gap of {e(v.f64_gap)} remains, {far} the rounding floor of"
                f" {e(v.floor)} at that step. It leaves the floor at step {first}"
                f" (at `{self.record['where_first_above']}`) and {trend(s['f64_f64'])}: a"
                " difference in the arithmetic, not f64 rounding."
            )
        if v.split and v.label != vd.DIVERGED:
            out.append(self.split_reading())
        r, c = self.replay, self.counterfactual
        replay_worst = int(np.nanargmax(r["dparam"])) if r["dparam"].notna().any() else 0
        factors = " and the per-step factors it recorded" if self.has_factors else ""
        floor = vd.rounding_floor(s["torch_f64"], s["burn_f64"])
        replay_left = vd.first_step_above(r["dparam"], floor, r["step"])
        worst = f"(step {r['step'].iloc[replay_worst]}, `{r['where'].iloc[replay_worst]}`)"
        out.append(
            f"Replay: Burn's update rule run on the PyTorch side in f64, with the values Burn"
            f" held{factors}, "
            + (
                f"misses Burn's f64 run by up to {e(r['dparam'].max())} over {self.over()}"
                f" {worst},"
                f" above the rounding floor (which it leaves at step {replay_left},"
                f" `{r.loc[r['step'] == replay_left, 'where'].iloc[0]}`)."
                if replay_left is not None
                else f"reproduces Burn's f64 run to {e(r['dparam'].max())} at worst over"
                f" {self.over()} {worst}."
            )
        )
        held, counter = c["dparam_held_f64"].max(), c["dparam"].max()
        held_step = int(c["step"].iloc[int(np.nanargmax(c["dparam_held_f64"]))]) if n else 0
        reproduces = (
            f"misses PyTorch's f64 run by up to {e(counter)}, above the rounding floor"
            if vd.first_step_above(c["dparam"], floor, c["step"]) is not None
            else f"reproduces PyTorch's f64 run to {e(counter)}"
        )
        muon = (
            " (Muon's as PyTorch computes it: its averaged momentum, Newton–Schulz in bfloat16,"
            " the lr factor of PyTorch's shapes)"
            if "dparam_burn_newton_schulz" in c
            else ""
        )
        out.append(
            f"Counterfactual: the same rule{muon} with PyTorch's hyperparameters, every scalar"
            f" in f64, {reproduces}. With Burn's held values instead"
            + (
                f" (still every scalar in f64) it is {e(held)} from PyTorch's run at worst"
                f" (step {held_step}) and {e(c['dparam_held_f64'].iloc[-1])} after step {n}."
                if held > 0
                else " (still every scalar in f64) it matches PyTorch's run exactly."
            )
        )
        if v.label == vd.EXPLAINED and v.f64_gap > 0:
            out.append(shares.share_sentence(self, held))
            out.append(shares.fix_sentence(self))
        if self.record.get("sensitivity"):
            out.append(shares.sensitivity_sentence(self.record["sensitivity"]))
        tol32 = self.tolerances["f32"]
        first32 = self.record["first_f32_step_above_tol"]
        rounding = (
            f" Each framework's own f32-vs-f64 gap reaches {e(s['torch_f64'].max())} (PyTorch)"
            f" and {e(s['burn_f64'].max())} (Burn), over the tolerance too and of the order of"
            " the f32 gap: f32 rounding alone exceeds this tolerance."
            if self.record["f32_rounding_exceeds_tol"]
            else ""
        )
        gap = "gap of parameters and buffers" if self.buffer_names else "parameter gap"
        out.append(
            f"The f32 {gap} first exceeds the f32 tolerance {tol32:g} at step {first32}"
            f" and {trend(s['dparam'])}.{rounding}"
            if first32
            else f"The f32 {gap} stays within the f32 tolerance {tol32:g} at every step."
        )
        preds = {fw: self.runs[fw, "f32"]["final"]["predictions"] for fw in ("torch", "burn")}
        final = {fw: self.runs[fw, "f32"]["final"] for fw in ("torch", "burn")}
        mode = " (in eval mode)" if self.buffer_names else ""
        losses = distinct(float(final["torch"]["loss"]), float(final["burn"]["loss"]))
        if preds["torch"] is None or preds["burn"] is None:  # a regression: no classes
            out.append(
                f"After training the two f32 models{mode} reach a final loss of {losses[0]}"
                f" (PyTorch) and {losses[1]} (Burn)."
            )
        else:
            same = sum(a == b for a, b in zip(preds["torch"], preds["burn"], strict=True))
            out.append(
                f"After training the two f32 models{mode} agree on {same} of"
                f" {len(preds['torch'])} predictions; PyTorch's gets"
                f" {final['torch']['correct']} right (final loss {losses[0]}), Burn's"
                f" {final['burn']['correct']} (final loss {losses[1]})."
            )
        out += [f"Divergence: {line}." for line in vt.divergence(self.record)]
        return out

    def split_reading(self) -> str:
        """The parameters' and the buffers' f64 gaps apart, each against the floor."""
        split, buffers = self.verdict.split, ", ".join(self.buffer_names)

        def where(first: int | None) -> str:
            if first is None:
                return "within the rounding floor at every step"
            return f"leaving the rounding floor at step {first}"

        text = (
            f"Parameters and buffers apart: the f64 parameter gap reaches {e(split.params_gap)}"
            f" ({where(split.params_first)}); the f64 gap of the buffers ({buffers}, which"
            f" only an eval-mode forward reads) reaches {e(split.buffers_gap)}"
            f" ({where(split.buffers_first)})."
        )
        if split.scope == vd.EVALUATION:
            text += " Training matches; only the evaluation state (the running statistics) differs."
        return text

    def layers_reading(self) -> str:
        """The layers table's sentence, its files, and for a model with buffers train-mode
        against eval-mode losses."""
        sentence = body(self.md["layers"]).split("\n\n")[0]
        if depth_plot.is_deep(self.layers):  # a summary; the full table is a page
            sentence += (
                f" {depth_plot.summary(self.layers)} The full table is a page of its own:"
                f" `html/{self.name}/layers.html`."
            )
        parts = [
            "### Where the difference enters\n",
            f"{sentence} Every quantity of the probe steps, torch vs burn at each dtype and"
            f" against its own rounding floor: `tables/layers_{self.name}.csv`.\n",
            f"![where the difference enters in {self.name}](plots/layers_{self.name}.png)\n",
        ]
        if self.buffer_names:
            parts.append(readings.eval_reading(self) + "\n")
        return "\n".join(parts)

    def lr_reading(self) -> str:
        """The schedule each framework ran and where their lr sequences part (lrs table)."""
        schedule = self.spec.schedule
        if schedule["kind"] == "constant":
            text = "Schedule: constant. "
        else:
            own = (
                "PyTorch's scheduler, and its recursion by hand for Burn (burn_fixes:"
                " pytorch_schedule)"
                if burn_fixes.SCHEDULE in self.spec.burn_fixes
                else "each framework's own scheduler"
            )
            text = f"Schedule: {setting('schedule', schedule)}, {own}. "
        if (self.lrs["rel_diff"] == 0).all():  # the sentence says so; the table would repeat it
            return text + body(self.md["lrs"]).split("\n\n")[0]
        return text + body(self.md["lrs"]) + f"\n\nEvery step: `tables/lrs_{self.name}.csv`."

    def compare_table(self) -> str:
        """Both compare outputs side by side: one row per key, then the worst of each."""
        keys = {dt: COMPARE_LINE.findall(self.compare[dt]) for dt in DTYPES}
        rows = [
            {"key": key.removeprefix(f"{self.name}."), "n": n,
             **{f"max\\|diff\\| {dt}": keys[dt][i][2] for dt in DTYPES}}
            for i, (key, n, _) in enumerate(keys["f32"])
        ]  # fmt: skip
        worst = {}
        for dt in DTYPES:
            value, result = compare_verdict(self.compare[dt])
            worst[f"max\\|diff\\| {dt}"] = (
                f"{value} (tol {self.tolerances[dt]:g}) **{result}**{self.compare_note(dt)}"
            )
        rows.append({"key": "**worst**", "n": "", **worst})
        return md_table(pd.DataFrame(rows))

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
            first = vd.first_step_above(gaps, tol, self.steps["step"])
            rows.append({"gap": label, "max": e(gaps.max()), "tolerance": f"{tol:g} ({dtype})",
                         "first step above tolerance": str(first) if first else "never",
                         "growth (last / step 1)": f"{vd.growth(gaps):.3g}"})  # fmt: skip
        return md_table(pd.DataFrame(rows))

    def summary_row(self) -> dict:
        v = self.verdict
        return {  # seven columns that fit 1,400 px; the section has the rest
            "experiment": anchor(self.record),
            "optimizer": self.optimizer,
            "verdict": v.label,
            "effect on training (f32)": effect_cell(self.record),
            "cause, or where it starts": vt.verdict_detail(self.record) or "—",
            "f64 gap (max over steps)": e(v.f64_gap),
            "gap / floor": margin_cell(self.record),
        }

    def compare_note(self, dtype: str) -> str:
        """' (f32 rounding alone exceeds the tolerance)' for an f32 MISMATCH that f32
        rounding alone explains, else ''."""
        _, result = compare_verdict(self.compare[dtype])
        rounding = (
            dtype == "f32"
            and result == "MISMATCH"
            and self.record["f32_rounding_over_tol"]
            and self.verdict.label == vd.EQUIVALENT
        )
        return " (f32 rounding alone exceeds the tolerance)" if rounding else ""

    def section(self, shown: dict[str, str]) -> str:
        """This experiment's section. shown: table text -> experiment that printed it first."""
        n, name = self.step_count, self.name
        tag = model_of(self.runs["torch", "f32"]).tag
        model = "" if tag == DEFAULT_MODEL else f", model: {tag}"
        groups = "".join(
            f"; param_groups[{i}]: {g['optimizer']} on {len(g['params'])} parameters"
            for i, g in enumerate(self.runs["torch", "f32"]["meta"].get("param_groups") or [])
        )
        parts = [f"## Experiment `{name}` (optimizer: {self.optimizer}{groups}{model})\n"]
        # The target of the action list's and the verdict table's links (actions.anchor).
        parts.append(f'<a id="experiment-{name}"></a>\n')
        if self.description.strip():
            parts.append(f"*{self.description.strip()}*\n")
        parts.append(f"**Verdict: {vt.verdict_line(self.record)}.**\n")
        parts.append(
            f"Effect on training (f32): {effect_cell(self.record)}; gap / floor"
            f" {margin_cell(self.record)}.\n"
        )
        parts += [f"- {line}" for line in self.evidence()]
        parts.append("\n### Config diff\n")
        parts.append(body(self.md["config_diff"]) + "\n")
        parts.append("### Compare (losses and final values)\n")
        parts.append(f"Files: `compare/{name}-f32.txt`, `compare/{name}-f64.txt`.\n")
        parts.append(self.compare_table() + "\n")
        parts.append("### Gaps step by step\n")
        parts.append(self.gap_table() + "\n")
        shown_steps = int(report_steps_of(self.steps["step"], self.report_steps).sum())
        if len(self.steps) < n:
            parts.append(
                f"The runs recorded their tensors at {len(self.steps)} of the {n} steps"
                f" (`record`, or the `record_budget_mb` its size left); the tables, replay,"
                " verdict and plots cover those steps, the losses and lrs every step.\n"
            )
        every = "every step" if len(self.steps) == n else "every recorded step"
        parts.append(f"{shown_steps} of {n} steps; {every}: `tables/steps_{name}.csv`.\n")
        parts.append(body(self.md["steps"]) + "\n")
        parts.append(f"![parameter gaps of {name}](plots/gaps_{name}.png)\n")
        parts.append(f"![loss difference of {name}](plots/losses_{name}.png)\n")
        if self.has_layers:
            parts.append(self.layers_reading())
        parts.append("### Replay and counterfactual\n")
        for key, label in (
            ("replay", "Replay (Burn's rule, Burn's held values) vs Burn f64"),
            ("counterfactual", "Counterfactual (Burn's rule, PyTorch's values) vs PyTorch f64"),
        ):
            frame, table = getattr(self, key), body(self.md[key])
            if frame["dparam"].eq(0).all() and frame["dloss"].eq(0).all():
                # Named: two experiments' all-zero tables would otherwise read the same.
                parts.append(
                    f"{label}: 0 at every one of `{name}`'s {self.over()} (bit-identical).\n"
                )
            elif table in shown:
                parts.append(f"{label}: the same table as `{shown[table]}`'s.\n")
            else:
                shown[table] = name
                parts.append(f"{label}, {shown_steps} of {n} steps:\n\n{table}\n")
        parts.append("### Learning rate\n")
        parts.append(self.lr_reading() + "\n")
        parts.append(f"### Gradient probe at step 1: `{self.probe['parameter'].iloc[0]}`\n")
        parts.append(body(self.md["probe"]) + "\n")
        parts.append(readings.probe_reading(self) + "\n")
        return "\n".join(parts)
