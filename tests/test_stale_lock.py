"""stale_lock: a lock is removed only when no other Snakemake works in the directory."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from torch_burn_parity.tooling.stale_lock import clear_stale_locks


@pytest.fixture
def locked(tmp_path):
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("x")
    return tmp_path


def test_stale_lock_is_removed(locked):
    assert clear_stale_locks(locked)
    assert not list((locked / ".snakemake" / "locks").iterdir())


def test_lock_of_a_running_snakemake_is_kept(locked):
    # A process whose command line names snakemake, working in the locked directory.
    other = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "snakemake"], cwd=locked
    )
    try:
        time.sleep(0.2)
        assert not clear_stale_locks(locked)
        assert list((locked / ".snakemake" / "locks").iterdir())
    finally:
        other.kill()
        other.wait()


def test_no_lock_nothing_to_do(tmp_path):
    assert not clear_stale_locks(tmp_path)
