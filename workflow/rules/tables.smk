rule steps_table:
    """Per-step gaps with the precision ladder (f32 gap, each side's f32-vs-f64, f64-f64)."""
    input:
        unpack(lambda w: run_files(w.experiment)),
        script=f"{SCRIPTS}/steps_table.py",
        modules=[IO_MODULE, GAPS_MODULE],
    output:
        csv="results/tables/steps_{experiment}.csv",
        md="results/tables/steps_{experiment}.md",
    log:
        "results/logs/tables/steps_{experiment}.log",
    params:
        report_steps=config["report_steps"],
    shell:
        "python {input.script} --experiment {wildcards.experiment} --torch-f32 {input.torch_f32} --burn-f32 {input.burn_f32}"
        " --torch-f64 {input.torch_f64} --burn-f64 {input.burn_f64}"
        " --report-steps {params.report_steps} --csv {output.csv} --md {output.md} > {log} 2>&1"


rule bias_correction_table:
    """Burn's f32 Adam factor against the same formula in f64, for every Adam experiment."""
    input:
        script=f"{SCRIPTS}/bias_correction.py",
        modules=[IO_MODULE, GAPS_MODULE],
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
    shell:
        "python {input.script} {input.runs} --report-steps {params.report_steps}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"
