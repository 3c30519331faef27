# The stages that explain the differences: everything computed from one experiment's four
# runs, the Adam bias-correction table over all Adam experiments, and provenance.


rule analyse:
    """One experiment's Burn layers on PyTorch's inputs (the Burn binary's local mode),
    compare outputs, steps table, config diff, replay and counterfactual, gradient probe,
    learning rates, layers table, plots, its tables as HTML pages, and its verdict record
    (judged once, from all of these).

    One job running the scripts (each a warm start: see warm.py in common.smk): one job
    per experiment keeps Snakemake's bookkeeping to one job where it was seven. The replay,
    the longest script (it trains the model again on the PyTorch side, once per variant),
    runs beside the others, which run in turn; the HTML pages, the verdict and the plots
    wait for both, the pages beside the other two. Each script keeps its own log.
    """
    input:
        unpack(lambda w: run_files(w.experiment)),
        tensors=lambda w: tensor_files(w.experiment),
        binary=lambda w: burn_binary(w.experiment),
        code=code(
            "analysis.compare",
            "analysis.steps_table",
            "analysis.config_diff",
            "analysis.replay",
            "analysis.probe",
            "analysis.lrs_table",
            "analysis.layers_table",
            "report.layers_plot",
            "report.plots",
            "report.render_html",
            "judgement.judge",
        ),
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
        compare="results/logs/analyse/{experiment}/compare.log",
        steps="results/logs/analyse/{experiment}/steps_table.log",
        config_diff="results/logs/analyse/{experiment}/config_diff.log",
        replay="results/logs/analyse/{experiment}/replay.log",
        probe="results/logs/analyse/{experiment}/probe.log",
        plots="results/logs/analyse/{experiment}/plots.log",
        lrs="results/logs/analyse/{experiment}/lrs_table.log",
        layers="results/logs/analyse/{experiment}/layers_table.log",
        local="results/logs/analyse/{experiment}/burn_local.log",
        pages="results/logs/analyse/{experiment}/render_html.log",
        judge="results/logs/analyse/{experiment}/judge.log",
    # The replay beside the other scripts (see above).
    threads: 2
    params:
        tol_f32=lambda w: tolerance(w.experiment, "f32"),
        tol_f64=lambda w: tolerance(w.experiment, "f64"),
        probe=lambda w: probe_option(w.experiment),
        report_steps=config["report_steps"],
        page_sources=lambda w: [source for source, *_ in experiment_pages(w.experiment)],
    shell:
        """
        # Each script runs on one thread: the job's two are two scripts side by side.
        # Snakemake sets these to the job's threads; as in every other job (one thread),
        # they keep the same warm server serving this job (its key includes them, warm.py).
        export OMP_NUM_THREADS=1 GOTO_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
        # Burn's update rule replayed on the PyTorch side in f64, and its counterfactual:
        # in the background, beside the scripts up to the layers table (`wait` below takes
        # its exit status: a failed replay fails the job).
        python -m torch_burn_parity.tooling.warm torch_burn_parity.analysis.replay --experiment {wildcards.experiment} \
            --data {input.data} --torch-f64 {input.torch_f64} --burn-f64 {input.burn_f64} \
            --report-steps {params.report_steps} \
            --replay-csv {output.replay_csv} --replay-md {output.replay_md} \
            --counterfactual-csv {output.counterfactual_csv} \
            --counterfactual-md {output.counterfactual_md} >{log.replay} 2>&1 &
        replay=$!
        # A script below that fails ends the job: the replay goes with it.
        trap 'kill $replay 2>/dev/null || true' EXIT
        # Each Burn layer run again at the probe steps on PyTorch's recorded input to it and
        # gradient at its output (parity-train local): what each layer introduces.
        for dtype in f32 f64; do
            {input.binary} local --spec {input.spec} --data {input.data} \
                --torch-run results/runs/{wildcards.experiment}/torch-$dtype.json \
                --dtype $dtype --out results/runs/{wildcards.experiment}/burn-local-$dtype.safetensors
        done >{log.local} 2>&1
        # The seed's compare output: torch vs burn at each dtype, with its tolerance.
        python -m torch_burn_parity.tooling.warm torch_burn_parity.analysis.compare {input.torch_f32} {input.burn_f32} \
            --tol {params.tol_f32} --out {output.compare[0]} >{log.compare} 2>&1
        python -m torch_burn_parity.tooling.warm torch_burn_parity.analysis.compare {input.torch_f64} {input.burn_f64} \
            --tol {params.tol_f64} --out {output.compare[1]} >>{log.compare} 2>&1
        # Per-step gaps with the precision ladder (f32 gap, each side's f32-vs-f64, f64-f64).
        python -m torch_burn_parity.tooling.warm torch_burn_parity.analysis.steps_table --experiment {wildcards.experiment} \
            --torch-f32 {input.torch_f32} --burn-f32 {input.burn_f32} \
            --torch-f64 {input.torch_f64} --burn-f64 {input.burn_f64} \
            --report-steps {params.report_steps} \
            --csv {output.steps_csv} --md {output.steps_md} >{log.steps} 2>&1
        # What each framework does with the experiment's settings.
        python -m torch_burn_parity.tooling.warm torch_burn_parity.analysis.config_diff --spec {input.spec} \
            --torch-run {input.torch_f64} --burn-run {input.burn_f64} \
            --csv {output.config_diff_csv} --md {output.config_diff_md} \
            >{log.config_diff} 2>&1
        # Step-1 gradient and update of the least accurate (or the configured) parameter.
        python -m torch_burn_parity.tooling.warm torch_burn_parity.analysis.probe --experiment {wildcards.experiment} \
            --data {input.data} --torch-f32 {input.torch_f32} --burn-f32 {input.burn_f32} \
            --torch-f64 {input.torch_f64} --burn-f64 {input.burn_f64} {params.probe} \
            --csv {output.probe_csv} --md {output.probe_md} >{log.probe} 2>&1
        # The lr each framework's scheduler gave at every step, and where they part.
        python -m torch_burn_parity.tooling.warm torch_burn_parity.analysis.lrs_table \
            --experiment {wildcards.experiment} \
            --torch-f64 {input.torch_f64} --burn-f64 {input.burn_f64} \
            --report-steps {params.report_steps} \
            --csv {output.lrs_csv} --md {output.lrs_md} >{log.lrs} 2>&1
        # Layer by layer at the probe steps: where the difference enters, and its plot.
        python -m torch_burn_parity.tooling.warm torch_burn_parity.analysis.layers_table \
            --experiment {wildcards.experiment} \
            --torch-f32 {input.torch_f32} --burn-f32 {input.burn_f32} \
            --torch-f64 {input.torch_f64} --burn-f64 {input.burn_f64} \
            --burn-local-f32 {output.local[0]} --burn-local-f64 {output.local[1]} \
            --csv {output.layers_csv} --md {output.layers_md} >{log.layers} 2>&1
        python -m torch_burn_parity.tooling.warm torch_burn_parity.report.layers_plot \
            --experiment {wildcards.experiment} --csv {output.layers_csv} \
            --png {output.layers_png} >>{log.layers} 2>&1
        wait $replay
        # Every table and compare output above as a page for the Snakemake report: beside
        # the verdict and the plots, which do not read the pages.
        python -m torch_burn_parity.tooling.warm torch_burn_parity.report.render_html \
            --tables {params.page_sources} --tables-out {output.pages} >{log.pages} 2>&1 &
        pages=$!
        trap 'kill $pages 2>/dev/null || true' EXIT
        # The verdict, its causes and shares, where it starts: judged once, read by all.
        python -m torch_burn_parity.tooling.warm torch_burn_parity.judgement.judge \
            --experiment {wildcards.experiment} --tables results/tables \
            --runs results/runs/{wildcards.experiment} --tol-f32 {params.tol_f32} \
            --out {output.verdict} >{log.judge} 2>&1
        # Gap curves against the rounding floor, and |Δloss| on a log scale: their words
        # from the record.
        python -m torch_burn_parity.tooling.warm torch_burn_parity.report.plots --experiment {wildcards.experiment} \
            --steps {output.steps_csv} --tol {params.tol_f32} --tol-f64 {params.tol_f64} \
            --record {output.verdict} --gaps {output.gaps} --losses {output.losses} >{log.plots} 2>&1
        wait $pages
        """


rule verdicts:
    """results/verdicts.json: every experiment's verdict record, in the config's order."""
    input:
        code=code("judgement.judge"),
        records=[verdict_record(e) for e in EXPERIMENTS],
    output:
        "results/verdicts.json",
    log:
        "results/logs/verdicts.log",
    shell:
        "python -m torch_burn_parity.tooling.warm torch_burn_parity.judgement.judge"
        " --collect {input.records} --out {output} > {log} 2>&1"


rule bias_correction_table:
    """Burn's f32 Adam factor against the same formula in f64, for every Adam experiment."""
    input:
        code=code("analysis.bias_correction"),
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
        "python -m torch_burn_parity.analysis.bias_correction {input.runs} --report-steps {params.report_steps}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


rule provenance:
    """Versions, CPU and SIMD flags, threads, git commit and config hash of this run."""
    input:
        code=code("report.provenance"),
        config="results/specs/report/config.json",
        runs=[f for e in EXPERIMENTS for f in run_files(e).values()],
    output:
        "results/provenance.json",
    log:
        "results/logs/provenance.log",
    shell:
        "python -m torch_burn_parity.tooling.warm torch_burn_parity.report.provenance --config {input.config} --runs {input.runs} --out {output}"
        " > {log} 2>&1"
