"""The verdict record (judgement/record_parts.py, verdicts.schema.json): each part of the
state judged on its own, the record's verdict the worst of its parts', its causes those of
an explained verdict only — and a record that disagrees with itself named, line by line."""

from __future__ import annotations

import copy
import json

import pytest

from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.judgement.judge import Record
from torch_burn_parity.judgement.record_parts import (
    SCHEMA,
    VERSION,
    document_problems,
    parts_of,
    record_problems,
)

ESTIMATOR = "the running-variance estimator (Burn biased, PyTorch unbiased)"
F32 = ("Burn's f32 arithmetic in its update", 0.9, "the remainder")
STORED = ("Burn's f32 storage of eps", 0.1, "measured")


def schema() -> dict:
    return json.loads(SCHEMA.read_text())


def test_the_schema_names_every_field_of_the_record():
    assert list(schema()["$defs"]["record"]["properties"]) == list(Record.__dataclass_fields__)
    assert schema()["properties"]["version"] == {"const": VERSION}


def split(params_first, buffers_first) -> vd.StateSplit:
    return vd.StateSplit(2e-6, params_first, 3e-3, buffers_first)


def held(accounts: bool) -> dict:
    return {"name": ESTIMATOR, "moved": 3.1e-3, "buffers_gap": 3e-3, "accounts_for_it": accounts}


def record(label: str, parts: list[dict], causes: list[dict]) -> dict:
    return {"experiment": "e", "verdict": label, "parts": parts, "causes": causes}


def test_a_model_without_buffers_is_one_part():
    parts, causes = parts_of(vd.EXPLAINED, 1e-5, [F32, STORED], None, None, None)
    assert [(p["part"], p["verdict"], p["gap"]) for p in parts] == [
        ("training", vd.EXPLAINED, 1e-5)
    ]
    assert [c["cause"] for c in causes] == [F32[0], STORED[0]]
    assert {c["part"] for c in causes} == {"training"}
    # unexplained: its candidate causes are no causes of the record
    parts, causes = parts_of(vd.UNEXPLAINED, 1e-5, [F32], None, None, None)
    assert causes == [] and parts[0]["causes"] == []


def test_both_parts_explained_keep_the_training_causes_beside_the_evaluation_ones():
    parts, causes = parts_of(vd.EXPLAINED, 3e-3, [(ESTIMATOR, 1.0, "measured")], [F32, STORED],
                             split(1, 1), held(True))  # fmt: skip
    assert [(p["part"], p["verdict"]) for p in parts] == [
        ("training", vd.EXPLAINED), ("evaluation state", vd.EXPLAINED),
    ]  # fmt: skip
    assert [(c["part"], c["cause"]) for c in causes] == [
        ("training", F32[0]), ("training", STORED[0]), ("evaluation state", ESTIMATOR),
    ]  # fmt: skip
    assert causes[-1]["share"] == 1.0  # moved 3.1e-3 of a 3e-3 gap: capped at the whole
    assert record_problems(record(vd.EXPLAINED, parts, causes)) == []


def test_an_unexplained_training_with_an_explained_evaluation_state_has_no_cause():
    """cnn_bn on NdArray: training parts by the backend's GELU gradient, which nothing
    measures; the running variance is its estimator's."""
    parts, causes = parts_of(vd.UNEXPLAINED, 3e-3, [(ESTIMATOR, 1.0, "measured")], None,
                             split(1, 1), held(True))  # fmt: skip
    assert [(p["part"], p["verdict"]) for p in parts] == [
        ("training", vd.UNEXPLAINED), ("evaluation state", vd.EXPLAINED),
    ]  # fmt: skip
    assert causes == [] and parts[1]["causes"][0]["cause"] == ESTIMATOR
    assert record_problems(record(vd.UNEXPLAINED, parts, causes)) == []


def test_training_within_the_floor_is_equivalent_and_the_buffers_alone_explained():
    parts, causes = parts_of(vd.EXPLAINED, 3e-3, [(ESTIMATOR, 1.0, "measured")], None,
                             split(None, 1), held(True))  # fmt: skip
    assert [p["verdict"] for p in parts] == [vd.EQUIVALENT, vd.EXPLAINED]
    assert [c["part"] for c in causes] == ["evaluation state"]


def explained() -> dict:
    parts, causes = parts_of(vd.EXPLAINED, 3e-3, [(ESTIMATOR, 1.0, "measured")], [F32, STORED],
                             split(1, 1), held(True))  # fmt: skip
    return record(vd.EXPLAINED, parts, causes)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda r: r.update(verdict=vd.EQUIVALENT),
         "e: verdict 'equivalent up to rounding', its parts' worst"),
        (lambda r: (r.update(verdict=vd.UNEXPLAINED), r["parts"][0].update(verdict=vd.UNEXPLAINED)),
         "e: 3 causes for a verdict 'algorithmic difference, unexplained'"),
        (lambda r: r["causes"].pop(0), "e: the record's causes are not its parts' causes"),
        (lambda r: r["parts"][0]["causes"][0].update(share=0.95),
         "e: the training part's shares [0.95, 0.1] exceed its gap"),
        (lambda r: r["parts"][1]["causes"][0].update(part="training"),
         "e: a cause of another part in the evaluation state part"),
    ],
)  # fmt: skip
def test_a_record_at_odds_with_itself_is_named(change, problem):
    broken = copy.deepcopy(explained())
    change(broken)
    assert any(p.startswith(problem) for p in record_problems(broken)), record_problems(broken)


def complete(partial: dict) -> dict:
    """A whole record around ``partial`` (its verdict, parts and causes): every other field
    of the schema's type."""
    return {
        "model": "m", "model_size": {}, "optimizer": "sgd", "cause": "x", "scope": "training",
        "both_parts": True, "f64_gap": 3e-3, "floor": 1e-14, "gap_over_floor": 3e11,
        "first_above_floor": 1, "far_above_floor": True, "where_first_above": None,
        "replay_gap": 1e-16, "f32_gap": 3e-3, "first_f32_step_above_tol": 1,
        "f32_rounding_exceeds_tol": False,
        "split": {"params_gap": 2e-6, "params_first": 1, "buffers_gap": 3e-3, "buffers_first": 1},
        "unexplained_start": None, "entry": None, "buffers_cause": None, "probe": None,
        "losses": {}, "marginal": False, "f32_rounding_over_tol": False, "divergence": [],
        "effect": {"changes_outcome": True, "beyond_rounding": True, "rounding": {
            fw: {"predictions_differ": 0, "d_loss": 1e-7, "loss_digits": 5}
            for fw in ("torch", "burn")}},
        "sensitivity": {"own_gap": {"torch": 1e-3, "burn": 2e-3}, "f64_gap": 3e-3,
                        "within_rounding": True, "not_separable": []},
    } | partial  # fmt: skip


def test_the_pipeline_refuses_to_gather_a_record_at_odds_with_itself(tmp_path):
    from torch_burn_parity.judgement.judge import collect

    good = complete(explained())
    assert set(good) == set(Record.__dataclass_fields__)
    bad = dict(good, verdict=vd.EQUIVALENT)
    for name, r in (("good", good), ("bad", bad)):
        (tmp_path / f"{name}.json").write_text(json.dumps(r))
    collect([tmp_path / "good.json"], tmp_path / "verdicts.json")
    assert json.loads((tmp_path / "verdicts.json").read_text())["version"] == VERSION
    with pytest.raises(SystemExit, match="bad.json: e: verdict 'equivalent up to rounding'"):
        collect([tmp_path / "good.json", tmp_path / "bad.json"], tmp_path / "again.json")
    assert not (tmp_path / "again.json").exists()


def test_a_document_that_breaks_the_schema_is_named_where():
    document = {"version": VERSION, "experiments": [complete(explained())]}
    assert document_problems(document) == []
    document["experiments"][0]["parts"][1]["verdict"] = "fine"
    (problem,) = document_problems(document)
    assert problem.startswith("experiments/0/parts/1/verdict: 'fine' is not one of")
    assert document_problems({"version": 1, "experiments": []}) == [
        f"version: {VERSION} was expected"
    ]
