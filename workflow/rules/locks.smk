# A killed run (SIGKILL, power loss) leaves Snakemake's directory lock behind, and the next
# run would stop with "Directory cannot be locked". The lock is stale when no other
# Snakemake process works in this directory; then it is removed here, before Snakemake
# takes its own lock, so that a plain rerun resumes (with rerun-incomplete from
# profiles/default). Linux only (/proc); elsewhere use `snakemake --unlock`.
import os
import sys


def _ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(
                Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
            )
        except (OSError, IndexError, ValueError):
            break
    return pids


def _other_snakemake_here():
    here, mine = Path.cwd().resolve(), _ancestors()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (
                int(proc.name) in mine
                or b"snakemake" not in (proc / "cmdline").read_bytes()
            ):
                continue
            if (proc / "cwd").resolve() == here:
                return True
        except OSError:
            continue
    return False


def clear_stale_locks():
    locks = Path(".snakemake/locks")
    if (
        Path("/proc/self").exists()
        and any(locks.glob("*"))
        and not _other_snakemake_here()
    ):
        for lock in locks.glob("*"):
            lock.unlink(missing_ok=True)
        print("Removed a stale lock left by an interrupted run.", file=sys.stderr)


clear_stale_locks()
