"""Remove Snakemake's directory lock when the run that took it is gone.

A killed run (SIGKILL, power loss) leaves `.snakemake/locks/` behind and the next run stops
with "Directory cannot be locked". The lock is stale when no other Snakemake process works
in the directory. The Snakefile calls `clear_stale_locks()` before Snakemake takes its own
lock, so a plain rerun resumes (with rerun-incomplete from profiles/default). Linux only
(/proc); elsewhere use `snakemake --unlock`.

    python -m torch_burn_parity.tooling.stale_lock [DIRECTORY]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PROC = Path("/proc")


def _ancestors() -> set[int]:
    """This process and its parents (e.g. `uv run snakemake`), which are not 'others'."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = (PROC / str(pid) / "stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])  # field 4: parent pid
        except (OSError, IndexError, ValueError):
            break
    return pids


def other_snakemake_in(directory: Path) -> bool:
    directory, mine = directory.resolve(), _ancestors()
    for proc in PROC.glob("[0-9]*"):
        try:
            if int(proc.name) in mine or b"snakemake" not in (proc / "cmdline").read_bytes():
                continue
            if (proc / "cwd").resolve() == directory:
                return True
        except OSError:
            continue
    return False


def clear_stale_locks(directory: Path = Path(".")) -> bool:
    """Remove the locks if no other Snakemake works in `directory`; True if removed."""
    locks = sorted((directory / ".snakemake" / "locks").glob("*"))
    if not locks or not PROC.joinpath("self").exists() or other_snakemake_in(directory):
        return False
    for lock in locks:
        lock.unlink(missing_ok=True)
    print("Removed a stale lock left by an interrupted run.", file=sys.stderr)
    return True


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    clear_stale_locks(Path(argv[0]) if argv else Path("."))


if __name__ == "__main__":
    main()
