"""tooling/exit_timers.py: the timers Snakemake's scheduler leaves pending end at once, so
that the interpreter does not wait for them at exit."""

from __future__ import annotations

import subprocess
import sys
import threading

from torch_burn_parity.tooling.exit_timers import cancel_pending_timers


def test_pending_timers_are_cancelled_without_running():
    ran = []
    timers = [threading.Timer(60, ran.append, args=[i]) for i in range(3)]
    for timer in timers:
        timer.start()
    assert cancel_pending_timers() >= 3
    for timer in timers:
        timer.join(5)
        assert not timer.is_alive()
    assert ran == []


def test_a_process_whose_timers_are_cancelled_exits_without_waiting_for_them():
    """A pending 60 s timer would hold the exit for a minute (the subprocess' timeout)."""
    code = (
        "import threading; from torch_burn_parity.tooling.exit_timers import"
        " cancel_pending_timers; threading.Timer(60, print).start(); cancel_pending_timers()"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
