"""Run a Python module or script in a process forked from a warm interpreter.

    python -m torch_burn_parity.tooling.warm MODULE [ARG ...]
    python -m torch_burn_parity.tooling.warm SCRIPT.py [ARG ...]

does what `python -m MODULE ARG ...` (or `python SCRIPT.py ARG ...`) does — same arguments,
working directory, environment, stdin/stdout/stderr and exit status — without paying for
the imports: a server process
imports PyTorch, pandas and matplotlib once (3-5 s; it answers once PyTorch is in) and forks
a fresh child for every script it is asked to run (about 0.05 s). The child reads the script
and the project's modules from their files, so an edited script takes effect at once; only
the third-party libraries listed in PRELOAD and PRELOAD_LATER are shared, as they would be
read from the same environment.

The server belongs to one user, one Python environment (its executable and installed
packages) and one version of this file: the socket's name hashes them. The first client
starts it; it exits after PARITY_WARM_IDLE_SECONDS (default 60) without work. A job whose
client goes away (a killed Snakemake, a failed group) has its child killed with it.

PARITY_WARM=0 runs the script cold, in this process, as does a server that cannot be
started. Under SLURM (SLURM_JOB_ID set) the default is cold: a server started by one job
would outlive its allocation and run other jobs outside theirs.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import hashlib
import importlib.util
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

# What the server imports before it takes work: what the trainings need, the first jobs to
# wait for it (torch._inductor: what torch.use_deterministic_algorithms and an optimizer's
# first step import, 1.7 s). PRELOAD_LATER it imports once listening, one module at a time
# whenever it has no request to answer (pandas, matplotlib and a first plot: about 1.2 s
# that no training waits for); a script forked before that imports them itself.
PRELOAD = ("numpy", "torch", "torch._inductor")
PRELOAD_LATER = ("pandas", "tabulate", "yaml", "markdown", "matplotlib.pyplot", "a plot")
IDLE_SECONDS = float(os.environ.get("PARITY_WARM_IDLE_SECONDS", 60))
START_TIMEOUT_SECONDS = 180
# Environment variables read once, when a library is imported or Python starts: a server
# started under other values would run scripts differently, so they are part of its key.
IMPORT_TIME_ENV = ("OMP_", "MKL_", "OPENBLAS_", "KMP_", "TORCH", "CUDA", "MPL", "PYTHON", "LD_",
                   "ATEN_", "ONEDNN_", "DNNL_")  # fmt: skip
STARTED, FINISHED = b"S", b"F"
MAX_SOCKET_PATH = 107


def server_key() -> str:
    """What makes two servers interchangeable: interpreter, packages, this file, env."""
    digest = hashlib.sha256()
    digest.update(f"{os.getuid()} {sys.executable} {sys.prefix}".encode())
    digest.update(Path(__file__).read_bytes())
    for site_dir in sorted(p for p in sys.path if p.endswith("site-packages")):
        if os.path.isdir(site_dir):  # installing or removing a package touches it
            digest.update(f"{site_dir} {os.stat(site_dir).st_mtime_ns}".encode())
    for name in sorted(os.environ):
        if name.startswith(IMPORT_TIME_ENV):
            digest.update(f"{name}={os.environ[name]}".encode())
    return digest.hexdigest()[:16]


def socket_path() -> Path:
    """The server's socket, in a folder only this user can enter (the server runs any
    script it is sent). A Unix socket's path is limited to 107 bytes: under a long
    XDG_RUNTIME_DIR or TMPDIR the folder goes to /tmp instead."""
    name = f"parity-warm-{os.getuid()}/{server_key()}.sock"
    path = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / name
    if len(str(path)) + 16 > MAX_SOCKET_PATH:  # room for the server's staging suffix
        path = Path("/tmp") / name
    path.parent.mkdir(mode=0o700, exist_ok=True)
    if path.parent.stat().st_uid != os.getuid():
        raise OSError(f"{path.parent} belongs to another user")
    return path


# --- the client ------------------------------------------------------------------------


def warm_wanted() -> bool:
    default = "0" if os.environ.get("SLURM_JOB_ID") else "1"
    return os.environ.get("PARITY_WARM", default) != "0"


def connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def start_server(path: Path) -> socket.socket | None:
    """Start a server unless another client just did (a lock file decides), and connect."""
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = connect(path)
        if sock:
            return sock
        path.unlink(missing_ok=True)  # a server that died leaves its socket file
        with open(f"{path}.log", "wb") as log:
            server = subprocess.Popen(
                [sys.executable, __file__, "--serve", str(path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # not in the job's process group: it outlives it
            )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline and server.poll() is None:
            sock = connect(path)
            if sock:
                return sock
            time.sleep(0.05)
    print(f"warm: the server did not start (its log: {path}.log)", file=sys.stderr)
    return None


def is_script(target: str) -> bool:
    """A file to run (`python SCRIPT`) rather than a dotted module name (`python -m`)."""
    return target.endswith(".py") or os.sep in target


def short_name(target: str) -> str:
    """What a log line calls the job's code: a script's file name, a module's last part."""
    return os.path.basename(target) if is_script(target) else target.rsplit(".", 1)[-1]


def module_exists(name: str) -> bool:
    """Whether `python -m name` would find it (from the working directory first)."""
    sys.path[0] = os.getcwd()
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package that is not there
        return False


def run_cold(argv: list[str]) -> None:
    """`python -m MODULE ARG ...` or `python SCRIPT ARG ...` in this process."""
    sys.argv = list(argv)
    if is_script(argv[0]):
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
    else:
        sys.path[0] = os.getcwd()  # as `python -m` has it
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


def request(sock: socket.socket, argv: list[str]) -> int | None:
    """Ask the server to run argv; its exit status, or None when no child was started."""
    payload = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)})
    socket.send_fds(sock, [payload.encode()], [0, 1, 2])
    reply = sock.recv(64)
    if not reply.startswith(STARTED):
        return None  # the server was closing: nothing ran
    reply = sock.recv(64)
    if not reply.startswith(FINISHED):
        print("warm: the server stopped while running the script", file=sys.stderr)
        return 1
    status, cpu_seconds, peak_kb = struct.unpack("<idq", reply[1:])
    # One line in the job's log: the child's own cost, which Snakemake's benchmark
    # (it measures the client) cannot see.
    print(
        f"warm: {short_name(argv[0])} exit {status},"
        f" cpu {cpu_seconds:.2f} s, peak RSS {peak_kb / 1024:.0f} MB",
        file=sys.stderr,
    )
    return status


def run_warm(argv: list[str]) -> int | None:
    path = socket_path()
    for _ in range(3):  # a server closing as we connect answers nothing: start another
        sock = connect(path) or start_server(path)
        if sock is None:
            return None
        try:
            with sock:
                status = request(sock, argv)
        except OSError:
            status = None
        if status is not None:
            return status
    return None


# --- the server ------------------------------------------------------------------------


def preload(module: str) -> None:
    import importlib

    if module == "a plot":
        draw_a_plot()
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
            job = json.loads(message)
        except (OSError, ValueError):
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
    if not argv:
        sys.exit("usage: python -m torch_burn_parity.tooling.warm MODULE|SCRIPT.py [ARG ...]")
    if is_script(argv[0]) and not os.path.isfile(argv[0]):
        sys.exit(f"warm: {argv[0]}: no such script")
    if not is_script(argv[0]) and not module_exists(argv[0]):
        sys.exit(f"warm: {argv[0]}: no such module")
    try:
        status = run_warm(argv) if warm_wanted() else None
    except OSError as error:
        print(f"warm: {error}", file=sys.stderr)
        status = None
    if status is None:
        if warm_wanted():
            print("warm: running the script cold instead", file=sys.stderr)
        run_cold(argv)
    else:
        sys.exit(status)


if __name__ == "__main__":
    main()
