"""The real pipeline on a small config: outputs, caching by parameters, the analyses.

Caching by code (every script, module and Rust source) is tested in test_caching.py,
determinism and faults in test_faults.py.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd

import golden_numbers
from pipeline_helpers import EXPECTED, EXPERIMENTS, edited, planned_jobs, rules, snakemake
from torch_burn_parity.config import machine
from torch_burn_parity.config.cpu_path import describe
from torch_burn_parity.io.parity_io import experiment_block


def test_pipeline_writes_every_output(pipeline):
    missing = [f for f in EXPECTED if not (pipeline / f).is_file()]
    assert not missing
    report = (pipeline / "results/report.md").read_text()
    assert re.search(r"\| \[sgd\]\(#[^)]*\) \|"
                     r" sgd \| equivalent up to rounding \| no effect on the outcome"
                     r" \([^|]*\) \| — \|", report)  # fmt: skip
    assert re.search(r"\| \[adam\]\(#[^)]*\) \|"
                     r" adam \| algorithmic difference, explained \| [^|]* \|"
                     r" Burn's f32 evaluation of its per-step Adam factors \(", report)  # fmt: skip
    steps = pd.read_csv(pipeline / "results/tables/steps_sgd.csv")
    assert list(steps.columns) == [
        "step", "torch_loss", "burn_loss", "dloss", "dparam", "torch_f64", "burn_f64", "f64_f64",
    ]  # fmt: skip
    assert len(steps) == 6 and (steps["f64_f64"] <= 1e-12).all()
    bias = pd.read_csv(pipeline / "results/tables/bias_correction.csv")
    bias = bias[bias["experiment"] == "adam"]
    assert list(bias["t"]) == [1, 2, 3, 4, 5, 6]
    assert (bias["rel_err"].abs().iloc[1:] > 1e-7).all()  # the f32 factors are really off


GOLDEN = Path(__file__).parent / "golden/seed_numbers_small_config.json"


def pipeline_cpu_path(workdir: Path) -> dict[str, str]:
    """The CPU path the pipeline's runs took, per framework (cpu_path.describe)."""
    return {fw: describe(experiment_block(workdir / f"results/runs/sgd/{fw}-f32.json")["meta"])
            for fw in ("torch", "burn")}  # fmt: skip


def test_the_report_names_the_cpu_path_of_its_runs(pipeline):
    report = (pipeline / "results/report.md").read_text()
    section = report[report.index("## What depends on your CPU") :]
    path = pipeline_cpu_path(pipeline)
    assert (
        f"- PyTorch: `{path['torch']}`" in section and f"- Burn, Flex: `{path['burn']}`" in section
    )
    assert "Warning" not in section  # one machine, one path
    provenance = json.loads((pipeline / "results/provenance.json").read_text())["cpu_path"]
    assert provenance["runs"] == {"burn": [path["burn"]], "torch": [path["torch"]]}


def test_the_seed_models_numbers_have_not_moved(pipeline):
    """cnn1d's compare outputs, per-step tables (their f64-f64 columns included) and the
    bias-correction table: byte for byte what tests/golden holds on the CPU path it was
    written on, and within rounding of it on any other (tests/golden_numbers.py).
    PARITY_WRITE_GOLDEN=1 writes the file anew from this run."""
    golden = json.loads(GOLDEN.read_text())
    files = {name: (pipeline / "results" / name).read_text() for name in golden["files"]}
    path = pipeline_cpu_path(pipeline)
    if os.environ.get("PARITY_WRITE_GOLDEN") == "1":
        meta = experiment_block(pipeline / "results/runs/sgd/torch-f32.json")["meta"]
        written = {"written_on": machine.label(meta), "cpu_path": path, "files": files}
        GOLDEN.write_text(json.dumps(golden | written, indent=1) + "\n")
    assert len(golden["files"]) == 4 * 3 + 1
    assert golden_numbers.check(files, golden["files"]) == []
    if path == golden["cpu_path"]:
        assert files == golden["files"]


def test_second_run_does_nothing(pipeline):
    assert planned_jobs(pipeline) == {}


def test_changing_one_lr_reruns_that_experiment_only(pipeline):
    config = pipeline / "config.yaml"
    with edited(config, lambda t: t.replace("lr: 0.5", "lr: 0.25")):
        jobs = planned_jobs(pipeline)
    experiments = {exp for (_, exp) in jobs if exp is not None}
    assert experiments == {"sgd"}
    counts = rules(jobs)
    assert counts["train_torch"] == 1 and counts["train_burn"] == 1  # both dtypes each
    assert counts["bias_correction_table"] == 0  # Adam's table does not depend on SGD


def test_run_files_are_valid_and_share_inputs(pipeline):
    hashes = set()
    for f in EXPECTED:
        if "/runs/" in f:
            block = experiment_block(pipeline / f)
            hashes.add(block["meta"]["input_sha256"])
            assert len(block["losses"]) == 6
    assert len(hashes) == 1


def test_replay_reproduces_burn_to_rounding(pipeline):
    for experiment in EXPERIMENTS:
        replay = pd.read_csv(pipeline / f"results/tables/replay_{experiment}.csv")
        assert (replay["dparam"] < 1e-13).all(), experiment
        counterfactual = pd.read_csv(pipeline / f"results/tables/counterfactual_{experiment}.csv")
        assert (counterfactual["dparam"] < 1e-13).all(), experiment


def test_momentum_with_burns_default_dampening_points_at_dampening(pipeline):
    report = (pipeline / "results/report.md").read_text()
    assert re.search(r"\| \[momentum\]\(#[^)]*\) \|"
                     r" sgd \| algorithmic difference, explained \| [^|]* \|"
                     r" config diff: dampening \(torch 0\.0, burn 0\.1\)", report)  # fmt: skip
    diff = pd.read_csv(pipeline / "results/tables/config_diff_momentum.csv")
    status = dict(zip(diff["hyperparameter"], diff["status"], strict=True))
    assert status["dampening"] == "differs" and status["momentum"] == "f32 storage"


def test_defaults_pitfall_points_at_epsilon(pipeline):
    report = (pipeline / "results/report.md").read_text()
    assert re.search(r"\| \[pitfall\]\(#[^)]*\) \|"
                     r" adam \| algorithmic difference, explained \| [^|]* \|"
                     r" config diff: eps", report)  # fmt: skip
    compare = (pipeline / "results/compare/pitfall-f32.txt").read_text()
    assert compare.rstrip().endswith("tol=1e-05 MISMATCH")


def test_probe_picks_a_cancelling_gradient(pipeline):
    probe = pd.read_csv(pipeline / "results/tables/probe_adam.csv")
    torch32 = probe[(probe["framework"] == "torch") & (probe["dtype"] == "f32")].iloc[0]
    assert torch32["grad_rel_err"] > 1e-4  # far above f32's 6e-8: cancellation
    assert abs(torch32["grad"]) < 1e-4


def test_snakemake_report_builds_with_the_parity_report_first(pipeline):
    snakemake(pipeline, "--report", "results/snakemake_report.html")
    html = (pipeline / "results/snakemake_report.html").read_text(errors="replace")
    assert "1. Parity report" in html and "report.html" in html and "steps.html" in html


def test_a_config_file_of_ones_own_runs_its_experiments_alone(tmp_path):
    """`--configfile my.yaml` is the whole config: the default experiments (whose probe
    steps go to 100) neither run nor refuse a config of 50 steps. `--configfile config.yaml
    more.yaml` runs both, later files extending earlier ones, and a later `steps: 50` then
    applies to the default experiments too: refused before any job, naming the key."""
    import yaml

    from conftest import ROOT, SGD
    from pipeline_helpers import copy_project, dry_run
    from torch_burn_parity.config import burn_fixes

    copy_project(tmp_path, {"steps": 50, "batch_size": 16, "experiments": {"mine": SGD}}, "my.yaml")
    (tmp_path / "more.yaml").write_text(yaml.safe_dump({"experiments": {"mine": SGD}}))

    def trained(*args: str) -> list[str]:
        jobs = dry_run(tmp_path, *args)
        return sorted(j.outputs[0].split("/")[2] for j in jobs if j.rule == "train_torch")

    assert trained("--configfile", "my.yaml") == ["mine"]
    defaults = yaml.safe_load((ROOT / "config.yaml").read_text())["experiments"]
    # and the proving runs of the defaults' fixes (config/proving.py)
    kept = lambda exp: (exp.get("keep_defaults") or {}).get("burn")  # noqa: E731
    proving = [f"{n}__fix" for n, exp in defaults.items() if kept(exp) or burn_fixes.needed(exp)]
    assert len(proving) == 8  # 4 of values, 2 of the clipping scope, Muon's lr, smoothing
    assert trained("--configfile", "config.yaml", "more.yaml") == sorted(
        [*defaults, *proving, "mine"]
    )
    proc = snakemake(tmp_path, "-n", "--configfile", "config.yaml", "my.yaml", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "probe_steps[1]: step 100 is after the last step (50)" in proc.stdout + proc.stderr
