"""lrs_table.py: the lr PyTorch and Burn used at each step, on real run files of both trainers."""

from __future__ import annotations

import json
import math
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from conftest import SGD, small_config
from torch_burn_parity.analysis import lrs_table as lt
from torch_burn_parity.io.run_tensors import tensors_path

STEPS = 8
# SGD (the schedule does not depend on the optimizer), each schedule kind; linear and cosine
# end before the last step, so what follows num_steps is covered too.
SCHEDULES = {
    "constant": {"kind": "constant"},
    "linear": {"kind": "linear", "final_lr": 0.05, "num_steps": 5},
    "exponential": {"kind": "exponential", "gamma": 0.95},
    "cosine": {"kind": "cosine", "min_lr": 0.001, "num_steps": 5},
    "step": {"kind": "step", "step_size": 1, "gamma": 0.9},
}
LR = {"step": 0.1}  # 0.5 (a power of 2) makes γ^k products exact: the step schedule agrees


@pytest.fixture(scope="module")
def runs(train, write_config) -> dict[str, dict[str, object]]:
    """The f64 run files of both trainers for each schedule kind, trained once."""
    experiments = {kind: {**SGD, "lr": LR.get(kind, 0.5), "schedule": schedule}
                   for kind, schedule in SCHEDULES.items()}  # fmt: skip
    config = write_config(small_config(STEPS, **experiments))
    jobs = [(fw, kind) for kind in SCHEDULES for fw in ("torch", "burn")]
    with ThreadPoolExecutor(2) as pool:
        outs = list(pool.map(lambda job: train(job[0], job[1], "f64", config)[1], jobs))
    found: dict[str, dict] = {kind: {} for kind in SCHEDULES}
    for (fw, kind), out in zip(jobs, outs, strict=True):
        found[kind][fw] = out
    return found


def table(runs, kind, tmp_path, capsys, *steps: int):
    csv, md = tmp_path / "out" / f"lrs_{kind}.csv", tmp_path / "out" / f"lrs_{kind}.md"
    argv = ["--experiment", kind, "--torch-f64", str(runs[kind]["torch"]),
            "--burn-f64", str(runs[kind]["burn"]), "--csv", str(csv), "--md", str(md)]  # fmt: skip
    lt.main(argv + (["--report-steps", *map(str, steps)] if steps else []))
    return pd.read_csv(csv), md.read_text(), capsys.readouterr().out


def lrs(runs, kind: str, fw: str) -> list[float]:
    return json.loads(runs[kind][fw].read_text())[kind]["lrs"]


# --------------------------------------------------------------------------- real runs


def test_a_constant_lr_is_the_same_at_every_step(runs, tmp_path, capsys):
    frame, md, out = table(runs, "constant", tmp_path, capsys, 1, 2, 5)
    assert list(frame.columns) == lt.COLUMNS
    assert frame["step"].tolist() == list(range(1, STEPS + 1))
    assert (frame["lr_torch"] == 0.5).all() and (frame["lr_burn"] == 0.5).all()
    assert (frame["rel_diff"] == 0).all()
    assert md == (
        "### Learning rates: constant (constant schedule)\n\n"
        f"PyTorch and Burn use the same lr at every step ({STEPS} steps).\n\n"
        "```text\n"
        f"{lt.HEADER}\n"
        "   1  0.5                     0.5                     0.00e+00\n"
        "   2  0.5                     0.5                     0.00e+00\n"
        "   5  0.5                     0.5                     0.00e+00\n"
        "   8  0.5                     0.5                     0.00e+00\n"
        "```\n"
    )
    assert out.startswith("constant: 8 steps, lr first differs at step none, max rel diff 0.00e+00")


def test_a_linear_schedule_is_a_few_ulps_apart_from_step_1(runs, tmp_path, capsys):
    frame, md, out = table(runs, "linear", tmp_path, capsys, 1, 2, 6)
    # The same line from 0.5 to 0.05 over 5 steps, then 0.05: PyTorch's recursive factors
    # land 1 or 2 ulps from Burn's closed form, whose first lr, 0.05 − (−0.09)·5, is already
    # an ulp below 0.5.
    line = [0.5, 0.41, 0.32, 0.23, 0.14, 0.05, 0.05, 0.05]
    assert frame["lr_torch"].tolist() == pytest.approx(line)
    assert frame["lr_burn"].tolist() == pytest.approx(frame["lr_torch"].tolist(), rel=1e-15)
    assert (frame["rel_diff"] < 1e-15).all() and (frame["rel_diff"] > 0).any()
    assert frame.loc[0, "lr_torch"] == 0.5 and frame.loc[0, "lr_burn"] == 0.49999999999999994
    assert md.startswith(
        "### Learning rates: linear (linear schedule)\n\n"
        "The lr first differs at step 1 (PyTorch 0.5, Burn 0.49999999999999994); it differs at 8"
        " of 8 steps, by at most 2 f64 ulps (at step 4, relative difference 2.41e-16).\n\n"
    )
    assert "\n   1  0.5                     0.49999999999999994     1.11e-16\n" in md
    assert "\n   6  0.05000000000000001     0.05                    1.39e-16\n" in md
    assert out.startswith("linear: 8 steps, lr first differs at step 1, max rel diff 2.41e-16")


def test_an_exponential_schedule_carries_burns_first_ulp_on(runs, tmp_path, capsys):
    frame, md, _ = table(runs, "exponential", tmp_path, capsys)
    # Burn seeds its recursion with 0.5 / 0.95, and (0.5 / 0.95) · 0.95 is an ulp below 0.5.
    assert frame.loc[0, "lr_torch"] == 0.5 and frame.loc[0, "lr_burn"] == 0.49999999999999994
    assert frame["lr_burn"].tolist() == pytest.approx(0.5 * 0.95 ** np.arange(STEPS), rel=1e-15)
    assert md.splitlines()[2] == (
        "The lr first differs at step 1 (PyTorch 0.5, Burn 0.49999999999999994); it differs at"
        " 7 of 8 steps, by at most 1 f64 ulp (at step 1; the largest relative difference,"
        " 1.51e-16, is at step 7)."
    )


def test_the_runs_compute_each_schedule_as_config_diff_says(runs):
    """Bit for bit: PyTorch's recursive forms (torch/optim/lr_scheduler.py, stepped after the
    optimizer step) and Burn's closed forms (burn-optim src/lr_scheduler/*.rs, stepped before,
    its first call giving the initial lr); step k uses the schedule at k − 1 in both."""
    for kind, schedule in SCHEDULES.items():
        lr = LR.get(kind, 0.5)
        assert lrs(runs, kind, "torch") == torch_schedule(lr, schedule, STEPS), kind
        assert lrs(runs, kind, "burn") == burn_schedule(lr, schedule, STEPS), kind


def torch_schedule(lr: float, s: dict, steps: int) -> list[float]:
    out, n = [lr], s.get("num_steps")
    for e in range(1, steps):
        prev = out[-1]
        if s["kind"] == "linear":
            d = s["final_lr"] / lr - 1.0  # end_factor − start_factor
            out.append(prev if e > n else prev * (1.0 + d / (n * 1.0 + (e - 1) * d)))
        elif s["kind"] == "cosine":
            low = s["min_lr"]
            if (e - 1 - n) % (2 * n) == 0:
                out.append(prev + (lr - low) * (1 - math.cos(math.pi / n)) / 2)
            else:
                ratio = (1 + math.cos(math.pi * e / n)) / (1 + math.cos(math.pi * (e - 1) / n))
                out.append(ratio * (prev - low) + low)
        elif s["kind"] == "exponential":
            out.append(prev * s["gamma"])
        elif s["kind"] == "step":
            out.append(prev * s["gamma"] if e % s["step_size"] == 0 else prev)
        else:
            out.append(prev)
    return out


def powi(a: float, b: int) -> float:
    """Rust's f64::powi as compiler-rt's __powidf2 computes it (square and multiply)."""
    r = 1.0
    while True:
        if b & 1:
            r *= a
        b //= 2
        if b == 0:
            return r
        a *= a


def burn_schedule(lr: float, s: dict, steps: int) -> list[float]:
    kind, n = s["kind"], s.get("num_steps")
    if kind == "linear":
        size = (s["final_lr"] - lr) / n
        return [s["final_lr"] - size * max(n - k, 0) for k in range(steps)]
    if kind == "cosine":
        low = s["min_lr"]
        return [low + 0.5 * (lr - low) * (1.0 + math.cos(k / n * math.pi)) for k in range(steps)]
    if kind == "exponential":
        out, prev = [], lr / s["gamma"]
        for _ in range(steps):
            prev *= s["gamma"]
            out.append(prev)
        return out
    if kind == "step":
        return [lr * powi(s["gamma"], k // s["step_size"]) for k in range(steps)]
    return [lr] * steps


def test_cosine_and_step_differ_by_rounding_only(runs):
    for kind in ("cosine", "step"):
        torch_lr = np.array(lrs(runs, kind, "torch"))
        burn_lr = np.array(lrs(runs, kind, "burn"))
        assert (torch_lr != burn_lr).any(), kind
        assert lt.ulp_distance(torch_lr, burn_lr).max() <= 4, kind


# --------------------------------------------------------------------------- damaged inputs


def arguments(torch_run, burn_run, tmp_path) -> list[str]:
    """lrs_table's arguments for experiment 'linear', its outputs c and m in tmp_path."""
    return ["--experiment", "linear", "--torch-f64", str(torch_run), "--burn-f64", str(burn_run),
            "--csv", str(tmp_path / "c"), "--md", str(tmp_path / "m")]  # fmt: skip


def test_a_run_file_without_lrs_is_refused_naming_file_and_key(runs, tmp_path):
    run = json.loads(runs["linear"]["burn"].read_text())
    del run["linear"]["lrs"]
    old = tmp_path / "burn-f64.json"
    old.write_text(json.dumps(run))
    shutil.copy(tensors_path(runs["linear"]["burn"]), tensors_path(old))  # its tensors
    with pytest.raises(SystemExit) as stop:
        lt.main(arguments(runs["linear"]["torch"], old, tmp_path))
    assert stop.value.code == (
        f"lrs_table: {old}: no 'lrs' field (the lr of each step; an older run file)"
    )
    assert not (tmp_path / "c").exists() and not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda block: block.update(lrs=[0.5] * 3), "'lrs' must hold one number per step (8)"),
        (lambda block: block.update(lrs=["fast"] * 8), "'lrs' must hold one number per step (8)"),
        (lambda block: block.update(lrs={"0": 0.5}), "'lrs' must hold one number per step (8)"),
        (lambda block: block.pop("losses"), "experiment 'linear' has no 'losses' field"),
    ],
)
def test_a_malformed_run_file_stops_with_one_line_naming_it(runs, tmp_path, damage, message):
    run = json.loads(runs["linear"]["torch"].read_text())
    damage(run["linear"])
    bad = tmp_path / "torch-f64.json"
    bad.write_text(json.dumps(run))
    shutil.copy(tensors_path(runs["linear"]["torch"]), tensors_path(bad))  # its tensors
    with pytest.raises(SystemExit) as stop:
        lt.main(arguments(bad, runs["linear"]["burn"], tmp_path))
    assert stop.value.code == f"lrs_table: {bad}: {message}"
    assert "\n" not in stop.value.code


@pytest.mark.parametrize(
    ("text", "message"),
    [(None, "run file not found"), ('{"linear": ', "not valid JSON"), ("[]", "expected a JSON")],
)
def test_a_missing_or_unreadable_file_is_named(runs, tmp_path, text, message):
    bad = tmp_path / "burn-f64.json"
    if text is not None:
        bad.write_text(text)
    with pytest.raises(SystemExit) as stop:
        lt.main(arguments(runs["linear"]["torch"], bad, tmp_path))
    assert str(stop.value.code).startswith(f"lrs_table: {bad}: {message}")


# --------------------------------------------------------------------------- the pieces


def test_rel_diff_is_zero_where_equal_and_inf_where_only_torch_is_zero():
    found = lt.rel_diff(np.array([0.5, 0.0, 0.0, 2.0]), np.array([0.5, 0.0, 1e-3, 1.0]))
    assert found.tolist() == [0.0, 0.0, math.inf, 0.5]


def test_ulp_distance_counts_the_f64_values_between():
    a = np.array([0.5, 0.5, 1.0, 0.1, 0.0])
    b = np.array([np.nextafter(0.5, 0), np.nextafter(np.nextafter(0.5, 1), 1), 1.0, -0.1, 0.0])
    assert lt.ulp_distance(a, b).tolist() == [1.0, 2.0, 0.0, math.inf, 0.0]


def test_the_markdown_shows_the_report_steps_and_the_last_one():
    frame = lt.lrs_frame(np.array([1e-2] * 4), np.array([1e-2, 1e-2, 0.010000000000000002, 1e-2]))
    md = lt.render_md(frame, "Learning rates: x", [2, 3, 50])
    assert [line[:4] for line in md.split("```text\n")[1].splitlines()[1:-1]] == [
        "   2",
        "   3",
        "   4",
    ]
    assert (
        "The lr first differs at step 3 (PyTorch 0.01, Burn 0.010000000000000002); it differs"
        " at 1 of 4 steps, by at most 1 f64 ulp (at step 3, relative difference 1.73e-16)."
    ) in md
