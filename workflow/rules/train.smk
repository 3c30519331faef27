rule train_torch:
    """One PyTorch run: experiment × dtype."""
    input:
        script=TORCH_TRAINER,
        modules=[IO_MODULE, *CONFIG_MODULES, PROVENANCE_MODULE],
        spec="results/specs/{experiment}.json",
        data="results/data/dataset.bin",
    output:
        "results/runs/{experiment}/torch-{dtype}.json",
    log:
        "results/logs/train/{experiment}/torch-{dtype}.log",
    benchmark:
        "results/benchmarks/train/{experiment}/torch-{dtype}.tsv"
    shell:
        "python {input.script} --experiment {wildcards.experiment} --dtype {wildcards.dtype}"
        " --config {input.spec} --data {input.data} --out {output} > {log} 2>&1"


rule train_burn:
    """One Burn run: experiment × dtype (Flex device configured for the dtype)."""
    input:
        binary="results/bin/parity-train",
        spec="results/specs/{experiment}.json",
        data="results/data/dataset.bin",
    output:
        "results/runs/{experiment}/burn-{dtype}.json",
    log:
        "results/logs/train/{experiment}/burn-{dtype}.log",
    benchmark:
        "results/benchmarks/train/{experiment}/burn-{dtype}.tsv"
    shell:
        "{input.binary} --experiment {wildcards.experiment} --dtype {wildcards.dtype}"
        " --config {input.spec} --data {input.data} --out {output} > {log} 2>&1"
