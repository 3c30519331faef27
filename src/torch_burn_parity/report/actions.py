"""The report's first screen after the headline: what to change, by cause, across every
experiment. One row per cause (a differing value, a layer setting, the clipping scope, Burn's
f32 arithmetic, …): the change to make in the port (a Rust line, or why nothing in Burn
can), the experiments it touches with its share of each one's gap, and what each of those
differences does to training against what rounding alone does. Causes whose experiments'
outcomes are all unchanged (judgement/effect.py) come after, in a short list; so do the
experiments no replay explains. From the verdict records and judgement/fixes.py only."""

from __future__ import annotations

import math

from torch_burn_parity.config.proving import original
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.judgement.effect import ROUNDING_SIZED
from torch_burn_parity.judgement.fixes import fixes, kind_of
from torch_burn_parity.report.verdict_text import e

# The kinds of cause that are Burn's f32 alone (judgement/fixes.py KINDS).
F32_KINDS = ("f32 storage", "held values", "f32 arithmetic", "loss precision")

# A row's title for the kinds of cause whose words differ between experiments (the values
# they name); other kinds are titled by the cause itself.
TITLES = {
    "f32 storage": "Burn's f32 storage of hyperparameters",
    "held values": "Burn's held hyperparameters",
    "f32 arithmetic": "Burn's f32 arithmetic in its update (or its per-step Adam factors)",
    "loss precision": "Burn's smoothed cross-entropy targets, weighted in f32",
    "schedule": "the schedule: PyTorch's recursive, Burn's closed form",
    "running statistics": "BatchNorm's running-variance estimator (Burn biased, PyTorch unbiased)",
    "Muon lr adjustment": "Muon's lr adjustment on the shape each framework holds",
    "Muon precision": "Muon's Newton–Schulz precision (PyTorch bfloat16, Burn the tensor's)",
}


def anchor(record: dict) -> str:
    """The link to an experiment's section (the anchor experiment.py puts under its heading;
    its page in the HTML report, report/pages.py)."""
    return f"[{record['experiment']}](#experiment-{record['experiment']})"


def effect_brief(record: dict) -> str:
    """'loss −96.9%, accuracy +30.2 pts, 29 of 96 samples predicted differently (rounding
    alone: 0)': Burn's f32 outcome against PyTorch's."""
    effect = record["effect"]
    t, b = effect["torch"], effect["burn"]
    parts = []
    if math.isfinite(t["loss"]) and math.isfinite(b["loss"]) and t["loss"]:
        parts.append(f"loss {100 * (b['loss'] - t['loss']) / abs(t['loss']):+.2g}%")
    else:
        parts.append("a run diverged")
    if t.get("accuracy") is not None and b.get("accuracy") is not None:
        parts.append(f"accuracy {100 * (b['accuracy'] - t['accuracy']):+.1f} pts")
    if effect["samples"]:
        own = max(r["predictions_differ"] for r in effect["rounding"].values())
        parts.append(
            f"{effect['predictions_differ']} of {effect['samples']} {effect.get('unit', 'samples')}"
            f" predicted differently (rounding alone: {own})"
        )
    return ", ".join(parts)


def grouped(experiments: list) -> dict[tuple, dict]:
    """Every fix of every explained experiment, by cause: {key: {title, changes, touches}}."""
    rows: dict[tuple, dict] = {}
    for x in experiments:
        if original(x.name):  # a proving run: shown beside the fix it proves
            continue
        for f in fixes(x.record, x.paired):
            title = TITLES.get(f.kind) or (
                f.cause.split(":")[0] if f.kind == "clipping" else f.cause
            )
            change = f.fix or f"nothing to change: {f.why_not}"
            key = (f.kind, title, f.fix is None)
            row = rows.setdefault(key, {"title": title, "changes": [], "touches": [],
                                        "proofs": []})  # fmt: skip
            if change not in row["changes"]:
                row["changes"].append(change)
            row["touches"].append((x.record, f.share, f.cause))
            proof = proved(x) if x.proof else None
            if f.fix is not None and not x.proof and x.spec.port is not None:
                # a port's Burn side is its own crate: the proving run is the porter's
                proof = f"yours: rerun `{x.name}` with your crate changed as this row says"
            if f.fix is not None and proof and proof not in row["proofs"]:
                row["proofs"].append(proof)
    return rows


def proof_text(proof: dict) -> str:
    """What a proving run (config/proving.py) says of the fix: 'equivalent up to rounding',
    'explained by what Burn computes in f32 alone (…)', or that the gap stays."""
    verdict, causes = proof["verdict"], [c["cause"] for c in proof["causes"]]
    if verdict == vd.EQUIVALENT:
        return "equivalent up to rounding: the fix closes the gap"
    found = list(dict.fromkeys(kind_of(c)[0] for c in causes))
    kinds = ", ".join(found)
    if verdict == vd.EXPLAINED and all(k in F32_KINDS for k in found):
        return f"explained by what Burn computes in f32 alone ({kinds}): the fix closes the rest"
    if verdict == vd.EXPLAINED and all(k in ROUNDING_SIZED for k in found):
        sensitive = proof.get("sensitivity") or {}
        own = max((sensitive.get("own_gap") or {}).values(), default=None)
        chaos = (
            f", in a sensitive run (its own f32-vs-f64 gap up to {e(own)})"
            if sensitive.get("not_separable") and own is not None
            else ""
        )
        return f"explained by precision alone ({kinds}){chaos}: the fix closes the rest"
    if verdict == vd.EXPLAINED and all(kind_of(c)[1] is None for c in causes):
        return (
            f"explained by what no setting reaches alone ({kinds}): every cause with a fix is gone"
        )

    return f"{verdict}: the fix does not close the gap" + (
        f" ({'; '.join(causes)} remain)" if causes else ""
    )


def proved(x) -> str:
    """'[x__fix](#…): equivalent up to rounding…', or '—' without a proving run."""
    if not x.proof:
        return "—"
    gaps = f"f64 gap {e(x.record['f64_gap'])} → {e(x.proof['f64_gap'])}"
    return f"{anchor(x.proof)}: {proof_text(x.proof)} ({gaps})"


def touched(record: dict, share: float, cause: str) -> str:
    sensitive = record.get("sensitivity") or {}
    note = ""
    if cause in sensitive.get("not_separable", []):  # judgement/effect.py
        note = "; a sensitive run: this share is not separable from rounding"
    return f"{anchor(record)} {share:.1%} ({effect_brief(record)}{note})"


def touches_cell(touches: list[tuple]) -> str:
    """The experiments whose outcome changes in full; the others by name after them."""
    changing = [t for t in touches if t[0]["effect"]["changes_outcome"]]
    rest = [anchor(t[0]) for t in touches if not t[0]["effect"]["changes_outcome"]]
    cell = "; ".join(touched(*t) for t in changing)
    return cell + (f"; no effect on the outcome in {', '.join(rest)}" if rest else "")


def joined(changes: list[str]) -> str:
    """The changes of one row, their shared words once: "pass PyTorch's eps to Burn:
    `AdamConfig::…` / `AdamWConfig::…`"."""
    heads = {change.partition(": `")[0] for change in changes}
    if len(changes) > 1 and len(heads) == 1 and all(": `" in c for c in changes):
        return f"{heads.pop()}: " + " / ".join("`" + c.partition(": `")[2] for c in changes)
    return " / ".join(changes)


def actions_section(experiments: list) -> str:
    """'## What to change': the causes that change an outcome, then the rest, then the
    experiments no replay explains."""
    rows = list(grouped(experiments).values())
    if not rows and not any(x.record["verdict"] == vd.UNEXPLAINED for x in experiments):
        return ""

    def weight(row: dict) -> tuple:
        changing = [s for r, s, _ in row["touches"] if r["effect"]["changes_outcome"]]
        return (-len(changing), -max(changing, default=0.0), -max(s for _, s, _ in row["touches"]))

    rows.sort(key=weight)
    acting = [r for r in rows if any(t[0]["effect"]["changes_outcome"] for t in r["touches"])]
    quiet = [r for r in rows if r not in acting]
    out = ["## What to change", ""]
    if acting:
        out += [
            "Each cause found in an experiment whose outcome of training changes, with the"
            " change that removes it, the experiments it touches, its share of each one's f64"
            " gap, and what that experiment's whole difference does to Burn's f32 run against"
            " PyTorch's.",
            "",
            "| change to make | cause | experiments (share of the gap; effect of the whole"
            " difference on training) | with every fix of that experiment (its proving run) |",
            "| :-- | :-- | :-- | :-- |",
        ]
        for r in acting:
            touches = touches_cell(r["touches"])
            proofs = "; ".join(r["proofs"]) or "—"
            out.append(f"| {joined(r['changes'])} | {r['title']} | {touches} | {proofs} |")
        out.append("")
    else:
        out += ["No cause changes the outcome of training beyond what rounding alone does.", ""]
    if quiet:
        out.append("No effect on the outcome of training (beyond rounding):")
        out.append("")
        for r in quiet:
            names = ", ".join(anchor(t[0]) for t in r["touches"])
            proofs = f" — with the fix: {'; '.join(r['proofs'])}" if r["proofs"] else ""
            out.append(f"- {r['title']} — {names} — {joined(r['changes'])}{proofs}")
        out.append("")
    unexplained = [x.record for x in experiments if x.record["verdict"] == vd.UNEXPLAINED]
    if unexplained:
        names = ", ".join(anchor(r) for r in unexplained)
        out += [f"Not explained by any replay (see each experiment for where it starts): {names}.",
                ""]  # fmt: skip
    return "\n".join(out)
