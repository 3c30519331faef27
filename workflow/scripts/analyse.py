#!/usr/bin/env python3
"""Rule `analyse`: everything computed from one experiment's four runs, in one process.

    python -m torch_burn_parity.tooling.warm workflow/scripts/analyse.py JOB_JSON

JOB_JSON is the rule's wildcards, input, output, log and params (workflow/rules/
analysis.smk writes it). The replay, the longest stage (it trains the model again on the
PyTorch side, once per variant), runs beside the others; each stage writes its own log,
and the job's log has one line per stage with its time (tooling/stages.py).
"""

import sys

from torch_burn_parity.analysis import (
    compare,
    config_diff,
    layers_table,
    lrs_table,
    probe,
    replay,
    steps_table,
)
from torch_burn_parity.judgement import judge
from torch_burn_parity.report import layers_plot, plots, render_html
from torch_burn_parity.tooling.stages import Job, run_job

DTYPES = ("f32", "f64")


def analyse(job: Job, rule: dict) -> None:
    experiment = rule["wildcards"]["experiment"]
    i, o, log, p = rule["input"], rule["output"], rule["log"], rule["params"]
    runs = {key: i[key] for key in ("torch_f32", "burn_f32", "torch_f64", "burn_f64")}
    four_runs = [f"--{key.replace('_', '-')}={path}" for key, path in runs.items()]
    # Burn's update rule replayed on the PyTorch side in f64, and its counterfactual.
    job.beside(
        "replay",
        replay,
        ["--experiment", experiment, "--data", i["data"], "--torch-f64", i["torch_f64"],
         "--burn-f64", i["burn_f64"], "--report-steps", p["report_steps"],
         "--replay-csv", o["replay_csv"], "--replay-md", o["replay_md"],
         "--counterfactual-csv", o["counterfactual_csv"],
         "--counterfactual-md", o["counterfactual_md"]],
        log["replay"],
    )  # fmt: skip
    # Each Burn layer run again at the probe steps on PyTorch's recorded input to it and
    # gradient at its output (parity-train local): what each layer introduces.
    for n, dtype in enumerate(DTYPES):
        job.program(
            f"burn local {dtype}",
            [i["binary"], "local", "--spec", i["spec"], "--data", i["data"],
             "--torch-run", i[f"torch_{dtype}"], "--dtype", dtype, "--out", o["local"][n]],
            log["burn_local"],
            append=n > 0,
        )  # fmt: skip
    # The seed's compare output: torch vs burn at each dtype, with its tolerance.
    for n, dtype in enumerate(DTYPES):
        job.stage(
            f"compare {dtype}",
            compare.main,
            [i[f"torch_{dtype}"], i[f"burn_{dtype}"], "--tol", p[f"tol_{dtype}"],
             "--out", o["compare"][n]],
            log["compare"],
            append=n > 0,
        )  # fmt: skip
    # Per-step gaps with the precision ladder (f32 gap, each side's f32-vs-f64, f64-f64).
    job.stage(
        "steps table",
        steps_table.main,
        ["--experiment", experiment, *four_runs, "--report-steps", p["report_steps"],
         "--csv", o["steps_csv"], "--md", o["steps_md"]],
        log["steps_table"],
    )  # fmt: skip
    # What each framework does with the experiment's settings.
    job.stage(
        "config diff",
        config_diff.main,
        ["--spec", i["spec"], "--torch-run", i["torch_f64"], "--burn-run", i["burn_f64"],
         "--csv", o["config_diff_csv"], "--md", o["config_diff_md"]],
        log["config_diff"],
    )  # fmt: skip
    # Step-1 gradient and update of the least accurate (or the configured) parameter.
    job.stage(
        "probe",
        probe.main,
        ["--experiment", experiment, "--data", i["data"], *four_runs, *p["probe"],
         "--csv", o["probe_csv"], "--md", o["probe_md"]],
        log["probe"],
    )  # fmt: skip
    # The lr each framework's scheduler gave at every step, and where they part.
    job.stage(
        "lrs table",
        lrs_table.main,
        ["--experiment", experiment, "--torch-f64", i["torch_f64"],
         "--burn-f64", i["burn_f64"], "--report-steps", p["report_steps"],
         "--csv", o["lrs_csv"], "--md", o["lrs_md"]],
        log["lrs_table"],
    )  # fmt: skip
    # Layer by layer at the probe steps: where the difference enters, and its plot.
    job.stage(
        "layers table",
        layers_table.main,
        ["--experiment", experiment, *four_runs,
         "--burn-local-f32", o["local"][0], "--burn-local-f64", o["local"][1],
         "--csv", o["layers_csv"], "--md", o["layers_md"]],
        log["layers_table"],
    )  # fmt: skip
    job.stage(
        "layers plot",
        layers_plot.main,
        ["--experiment", experiment, "--csv", o["layers_csv"], "--png", o["layers_png"]],
        log["layers_table"],
        append=True,
    )
    job.wait("replay")
    # The verdict, its causes and shares, where it starts: judged once, read by all.
    job.stage(
        "judge",
        judge.main,
        ["--experiment", experiment, "--tables", "results/tables",
         "--runs", f"results/runs/{experiment}", "--tol-f32", p["tol_f32"],
         "--out", o["verdict"]],
        log["judge"],
    )  # fmt: skip
    # Gap curves against the rounding floor, and |Δloss| on a log scale: their words from
    # the record.
    job.stage(
        "plots",
        plots.main,
        ["--experiment", experiment, "--steps", o["steps_csv"], "--tol", p["tol_f32"],
         "--tol-f64", p["tol_f64"], "--record", o["verdict"], "--gaps", o["gaps"],
         "--losses", o["losses"]],
        log["plots"],
    )  # fmt: skip
    # Every table and compare output above as a page for the Snakemake report.
    job.stage(
        "pages",
        render_html.main,
        ["--tables", *p["page_sources"], "--tables-out", *o["pages"]],
        log["render_html"],
    )


if __name__ == "__main__":
    run_job("analyse", analyse, sys.argv[1:])
