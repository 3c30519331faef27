"""Assemble results/report.md from the pipeline's outputs.

    python -m torch_burn_parity.report.report --config results/specs/report/config.json \\
        --results results --data results/data/cnn1d.bin results/data/cnn_bn.bin \\
        --out results/report.md

Reads the compare outputs, the tables (steps, config diff, replay, counterfactual, probe,
learning rates, layers where the runs hold a layer record, bias correction), the run files,
the dataset files (--data, one per model: the shapes), the plots and provenance.json. Every
number and verdict in the report is computed here from those files; nothing is typed in.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from torch_burn_parity.analysis import gaps, probe
from torch_burn_parity.analysis.gaps import (
    flat_names,
    report_steps_of,
)
from torch_burn_parity.io.parity_io import (
    FormatError,
    experiment_block,
    read_table,
    read_text,
    write_text_atomic,
)
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.judgement.judge import has_factors, verdict_of
from torch_burn_parity.models.model_specs import DEFAULT_MODEL, model_of
from torch_burn_parity.report import verdict_text as vt
from torch_burn_parity.report.cpu_section import cpu_section
from torch_burn_parity.report.verdict_text import e

DTYPES = ("f32", "f64")
# The probe's sentences: a relative f32 gradient error above FEW_DIGITS is "few correct
# digits" (cancellation), under it ordinary accumulation error; a gradient under
# TINY_GRADIENT (100 f32 ulps of 1) is "tiny" beside Adam's full first step.
FEW_DIGITS = 1e-3
TINY_GRADIENT = 100 * 2.0**-23
RUNS = [(fw, dt) for fw in ("torch", "burn") for dt in DTYPES]


# One key of a compare output: 'sgd.params.fc.bias  n=  3  max|diff|=5.07e-07'.
COMPARE_LINE = re.compile(r"^(\S+)\s+n=\s*(\d+)\s+max\|diff\|=(\S+)$", re.M)


def distinct(a: float, b: float, digits: int = 4) -> tuple[str, str]:
    """a and b with `digits` significant digits, more when that would print two different
    numbers alike (never more than 17, which tell any two f64 apart)."""
    while digits < 17 and a != b and f"{a:.{digits}g}" == f"{b:.{digits}g}":
        digits += 1
    return f"{a:.{digits}g}", f"{b:.{digits}g}"


def trend(gaps) -> str:
    """'grows from 2.23e-10 at step 1 to 3.71e-06 at step 100 (1.66e+04×)', or 'shrinks …'."""
    gaps = np.asarray(gaps, float)
    first, last, n = gaps[0], gaps[-1], len(gaps)
    if first == last:
        return f"stays at {e(first)} from step 1 to step {n}"
    verb = "grows" if last > first else "shrinks"
    ratio = f" ({vd.growth(gaps):.3g}×)" if first > 0 else ""
    return f"{verb} from {e(first)} at step 1 to {e(last)} at step {n}{ratio}"


def compare_verdict(text: str) -> tuple[str, str]:
    """(worst, OK|MISMATCH) from the last line of a compare output."""
    last = text.strip().splitlines()[-1]  # worst=3.52e-06 tol=1e-06 MISMATCH
    fields = dict(part.split("=", 1) for part in last.split()[:2])
    return fields["worst"], last.split()[-1]


def compact(md: str) -> str:
    """A Markdown pipe table without the alignment padding (same table, far fewer bytes)."""
    out = []
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if all(set(c) <= set(":-") for c in cells):
                cells = [":--" if c.startswith(":") else "---" for c in cells]
            line = "| " + " | ".join(cells) + " |"
        out.append(line)
    return "\n".join(out)


def md_table(frame: pd.DataFrame) -> str:
    return compact(frame.to_markdown(index=False, disable_numparse=True))


def body(md: str) -> str:
    """A table file's content without its own '### title' line (the report titles it)."""
    lines = md.strip().splitlines()
    if lines and lines[0].startswith("#"):
        lines = lines[1:]
    return compact("\n".join(lines).strip())


# ------------------------------------------------------------------ a model's state


def dataset_shapes(paths: list[Path]) -> list[dict[str, list[int]]]:
    """Each dataset file's parameter and buffer shapes, in the model's order."""
    return [gaps.dataset_shapes(path) for path in paths]


def shapes_of(block: dict, datasets: list[dict[str, list[int]]], where: Path) -> dict:
    """The shapes of the dataset that holds exactly the arrays of the run's model."""
    model = model_of(block)
    for shapes in datasets:
        if set(shapes) == set(model.state_names):
            return {name: shapes[name] for name in model.state_names}  # param_matrix's order
    raise FormatError(f"{where}: no dataset file given holds the arrays of model {model.name}")


class Experiment:
    """Everything the report says about one experiment, read from the pipeline's files."""

    def __init__(
        self, name: str, spec: dict, results: Path, tolerances: dict,
        datasets: list[dict[str, list[int]]], report_steps: list[int], record: dict,
    ) -> None:  # fmt: skip
        """datasets: the parameter and buffer shapes of each dataset file (dataset_shapes);
        record: the experiment's verdict record (judgement/judge.py)."""
        tables = results / "tables"
        self.name, self.spec, self.tolerances = name, spec, tolerances
        self.report_steps = report_steps
        self.steps = read_table(tables / f"steps_{name}.csv")
        self.config_diff = read_table(tables / f"config_diff_{name}.csv", keep_default_na=False)
        self.replay = read_table(tables / f"replay_{name}.csv")
        self.counterfactual = read_table(tables / f"counterfactual_{name}.csv")
        self.probe = read_table(tables / f"probe_{name}.csv")
        pairs = set(zip(self.probe["framework"], self.probe["dtype"], strict=True))
        if pairs != set(RUNS):
            raise FormatError(f"{tables / f'probe_{name}.csv'}: expected one row per run")
        self.lrs = read_table(tables / f"lrs_{name}.csv")
        self.md = {
            key: read_text(tables / f"{key}_{name}.md")
            for key in ("steps", "config_diff", "replay", "counterfactual", "probe", "lrs")
        }
        self.compare = {dt: read_text(results / "compare" / f"{name}-{dt}.txt") for dt in DTYPES}
        self.runs = {
            (fw, dt): experiment_block(results / "runs" / name / f"{fw}-{dt}.json", name)
            for fw, dt in RUNS
        }
        self.shapes = shapes_of(self.runs["torch", "f32"], datasets, results / "runs" / name)
        # The layer record (runs from trainers that take it): where the difference enters.
        self.has_layers = all("layers" in run for run in self.runs.values())
        if self.has_layers:
            self.layers = read_table(tables / f"layers_{name}.csv")
            self.md["layers"] = read_text(tables / f"layers_{name}.md")
        # The judgement, made once by judgement/judge.py: verdict, causes, where it starts.
        self.record = record
        self.verdict = verdict_of(record)
        self.causes = [(c["cause"], c["share"], c["how"]) for c in record["causes"]]

    @property
    def has_factors(self) -> bool:
        return has_factors(self.config_diff)

    @property
    def model(self) -> str:
        return model_of(self.runs["torch", "f32"]).name

    @property
    def buffer_names(self) -> tuple[str, ...]:
        return model_of(self.runs["torch", "f32"]).buffer_names

    def arithmetic_remainder(self) -> str:
        """What the share no variant measures is put down to."""
        if self.has_factors:
            return "the per-step factors Burn evaluated in f32."
        return "Burn's f32 arithmetic in its update."

    def share_sentence(self, held: float) -> str:
        """How the measured shares split the f64 gap (the verdict's causes, in words)."""
        gap, c = self.verdict.f64_gap, self.counterfactual
        further = [
            (label, float(c[column].max()))
            for column, label in (
                ("dparam_burn_lrs", "with Burn's learning rates as well"),
                ("dparam_burn_clipping", "with Burn's clipping as well"),
                ("dparam_burn_running_stats", "with Burn's running-variance estimator as well"),
            )
            if column in c
        ]
        if further:
            last = further[-1][1]
            measured = "; ".join(f"{label} {e(gap_)}" for label, gap_ in further)
            return (
                "Shares: Burn's choices added one at a time to the counterfactual (every scalar"
                f" in f64) move the run from PyTorch's by {e(held)} with Burn's held values;"
                f" {measured} — of the {e(gap)} gap (measured; each choice's share in the"
                " verdict is how much further it moves the run)."
                + (
                    f" The remaining {1 - min(last / gap, 1.0):.1%} is attributed to what"
                    " separates the last of these from the replay that reproduces Burn: "
                    + self.arithmetic_remainder()
                    if 1 - min(last / gap, 1.0) >= vd.MIN_SHARE
                    else ""
                )
            )
        return (
            f"Shares: Burn's held values alone (every scalar in f64) move the run {e(held)} from"
            f" PyTorch's, {min(held / gap, 1.0):.1%} of the {e(gap)} gap (measured)."
            + (
                " The remainder is attributed to what separates that variant from the replay"
                " that reproduces Burn: " + self.arithmetic_remainder()
                if 1 - min(held / gap, 1.0) >= vd.MIN_SHARE
                else ""
            )
        )

    @property
    def has_schedule(self) -> bool:
        return (self.spec.get("schedule") or {}).get("kind", "constant") != "constant"

    @property
    def is_plain(self) -> bool:
        """The same values passed to both, no schedule, no clipping: the atlas's baseline."""
        return (
            not any(self.spec.get("keep_defaults", {}).values())
            and not self.has_schedule
            and not self.spec.get("clip_grad")
        )

    def diff_names(self, status: str) -> str:
        """The config-diff rows with this status, by name ('none' if there are none)."""
        rows = self.config_diff[self.config_diff["status"] == status]
        return ", ".join(rows["hyperparameter"]) or "none"

    def defaults_that_differ(self) -> str:
        """Kept defaults of Burn that differ from PyTorch's, with both values."""
        d = self.config_diff
        rows = d[(d["status"] == "differs") & d["note"].str.contains("keeps its default")]
        return (
            ", ".join(f"{r.hyperparameter} ({r.torch} vs {r.burn})" for r in rows.itertuples())
            or "none"
        )

    @property
    def optimizer(self) -> str:
        return self.runs["torch", "f32"]["meta"]["optimizer"]

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
        replay_left = vd.first_step_above(r["dparam"], floor)
        worst = f"(step {r['step'].iloc[replay_worst]}, `{r['where'].iloc[replay_worst]}`)"
        out.append(
            f"Replay: Burn's update rule run on the PyTorch side in f64, with the values Burn"
            f" held{factors}, "
            + (
                f"misses Burn's f64 run by up to {e(r['dparam'].max())} over {n} steps {worst},"
                f" above the rounding floor (which it leaves at step {replay_left},"
                f" `{r['where'].iloc[replay_left - 1]}`)."
                if replay_left is not None
                else f"reproduces Burn's f64 run to {e(r['dparam'].max())} at worst over {n}"
                f" steps {worst}."
            )
        )
        held, counter = c["dparam_held_f64"].max(), c["dparam"].max()
        held_step = int(c["step"].iloc[int(np.nanargmax(c["dparam_held_f64"]))]) if n else 0
        reproduces = (
            f"misses PyTorch's f64 run by up to {e(counter)}, above the rounding floor"
            if vd.first_step_above(c["dparam"], floor) is not None
            else f"reproduces PyTorch's f64 run to {e(counter)}"
        )
        out.append(
            f"Counterfactual: the same rule with PyTorch's hyperparameters, every scalar in f64,"
            f" {reproduces}. With Burn's held values instead"
            + (
                f" (still every scalar in f64) it is {e(held)} from PyTorch's run at worst"
                f" (step {held_step}) and {e(c['dparam_held_f64'].iloc[-1])} after step {n}."
                if held > 0
                else " (still every scalar in f64) it matches PyTorch's run exactly."
            )
        )
        if v.label == vd.EXPLAINED and v.f64_gap > 0:
            out.append(self.share_sentence(held))
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
        same = sum(a == b for a, b in zip(preds["torch"], preds["burn"], strict=True))
        final = {fw: self.runs[fw, "f32"]["final"] for fw in ("torch", "burn")}
        mode = " (in eval mode)" if self.buffer_names else ""
        losses = distinct(float(final["torch"]["loss"]), float(final["burn"]["loss"]))
        out.append(
            f"After training the two f32 models{mode} agree on {same} of {len(preds['torch'])}"
            f" predictions; PyTorch's gets {final['torch']['correct']} right (final loss"
            f" {losses[0]}), Burn's {final['burn']['correct']} (final loss {losses[1]})."
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
        parts = [
            "### Where the difference enters\n",
            f"{sentence} Every quantity of the probe steps, torch vs burn at each dtype and"
            f" against its own rounding floor: `tables/layers_{self.name}.csv`.\n",
            f"![where the difference enters in {self.name}](plots/layers_{self.name}.png)\n",
        ]
        if self.buffer_names:
            parts.append(self.eval_reading() + "\n")
        return "\n".join(parts)

    def eval_reading(self) -> str:
        """The last train-mode loss (`losses[-1]`, batch statistics) beside the final
        eval-mode loss and correct count (`final`, running statistics, whole dataset)."""
        n = len(self.steps)
        rows, loss, evaluated = [], {}, {}
        for fw, dt in RUNS:
            run = self.runs[fw, dt]
            final = run["final"]
            loss[fw, dt], evaluated[fw, dt] = float(run["losses"][-1]), float(final["loss"])
            rows.append({
                "run": f"{NAMES[fw]} {dt}",
                f"train-mode loss, step {n}": f"{loss[fw, dt]:.8g}",
                "eval-mode loss": f"{evaluated[fw, dt]:.8g}",
                "eval-mode correct": f"{final['correct']} of {len(final['predictions'])}",
            })  # fmt: skip
        d_train = abs(loss["torch", "f64"] - loss["burn", "f64"])
        d_eval = abs(evaluated["torch", "f64"] - evaluated["burn", "f64"])
        correct = {fw: self.runs[fw, "f64"]["final"]["correct"] for fw in ("torch", "burn")}
        counts = f"in eval mode PyTorch gets {correct['torch']} right, Burn {correct['burn']}."
        intro = f"\n\nIn f64, PyTorch's and Burn's losses at the last step, {n}, in train mode"
        # The floor of a loss: the experiment's rounding floor at that step, or 64 f64 ulps
        # of the loss itself, whichever is larger (layers_table.floor_of's minimum).
        floor = max(
            float(vd.rounding_floor(self.steps["torch_f64"], self.steps["burn_f64"])[n - 1]),
            vd.ABSOLUTE_FLOOR * max(abs(loss["torch", "f64"]), abs(loss["burn", "f64"])),
        )
        if d_train <= floor:
            only = (
                ": only the running statistics separate them"
                if self.verdict.split and self.verdict.split.scope == vd.EVALUATION
                else ""
            )
            return (
                md_table(pd.DataFrame(rows))
                + f"{intro} (each batch's own statistics) agree to rounding ({e(d_train)}, under"
                f" the rounding floor of {e(floor)}); their final losses in eval mode (the"
                f" running statistics, the whole dataset) differ by {e(d_eval)}{only}; {counts}"
            )
        ratio = f" ({d_eval / d_train:.3g}× the train-mode difference)"
        return (
            md_table(pd.DataFrame(rows))
            + f"{intro} (each batch's own statistics) differ by {e(d_train)}; their final losses"
            f" in eval mode (the running statistics, the whole dataset) by {e(d_eval)}{ratio};"
            f" {counts}"
        )

    def lr_reading(self) -> str:
        """The schedule each framework ran and where their lr sequences part (lrs table)."""
        schedule = self.spec.get("schedule") or {"kind": "constant"}
        if schedule["kind"] == "constant":
            text = "Schedule: constant. "
        else:
            text = f"Schedule: {setting('schedule', schedule)}, each framework's own scheduler. "
        if (self.lrs["rel_diff"] == 0).all():  # the sentence says so; the table would repeat it
            return text + body(self.md["lrs"]).split("\n\n")[0]
        return text + body(self.md["lrs"]) + f"\n\nEvery step: `tables/lrs_{self.name}.csv`."

    def probe_reading(self) -> str:
        """What the step-1 probe shows, computed from its rows; names both frameworks.

        'update' is the parameter after step 1 minus its initial value. An f32 update is
        the difference of two f32 numbers near the parameter, so it moves in steps of the
        parameter's f32 ulp: an f32 gradient error smaller than that cannot reach it.
        """
        p = self.probe.set_index(["framework", "dtype"])
        name = p["parameter"].iloc[0]
        row = {key: p.loc[key] for key in p.index}
        u = {key: float(r["update"]) for key, r in row.items()}
        ulp = float(np.spacing(np.float32(abs(float(row["torch", "f32"]["initial"])))))
        text = [
            f"At step 1, `{name}` (initial value {row['torch', 'f32']['initial']:.6g}) has an"
            f" f64 gradient of {row['torch', 'f64']['grad']:.4g} in PyTorch and"
            f" {row['burn', 'f64']['grad']:.4g} in Burn."
        ]
        noise = self.gradient_noise(name)
        if noise:
            text.append(
                f"That is rounding noise: at most {probe.NOISE_ULPS} f64 ulps of the largest"
                f" |f64 gradient| of its tensor ({e(noise)}), the residue of terms that cancel"
                " exactly. Its f32 gradients and updates have nothing to be compared with."
            )
            return " ".join(text)
        rel = {fw: float(row[fw, "f32"]["grad_rel_err"]) for fw in ("torch", "burn")}
        text += [
            f"The f32 gradients are off by {rel['torch']:.2e} (PyTorch) and {rel['burn']:.2e}"
            " (Burn) relative to their own f64 gradient: "
            + (
                "a small gradient made of terms that nearly cancel keeps few correct f32 digits."
                if max(rel.values()) > FEW_DIGITS
                else "ordinary f32 accumulation error."
            ),
            f"Its update (parameter after step 1 minus the initial value) is"
            f" {u['torch', 'f64']:.4g} in PyTorch and {u['burn', 'f64']:.4g} in Burn (f64).",
        ]
        if u["torch", "f64"] == 0 or u["burn", "f64"] == 0:
            if u["torch", "f64"] == u["burn", "f64"]:
                text.append("Neither framework moves it in f64: nothing to compare.")
            else:
                moves = "Burn" if u["burn", "f64"] else "PyTorch"
                text.append(
                    f"Only {moves} moves it: the two frameworks do not take the same step from"
                    " the same gradient, which rounding cannot do — look for a `differs` row in"
                    " the config diff."
                )
            return " ".join(text)
        ratio = u["burn", "f64"] / u["torch", "f64"]
        if not 0.99 <= ratio <= 1.01:
            text.append(
                f"Burn's update is {ratio:.3g}× PyTorch's: the two frameworks do not take the"
                " same step from the same gradient, which rounding cannot do — look for a"
                " `differs` row in the config diff."
            )
            return " ".join(text)
        hp = self.runs["torch", "f64"]["meta"]["hyperparameters"]
        lr, g = hp["lr"], abs(float(row["torch", "f64"]["grad"]))
        clip = self.spec.get("clip_grad")
        if clip:
            text.append(
                f"These are the gradients before clipping ({setting('clip_grad', clip)}); the"
                " update uses the clipped ones, and the frameworks clip differently (the"
                " config diff's clipping scope)."
            )
        adam_like = self.optimizer in ("adam", "adamw")
        if adam_like and not clip and abs(abs(u["torch", "f64"]) - lr) <= 0.05 * lr:
            decay = (
                " (AdamW first decays the parameter by lr·weight_decay·p, included here)"
                if self.optimizer == "adamw" and hp.get("weight_decay")
                else ""
            )
            tiny = " although the gradient is tiny" if g < TINY_GRADIENT else ""
            text.append(
                f"That is {abs(u['torch', 'f64']) / lr:.3f} of a full step of lr = {lr:g}{tiny}:"
                f" {self.optimizer}'s first update is −lr·g/(|g| + ε){decay}, which depends on"
                f" |g| only through |g|/ε (here {g / hp['eps']:.3g})."
            )
        if u["torch", "f64"] != u["burn", "f64"]:
            d = u["burn", "f64"] - u["torch", "f64"]
            text.append(
                f"Burn's f64 update differs from PyTorch's by {e(abs(d))} (relative"
                f" {d / u['torch', 'f64']:.3g})."
            )
        diffs = {fw: abs(u[fw, "f32"] - u[fw, "f64"]) for fw in ("torch", "burn")}
        same32 = u["torch", "f32"] == u["burn", "f32"]
        if max(diffs.values()) <= ulp:
            text.append(
                f"In f32 the stored update moves in steps of the parameter's f32 ulp ({e(ulp)}),"
                f" and both frameworks' f32 updates are within one ulp of the f64 update"
                f" (off by {e(diffs['torch'])} in PyTorch, {e(diffs['burn'])} in Burn): the"
                " gradient's error does not reach the parameter"
                + (
                    f"; PyTorch and Burn even store the same f32 update ({u['torch', 'f32']:.8g})"
                    " from their different f32 gradients."
                    if same32
                    else "."
                )
            )
        else:
            column = self.steps["torch_f64"].iloc[0]
            text.append(
                f"The gradient's error reaches the update: the f32 update differs from the f64"
                f" one by {e(diffs['torch'])} in PyTorch ({diffs['torch'] / ulp:.3g} f32 ulps of"
                f" the parameter) and {e(diffs['burn'])} in Burn; PyTorch's is"
                f" {diffs['torch'] / column:.0%} of the `torch-f64` gap at step 1 ({e(column)})."
            )
        return " ".join(text)

    def gradient_noise(self, label: str) -> float:
        """When PyTorch's f64 step-1 gradient of the probed element is rounding noise
        (probe.rounding_noise: at most NOISE_ULPS f64 ulps of its tensor's largest |gradient|),
        that largest |gradient|; else 0."""
        tensor = label.split("[")[0]
        grads = self.runs["torch", "f64"]["trajectory"]["grads"].get(tensor)
        if grads is None:
            return 0.0
        g = np.abs(np.asarray(grads[0], dtype=np.float64).ravel())
        column = flat_names({tensor: self.shapes[tensor]}).index(label)
        return float(g.max()) if probe.rounding_noise(g)[column] else 0.0

    def compare_table(self) -> str:
        """Both compare outputs side by side: one row per key, then the worst of each."""
        keys = {dt: COMPARE_LINE.findall(self.compare[dt]) for dt in DTYPES}
        rows = [
            {"key": key.removeprefix(f"{self.name}."), "n": n,
             **{f"max\\|diff\\| {dt}": keys[dt][i][2] for dt in DTYPES}}
            for i, (key, n, _) in enumerate(keys["f32"])
        ]  # fmt: skip
        worst = {dt: compare_verdict(self.compare[dt]) for dt in DTYPES}
        rows.append({"key": "**worst**", "n": "",
                     **{f"max\\|diff\\| {dt}": f"{worst[dt][0]} (tol {self.tolerances[dt]:g})"
                        f" **{worst[dt][1]}**" for dt in DTYPES}})  # fmt: skip
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
            first = vd.first_step_above(gaps, tol)
            rows.append({"gap": label, "max": e(gaps.max()), "tolerance": f"{tol:g} ({dtype})",
                         "first step above tolerance": str(first) if first else "never",
                         "growth (last / step 1)": f"{vd.growth(gaps):.3g}"})  # fmt: skip
        return md_table(pd.DataFrame(rows))

    def summary_row(self) -> dict:
        s, v = self.steps, self.verdict
        return {
            "experiment": self.name,
            "optimizer": self.optimizer,
            "verdict": v.label,
            "cause, or where it starts": vt.verdict_detail(self.record) or "—",
            "f64 gap (max over steps)": e(v.f64_gap),
            "rounding floor there": e(v.floor),
            "replays leave (worst of both)": e(v.replay_gap) if v.replay_gap is not None else "",
            "f32 gap (max over steps)": e(s["dparam"].max()),
            **{
                f"compare {dt} (worst key)": " ".join(compare_verdict(self.compare[dt]))
                for dt in DTYPES
            },
        }

    def section(self, shown: dict[str, str]) -> str:
        """This experiment's section. shown: table text -> experiment that printed it first."""
        n, name = len(self.steps), self.name
        model = "" if self.model == DEFAULT_MODEL else f", model: {self.model}"
        parts = [f"## Experiment `{name}` (optimizer: {self.optimizer}{model})\n"]
        if self.spec.get("description"):
            parts.append(f"*{self.spec['description'].strip()}*\n")
        parts.append(f"**Verdict: {vt.verdict_line(self.record)}.**\n")
        parts += [f"- {line}" for line in self.evidence()]
        parts.append("\n### Config diff\n")
        parts.append(body(self.md["config_diff"]) + "\n")
        parts.append("### Compare (losses and final values)\n")
        parts.append(f"Files: `compare/{name}-f32.txt`, `compare/{name}-f64.txt`.\n")
        parts.append(self.compare_table() + "\n")
        parts.append("### Gaps step by step\n")
        parts.append(self.gap_table() + "\n")
        shown_steps = int(report_steps_of(self.steps["step"], self.report_steps).sum())
        parts.append(f"{shown_steps} of {n} steps; every step: `tables/steps_{name}.csv`.\n")
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
                parts.append(f"{label}: 0 at every one of `{name}`'s {n} steps (bit-identical).\n")
            elif table in shown:
                parts.append(f"{label}: the same table as `{shown[table]}`'s.\n")
            else:
                shown[table] = name
                parts.append(f"{label}, {shown_steps} of {n} steps:\n\n{table}\n")
        parts.append("### Learning rate\n")
        parts.append(self.lr_reading() + "\n")
        parts.append(f"### Gradient probe at step 1: `{self.probe['parameter'].iloc[0]}`\n")
        parts.append(body(self.md["probe"]) + "\n")
        parts.append(self.probe_reading() + "\n")
        return "\n".join(parts)


def setting(key: str, value) -> str:
    """One config value as a person writes it: 'burn: eps', '[0.9, 0.999]', 'f32 1e-05'."""
    if key == "keep_defaults":
        return "; ".join(f"{fw}: {', '.join(keys)}" for fw, keys in value.items()) or "none"
    if key == "tolerance":
        return ", ".join(f"{dt} {tol:g}" for dt, tol in value.items())
    if key == "schedule":
        rest = ", ".join(f"{k} {v:g}" for k, v in value.items() if k != "kind")
        return f"{value['kind']} ({rest})" if rest else value["kind"]
    if key == "clip_grad":
        return "none" if value is None else ", ".join(f"{k} {v:g}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(f"{v:g}" for v in value) + "]"
    return value if isinstance(value, str) else json.dumps(value)


def hyperparameter_table(config: dict, tolerances: dict, skip: set[str]) -> str:
    """The experiments as configured (those of large sweeps are in their sweep's summary).
    Empty cells say why they are empty."""
    by_optimizer: dict[str, list[dict]] = {}
    for name, exp in config["experiments"].items():
        if name in skip:
            continue
        row = {"experiment": name}
        row.update({k: setting(k, v) for k, v in exp.items() if k != "description"})
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


def burn_backend(x: Experiment) -> str:
    """The Burn backend of an experiment's runs, by Burn's name (meta.backend; Flex without)."""
    found = sorted({x.runs["burn", dt]["meta"].get("backend", "flex") for dt in DTYPES})
    return "/".join(BACKEND_NAMES.get(b, b) for b in found)


def atlas_section(experiments: list[Experiment]) -> str:
    """Optimizer by optimizer: where Burn's defaults differ from PyTorch's, what Burn holds
    and computes in f32, and the verdicts with the same values and with Burn's defaults.

    Read from the experiments of this run on the default model and Burn's default backend
    (cnn1d on Flex): for each optimizer the first experiment with neither kept defaults, a
    schedule nor clipping ("same values"), the first that keeps some of Burn's defaults
    ("Burn's defaults") and the first with a schedule or clipping. A sentence after the
    table names every other experiment (other models or backends) with its verdict.
    """
    default_backend = BACKEND_NAMES["flex"]
    atlas = [
        x for x in experiments if x.model == DEFAULT_MODEL and burn_backend(x) == default_backend
    ]
    others = [x for x in experiments if x not in atlas]
    by_optimizer: dict[str, list[Experiment]] = {}
    for x in atlas:
        by_optimizer.setdefault(x.optimizer, []).append(x)
    rows = []
    for optimizer, members in by_optimizer.items():
        plain = next((x for x in members if x.is_plain), None)
        kept = next((x for x in members if x.spec.get("keep_defaults", {}).get("burn")), None)
        recipe = next((x for x in members if x.spec.get("clip_grad") or x.has_schedule), None)
        rows.append(
            {
                "optimizer": optimizer,
                "defaults that differ (PyTorch vs Burn)": kept.defaults_that_differ()
                if kept
                else "no experiment keeps Burn's defaults",
                "Burn holds in f32 (rounded value)": plain.diff_names("f32 storage")
                if plain
                else "—",
                "Burn computes in f32": plain.diff_names("precision") if plain else "—",
                **{
                    f"verdict, {kind}": vt.short_verdict(x.record) if x else "—"
                    for kind, x in (
                        ("same values", plain),
                        ("Burn's defaults", kept),
                        ("with a schedule or clipping", recipe),
                    )
                },
            }
        )
    other = (
        "\nOther models and backends (in the verdict table): "
        + "; ".join(
            f"`{x.name}` ({x.model}, {burn_backend(x)}): {x.verdict.label}"
            + (" (evaluation state only)" if vt.evaluation_only(x.record) else "")
            for x in others
        )
        + ".\n"
        if others
        else ""
    )
    table = md_table(pd.DataFrame(rows)) + "\n" if rows else "No such experiment in this run.\n"
    return (
        "## Atlas\n\n"
        f"Each optimizer as this run found it on the model `{DEFAULT_MODEL}` and Burn's"
        f" {default_backend} backend: the hyperparameters whose defaults differ"
        " between the frameworks (from the config diff of the experiment that keeps Burn's"
        " defaults), the values Burn stores in f32 and the arithmetic it does in f32 (from the"
        " config diff of the experiment that passes the same values to both), and the verdicts"
        " of those experiments and of one with a schedule or clipping, each with its largest"
        " cause (all causes and their shares are in the verdict table below).\n\n" + table + other
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


def bias_section(results: Path, report_steps: list[int]) -> str:
    """Burn's f32 Adam factor against f64, one table per distinct series of factors."""
    frame = pd.read_csv(results / "tables" / "bias_correction.csv")
    if frame.empty:
        return ""
    groups: dict[tuple, list[str]] = {}
    for name, group in frame.groupby("experiment", sort=False):
        groups.setdefault(tuple(group["burn_f32"]), []).append(name)
    parts = [
        "## Adam bias correction: Burn's f32 factor vs f64\n",
        "Burn keeps β₁, β₂ and ε as f32 and evaluates `sqrt(1 − β₂^t) / (1 − β₁^t)` in f32;"
        " PyTorch evaluates its factors in f64. `burn f32` is the factor Burn's run recorded,"
        " `f64` the same formula in f64 from the betas Burn held, `rel err` = (burn − f64) / f64."
        " Experiments with the same betas share one table.\n",
    ]
    for names in groups.values():
        group = frame[frame["experiment"] == names[0]].reset_index(drop=True)
        worst = int(group["rel_err"].abs().idxmax())
        shown = group[report_steps_of(group["t"], report_steps) | (group.index == worst)]
        table = md_table(
            pd.DataFrame(
                {
                    "t": shown["t"].astype(str),
                    "burn f32": shown["burn_f32"].map(lambda x: f"{x:.9f}"),
                    "f64": shown["f64"].map(lambda x: f"{x:.9f}"),
                    "rel err": shown["rel_err"].map(lambda x: f"{x:.2e}"),
                }
            )
        )
        reading = f"At t=1 the relative error is {e(group['rel_err'].iloc[0])}"
        signed = group[group["t"] >= 2]["rel_err"]
        if len(signed):
            reading += f"; from t=2 on it lies between {e(signed.min())} and {e(signed.max())}"
            if (signed < 0).all() or (signed > 0).all():
                side = "below" if (signed < 0).all() else "above"
                reading += f", {side} the f64 value at every step"
        reading += (
            f", largest at t={int(group['t'].iloc[worst])} ({e(group['rel_err'].iloc[worst])})."
        )
        title = ", ".join(f"`{n}`" for n in names)
        parts.append(f"{title} ({len(shown)} of {len(group)} steps):\n\n{table}\n\n{reading}\n")
    return "\n".join(parts)


# How to read the tables of an experiment's section: said once, true of every section.
READING_GUIDE = """## How to read an experiment's section

- **Config diff**: each hyperparameter as the framework will hold it, the schedule as each
  computes it and the clipping scope: `same`, `f32 storage` (Burn keeps the f32 rounding of
  the value), `differs` (a different value or rule), `precision` (the same formula evaluated
  at another precision), `formula` (the same quantity at the same precision by different
  arithmetic, e.g. a recursive and a closed-form schedule: apart by rounding only), `unused`
  (not used by this setting).
- **Compare (losses and final values)**: the original `compare` script's output, side by
  side for f32 and f64: `max|diff|` between PyTorch and Burn for every step's loss, the
  final loss and correct count, and each final parameter tensor, then the worst against the
  tolerance of that dtype.
- **Gaps step by step**: each gap is max |Δ| over all parameters after the step; `first step
  above tolerance` is the first step over that dtype's tolerance (not the rounding floor),
  growth the last step over step 1.
  In the per-step table, `|dloss|` = |torch loss − burn loss| (f32 batch losses),
  `max|dparam|` torch f32 vs burn f32, `torch-f64` torch f32 vs torch f64, `burn-f64` burn
  f32 vs burn f64, `f64-f64` torch f64 vs burn f64.
- **Plots**: the four gaps on a log scale with the tolerances and the rounding floor (grey
  band); |Δloss| per step on a log scale, with the two loss curves below.
- **Replay and counterfactual**: per step, `|dloss|` and `max|dparam|` between the replay
  and the run it reproduces, and `where` the largest parameter gap is.
- **Gradient probe**: one parameter's step-1 gradient and update (parameter after step 1
  minus its initial value) in both frameworks and precisions; the error columns compare
  each row with the same framework's f64 row.
"""


LAYERS_GUIDE = """- **Where the difference enters**: at each probe step, every quantity of the step
  in the order it is computed — each layer's output (forward), the loss, each layer's input
  gradient and each parameter's gradient (backward), each parameter and buffer after the
  step (update) — torch vs burn in f32 and in f64, each against a rounding floor of its own
  (verdict.py's rule applied to that quantity, its minimum of 64 f64 ulps scaled by the
  quantity's largest |f64 value|); the sentence names the first quantity whose f64
  difference leaves it, the others of that step and phase that leave theirs, and the
  largest f64 difference of that step when it is elsewhere. For a model with buffers, the
  last train-mode loss beside the final eval-mode loss and correct count.
"""
BUFFERS_GUIDE = """- **A model with buffers** (BatchNorm's running mean and variance): the gaps
  cover the buffers as well as the parameters. Training moves the parameters (a train-mode
  forward normalizes with each batch's own statistics); the buffers are updated alongside
  and only an eval-mode forward reads them. The verdict says which of the two leaves the
  rounding floor, and `final` (loss, correct) is an eval-mode evaluation.
"""
NAMES = {"torch": "PyTorch", "burn": "Burn"}


# A sweep with more experiments than this is summed up in its own section only.
FULL_SECTIONS_UP_TO = 3


def axis_order(values: pd.Series) -> list:
    """The distinct values of an axis column, numerically sorted where they are numbers."""
    distinct = list(dict.fromkeys(values))
    try:
        return sorted(distinct, key=float)
    except (TypeError, ValueError):
        return distinct


def axis_reading(frame: pd.DataFrame, axis: str) -> str:
    """'lr: 1.2e-07 (0.001) → 3.7e-06 (0.01) …, grows with lr' from the summary rows."""
    order = axis_order(frame[axis].astype(str))
    medians = [float(frame[frame[axis].astype(str) == v]["f64_gap"].median()) for v in order]
    steps = " → ".join(f"{e(m)} ({v})" for v, m in zip(order, medians, strict=True))
    diffs = np.diff(medians)
    numeric = _numbers(order)
    if numeric and (diffs > 0).all():
        trend_text = f", grows with {axis}"
    elif numeric and (diffs < 0).all():
        trend_text = f", shrinks as {axis} grows"
    else:
        trend_text = ""
    return f"- `{axis}`: {steps}{trend_text}"


def _numbers(values: list) -> bool:
    try:
        [float(v) for v in values]
    except (TypeError, ValueError):
        return False
    return True


def sweep_section(results: Path, sweep: str, members: list[str], large: bool) -> str:
    """What one sweep shows, computed from its summary.csv, with links to its material."""
    folder = results / "sweeps" / sweep
    frame = read_table(folder / "summary.csv", keep_default_na=False, dtype={"cause": str})
    frame["f64_gap"] = pd.to_numeric(frame["f64_gap"], errors="coerce")
    fixed = {"experiment", "verdict", "cause", "f64_gap", "f32_gap", "first_f32_step_above_tol"}
    axes = [c for c in frame.columns if c not in fixed]
    varying = [a for a in axes if frame[a].nunique() > 1]
    counts = frame["verdict"].value_counts()
    parts = [
        f"## Sweep `{sweep}` ({len(frame)} experiments)\n",
        "Verdicts: " + "; ".join(f"{n} × {label}" for label, n in counts.items()) + ".\n",
    ]
    if varying:
        parts.append(
            "The largest f64 gap (torch vs burn, any step), median over the other axes, for"
            " each value of an axis:\n"
        )
        parts += [axis_reading(frame, a) for a in varying]
        parts.append("")
    rounding = frame["verdict"] == vd.EQUIVALENT
    if rounding.all():
        parts.append("Every setting of the sweep stays within rounding.\n")
    elif rounding.any():
        stay = [
            f"`{a}` = {v}"
            for a in varying
            for v in axis_order(frame[a].astype(str))
            if rounding[frame[a].astype(str) == v].all()
        ]
        parts.append(
            f"{int(rounding.sum())} of {len(frame)} experiments stay within rounding"
            + (f"; every experiment with {', '.join(stay)} does." if stay else ".")
            + "\n"
        )
    else:
        parts.append("No setting of the sweep stays within rounding.\n")
    causes = frame.loc[frame["cause"] != "", "cause"].str.replace(r" \(\d.*", "", regex=True)
    if len(causes):
        parts.append(
            "Leading causes: "
            + "; ".join(f"{c} ({n}×)" for c, n in causes.value_counts().items())
            + ".\n"
        )
    parts.append(f"![parity map of {sweep}](sweeps/{sweep}/parity_map.png)\n")
    parts.append(
        f"Every experiment with its axis values, verdict and cause: `sweeps/{sweep}/summary.csv`"
        f" (and `summary.md`); names → axis values: `sweeps/{sweep}/experiments.csv`. Each"
        " experiment's own tables and plots: `tables/steps_<experiment>.csv`,"
        " `tables/replay_<experiment>.csv`, `plots/gaps_<experiment>.png`, …"
        + (
            " (their full sections are left out of this report)."
            if large
            else " (their sections follow)."
        )
        + "\n"
    )
    if len(frame) <= 40:
        shown = frame.assign(f64_gap=frame["f64_gap"].map(e))
        shown["f32_gap"] = pd.to_numeric(shown["f32_gap"], errors="coerce").map(e)
        parts.append(md_table(shown.drop(columns=["cause"])) + "\n")
    return "\n".join(parts)


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
    except (FormatError, OSError, KeyError, ValueError) as exc:
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


def what_was_trained(models: list[str]) -> str:
    """The report's opening words: 'The same 1-D CNN' (the seed's model alone), or 'The same
    small models (`cnn1d`, `cnn_bn`, `transformer`)'."""
    if models in ([], [DEFAULT_MODEL]):
        return "The same 1-D CNN"
    plural = "s" if len(models) > 1 else ""
    return f"The same small model{plural} (" + ", ".join(f"`{m}`" for m in models) + ")"


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
            name, spec, args.results, effective["tolerances"][name], shapes,
            config["report_steps"], records.get(name) or missing_record(args.results, name),
        )
        for name, spec in config["experiments"].items()
        if name not in summarised
    ]  # fmt: skip
    sweep_parts = [
        sweep_section(args.results, name, members, len(members) > FULL_SECTIONS_UP_TO)
        for name, members in sweeps.items()
    ]
    summary = pd.DataFrame([x.summary_row() for x in experiments])
    summary = md_table(summary) if experiments else "No experiment outside the sweeps."
    shown: dict[str, str] = {}
    faults = sorted(
        {
            f"`{x.name}` ({fw} {dt}: {f['parameter']} flat index {f['index']} += {f['delta']:g}"
            f" after step {f['step']})"
            for x in experiments
            for (fw, dt), run in x.runs.items()
            if (f := run["meta"].get("fault"))
        }
    )
    what = what_was_trained(sorted({x.model for x in experiments}))
    parts = [
        "# PyTorch ↔ Burn training parity\n",
        f"{what}, trained from the same data and initial weights by PyTorch and by"
        f" Burn, {config['steps']} steps per run (batches of {config['batch_size']} in rotation),"
        " in f32 and in f64. Every number below is computed from this pipeline run.\n",
        *(
            [
                "**Warning: faults were injected on purpose (PARITY_FAULT) into "
                + "; ".join(faults)
                + ". The verdicts below judge those faults, not the frameworks.**\n"
            ]
            if faults
            else []
        ),
        atlas_section(experiments) if len({x.optimizer for x in experiments}) > 1 else "",
        "## Verdicts\n",
        summary + "\n",
        "How to read this: the f64 runs of the two frameworks should differ only by f64"
        " rounding. `f64 gap (max over steps)` is the largest torch-f64 vs burn-f64 parameter"
        " gap after any step; `compare … (worst key)` is the original `compare` script's"
        " worst difference over its keys: the per-step losses, the final loss, the correct count"
        " (a difference in samples, not in values) and the final parameters. The `rounding"
        " floor` is an estimate of what f64"
        f" rounding can explain: f64 rounds 2²⁹ times more finely than f32, so {vd.SAFETY:g} ×"
        " 2⁻²⁹ × the larger of the two frameworks' own f32-vs-f64 gaps (a running maximum), the"
        f" factor {vd.SAFETY:g} leaving room for the frameworks' different order of operations,"
        f" and never below {vd.ABSOLUTE_FLOOR:.2g} (64 f64 ulps of 1). A gap above the floor is"
        " an algorithmic difference; it is *explained* when the replays of Burn's update rule"
        " (`replays leave`: the largest gap the replay and the counterfactual leave) close it,"
        " and its causes are shared out by measurement (see each experiment). These figures"
        " come from the CPU path named under What depends on your CPU: on another CPU the"
        " figures that are rounding (the f32 columns, an f64 gap of a rounding verdict, the"
        " floor) can come out several times larger or smaller.\n",
        "## What was run\n",
        *provenance_lines(info, experiments),
        "",
        hyperparameter_table(config, effective["tolerances"], summarised) + "\n",
        cpu_section(
            [run["meta"] for x in experiments for run in x.runs.values()],
            max(
                (x.verdict.f64_gap for x in experiments if x.verdict.label == vd.EQUIVALENT),
                default=None,
            ),
        ),
        READING_GUIDE
        + (LAYERS_GUIDE if any(x.has_layers for x in experiments) else "")
        + (BUFFERS_GUIDE if any(x.buffer_names for x in experiments) else ""),
        *sweep_parts,
        *[x.section(shown) for x in experiments],
        bias_section(args.results, config["report_steps"]),
    ]
    return "\n".join(parts)


if __name__ == "__main__":
    main()
