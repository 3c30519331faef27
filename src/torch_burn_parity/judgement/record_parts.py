"""The verdict record's parts and its consistency (results/verdicts.json, version VERSION,
its JSON Schema beside this module: verdicts.schema.json).

A model's state is judged in parts: *training* (the parameters), and for a model with
buffers the *evaluation state* (BatchNorm's running statistics, which only an eval-mode
forward reads). Each part has its own verdict, its gap, and the causes of that gap with
their shares of it; the record's verdict is the worst of its parts' (diverged, then
unexplained, then explained, then equivalent), and its `causes` are the parts' causes when
it is explained, none otherwise: a script reading the record never sees an unexplained run
with a cause at a share of 1, nor an explained one whose training causes are left out.
"""

from __future__ import annotations

import json
from pathlib import Path

from torch_burn_parity.judgement import verdict as vd

VERSION = 3
SCHEMA = Path(__file__).with_name("verdicts.schema.json")

# The verdicts from the best to the worst: a record's is the worst of its parts'.
ORDER = (vd.EQUIVALENT, vd.EXPLAINED, vd.UNEXPLAINED, vd.DIVERGED)


def tagged(causes: list[tuple[str, float, str]], part: str) -> list[dict]:
    """Causes (name, share, how) as the record holds them, each with its part."""
    return [{"cause": c, "share": s, "how": how, "part": part} for c, s, how in causes]


def part(name: str, verdict: str, gap: float, causes: list[dict]) -> dict:
    return {"part": name, "verdict": verdict, "gap": gap,
            "causes": causes if verdict == vd.EXPLAINED else []}  # fmt: skip


def parts_of(
    label: str,
    f64_gap: float,
    causes: list[tuple[str, float, str]],
    training: list[tuple[str, float, str]] | None,
    split: vd.StateSplit | None,
    buffers_cause: dict | None,
) -> tuple[list[dict], list[dict]]:
    """(the record's parts, its causes), from the experiment's verdict `label`, its f64 gap
    and causes (shares of the largest gap), the parameters' own causes when both parts
    leave the floor (`training`, shares of the parameter gap), the parameters/buffers split
    of a model with buffers and the running-statistics cause measured against the buffers'
    gap (judge.buffers_cause)."""
    if split is None:
        whole = part(vd.TRAINING, label, f64_gap, tagged(causes, vd.TRAINING))
        return [whole], whole["causes"]
    if split.params_first is None:
        trained = part(vd.TRAINING, vd.EQUIVALENT, split.params_gap, [])
    else:
        own = training if training is not None else causes
        trained = part(vd.TRAINING, label, split.params_gap, tagged(own, vd.TRAINING))
    if split.buffers_first is None:
        held = part(vd.EVALUATION, vd.EQUIVALENT, split.buffers_gap, [])
    elif label == vd.DIVERGED:
        held = part(vd.EVALUATION, vd.DIVERGED, split.buffers_gap, [])
    elif buffers_cause is not None and buffers_cause["accounts_for_it"]:
        share = min(buffers_cause["moved"] / split.buffers_gap, 1.0)
        found = [{"cause": buffers_cause["name"], "share": share, "how": "measured",
                  "part": vd.EVALUATION}]  # fmt: skip
        held = part(vd.EVALUATION, vd.EXPLAINED, split.buffers_gap, found)
    else:
        held = part(vd.EVALUATION, vd.UNEXPLAINED, split.buffers_gap, [])
    parts = [trained, held]
    found = [c for p in parts for c in p["causes"]] if label == vd.EXPLAINED else []
    return parts, found


def record_problems(record: dict) -> list[str]:
    """Where a record disagrees with itself, one line each ([] when it does not): its
    verdict against its parts', its causes against its verdict and its parts', a share
    outside [0, 1] or a part's shares adding up to more than its gap."""
    name, label = record["experiment"], record["verdict"]
    problems = []
    verdicts = [p["verdict"] for p in record["parts"]]
    worst = max(verdicts, key=ORDER.index)
    if label != worst:
        problems.append(f"{name}: verdict {label!r}, its parts' worst {worst!r}")
    if label != vd.EXPLAINED and record["causes"]:
        problems.append(f"{name}: {len(record['causes'])} causes for a verdict {label!r}")
    if label == vd.EXPLAINED and not record["causes"]:
        problems.append(f"{name}: explained without a cause")
    parts_causes = [c for p in record["parts"] for c in p["causes"]]
    if label == vd.EXPLAINED and record["causes"] != parts_causes:
        problems.append(f"{name}: the record's causes are not its parts' causes")
    for p in record["parts"]:
        shares = [c["share"] for c in p["causes"]]
        if any(not 0.0 <= s <= 1.0 for s in shares) or sum(shares) > 1.0 + 1e-9:
            problems.append(f"{name}: the {p['part']} part's shares {shares} exceed its gap")
        if p["verdict"] != vd.EXPLAINED and p["causes"]:
            problems.append(f"{name}: causes for the {p['verdict']!r} {p['part']} part")
        if any(c["part"] != p["part"] for c in p["causes"]):
            problems.append(f"{name}: a cause of another part in the {p['part']} part")
    return problems


def document_problems(document: dict) -> list[str]:
    """Where a verdicts.json document breaks its schema (the first place) or a record
    disagrees with itself; [] when neither."""
    import jsonschema

    try:
        jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the document"
        return [f"{where}: {exc.message}"]
    return [p for record in document["experiments"] for p in record_problems(record)]
