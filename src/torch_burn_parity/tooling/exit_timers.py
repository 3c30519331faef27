"""Let Snakemake exit as soon as its last job is done.

Snakemake's scheduler starts a `threading.Timer` after every round of job selection, to
look again once its job rate limit (`--max-jobs-per-timespan`, 100 jobs a second by
default) allows more. The timers are not daemon threads, so the interpreter waits for the
last one before it exits: up to a second after the final job, on every run (measured: 1.4 s
from "Elapsed time" to the shell's prompt on a one-experiment run). When the run has ended
(common.smk's `onsuccess:` and `onerror:`), no job is left to schedule, and their wake-ups
are cancelled; a cancelled timer's thread ends at once without running its function.
"""

from __future__ import annotations

import threading


def cancel_pending_timers() -> int:
    """Cancel every `threading.Timer` still waiting in this process; how many there were."""
    timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    for timer in timers:
        timer.cancel()
    return len(timers)
