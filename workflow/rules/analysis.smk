# The stages that explain the differences: everything computed from one experiment's four
# runs, the Adam bias-correction table over all Adam experiments, and provenance.


rule analyse:
    """One experiment's Burn layers on PyTorch's inputs (the Burn binary's local mode),
    compare outputs, steps table, config diff, replay and counterfactual, gradient probe,
    learning rates, layers table, plots, its tables as HTML pages, and its verdict record
    (judged once, from all of these).

    One job, one process (workflow/scripts/analyse.py, forked from the warm server: see
    warm.py in common.smk) running the stages in turn, each with its own log; the replay,
    the longest stage, runs beside them. One job per experiment keeps Snakemake's
    bookkeeping to one job where it was seven.
    """
    input:
        unpack(lambda w: run_files(w.experiment)),
        tensors=lambda w: tensor_files(w.experiment),
        binary=lambda w: burn_binary(w.experiment),
        code=script_code("analyse"),
        spec="results/specs/{experiment}.json",
        data=lambda w: dataset(w.experiment),
    output:
        # each Burn layer on PyTorch's inputs (analysis/local_layers.py)
        local=expand(
            "results/runs/{{experiment}}/burn-local-{dtype}.safetensors", dtype=DTYPES
        ),
        compare=expand("results/compare/{{experiment}}-{dtype}.txt", dtype=DTYPES),
        steps_csv="results/tables/steps_{experiment}.csv",
        steps_md="results/tables/steps_{experiment}.md",
        config_diff_csv="results/tables/config_diff_{experiment}.csv",
        config_diff_md="results/tables/config_diff_{experiment}.md",
        replay_csv="results/tables/replay_{experiment}.csv",
        replay_md="results/tables/replay_{experiment}.md",
        counterfactual_csv="results/tables/counterfactual_{experiment}.csv",
        counterfactual_md="results/tables/counterfactual_{experiment}.md",
        probe_csv="results/tables/probe_{experiment}.csv",
        probe_md="results/tables/probe_{experiment}.md",
        lrs_csv="results/tables/lrs_{experiment}.csv",
        lrs_md="results/tables/lrs_{experiment}.md",
        layers_csv="results/tables/layers_{experiment}.csv",
        layers_md="results/tables/layers_{experiment}.md",
        layers_png=mark_for_report(
            "results/plots/layers_{experiment}.png",
            caption="../report/layers.rst",
            category="{experiment}",
            subcategory="plots",
        ),
        gaps=mark_for_report(
            "results/plots/gaps_{experiment}.png",
            caption="../report/plots.rst",
            category="{experiment}",
            subcategory="plots",
        ),
        losses=mark_for_report(
            "results/plots/losses_{experiment}.png",
            caption="../report/plots.rst",
            category="{experiment}",
            subcategory="plots",
        ),
        pages=experiment_page_outputs(),
        verdict="results/verdicts/{experiment}.json",
    log:
        **ANALYSE_LOGS,
    # The replay beside the other stages (see above).
    threads: 2
    params:
        job=lambda w, input, output: job_json(
            w,
            input,
            output,
            {
                name: path.format(experiment=w.experiment)
                for name, path in ANALYSE_LOGS.items()
            },
            tol_f32=tolerance(w.experiment, "f32"),
            tol_f64=tolerance(w.experiment, "f64"),
            probe=probe_option(w.experiment),
            report_steps=config["report_steps"],
            page_sources=[source for source, *_ in experiment_pages(w.experiment)],
        ),
    shell:
        # Each stage runs on one thread: the job's two are the stages and the replay side by
        # side. Snakemake sets these to the job's threads; as in every other job (one
        # thread), they keep the same warm server serving this job (its key includes them,
        # warm.py).
        "export OMP_NUM_THREADS=1 GOTO_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1;"
        " python -m torch_burn_parity.tooling.warm workflow/scripts/analyse.py {params.job:q}"
        " > {log.job} 2>&1"


rule verdicts:
    """results/verdicts.json: every experiment's verdict record, in the config's order."""
    input:
        code=script_code("verdicts"),
        records=[verdict_record(e) for e in EXPERIMENTS],
    output:
        "results/verdicts.json",
    log:
        "results/logs/verdicts.log",
    shell:
        "python -m torch_burn_parity.tooling.warm workflow/scripts/verdicts.py"
        " --collect {input.records} --out {output} > {log} 2>&1"


rule bias_correction_table:
    """Burn's f32 Adam factor against the same formula in f64, for every Adam experiment."""
    input:
        code=script_code("bias_correction"),
        runs=expand(
            "results/runs/{experiment}/burn-f32.json", experiment=adam_experiments()
        ),
    output:
        csv="results/tables/bias_correction.csv",
        md="results/tables/bias_correction.md",
    log:
        "results/logs/tables/bias_correction.log",
    params:
        report_steps=config["report_steps"],
    # Run cold, not through the warm server (tooling/warm.py): it needs pandas, not PyTorch
    # (0.6 s cold), and without Adam experiments it is ready at the start, where waiting
    # for the server's first start (3-5 s) would hold a core a Burn training could use.
    shell:
        "python workflow/scripts/bias_correction.py {input.runs} --report-steps {params.report_steps}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


rule provenance:
    """Versions, CPU and SIMD flags, threads, git commit and config hash of this run."""
    input:
        code=script_code("provenance"),
        config="results/specs/report/config.json",
        runs=[f for e in EXPERIMENTS for f in run_files(e).values()],
    output:
        "results/provenance.json",
    log:
        "results/logs/provenance.log",
    shell:
        "python -m torch_burn_parity.tooling.warm workflow/scripts/provenance.py --config {input.config} --runs {input.runs} --out {output}"
        " > {log} 2>&1"
