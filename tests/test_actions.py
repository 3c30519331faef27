"""The report's first screen: what to change, by cause, across every experiment."""

from __future__ import annotations

from types import SimpleNamespace

from torch_burn_parity.config.spec import PortDeclaration
from torch_burn_parity.report.actions import actions_section, anchor, effect_brief

EXPLAINED = "algorithmic difference, explained"


def effect(t_loss, b_loss, differ=0, own=0, changes=True) -> dict:
    return {"torch": {"loss": t_loss, "accuracy": 0.5}, "burn": {"loss": b_loss, "accuracy": 0.75},
            "samples": 96, "predictions_differ": differ, "unit": "samples",
            "changes_outcome": changes, "rounding": {fw: {"predictions_differ": own, "d_loss": 0}
                                                     for fw in ("torch", "burn")}}  # fmt: skip


def experiment(name, optimizer, causes, eff, verdict=EXPLAINED, sensitivity=None):
    record = {"experiment": name, "optimizer": optimizer, "verdict": verdict, "f64_gap": 1.0,
              "split": None, "sensitivity": sensitivity,
              "causes": [{"cause": c, "share": s, "how": "measured"} for c, s in causes],
              "effect": eff}  # fmt: skip
    spec = SimpleNamespace(port=None)  # the fields of config/spec.py's Spec the rows read
    return SimpleNamespace(name=name, record=record, paired=None, proof=None, spec=spec)


EPS = "config diff: eps (torch 1e-08, burn 1e-05)"
STORED = "Burn's f32 storage of betas"


def test_one_row_per_cause_across_experiments_with_each_ones_share_and_effect():
    experiments = [
        experiment("adam_eps", "adam", [(EPS, 1.0)], effect(0.5, 0.5001, changes=False)),
        experiment(
            "rms",
            "rmsprop",
            [("config diff: momentum (torch 0.0, burn 0.9)", 0.99), (EPS, 0.01)],
            effect(0.8, 0.02, differ=29),
        ),  # fmt: skip
        experiment(
            "muon",
            "adamw",
            [(STORED, 0.06)],
            effect(0.04, 0.007),
            sensitivity={"not_separable": [STORED]},
        ),  # fmt: skip
        experiment(
            "quiet",
            "adam",
            [("Burn's f32 arithmetic in its update", 1.0)],
            effect(0.5, 0.5, changes=False),
        ),  # fmt: skip
        experiment(
            "bn",
            "sgd",
            [],
            effect(0.5, 0.5, changes=False),
            verdict="algorithmic difference, unexplained",
        ),  # fmt: skip
    ]
    text = actions_section(experiments)
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| ") and "change to" not in line and ":--" not in line
    ]
    assert len(rows) == 3  # eps, momentum, the f32 storage; the quiet cause below the table
    eps = next(row for row in rows if "| config diff: eps" in row)
    assert eps.startswith(
        "| pass PyTorch's eps to Burn: `AdamConfig::new().with_epsilon(1e-08)` /"
        " `RmsPropConfig::new().with_epsilon(1e-08)` |"
    )
    # an experiment whose outcome is unchanged: by name, after those whose outcome changes
    assert eps.endswith(f"; no effect on the outcome in {anchor(experiments[0].record)} | — |")
    assert f"{anchor(experiments[1].record)} 1.0% (loss -98%, accuracy +25.0 pts" in eps
    assert rows[0].startswith("| pass PyTorch's momentum to Burn")  # the largest share that acts
    # then by the largest share in an experiment whose outcome changes: 0.06, then 0.01
    assert [row.split(" | ")[1] for row in rows[1:]] == [
        "Burn's f32 storage of hyperparameters",
        "config diff: eps (torch 1e-08, burn 1e-05)",
    ]
    assert "a sensitive run: this share is not separable from rounding" in rows[1]
    assert (
        "- Burn's f32 arithmetic in its update (or its per-step Adam factors) — [quiet](#" in text
    )
    assert "Not explained by any replay (see each experiment for where it starts): [bn](#" in text
    assert anchor(experiments[0].record) == "[adam_eps](#experiment-adam_eps)"


def test_the_effect_in_brief_against_rounding():
    brief = effect_brief({"effect": effect(0.8, 0.02, differ=29, own=3)})
    assert brief == (
        "loss -98%, accuracy +25.0 pts, 29 of 96 samples predicted differently (rounding alone: 3)"
    )
    assert actions_section([]) == ""


def test_a_fix_is_shown_with_its_proving_runs_verdict():
    """rms__fix (config/proving.py) is rms with PyTorch's values passed to Burn: its verdict
    stands beside the fix, and it gets no row of its own."""
    rms = experiment("rms", "rmsprop", [("config diff: momentum (torch 0.0, burn 0.9)", 1.0)],
                     effect(0.8, 0.02, differ=29))  # fmt: skip
    fixed = experiment("rms__fix", "rmsprop", [("Burn's f32 storage of alpha", 1.0)],
                       effect(0.8, 0.8, changes=False))  # fmt: skip
    fixed.record["f64_gap"] = 1.09e-7
    rms.proof = fixed.record
    text = actions_section([rms, fixed])
    row = next(line for line in text.splitlines() if line.startswith("| pass PyTorch's"))
    assert row.endswith(
        "| [rms__fix](#experiment-rms__fix): explained by what Burn computes"
        " in f32 alone (f32 storage): the fix closes the rest (f64 gap 1.00e+00 → 1.09e-07) |"
    )
    assert "Burn's f32 storage of hyperparameters" not in text  # the proving run's own cause
    still = experiment("rms__fix", "rmsprop", [("config diff: eps (torch 1e-08, burn 1e-05)",
                                                1.0)], effect(0.8, 0.7))  # fmt: skip
    rms.proof = still.record
    assert "the fix does not close the gap (config diff: eps" in actions_section([rms, still])
    rms.proof = dict(fixed.record, verdict="equivalent up to rounding", causes=[])
    assert "equivalent up to rounding: the fix closes the gap" in actions_section([rms])
    # what no setting reaches, rounding-sized in a sensitive run, or not rounding-sized
    muon = "Muon's Newton–Schulz: PyTorch's in bfloat16, Burn's in the tensor's dtype"
    chaotic = {"not_separable": [muon], "own_gap": {"torch": 0.0936, "burn": 0.0612}}
    rms.proof = dict(fixed.record, causes=[{"cause": muon, "share": 1.0}], sensitivity=chaotic)
    assert (
        "explained by precision alone (Muon precision), in a sensitive run (its own f32-vs-f64"
        " gap up to 9.36e-02): the fix closes the rest"
    ) in actions_section([rms])
    running = "the running-variance estimator: Burn's biased, PyTorch's unbiased"
    rms.proof = dict(fixed.record, causes=[{"cause": running, "share": 1.0}])
    assert (
        "explained by what no setting reaches alone (running statistics): every cause with a"
        " fix is gone"
    ) in actions_section([rms])


def test_a_ports_fix_is_proven_by_the_porters_own_run():
    """A port's Burn side is its own crate: no proving run is derived, the row says whose
    it is."""
    setting = "the layer setting norm.eps (torch 0.001, burn 1e-05)"
    mine = experiment("mine", "adam", [(setting, 1.0)], effect(0.8, 0.02, differ=29))
    mine.spec = SimpleNamespace(port=PortDeclaration("mine", [], [], ["norm"]))
    row = next(line for line in actions_section([mine]).splitlines() if "norm" in line)
    assert row.endswith("| yours: rerun `mine` with your crate changed as this row says |")
    assert "`.with_epsilon(0.001)`" in row
    mine.spec = SimpleNamespace(
        port=None
    )  # a built-in model without a proving run: nothing to show
    row = next(line for line in actions_section([mine]).splitlines() if "norm" in line)
    assert row.endswith(" | — |")
