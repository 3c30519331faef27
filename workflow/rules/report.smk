rule report:
    """results/report.md, assembled from the pipeline's outputs only."""
    input:
        unpack(report_inputs),
        code=script_code("report"),
        data=datasets(),
    output:
        report(
            "results/report.md",
            caption="../report/report_md.rst",
            category="1. Parity report",
        ),
    log:
        "results/logs/report.log",
    shell:
        "python -m torch_burn_parity.tooling.warm workflow/scripts/report.py --config {input.config} --results results"
        " --data {input.data} --out {output}"
        " > {log} 2>&1"


rule report_config:
    """The effective config the report states, written from params like the specs."""
    output:
        "results/specs/report/config.json",
    log:
        "results/logs/specs/report/config.log",
    params:
        config=lambda w: {k: v for k, v in config.items()},
        tolerances=lambda w: {
            e: {d: tolerance(e, d) for d in DTYPES} for e in EXPERIMENTS
        },
        sweeps=lambda w: {s: [name for name, _, _ in SWEEPS[s]] for s in SWEEPS},
    run:
        write_json(
            output[0],
            {
                "config": params.config,
                "tolerances": params.tolerances,
                "sweeps": params.sweeps,
            },
            log[0],
        )


rule html_report:
    """report.md as HTML: the overview and a page per experiment (results/pages/), the
    landing page's verdicts (from verdicts.json), and the Adam bias-correction table's page
    (each experiment's table pages come from its analyse job)."""
    input:
        code=script_code("html_report"),
        report="results/report.md",
        records="results/verdicts.json",
        bias=BIAS_PAGE[0],
    output:
        html=mark_for_report(
            "results/report.html",
            caption="../report/report_html.rst",
            category="1. Parity report",
        ),
        verdicts="results/verdicts.html",
        pages=directory("results/pages"),
        bias=mark_for_report(
            BIAS_PAGE[1],
            caption="../report/bias_correction.rst",
            category="Adam bias correction",
            subcategory="tables",
        ),
    log:
        "results/logs/html_report.log",
    shell:
        "python -m torch_burn_parity.tooling.warm workflow/scripts/html_report.py --report {input.report}"
        " --out {output.html} --pages {output.pages} --records {input.records} --verdicts {output.verdicts}"
        " --tables {input.bias} --tables-out {output.bias} > {log} 2>&1"
