"""Several stages of one job in one process, each with its own log.

A workflow script (workflow/scripts/) runs a rule's stages one after another by calling
each module's `main(argv)` here, instead of one `python -m MODULE` process per stage: the
package's modules are imported once for the job, not once per stage. A stage that runs
beside the others (the replay) is its own process, started through the warm server; a
program (the Burn binary) is its own process too.

Each stage writes only to its own log (its file descriptors 1 and 2 point there while it
runs, so a library's C-level output lands there too), and the job's log gets one line per
stage: its name, its time, its log. A stage that fails (an exception, or SystemExit with a
status other than 0) ends the job: the traceback goes to the stage's log, one line naming
the stage and its log to the job's stderr, and every process started beside it is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any


class StageFailed(Exception):
    """A stage ended with an error: its name and log are in the message."""


@contextlib.contextmanager
def output_to(log: Path, append: bool) -> Iterator[None]:
    """Send this process's output to log: Python's sys.stdout and sys.stderr, and file
    descriptors 1 and 2 (what a library writes from C)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = os.dup(1), os.dup(2)
    saved_streams = sys.stdout, sys.stderr
    with open(log, "a" if append else "w", buffering=1) as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        sys.stdout = sys.stderr = out
        try:
            yield
        finally:
            out.flush()
            sys.stdout, sys.stderr = saved_streams
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            os.close(saved_fds[0])
            os.close(saved_fds[1])


def flat(argv: Sequence[Any]) -> list[str]:
    """A command line of strings: each list in argv (report steps, page files) spread out."""
    out: list[str] = []
    for arg in argv:
        out += flat(arg) if isinstance(arg, list | tuple) else [str(arg)]
    return out


def exit_status(error: SystemExit) -> int:
    """What `python -m` would exit with for this SystemExit (a message means 1)."""
    if error.code is None:
        return 0
    return error.code if isinstance(error.code, int) else 1


class Job:
    """One job's stages, in the order they are called; `beside` ones run in parallel."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.started = time.perf_counter()
        self.beside_processes: list[tuple[str, Path, subprocess.Popen]] = []

    def say(self, line: str) -> None:
        print(f"{self.name}: {line}", file=sys.stderr, flush=True)

    def failed(self, stage: str, log: Path, what: str) -> StageFailed:
        self.kill_beside()
        return StageFailed(f"{self.name}: {stage} {what}; its log: {log}")

    def stage(
        self,
        name: str,
        main: Callable[[list[str]], Any],
        argv: Sequence[Any],
        log: Path | str,
        append: bool = False,
    ) -> None:
        """Run main(argv) here, its output to log (appended to it with `append`)."""
        log = Path(log)
        start = time.perf_counter()
        status = 0
        argv = flat(argv)
        saved_argv, sys.argv = sys.argv, [name, *argv]  # what argparse's messages name
        with output_to(log, append):
            try:
                returned = main(argv)
                status = returned if isinstance(returned, int) else 0
            except SystemExit as error:
                status = exit_status(error)
                if error.code is not None and not isinstance(error.code, int):
                    print(error.code, file=sys.stderr)
            except Exception:
                traceback.print_exc()
                status = 1
            finally:
                sys.argv = saved_argv
        self.ended(name, log, status, start)

    def program(
        self, name: str, argv: Sequence[Any], log: Path | str, append: bool = False
    ) -> None:
        """Run a program to its end, its output to log."""
        log = Path(log)
        start = time.perf_counter()
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a" if append else "w") as out:
            status = subprocess.run(flat(argv), stdout=out, stderr=out).returncode
        self.ended(name, log, status, start)

    def ended(self, name: str, log: Path, status: int, start: float) -> None:
        """A stage's line in the job's log, or the job's end if it failed."""
        if status != 0:
            raise self.failed(name, log, f"failed (exit {status})")
        # the process's peak resident memory so far (KiB on Linux): a stage that raises it
        # is the one a large model makes heavy
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.say(f"{name} {time.perf_counter() - start:.2f} s, peak RSS {peak:,.0f} MB so far"
                 f" ({log})")  # fmt: skip

    def beside(self, name: str, module: ModuleType, argv: Sequence[Any], log: Path | str) -> None:
        """Start `python -m module argv` beside the next stages (through the warm server,
        as every Python job is started): `wait` takes its exit status. The module is
        imported by the caller, so that its files count among the script's code."""
        log = Path(log)
        log.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "torch_burn_parity.tooling.warm", module.__name__]
        with open(log, "w") as out:
            process = subprocess.Popen(command + flat(argv), stdout=out, stderr=out)
        self.beside_processes.append((name, log, process))

    def wait(self, name: str) -> None:
        """Wait for the stage started beside the others under this name."""
        for entry in self.beside_processes:
            if entry[0] == name:
                self.beside_processes.remove(entry)
                _, log, process = entry
                start = time.perf_counter()
                if process.wait() != 0:
                    raise self.failed(name, log, f"failed (exit {process.returncode})")
                waited = time.perf_counter() - start
                self.say(f"{name} done, waited {waited:.2f} s for it ({log})")
                return
        raise ValueError(f"no stage {name!r} started beside the others")

    def kill_beside(self) -> None:
        for _, _, process in self.beside_processes:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
                process.wait()
        self.beside_processes.clear()

    def done(self) -> None:
        self.say(f"all stages done in {time.perf_counter() - self.started:.2f} s")


def run_job(name: str, body: Callable[[Job, dict[str, Any]], None], argv: list[str]) -> None:
    """A workflow script's entry point: argv is one JSON object (the rule's wildcards,
    input, output, log and params, as the Snakefile writes it); a failed stage exits 1 with
    its one line."""
    if len(argv) != 1:
        sys.exit(f"usage: {name}.py JOB_JSON (written by the workflow's rule {name})")
    try:
        job_spec = json.loads(argv[0])
    except json.JSONDecodeError as error:
        sys.exit(f"{name}: its argument is not the rule's JSON ({error})")
    job = Job(name)
    try:
        body(job, job_spec)
    except StageFailed as error:
        sys.exit(str(error))
    finally:
        job.kill_beside()
    job.done()
