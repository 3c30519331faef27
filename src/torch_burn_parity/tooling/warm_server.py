"""The warm server: imports PyTorch, pandas, matplotlib and this project's modules once and
forks a fresh child for every script a client (warm.py, whose docstring tells the whole
story) asks it to run.

    python src/torch_burn_parity/tooling/warm_server.py --serve SOCKET

A client starts it; it exits after PARITY_WARM_IDLE_SECONDS (default 60) without work.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import selectors
import signal
import socket
import struct
import sys
import time
import traceback
from pathlib import Path


def package_files(folder: str) -> dict[str, tuple[int, int, int] | None]:
    """Every file of the package in `folder` (modules and data) with its state."""
    found = {}
    for parent, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            path = os.path.join(parent, name)
            found[path] = file_state(path)
    return found


def file_state(path: str) -> tuple[int, int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size, found.st_ino


# The project's own modules, imported last: 0.04-0.06 s of a job's CPU when each child
# imports them. A child must run the code on disk, so the server notes every file of the
# package (mtime, size and inode; Python's own bytecode cache checks mtime and size) as it
# starts, before it imports any, and a child that finds one of them changed or gone forgets
# the whole package before its script runs: the script then imports it anew, as it would
# cold.
PROJECT = "torch_burn_parity"
PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
project_files = package_files(PROJECT_DIR)

from torch_burn_parity.tooling.warm import FINISHED, STARTED, is_script, run_cold  # noqa: E402

# What the server imports before it takes work: what the trainings need, the first jobs to
# wait for it (torch._inductor: what torch.use_deterministic_algorithms and an optimizer's
# first step import, 1.7 s). PRELOAD_LATER it imports once listening, one module at a time
# whenever it has no request to answer (pandas, matplotlib and a first plot: about 1.2 s
# that no training waits for; then the project's own modules, see PROJECT above); a script
# forked before that imports them itself.
PRELOAD = ("numpy", "torch", "torch._inductor")
PRELOAD_LATER = ("pandas", "tabulate", "yaml", "markdown", "matplotlib.pyplot", "a plot",
                 "the project's modules")  # fmt: skip
IDLE_SECONDS = float(os.environ.get("PARITY_WARM_IDLE_SECONDS", 60))


def preload(module: str) -> None:
    import importlib

    if module == "a plot":
        draw_a_plot()
        return
    if module == "the project's modules":
        import_project()
        return
    if module.startswith("matplotlib"):
        import matplotlib

        matplotlib.use("Agg")
    importlib.import_module(module)


def draw_a_plot() -> None:
    """Draw one log-scale plot, as the pipeline's plots do, and throw it away: matplotlib
    builds its font caches on first use (0.3 s per plotting job)."""
    import io

    import matplotlib.pyplot as plt

    from torch_burn_parity.report.log_axis import log_y

    fig, ax = plt.subplots(layout="constrained")
    ax.plot([1, 2, 3], [1e-12, 1e-9, 1e-6], label="gap")
    log_y(ax)
    ax.set_title("warm-up")
    ax.legend()
    fig.savefig(io.BytesIO(), format="png", dpi=110)
    plt.close(fig)


def import_project() -> None:
    """Import every module of the package; one that fails is left to the scripts. A package
    found elsewhere than beside this file is not the one whose files were noted: nothing
    more of it is imported, and every child imports it anew."""
    import importlib
    import pkgutil

    package = importlib.import_module(PROJECT)
    if os.path.realpath(os.path.dirname(package.__file__)) != os.path.realpath(PROJECT_DIR):
        project_files.clear()  # every child forgets what the server imported of it
        return
    for found in pkgutil.walk_packages(package.__path__, f"{PROJECT}.", onerror=lambda _: None):
        with contextlib.suppress(Exception):
            importlib.import_module(found.name)


def project_changed(argv: list[str]) -> bool:
    """In a child: whether the preloaded package is not what the script would import: a
    file of it changed or went, or another copy of it comes first on the script's path (in
    the script's folder, or for `python -m` in the working directory)."""
    if not project_files:
        return True  # the server imported another copy than the one noted (import_project)
    first = os.path.dirname(os.path.abspath(argv[0])) if is_script(argv[0]) else os.getcwd()
    other = os.path.join(first, PROJECT)
    if os.path.isdir(other) and not os.path.samefile(other, PROJECT_DIR):
        return True
    return any(file_state(path) != seen for path, seen in project_files.items())


def forget_project() -> None:
    for name in [n for n in sys.modules if n == PROJECT or n.startswith(f"{PROJECT}.")]:
        del sys.modules[name]


def run_child(conn: socket.socket, listener: socket.socket, job: dict, fds: list[int]) -> None:
    """In the forked child: become `python SCRIPT ARG ...` and never return."""
    status = 1
    try:
        os.setpgid(0, 0)  # the server kills the whole group if the client goes away
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        listener.close()
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        status = 0
        if project_changed(job["argv"]):
            forget_project()
        run_cold(job["argv"])
    except SystemExit as done:
        if isinstance(done.code, int) or done.code is None:
            status = done.code or 0
        else:
            print(done.code, file=sys.stderr)
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)


class Server:
    """Forks a child per request; reports its exit status; kills it if the client leaves.

    One thread and a selector: no lock can be held by another thread at a fork.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        staging = f"{path}.{os.getpid()}"
        self.listener.bind(staging)
        self.listener.listen(64)
        os.replace(staging, path)  # clients see the socket only once it listens
        self.inode = os.stat(path).st_ino
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.children: dict[int, tuple[socket.socket, int]] = {}  # pidfd → (client, pid)
        self.later = list(PRELOAD_LATER)

    def accept(self) -> None:
        conn, _ = self.listener.accept()
        try:
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            job = marshal.loads(message)
        except (OSError, ValueError, EOFError, TypeError):
            conn.close()
            return
        pid = os.fork()
        if pid == 0:
            run_child(conn, self.listener, job, fds)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.children[pidfd] = (conn, pid)
        self.selector.register(pidfd, selectors.EVENT_READ, ("child", pidfd))
        self.selector.register(conn, selectors.EVENT_READ, ("client", pidfd))
        conn.sendall(STARTED)

    def client_gone(self, conn: socket.socket, pidfd: int) -> None:
        """The client hung up (its job was killed) before its child ended."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.children[pidfd][1], signal.SIGKILL)
        self.selector.unregister(conn)

    def child_done(self, pidfd: int) -> None:
        conn, pid = self.children.pop(pidfd)
        _, wait_status, usage = os.wait4(pid, 0)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        with contextlib.suppress(KeyError):
            self.selector.unregister(conn)
        code = os.waitstatus_to_exitcode(wait_status)
        cpu_seconds = usage.ru_utime + usage.ru_stime
        status = code if code >= 0 else 128 - code  # killed by a signal: 128 + its number
        with contextlib.suppress(OSError):
            conn.sendall(FINISHED + struct.pack("<idq", status, cpu_seconds, usage.ru_maxrss))
        conn.close()

    def preload_next(self) -> None:
        """Import the next module of PRELOAD_LATER; one that fails is left to the scripts
        (each imports it itself and meets the error where it can say so)."""
        module = self.later.pop(0)
        try:
            preload(module)
        except Exception:  # noqa: BLE001 - any failure: the server goes on without it
            print(f"warm: preloading {module} failed:", file=sys.stderr)
            traceback.print_exc()
        gc.freeze()  # see serve()

    def run(self) -> None:
        idle_since = time.monotonic()
        while True:
            timeout = None
            if self.later:
                timeout = 0.0  # nothing to answer now: preload the next module
            elif not self.children:
                timeout = max(0.0, idle_since + IDLE_SECONDS - time.monotonic())
            events = self.selector.select(timeout)
            if not events and self.later:
                self.preload_next()
                idle_since = time.monotonic()
                continue
            if not events and not self.children:
                break
            for key, _ in events:
                kind, pidfd = key.data
                if kind == "accept":
                    self.accept()
                elif kind == "client":
                    self.client_gone(key.fileobj, pidfd)
                else:
                    self.child_done(pidfd)
                    idle_since = time.monotonic()
        # Idle: stop taking work (a client connecting now gets no STARTED and starts anew).
        with contextlib.suppress(FileNotFoundError):
            if os.stat(self.path).st_ino == self.inode:
                self.path.unlink()
        self.listener.close()


def serve(path: Path) -> None:
    for module in PRELOAD:
        preload(module)
    # The preloaded libraries hold about a million objects: without this every garbage
    # collection in a child walks them all (0.1-0.2 s each) and copies their pages.
    gc.freeze()
    Server(path).run()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        status = 0
        try:
            serve(Path(argv[1]))
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stderr.flush()
        os._exit(status)  # skip interpreter teardown: the frozen objects are never freed
    sys.exit("usage: warm_server.py --serve SOCKET (clients start it: see warm.py)")


if __name__ == "__main__":
    main()
