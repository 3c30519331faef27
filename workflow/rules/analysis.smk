# The stages that explain the differences: config diff, replay, gradient probe, plots,
# provenance.


rule config_diff:
    """What each framework will do for one experiment, from its settings, before training."""
    input:
        script=f"{SCRIPTS}/config_diff.py",
        modules=[IO_MODULE, *CONFIG_MODULES],
        spec="results/specs/{experiment}.json",
    output:
        csv="results/tables/config_diff_{experiment}.csv",
        md="results/tables/config_diff_{experiment}.md",
    log:
        "results/logs/tables/config_diff_{experiment}.log",
    shell:
        "python {input.script} --spec {input.spec} --csv {output.csv} --md {output.md}"
        " > {log} 2>&1"


rule replay:
    """Burn's update rule replayed on the PyTorch side in f64 (and its counterfactual)."""
    input:
        script=f"{SCRIPTS}/replay.py",
        modules=[
            IO_MODULE,
            GAPS_MODULE,
            *CONFIG_MODULES,
            PROVENANCE_MODULE,
            TORCH_TRAINER,
        ],
        data="results/data/dataset.bin",
        torch_f64="results/runs/{experiment}/torch-f64.json",
        burn_f64="results/runs/{experiment}/burn-f64.json",
    output:
        replay_csv="results/tables/replay_{experiment}.csv",
        replay_md="results/tables/replay_{experiment}.md",
        counterfactual_csv="results/tables/counterfactual_{experiment}.csv",
        counterfactual_md="results/tables/counterfactual_{experiment}.md",
    log:
        "results/logs/tables/replay_{experiment}.log",
    benchmark:
        "results/benchmarks/replay/{experiment}.tsv"
    params:
        report_steps=config["report_steps"],
    shell:
        "python {input.script} --experiment {wildcards.experiment} --data {input.data}"
        " --torch-f64 {input.torch_f64} --burn-f64 {input.burn_f64}"
        " --report-steps {params.report_steps}"
        " --replay-csv {output.replay_csv} --replay-md {output.replay_md}"
        " --counterfactual-csv {output.counterfactual_csv}"
        " --counterfactual-md {output.counterfactual_md} > {log} 2>&1"


rule probe:
    """Step-1 gradient and update of the least accurate (or the configured) parameter."""
    input:
        unpack(lambda w: run_files(w.experiment)),
        script=f"{SCRIPTS}/probe.py",
        modules=[IO_MODULE, GAPS_MODULE],
        data="results/data/dataset.bin",
    output:
        csv="results/tables/probe_{experiment}.csv",
        md="results/tables/probe_{experiment}.md",
    log:
        "results/logs/tables/probe_{experiment}.log",
    params:
        parameter=lambda w: probe_option(w.experiment),
    shell:
        "python {input.script} --experiment {wildcards.experiment} --data {input.data}"
        " --torch-f32 {input.torch_f32} --burn-f32 {input.burn_f32}"
        " --torch-f64 {input.torch_f64} --burn-f64 {input.burn_f64} {params.parameter}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


rule plots:
    """Gap curves against the rounding floor and |Δloss| (log scale) of one experiment."""
    input:
        script=f"{SCRIPTS}/plots.py",
        modules=[IO_MODULE, VERDICT_MODULE],
        steps="results/tables/steps_{experiment}.csv",
    output:
        gaps=report(
            "results/plots/gaps_{experiment}.png",
            caption="../report/plots.rst",
            category="{experiment}",
            subcategory="plots",
        ),
        losses=report(
            "results/plots/losses_{experiment}.png",
            caption="../report/plots.rst",
            category="{experiment}",
            subcategory="plots",
        ),
    log:
        "results/logs/plots/{experiment}.log",
    params:
        tol=lambda w: tolerance(w.experiment, "f32"),
        tol_f64=lambda w: tolerance(w.experiment, "f64"),
    shell:
        "python {input.script} --experiment {wildcards.experiment} --steps {input.steps}"
        " --tol {params.tol} --tol-f64 {params.tol_f64}"
        " --gaps {output.gaps} --losses {output.losses} > {log} 2>&1"


rule provenance:
    """Versions, CPU and SIMD flags, threads, git commit and config hash of this run."""
    input:
        script=f"{SCRIPTS}/provenance.py",
        io=IO_MODULE,
        config="results/specs/report_config.json",
        runs=[f for e in EXPERIMENTS for f in run_files(e).values()],
    output:
        "results/provenance.json",
    log:
        "results/logs/provenance.log",
    shell:
        "python {input.script} --config {input.config} --runs {input.runs} --out {output}"
        " > {log} 2>&1"
