# Each framework's two runs of an experiment (f32, then f64) are one job: one start-up for
# both, and either framework can rerun without the other (editing a Rust source reruns no
# PyTorch training).


rule train_torch:
    """PyTorch runs of one experiment, f32 and f64."""
    input:
        code=script_code("train_torch"),
        spec="results/specs/{experiment}.json",
        data=lambda w: dataset(w.experiment),
        checked=lambda w: port_check(w.experiment),
    output:
        # each run's JSON and its tensors (io/run_tensors.py)
        expand(
            "results/runs/{{experiment}}/torch-{dtype}.{ext}",
            dtype=DTYPES,
            ext=RUN_EXTENSIONS,
        ),
    log:
        "results/logs/train/{experiment}/torch.log",
    # Both runs in one process: one warm client, one fork (train_torch.py --dtype f32 f64).
    shell:
        "python -m torch_burn_parity.tooling.warm workflow/scripts/train_torch.py"
        " --spec {input.spec} --dtype f32 f64 --data {input.data}"
        " --out results/runs/{wildcards.experiment}/torch-f32.json"
        " results/runs/{wildcards.experiment}/torch-f64.json > {log} 2>&1"


rule train_burn:
    """Burn runs of one experiment, f32 and f64 (Flex device configured for the dtype)."""
    input:
        binary=lambda w: burn_binary(w.experiment),
        spec="results/specs/{experiment}.json",
        data=lambda w: dataset(w.experiment),
        checked=lambda w: port_check(w.experiment),
    output:
        # each run's JSON and its tensors (io/run_tensors.py)
        expand(
            "results/runs/{{experiment}}/burn-{dtype}.{ext}",
            dtype=DTYPES,
            ext=RUN_EXTENSIONS,
        ),
    log:
        "results/logs/train/{experiment}/burn.log",
    benchmark:
        "results/benchmarks/train_burn/{experiment}.tsv"
    shell:
        "for dtype in f32 f64; do"
        " {input.binary} --spec {input.spec} --dtype $dtype --data {input.data}"
        " --out results/runs/{wildcards.experiment}/burn-$dtype.json;"
        " done > {log} 2>&1"
