"""report.md: every sentence checked against the numbers it stands beside.

Unit tests of the sentence builders, then the report of the small pipeline read back and
compared with the CSVs it was assembled from. Each test fails when a sentence says
something its numbers do not (e.g. a gap that 'grows' while it shrinks).
"""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import report
from pipeline_helpers import EXPERIMENTS


def section(text: str, experiment: str) -> str:
    match = re.search(rf"^## Experiment `{experiment}` .*?(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, f"no section for {experiment}"
    return match.group(0)


@pytest.fixture(scope="module")
def report_md(pipeline) -> str:
    return (pipeline / "results/report.md").read_text()


# --------------------------------------------------------------------------- sentence builders


@pytest.mark.parametrize(
    ("gaps", "expected"),
    [
        ([1e-10, 1e-8, 3.7e-6], "grows from 1.00e-10 at step 1 to 3.70e-06 at step 3 (3.7e+04×)"),
        ([9e-3, 8e-3, 5.67e-3], "shrinks from 9.00e-03 at step 1 to 5.67e-03 at step 3 (0.63×)"),
        ([2e-7, 1e-7, 2e-7], "stays at 2.00e-07 from step 1 to step 3"),
        ([0.0, 1e-16], "grows from 0.00e+00 at step 1 to 1.00e-16 at step 2"),
    ],
)
def test_trend_says_which_way_the_gap_went(gaps, expected):
    assert report.trend(np.array(gaps)) == expected


def test_compact_tables_keep_escaped_pipes_and_cells():
    md = "| a      | max\\|diff\\| |\n|:-------|------:|\n| x      | 1e-07 |"
    assert report.compact(md) == "| a | max\\|diff\\| |\n| :-- | --- |\n| x | 1e-07 |"


def test_a_setting_is_written_as_a_person_writes_it():
    assert report.setting("keep_defaults", {"burn": ["eps", "betas"]}) == "burn: eps, betas"
    assert report.setting("keep_defaults", {}) == "none"
    assert report.setting("betas", [0.9, 0.999]) == "[0.9, 0.999]"
    assert report.setting("tolerance", {"f32": 1e-5}) == "f32 1e-05"
    assert report.setting("nesterov", False) == "false"


# --------------------------------------------------------------------------- the pipeline's report


def test_the_burn_backends_named_are_those_the_runs_recorded(tmp_path):
    from types import SimpleNamespace

    from parity_io import PARAM_NAMES
    from provenance import run_backends

    def runs(backend):
        meta = {} if backend is None else {"backend": backend}  # None: a run before the setting
        return {("burn", dt): {"meta": meta} for dt in report.DTYPES}

    flex = [SimpleNamespace(name=n, runs=runs(b)) for n, b in [("a", "flex"), ("b", None)]]
    assert report.burn_backends(flex) == "Flex CPU backend"
    both = [*flex, SimpleNamespace(name="c", runs=runs("ndarray"))]
    assert report.burn_backends(both) == "CPU backends: Flex for a, b; NdArray for c"
    many = [SimpleNamespace(name=f"e{i}", runs=runs("flex")) for i in range(4)]
    assert report.burn_backends([*many, both[-1]]) == (
        "CPU backends: Flex for 4 experiments; NdArray for c"
    )
    files, empty = [], {k: dict.fromkeys(PARAM_NAMES, []) for k in ("params", "grads")}
    for name, fw, backend in [("a", "burn", "ndarray"), ("b", "burn", None), ("c", "torch", None)]:
        meta = {"framework": fw, "threads": 1} | ({"backend": backend} if backend else {})
        block = {"losses": [], "final": {}, "params": {}, "trajectory": empty, "meta": meta}
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps({name: block}))
    assert run_backends(files) == ["flex", "ndarray"]


def test_every_experiment_has_one_verdict_row_and_one_section(report_md):
    verdicts = report_md.split("## Verdicts")[1].split("## What was run")[0]
    for name in EXPERIMENTS:
        assert len(re.findall(rf"^\| {name} \|", verdicts, flags=re.M)) == 1, name
        assert report_md.count(f"## Experiment `{name}`") == 1, name


def test_no_block_is_printed_twice(report_md):
    # Tables, code blocks and paragraphs of any length: each appears once.
    blocks = [b.strip() for b in re.split(r"\n\s*\n", report_md) if len(b.strip()) > 80]
    twice = [b[:80] for b, n in Counter(blocks).items() if n > 1]
    assert not twice


def test_identical_counterfactuals_are_shown_once_and_referred_to(pipeline, report_md):
    # adam and pitfall share PyTorch's values, so their counterfactual rows are identical.
    tables = pipeline / "results/tables"
    adam = pd.read_csv(tables / "counterfactual_adam.csv")[["step", "dloss", "dparam", "where"]]
    pitfall = pd.read_csv(tables / "counterfactual_pitfall.csv")[list(adam.columns)]
    assert adam.equals(pitfall)
    assert "vs PyTorch f64: the same table as `adam`'s." in section(report_md, "pitfall")


def test_all_zero_replays_are_one_sentence(pipeline, report_md):
    for name in EXPERIMENTS:
        frame = pd.read_csv(pipeline / f"results/tables/counterfactual_{name}.csv")
        zero = frame["dparam"].eq(0).all() and frame["dloss"].eq(0).all()
        assert ("0 at every one of the" in section(report_md, name)) == zero, name


def test_growth_words_match_the_f64_gap(pipeline, report_md):
    for name in EXPERIMENTS:
        gaps = pd.read_csv(pipeline / f"results/tables/steps_{name}.csv")["f64_f64"]
        text = section(report_md, name)
        if "In f64 a gap of" in text:
            assert report.trend(gaps) in text, name
            word = "grows" if gaps.iloc[-1] > gaps.iloc[0] else "shrinks"
            assert f"and {word} from" in text, name


def test_shown_step_counts_are_true(pipeline, report_md):
    steps = pd.read_csv(pipeline / "results/tables/steps_sgd.csv")
    text = section(report_md, "sgd")
    shown = re.search(r"(\d+) of (\d+) steps; every step", text)
    assert shown and int(shown.group(2)) == len(steps)
    fence = re.search(r"```text\nstep  torch loss.*?\n(.*?)```", text, flags=re.S)
    assert int(shown.group(1)) == len(fence.group(1).strip().splitlines())


def test_shares_are_the_measured_ones(pipeline, report_md):
    for name in ("adam", "pitfall", "momentum"):
        gap = pd.read_csv(pipeline / f"results/tables/steps_{name}.csv")["f64_f64"].max()
        held = pd.read_csv(pipeline / f"results/tables/counterfactual_{name}.csv")
        share = min(held["dparam_held_f64"].max() / gap, 1.0)
        assert f"{share:.1%} of the {report.e(gap)} gap" in section(report_md, name), name


def test_probe_sentences_follow_the_probe_rows(pipeline, report_md):
    for name in EXPERIMENTS:
        probe = pd.read_csv(pipeline / f"results/tables/probe_{name}.csv")
        update = probe.set_index(["framework", "dtype"])["update"]
        text = section(report_md, name).split("### Gradient probe")[1]
        assert "Burn" in text and "PyTorch" in text, name
        ratio = update["burn", "f64"] / update["torch", "f64"]
        if not 0.99 <= ratio <= 1.01:
            assert f"Burn's update is {ratio:.3g}× PyTorch's" in text, name
        elif update["torch", "f32"] == update["burn", "f32"]:
            assert "store the same f32 update" in text, name


def test_the_epsilon_pitfall_probe_names_burns_smaller_update(pipeline, report_md):
    probe = pd.read_csv(pipeline / "results/tables/probe_pitfall.csv")
    update = probe.set_index(["framework", "dtype"])["update"]
    ratio = update["burn", "f64"] / update["torch", "f64"]
    assert ratio < 0.5  # Burn's ε = 1e-5 dwarfs a gradient of ~1e-6: a much smaller step
    text = section(report_md, "pitfall").split("### Gradient probe")[1]
    assert f"Burn's update is {ratio:.3g}× PyTorch's" in text


def test_the_sgd_probe_says_the_f32_update_is_quantized(pipeline, report_md):
    probe = pd.read_csv(pipeline / "results/tables/probe_sgd.csv")
    initial = float(probe["initial"].iloc[0])
    ulp = float(np.spacing(np.float32(abs(initial))))
    text = section(report_md, "sgd").split("### Gradient probe")[1]
    assert f"the parameter's f32 ulp ({report.e(ulp)})" in text
    assert "moves it by only" not in text  # the old, false reading


def test_verdict_table_names_its_gap_measures(report_md):
    header = next(line for line in report_md.splitlines() if line.startswith("| experiment |"))
    assert "f64 gap (max over steps)" in header and "compare f64 (worst key)" in header
    assert "`f64 gap (max over steps)` is the largest" in report_md


def test_clean_checkout_with_untracked_files_is_not_dirty(tmp_path):
    import subprocess

    from provenance import git_state

    run = {"cwd": tmp_path, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)
    (tmp_path / "tracked").write_text("a\n")
    subprocess.run(["git", "add", "tracked"], **run)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], **run
    )
    (tmp_path / "untracked").write_text("b\n")
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "tracked").write_text("changed\n")
    assert git_state(tmp_path)["dirty"] is True
