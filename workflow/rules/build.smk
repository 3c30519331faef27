rule build_burn:
    """The Burn trainer, built from the locked crate and copied out of cargo's target dir;
    a first build prints the crates compiled every 30 s (tooling/build_burn.py)."""
    input:
        code=script_code("build_burn"),
        manifest="rust/Cargo.toml",
        lock="rust/Cargo.lock",
        build_script="rust/build.rs",
        sources=sorted(str(p) for p in Path("rust/src").rglob("*.rs")),
    output:
        "results/bin/parity-train",
    log:
        "results/logs/build_burn.log",
    benchmark:
        "results/benchmarks/build_burn.tsv"
    shell:
        "python workflow/scripts/build_burn.py --manifest {input.manifest} --out {output}"
        " --log {log}"


rule build_port:
    """Your own port's Burn binary (models/port.py): your crate built with
    `cargo build --release --locked` into the trainer's target folder, where Burn is already
    compiled (the crates your lock file shares with rust/Cargo.lock are built once), your
    package's own artifacts cleaned first so that the binary is your crate's (another crate of
    the same package name may have been built there), and copied out (tooling/build_port.py). A crate
    that does not build stops here, its first compiler error on screen.
    """
    input:
        code=script_code("build_port"),
        sources=port_sources,
    output:
        "results/bin/ports/{port}",
    log:
        "results/logs/build_port/{port}.log",
    params:
        crate=lambda w: PORTS[w.port].crate,
        bin=lambda w: PORTS[w.port].bin,
    shell:
        "python workflow/scripts/build_port.py --crate {params.crate}"
        " --bin {params.bin} --out {output} --log {log}"


rule check_port:
    """Your own port checked once, before any of its trainings: PyTorch builds your module
    from the weights file and runs your data's x through it, your binary's `check` matches
    your Burn module to the same file; every refusal of both sides on one line each
    (training/check_port.py)."""
    input:
        code=script_code("check_port"),
        binary="results/bin/ports/{port}",
        module=port_module,
        spec=lambda w: f"results/specs/{port_experiment(w.port)}.json",
        data=lambda w: dataset(port_experiment(w.port)),
    output:
        "results/ports/{port}.checked",
    log:
        "results/logs/check_port/{port}.log",
    shell:
        "python -m torch_burn_parity.tooling.warm workflow/scripts/check_port.py"
        " --spec {input.spec} --data {input.data} --binary {input.binary} --out {output}"
        " > {log} 2>&1"
