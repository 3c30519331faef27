"""report.md: every sentence checked against the numbers it stands beside.

Unit tests of the sentence builders, then the report of the small pipeline read back and
compared with the CSVs it was assembled from (one section from files written by hand:
test_report_section.py). Each test fails when a sentence says
something its numbers do not (e.g. a gap that 'grows' while it shrinks).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from pipeline_helpers import EXPERIMENTS
from torch_burn_parity.io.parity_io import DTYPES
from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.report import report
from torch_burn_parity.report.atlas import atlas_section
from torch_burn_parity.report.markdown import compact, setting, trend
from torch_burn_parity.report.verdict_text import e
from torch_burn_parity.report.what_was_run import burn_backends, hyperparameter_table, input_line


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
    assert trend(np.array(gaps)) == expected


def test_compact_tables_keep_escaped_pipes_and_cells():
    md = "| a      | max\\|diff\\| |\n|:-------|------:|\n| x      | 1e-07 |"
    assert compact(md) == "| a | max\\|diff\\| |\n| :-- | --- |\n| x | 1e-07 |"


def test_a_setting_is_written_as_a_person_writes_it():
    assert setting("keep_defaults", {"burn": ["eps", "betas"]}) == "burn: eps, betas"
    assert setting("keep_defaults", {}) == "none"
    assert setting("betas", [0.9, 0.999]) == "[0.9, 0.999]"
    assert setting("tolerance", {"f32": 1e-5}) == "f32 1e-05"
    assert setting("nesterov", False) == "false"


# --------------------------------------------------------------------------- the pipeline's report


def test_the_burn_backends_named_are_those_the_runs_recorded(tmp_path):
    from types import SimpleNamespace

    from torch_burn_parity.models.model_specs import CNN1D

    PARAM_NAMES = CNN1D.param_names
    from torch_burn_parity.report.provenance import run_backends

    def runs(backend):
        meta = {} if backend is None else {"backend": backend}  # None: a run before the setting
        return {("burn", dt): {"meta": meta} for dt in DTYPES}

    flex = [SimpleNamespace(name=n, runs=runs(b)) for n, b in [("a", "flex"), ("b", None)]]
    assert burn_backends(flex) == "Flex CPU backend"
    both = [*flex, SimpleNamespace(name="c", runs=runs("ndarray"))]
    assert burn_backends(both) == "CPU backends: Flex for a, b; NdArray for c"
    many = [SimpleNamespace(name=f"e{i}", runs=runs("flex")) for i in range(4)]
    assert burn_backends([*many, both[-1]]) == (
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
        assert len(re.findall(rf"^\| \[{name}\]\(#experiment-", verdicts, flags=re.M)) == 1, name
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
        assert (f"0 at every one of `{name}`'s" in section(report_md, name)) == zero, name


def test_growth_words_match_the_f64_gap(pipeline, report_md):
    for name in EXPERIMENTS:
        gaps = pd.read_csv(pipeline / f"results/tables/steps_{name}.csv")["f64_f64"]
        text = section(report_md, name)
        if "In f64 a gap of" in text:
            assert trend(gaps) in text, name
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
        steps = pd.read_csv(pipeline / f"results/tables/steps_{name}.csv")
        gap = steps["f64_f64"].max()
        held = pd.read_csv(pipeline / f"results/tables/counterfactual_{name}.csv")
        text = section(report_md, name)
        values = [column for column in held if column.startswith("dparam_burn_value[")]
        if not values:  # adam: PyTorch's values passed to both, only their f32 storage
            share = min(held["dparam_held_f64"].max() / gap, 1.0)
            assert f"{share:.1%} of the {e(gap)} gap" in text, name
            continue
        # pitfall (Burn's eps), momentum (Burn's dampening): each value its own link.
        chain = "; ".join(
            f"with Burn's {column[len('dparam_burn_value[') : -1]}{' as well' if i else ''}"
            f" {e(held[column].max())}"
            for i, column in enumerate(values)
        )
        held_gap = e(held["dparam_held_f64"].max())
        assert f"{chain}; with every value as Burn holds it (f32 storage too) {held_gap}" in text
        assert f"— of the {e(gap)} gap" in text, name
        first = float(steps.loc[steps["step"] == 1, "f64_f64"].iloc[0])
        assert f"At step 1, where the f64 gap is {e(first)}: with " in text, name


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
    assert f"the parameter's f32 ulp ({e(ulp)})" in text
    assert "moves it by only" not in text  # the old, false reading


def test_verdict_table_names_its_gap_measures(report_md):
    header = next(line for line in report_md.splitlines() if line.startswith("| experiment |"))
    assert "f64 gap (max over steps)" in header and "gap / floor" in header
    assert len(header.strip("|").split("|")) <= 7  # fits 1,400 px; each section has the rest
    assert "`f64 gap (max over steps)` is the largest" in report_md


def test_clean_checkout_with_untracked_files_is_not_dirty(tmp_path):
    import subprocess

    from torch_burn_parity.config.machine import git_state

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


def test_the_model_is_a_setting_shown_only_when_an_experiment_names_one():
    sgd = {"optimizer": "sgd", "lr": 0.5}
    tolerances = {n: {"f32": 1e-6, "f64": 1e-12} for n in ("sgd", "bn")}
    seed_only = hyperparameter_table({"experiments": {"sgd": sgd}}, tolerances, set())
    assert "model" not in seed_only and "probe_steps" not in seed_only
    both = {"sgd": sgd, "bn": {**sgd, "model": "cnn_bn", "probe_steps": [1, 100]}}
    table = hyperparameter_table({"experiments": both}, tolerances, set())
    header, _, sgd_row, bn_row = table.splitlines()
    assert "| model |" in header and "| probe_steps |" in header
    assert "| cnn1d (default) | [1] (default) |" in sgd_row
    assert "| cnn_bn | [1, 100] |" in bn_row


def test_the_inputs_are_checked_per_model():
    from types import SimpleNamespace

    def x(model, *hashes):
        runs = {i: {"meta": {"input_sha256": h}} for i, h in enumerate(hashes)}
        return SimpleNamespace(model=model, runs=runs)

    one = [x("cnn1d", "a", "a"), x("cnn1d", "a")]
    assert input_line(one).endswith("SHA-256: `a` — shared by every run")
    assert input_line([*one, x("cnn1d", "b")]).endswith("`a, b` — **runs disagree on inputs**")
    two = [*one, x("cnn_bn", "c", "c")]
    assert input_line(two) == (
        "- Input (dataset and initial weights) SHA-256, one dataset per model: cnn1d `a`;"
        " cnn_bn `c` — shared by every run of that model"
    )
    assert input_line([*two, x("cnn_bn", "d")]).endswith(
        "cnn_bn `c, d` — **runs of one model disagree on inputs**"
    )


# --------------------------------------------------------------------------- the review's fixes


def test_the_opening_names_the_models_without_calling_them_all_cnns():
    from torch_burn_parity.models.model_specs import spec

    trained = lambda *names: report.what_was_trained([spec(n) for n in names])  # noqa: E731
    assert trained("cnn1d", "cnn1d") == "The same 1-D CNN"
    assert trained("transformer", "cnn_bn", "cnn1d") == (
        "The same small models (`cnn1d`, `cnn_bn`, `transformer`)"
    )
    assert trained("transformer") == "The same small model (`transformer`)"
    # a model at another size is no longer 'small': each is named with its parameter count
    big = spec("transformer", {"d_model": 64, "heads": 4, "layers": 2, "d_ff": 256})
    assert report.what_was_trained([big, spec("transformer")]) == (
        "The same models (`transformer`: 1,003 parameters,"
        f" `{big.tag}`: {big.param_count:,} parameters)"
    )
    # nor is a port, whatever its size
    ported = dataclasses.replace(spec("cnn1d"), name="resnet18", size={}, port=object())
    assert report.what_was_trained([ported]) == (
        f"The same model (`resnet18`: {ported.param_count:,} parameters)"
    )


def test_the_atlas_takes_the_seeds_model_on_flex_and_names_the_others():
    from types import SimpleNamespace

    def fake(name, optimizer, model="cnn1d", backend="flex", label=vd.EXPLAINED,
             evaluation_only=False):  # fmt: skip
        scope = vd.EVALUATION if evaluation_only else vd.TRAINING
        return SimpleNamespace(
            name=name, optimizer=optimizer, model=model, is_plain=True, has_schedule=False,
            spec=SimpleNamespace(keep_defaults={}, clip_grad=None),
            runs={("burn", dt): {"meta": {"backend": backend}} for dt in DTYPES},
            verdict=SimpleNamespace(label=label), defaults_that_differ=lambda: "none",
            diff_names=lambda status: "none",
            record={"experiment": name, "verdict": label, "scope": scope, "causes": []},
        )  # fmt: skip

    experiments = [
        fake("bn", "sgd", model="cnn_bn", evaluation_only=True),  # first, yet not the atlas's
        fake("sgd", "sgd"),
        fake("adam_nd", "adam", backend="ndarray", label=vd.UNEXPLAINED),
        fake("adam", "adam"),
    ]
    text = atlas_section(experiments)
    rows = [line for line in text.splitlines() if line.startswith("| sgd") or
            line.startswith("| adam")]  # fmt: skip
    assert "`sgd`: " in rows[0] and "`bn`" not in rows[0]
    assert "`adam`: " in rows[1] and "`adam_nd`" not in rows[1]
    assert "on the model `cnn1d` and Burn's Flex backend" in text
    assert text.endswith(
        "Other models and backends (in the verdict table): `bn` (cnn_bn, Flex): algorithmic"
        " difference, explained (evaluation state only); `adam_nd` (cnn1d, NdArray):"
        " algorithmic difference, unexplained.\n"
    )


def test_the_reading_guide_states_the_layer_floors_rule():
    guide = " ".join((report.TEMPLATES / "layers_guide.md").read_text().split())
    assert "its minimum of 64 f64 ulps scaled by the quantity's largest |f64 value|" in guide
