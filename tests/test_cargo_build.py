"""The build jobs' cargo runner (tooling/cargo_build.py, tooling/build_burn.py): the count of
crates to compile, the progress line, the one-line failures. Real cargo, on two tiny crates
(an app and a path dependency): no registry, a build in seconds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torch_burn_parity.tooling import cargo_build

pytestmark = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo not installed")


@pytest.fixture
def crate(tmp_path: Path) -> Path:
    """An app crate with one path dependency and a build script (three units, two
    packages), its lock file written offline."""
    for name, kind in (("dep", "--lib"), ("parity-train", "--bin")):
        subprocess.run(["cargo", "new", "-q", kind, name], cwd=tmp_path, check=True)
    app = tmp_path / "parity-train"
    with open(app / "Cargo.toml", "a") as manifest:
        manifest.write('dep = { path = "../dep" }\n')
    (app / "build.rs").write_text("fn main() {}\n")
    subprocess.run(["cargo", "generate-lockfile", "--offline", "-q"], cwd=app, check=True)
    return app


def test_the_crates_to_compile_are_the_packages_of_the_build(crate):
    assert cargo_build.crates_to_compile(crate / "Cargo.toml") == 2
    # cargo cannot read the manifest: no count, and the progress line goes without "of"
    assert cargo_build.crates_to_compile(crate / "missing" / "Cargo.toml") == 0


def test_the_progress_line_counts_the_crates_compiled(crate, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cargo_build, "PROGRESS_EVERY_S", 0.05)
    # The app's build script takes a second: the lines meanwhile name the crate compiling.
    (crate / "build.rs").write_text("fn main() { std::thread::sleep(std::time::Duration::"
                                    "from_millis(1000)); }\n")  # fmt: skip
    log = open(tmp_path / "cargo.log", "w+")  # noqa: SIM115 (read back below)
    args = ["build", "--release", "--locked", "--manifest-path", str(crate / "Cargo.toml"),
            "--target-dir", str(tmp_path / "target")]  # fmt: skip
    assert cargo_build.run_cargo(args, log, "build_burn", total=2) == 0
    lines = capsys.readouterr().err.splitlines()
    assert all(line.startswith("build_burn: ") for line in lines)
    tree = "(its dependency tree has 2)"
    assert f"build_burn: 1 crate compiled {tree}, 0 s; compiling parity-train" in lines
    assert re.fullmatch(rf"build_burn: 2 crates compiled {re.escape(tree)}, [12] s", lines[-1])
    # the app is not compiled while its build script runs (its artifact is not the crate's);
    # one line may fall between the binary's artifact and cargo's exit
    assert sum(line.startswith("build_burn: 2 crates") for line in lines[:-1]) <= 1
    log.seek(0)
    assert "Compiling dep v0.1.0" in log.read()  # cargo's output kept in the log
    # fresh: nothing compiled (cargo's fresh artifacts are not counted), no closing line
    assert cargo_build.run_cargo(args, log, "build_burn", total=2) == 0
    assert all(
        f" 0 crates compiled {tree}, " in line for line in capsys.readouterr().err.splitlines()
    )


def test_a_package_id_names_the_package():
    registry = "registry+https://github.com/rust-lang/crates.io-index#burn-flex@0.22.1"
    assert cargo_build.package_name_version(registry) == ("burn-flex", "0.22.1")
    assert cargo_build.package_name_version("path+file:///tmp/x/dep#0.1.0") == ("dep", "0.1.0")
    assert cargo_build.package_name_version("path+file:///work/rust#parity-train@0.1.0") == (
        "parity-train", "0.1.0")  # fmt: skip


def test_a_count_without_a_total_says_crate_for_one(crate, tmp_path, capsys):
    target = tmp_path / "target"
    log = open(tmp_path / "cargo.log", "w")  # noqa: SIM115
    args = ["build", "--release", "--manifest-path", str(crate / "Cargo.toml"),
            "--target-dir", str(target)]  # fmt: skip
    cargo_build.run_cargo(args, log, "build_port")
    (crate / "src" / "main.rs").write_text('fn main() { println!("again"); }\n')
    cargo_build.run_cargo(args, log, "build_port")
    assert capsys.readouterr().err.splitlines()[-1].startswith("build_port: 1 crate compiled, ")


def run_build_burn(crate: Path, tmp_path: Path, env: dict | None = None):
    out = tmp_path / "results" / "bin" / "parity-train"
    log = tmp_path / "results" / "logs" / "build_burn.log"
    proc = subprocess.run(
        [sys.executable, "-m", "torch_burn_parity.tooling.build_burn", "--manifest",
         str(crate / "Cargo.toml"), "--out", str(out), "--log", str(log)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    return proc, out, log


def test_build_burn_builds_says_first_and_copies_the_binary(crate, tmp_path):
    proc, out, log = run_build_burn(crate, tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first == f"build_burn: cargo build --release --locked (a first build: Burn is " \
        f"compiled too, about 6 min on 2 cores); log: {log}"  # fmt: skip
    assert subprocess.run([out], capture_output=True, text=True).stdout == "Hello, world!\n"
    assert "Compiling parity-train" in log.read_text()
    assert not out.with_name("parity-train.tmp").exists()


def test_a_trainer_that_does_not_build_is_its_first_error(crate, tmp_path):
    (crate / "src" / "main.rs").write_text('fn main() { let x: u8 = "no"; }\n')
    proc, out, log = run_build_burn(crate, tmp_path)
    assert proc.returncode == 1
    assert "build_burn: the trainer does not build; its first error:\nerror[E0308]" in proc.stderr
    # the closing count names no crate as compiling: the build is over
    assert re.search(r"^build_burn: 1 crate compiled \(its dependency tree has 2\), \d s$",
                     proc.stderr, flags=re.M)  # fmt: skip
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_no_cargo_is_one_line(crate, tmp_path):
    python_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join([python_bin, "/usr/bin", "/bin"])
    assert shutil.which("cargo", path=path) is None, "cargo is in /usr/bin: cannot hide it"
    proc, out, _ = run_build_burn(crate, tmp_path, env=dict(os.environ, PATH=path))
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "build_burn: cargo not found on PATH; install a Rust toolchain (https://rustup.rs) "
        "and rerun"
    ]
    assert not out.exists()


def test_build_burn_names_the_first_build_only(crate, tmp_path, monkeypatch):
    target = tmp_path / "target"
    monkeypatch.setenv("CARGO_TARGET_DIR", str(target))
    assert not cargo_build.burn_compiled(target)
    (target / "release" / ".fingerprint" / "burn-core-0123").mkdir(parents=True)
    assert cargo_build.burn_compiled(target)
    proc, _, _ = run_build_burn(crate, tmp_path, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "a first build" not in proc.stderr
    assert "dependency tree" not in proc.stderr  # no tree on a rebuild
