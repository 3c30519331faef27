rule build_burn:
    """The Burn trainer, built from the locked crate and copied out of cargo's target dir."""
    input:
        manifest="rust/Cargo.toml",
        lock="rust/Cargo.lock",
        build_script="rust/build.rs",
        sources=sorted(str(p) for p in Path("rust/src").rglob("*.rs")),
    output:
        "results/bin/parity-train",
    log:
        "results/logs/build_burn.log",
    shell:
        """
        if ! command -v cargo >/dev/null; then
            echo "build_burn: cargo not found on PATH; install a Rust toolchain (https://rustup.rs) and rerun" | tee {log} >&2
            exit 1
        fi
        echo "build_burn: cargo build --release --locked (a first build takes minutes; log: {log})" >&2
        cargo build --release --locked --manifest-path {input.manifest} >{log} 2>&1
        target="${{CARGO_TARGET_DIR:-rust/target}}"
        cp "$target/release/parity-train" {output}.tmp && mv {output}.tmp {output}
        """


rule build_port:
    """Your own port's Burn binary (models/port.py): your crate built with
    `cargo build --release --locked` into the trainer's target folder, where Burn is already
    compiled (the crates your lock file shares with rust/Cargo.lock are built once), and
    copied out. A crate that does not build stops here, its first compiler error on screen.
    """
    input:
        port_sources,
    output:
        "results/bin/ports/{port}",
    log:
        "results/logs/build_port/{port}.log",
    params:
        crate=lambda w: PORTS[w.port].crate,
        bin=lambda w: PORTS[w.port].bin,
    shell:
        """
        target="${{CARGO_TARGET_DIR:-$PWD/rust/target}}"
        echo "build_port: cargo build --release --locked in {params.crate} (log: {log})" >&2
        if ! cargo build --release --locked --manifest-path {params.crate}/Cargo.toml \
            --bin {params.bin} --target-dir "$target" >{log} 2>&1; then
            echo "build_port: {params.crate} does not build; its first error:" >&2
            grep -m1 -A8 '^error' {log} >&2 || tail -n 20 {log} >&2
            exit 1
        fi
        mkdir -p $(dirname {output})
        cp "$target/release/{params.bin}" {output}.tmp && mv {output}.tmp {output}
        """
