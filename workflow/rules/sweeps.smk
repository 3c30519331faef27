# Sweeps: the expansion of each sweep and its summary (rows, verdicts, parity map).


rule sweep_spec:
    """One sweep's expansion (experiment names and axis values), written from params."""
    output:
        "results/specs/sweeps/{sweep}.json",
    log:
        "results/logs/specs/sweeps/{sweep}.log",
    params:
        spec=lambda w: sweep_spec(w.sweep),
    run:
        write_json(output[0], params.spec, log[0])


rule sweep_summary:
    """A row per experiment of one sweep, its verdict and cause, and the parity map."""
    input:
        code=script_code("sweep_summary"),
        spec="results/specs/sweeps/{sweep}.json",
        records=lambda w: sweep_records(w.sweep),
    output:
        experiments="results/sweeps/{sweep}/experiments.csv",
        summary="results/sweeps/{sweep}/summary.csv",
        md="results/sweeps/{sweep}/summary.md",
        parity_map=report(
            "results/sweeps/{sweep}/parity_map.png",
            caption="../report/parity_map.rst",
            category="Sweep {sweep}",
        ),
    log:
        "results/logs/sweeps/{sweep}.log",
    shell:
        "python -m torch_burn_parity.tooling.warm workflow/scripts/sweep_summary.py --spec {input.spec} --results results"
        " --out-dir results/sweeps/{wildcards.sweep} > {log} 2>&1"
