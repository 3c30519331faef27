rule compare:
    """The seed's compare output, torch vs burn at one dtype, with the configured tolerance."""
    input:
        script=f"{SCRIPTS}/compare.py",
        io=IO_MODULE,
        torch="results/runs/{experiment}/torch-{dtype}.json",
        burn="results/runs/{experiment}/burn-{dtype}.json",
    output:
        "results/compare/{experiment}-{dtype}.txt",
    log:
        "results/logs/compare/{experiment}-{dtype}.log",
    params:
        tol=lambda w: tolerance(w.experiment, w.dtype),
    shell:
        "python {input.script} {input.torch} {input.burn} --tol {params.tol}"
        " --out {output} > {log} 2>&1"
