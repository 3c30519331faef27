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
