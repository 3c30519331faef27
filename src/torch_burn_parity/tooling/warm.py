"""Run a Python module or script in a process forked from a warm interpreter.

    python -m torch_burn_parity.tooling.warm MODULE [ARG ...]
    python -m torch_burn_parity.tooling.warm SCRIPT.py [ARG ...]

does what `python -m MODULE ARG ...` (or `python SCRIPT.py ARG ...`) does — same arguments,
working directory, environment, stdin/stdout/stderr and exit status — without paying for
the imports: a server process
imports PyTorch, pandas and matplotlib once (3-5 s; it answers once PyTorch is in), then the
project's own modules, and forks a fresh child for every script it is asked to run (about
0.05 s). The child reads the script from its file. It keeps the project's preloaded modules
only while every file of the package is as the server found it (warm_server.py); after an
edit it imports them anew, so an edited module takes effect at once. The third-party
libraries listed in warm_server.py's PRELOAD and PRELOAD_LATER are shared, as they would be
read from the same environment.

The server (warm_server.py) belongs to one user, one Python environment (its executable and
installed packages) and one version of this file and its own: the socket's name hashes
them. The first client starts it; it exits after PARITY_WARM_IDLE_SECONDS (default 60)
without work. A job whose client goes away (a killed Snakemake, a failed group) has its
child killed with it.

PARITY_WARM=0 runs the script cold, in this process, as does a server that cannot be
started. Under SLURM (SLURM_JOB_ID set) the default is cold: a server started by one job
would outlive its allocation and run other jobs outside theirs.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import socket
import struct
import sys

# A client runs once per job, so it imports only what every call needs: about 30 ms of CPU
# for its process where the server's modules made it 40 ms. What only starting a
# server or running cold needs is imported there; the server is warm_server.py.
SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warm_server.py")
START_TIMEOUT_SECONDS = 180
# Environment variables read once, when a library is imported or Python starts: a server
# started under other values would run scripts differently, so they are part of its key.
IMPORT_TIME_ENV = ("OMP_", "MKL_", "OPENBLAS_", "KMP_", "TORCH", "CUDA", "MPL", "PYTHON", "LD_",
                   "ATEN_", "ONEDNN_", "DNNL_")  # fmt: skip
STARTED, FINISHED = b"S", b"F"
MAX_SOCKET_PATH = 107


def server_key() -> str:
    """What makes two servers interchangeable: interpreter, packages, the client's and the
    server's code, env."""
    digest = hashlib.sha256()
    digest.update(f"{os.getuid()} {sys.executable} {sys.prefix}".encode())
    for code in (os.path.abspath(__file__), SERVER):
        with open(code, "rb") as f:
            digest.update(f.read())
    for site_dir in sorted(p for p in sys.path if p.endswith("site-packages")):
        if os.path.isdir(site_dir):  # installing or removing a package touches it
            digest.update(f"{site_dir} {os.stat(site_dir).st_mtime_ns}".encode())
    for name in sorted(os.environ):
        if name.startswith(IMPORT_TIME_ENV):
            digest.update(f"{name}={os.environ[name]}".encode())
    return digest.hexdigest()[:16]


def socket_path() -> str:
    """The server's socket, in a folder only this user can enter (the server runs any
    script it is sent). A Unix socket's path is limited to 107 bytes: under a long
    XDG_RUNTIME_DIR or TMPDIR the folder goes to /tmp instead."""
    name = f"parity-warm-{os.getuid()}/{server_key()}.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime:
        import tempfile

        runtime = tempfile.gettempdir()
    path = os.path.join(runtime, name)
    if len(path) + 16 > MAX_SOCKET_PATH:  # room for the server's staging suffix
        path = os.path.join("/tmp", name)
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if os.stat(folder).st_uid != os.getuid():
        raise OSError(f"{folder} belongs to another user")
    return path


def warm_wanted() -> bool:
    default = "0" if os.environ.get("SLURM_JOB_ID") else "1"
    return os.environ.get("PARITY_WARM", default) != "0"


def connect(path: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(path)
        return sock
    except OSError:
        sock.close()
        return None


def start_server(path: str) -> socket.socket | None:
    """Start a server unless another client just did (a lock file decides), and connect."""
    import fcntl
    import subprocess
    import time

    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = connect(path)
        if sock:
            return sock
        if os.path.lexists(path):  # a server that died leaves its socket file
            os.unlink(path)
        with open(f"{path}.log", "wb") as log:
            server = subprocess.Popen(
                [sys.executable, SERVER, "--serve", path],
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
    import importlib.util

    sys.path[0] = os.getcwd()
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package that is not there
        return False


def run_cold(argv: list[str]) -> None:
    """`python -m MODULE ARG ...` or `python SCRIPT ARG ...` in this process."""
    import runpy

    sys.argv = list(argv)
    if is_script(argv[0]):
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")
    else:
        sys.path[0] = os.getcwd()  # as `python -m` has it
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


def request(sock: socket.socket, argv: list[str]) -> int | None:
    """Ask the server to run argv; its exit status, or None when no child was started.
    The job goes as marshal data: the same interpreter reads it (the server's key names
    it), and marshal needs no import."""
    payload = marshal.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)})
    socket.send_fds(sock, [payload], [0, 1, 2])
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


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
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
