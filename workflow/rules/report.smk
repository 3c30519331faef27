rule report:
    """results/report.md, assembled from the pipeline's outputs only."""
    input:
        unpack(report_inputs),
        script=f"{SCRIPTS}/report.py",
        modules=[IO_MODULE, GAPS_MODULE, VERDICT_MODULE],
    output:
        report(
            "results/report.md",
            caption="../report/report_md.rst",
            category="Report",
        ),
    log:
        "results/logs/report.log",
    shell:
        "python {input.script} --config {input.config} --results results --out {output}"
        " > {log} 2>&1"


rule report_config:
    """The effective config the report states, written from params like the specs."""
    output:
        "results/specs/report_config.json",
    log:
        "results/logs/specs/report_config.log",
    params:
        config=lambda w: {k: v for k, v in config.items()},
        tolerances=lambda w: {
            e: {d: tolerance(e, d) for d in DTYPES} for e in EXPERIMENTS
        },
    run:
        write_json(
            output[0],
            {"config": params.config, "tolerances": params.tolerances},
            log[0],
        )
