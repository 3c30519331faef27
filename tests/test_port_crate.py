"""models/port_crate.py: a port's crate is refused before any job when its lock file would
compile a second Burn, with the command that fixes it."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT
from torch_burn_parity.models.port_crate import TRAINER_LOCK, crate_problems, locked_versions

EXAMPLE_LOCK = ROOT / "examples/byo/burn/Cargo.lock"


def crate_with(tmp_path: Path, lock: str | None, manifest: bool = True) -> str:
    crate = tmp_path / "burn"
    crate.mkdir()
    if manifest:
        (crate / "Cargo.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    if lock is not None:
        (crate / "Cargo.lock").write_text(lock)
    return str(crate)


def test_the_examples_lock_resolves_the_trainers_versions(tmp_path):
    assert crate_problems(crate_with(tmp_path, EXAMPLE_LOCK.read_text())) == []
    assert locked_versions(TRAINER_LOCK)["cubecl"] == {"0.11.3"}


def test_a_lock_with_newer_burn_dependencies_is_refused_with_the_fix(tmp_path):
    lock = EXAMPLE_LOCK.read_text().replace(
        'name = "cubecl"\nversion = "0.11.3"', 'name = "cubecl"\nversion = "0.11.4"'
    )
    crate = crate_with(tmp_path, lock)
    (problem,) = crate_problems(crate)
    assert problem.startswith(f"{crate}/Cargo.lock resolves cubecl 0.11.4 (the trainer's 0.11.3)")
    assert "would compile a second Burn" in problem
    assert problem.endswith(
        f"cp {TRAINER_LOCK} {crate}/Cargo.lock && cargo update --workspace --manifest-path"
        f" {crate}/Cargo.toml"
    )


def test_many_differing_packages_are_counted_not_listed(tmp_path):
    lock = EXAMPLE_LOCK.read_text()
    for name, old in (("cubecl", "0.11.3"), ("serde", "1.0.229"), ("burn", "0.22.1"),
                      ("burn-core", "0.22.1"), ("burn-nn", "0.22.1")):  # fmt: skip
        pinned = f'name = "{name}"\nversion = '
        lock = lock.replace(f'{pinned}"{old}"', f'{pinned}"9"')
    (problem,) = crate_problems(crate_with(tmp_path, lock))
    assert problem.count(" (the trainer's ") == 3 and " and 2 more: " in problem


def test_a_second_major_version_beside_the_trainers_rebuilds_nothing(tmp_path):
    extra = '\n[[package]]\nname = "cubecl"\nversion = "0.12.0"\nsource = "registry+x"\n'
    assert crate_problems(crate_with(tmp_path, EXAMPLE_LOCK.read_text() + extra)) == []


def test_missing_and_malformed_files_are_named(tmp_path):
    (a, b, c) = (tmp_path / "a", tmp_path / "b", tmp_path / "c")
    for folder in (a, b, c):
        folder.mkdir()
    assert crate_problems(crate_with(a, None)) == [
        f"{a}/burn: no Cargo.lock (built with --locked: commit the lock file)"
    ]
    assert crate_problems(crate_with(b, EXAMPLE_LOCK.read_text(), manifest=False)) == [
        f"{b}/burn: no Cargo.toml"
    ]
    (problem,) = crate_problems(crate_with(c, "[[package]\nname ="))
    assert problem.startswith(f"{c}/burn/Cargo.lock: not a Cargo.lock (")
