"""tooling/warm.py: a module or script run through the warm server behaves as `python SCRIPT`.

Each test gets its own server (its own XDG_RUNTIME_DIR) that idles out after a few seconds.
The pipeline-level check — every output byte-identical with and without the server — is
test_warm_and_cold_pipelines_write_identical_results.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from pipeline_helpers import copy_project, small_pipeline_config, snakemake

WARM = [sys.executable, "-m", "torch_burn_parity.tooling.warm"]

SHOW = """
import os, sys
print("argv", sys.argv[1:])
print("cwd", os.getcwd())
print("env", os.environ.get("WARM_TEST_VALUE"))
print("stdin", sys.stdin.read().strip())
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""


@pytest.fixture
def env():
    # Short: a Unix socket's path has at most 107 bytes (pytest's tmp_path is too long).
    runtime = tempfile.mkdtemp(prefix="warm-", dir="/tmp")
    yield dict(os.environ, XDG_RUNTIME_DIR=runtime, PARITY_WARM_IDLE_SECONDS="5")
    shutil.rmtree(runtime, ignore_errors=True)


def script(tmp_path: Path, text: str, name: str = "job.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def run(args, env, cwd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*WARM, *map(str, args)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def server_pids(env) -> set[int]:
    folder = Path(env["XDG_RUNTIME_DIR"])
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--serve" in cmd and any(str(folder).encode() in c for c in cmd):
                found.add(int(proc.name))
    return found


def test_a_script_sees_what_python_would_give_it(tmp_path, env):
    job = script(tmp_path, SHOW)
    env["WARM_TEST_VALUE"] = "42"
    warm = run([job, 3, "two words"], env, tmp_path, input="from stdin\n")
    cold = subprocess.run(
        [sys.executable, str(job), "3", "two words"],
        env=env, cwd=tmp_path, capture_output=True, text=True, input="from stdin\n",
    )  # fmt: skip
    assert warm.returncode == cold.returncode == 3
    assert warm.stdout == cold.stdout
    assert "argv ['3', 'two words']" in warm.stdout and "env 42" in warm.stdout
    assert warm.stderr.startswith("to stderr\n")
    # the one line the client adds: the child's own cost, for the job's log
    assert "warm: job.py exit 3, cpu" in warm.stderr
    assert len(server_pids(env)) == 1, "the script did not run through a server"


def test_a_module_runs_as_python_m_would_run_it(tmp_path, env):
    """The pipeline's form: a dotted module name, found from the working directory."""
    package = tmp_path / "warm_test_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    script(package, SHOW, name="show.py")
    env["WARM_TEST_VALUE"] = "7"
    warm = run(["warm_test_pkg.show", 0, "x"], env, tmp_path, input="in\n")
    cold = subprocess.run(
        [sys.executable, "-m", "warm_test_pkg.show", "0", "x"],
        env=env, cwd=tmp_path, capture_output=True, text=True, input="in\n",
    )  # fmt: skip
    assert warm.returncode == cold.returncode == 0
    assert warm.stdout == cold.stdout
    assert "argv ['0', 'x']" in warm.stdout and "env 7" in warm.stdout
    assert "warm: show exit 0, cpu" in warm.stderr
    missing = run(["warm_test_pkg.absent"], env, tmp_path)
    assert missing.returncode != 0
    assert missing.stderr.strip() == "warm: warm_test_pkg.absent: no such module"


def test_the_server_is_reused_and_an_edited_script_takes_effect(tmp_path, env):
    job = script(tmp_path, "print('first')")
    assert run([job], env, tmp_path).stdout == "first\n"
    first = server_pids(env)
    job.write_text("print('second')")
    assert run([job], env, tmp_path).stdout == "second\n"
    assert server_pids(env) == first and len(first) == 1


def project_copy(tmp_path: Path, env) -> Path:
    """A copy of the package, first on PYTHONPATH (so a server of its own, which preloads it
    from there): the one test that edits the project's files edits this copy."""
    import torch_burn_parity

    src = tmp_path / "src"
    shutil.copytree(Path(torch_burn_parity.__file__).parent, src / "torch_burn_parity",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
    return src / "torch_burn_parity"


def wait_for_the_project(tmp_path: Path, env) -> None:
    """Until a child finds the package's modules already imported by its server."""
    probe = script(tmp_path, "import sys; print('torch_burn_parity.io.parity_io' in sys.modules)",
                   "probe.py")  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        done = run([probe], env, tmp_path)
        assert done.returncode == 0 and "cold" not in done.stderr, done.stderr
        if done.stdout == "True\n":
            return
        time.sleep(0.2)
    raise AssertionError("the server never preloaded the project's modules")


def test_an_edited_project_module_takes_effect_though_the_server_preloaded_it(tmp_path, env):
    package = project_copy(tmp_path, env)
    module = package / "io" / "parity_io.py"
    module.write_text(module.read_text() + "\nWARM_TEST_VALUE = 'first'\n")
    wait_for_the_project(tmp_path, env)
    job = script(
        tmp_path,
        """
        from torch_burn_parity.io import parity_io
        print(parity_io.WARM_TEST_VALUE, parity_io.__file__)
    """,
    )
    first = run([job], env, tmp_path)
    assert first.stdout == f"first {module}\n", first.stderr
    module.write_text(module.read_text().replace("'first'", "'second'"))
    second = run([job], env, tmp_path)
    assert second.stdout == f"second {module}\n", second.stderr
    assert len(server_pids(env)) == 1


def test_a_copy_of_the_package_beside_the_script_is_the_one_it_imports(tmp_path, env):
    """As `python SCRIPT` would: the script's folder comes first on its path."""
    wait_for_the_project(tmp_path, env)
    other = tmp_path / "other"
    (other / "torch_burn_parity").mkdir(parents=True)
    (other / "torch_burn_parity" / "__init__.py").write_text("WHERE = 'beside the script'\n")
    job = script(other, "import torch_burn_parity as p; print(getattr(p, 'WHERE', p.__file__))")
    done = run([job], env, tmp_path)
    assert done.stdout == "beside the script\n", done.stderr


def test_a_child_keeps_the_preloaded_package_only_while_its_files_are_as_noted(
    tmp_path, monkeypatch
):
    from torch_burn_parity.tooling import warm_server

    job = [str(tmp_path / "job.py")]
    noted = tmp_path / "noted.py"
    noted.write_text("x = 1\n")
    files = {**warm_server.project_files, str(noted): warm_server.file_state(str(noted))}
    monkeypatch.setattr(warm_server, "project_files", files)
    assert not warm_server.project_changed(job)
    noted.write_text("x = 22\n")
    assert warm_server.project_changed(job)
    noted.unlink()
    assert warm_server.project_changed(job)
    # Nothing noted: the server imported a copy of the package other than its own.
    monkeypatch.setattr(warm_server, "project_files", {})
    assert warm_server.project_changed(job)


def test_failures_exit_non_zero_with_their_message(tmp_path, env):
    raised = run([script(tmp_path, "raise ValueError('boom')", "raises.py")], env, tmp_path)
    assert raised.returncode == 1 and "ValueError: boom" in raised.stderr
    exits = script(tmp_path, "import sys; sys.exit('error: bad')", "exits.py")
    refused = run([exits], env, tmp_path)
    assert refused.returncode == 1 and refused.stderr.startswith("error: bad\n")
    missing = run([tmp_path / "nowhere.py"], env, tmp_path)
    assert missing.returncode == 1 and "nowhere.py: no such script" in missing.stderr


def test_a_killed_client_takes_its_child_with_it(tmp_path, env):
    pid_file = tmp_path / "pid"
    job = script(
        tmp_path,
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)",
    )
    client = subprocess.Popen([*WARM, str(job)], env=env, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the script never started"
        time.sleep(0.1)
    child = int(pid_file.read_text())
    client.send_signal(signal.SIGTERM)
    client.wait(timeout=10)
    deadline = time.monotonic() + 10
    while alive(child):
        assert time.monotonic() < deadline, "the child outlived its client"
        time.sleep(0.1)


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_the_client_imports_only_what_every_call_needs():
    """Every job starts a client: what only starting a server or running cold needs, and
    the server itself, stay out of its imports until then (30 ms of CPU per client, where
    they made it 40)."""
    code = "import sys, torch_burn_parity.tooling.warm; print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    imported = set(done.stdout.split())
    assert "torch_burn_parity.tooling.warm" in imported, done.stderr
    later = {"json", "subprocess", "tempfile", "pathlib", "traceback", "runpy", "fcntl",
             "torch_burn_parity.tooling.warm_server", "numpy", "torch"}  # fmt: skip
    assert not later & imported


def test_a_malformed_request_is_dropped_and_the_server_serves_on(tmp_path, env):
    run([script(tmp_path, "pass")], env, tmp_path)  # a server up
    server = server_pids(env)
    path = next(Path(env["XDG_RUNTIME_DIR"]).rglob("*.sock"))
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.connect(str(path))
        sock.send(b"not a job")
        assert sock.recv(64) == b"", "the server answered a request it could not read"
    done = run([script(tmp_path, "print('ran')")], env, tmp_path)
    assert done.returncode == 0 and done.stdout == "ran\n"
    assert "warm: job.py exit 0" in done.stderr and "cold" not in done.stderr
    assert server_pids(env) == server, "the server did not survive the malformed request"


def test_parity_warm_0_runs_cold_without_a_server(tmp_path, env):
    env["PARITY_WARM"] = "0"
    done = run([script(tmp_path, "print('cold')")], env, tmp_path)
    assert done.stdout == "cold\n" and "warm:" not in done.stderr
    assert not server_pids(env)


def test_the_server_leaves_when_idle(tmp_path, env):
    run([script(tmp_path, "pass")], env, tmp_path)
    assert server_pids(env)
    deadline = time.monotonic() + 60
    while server_pids(env):
        assert time.monotonic() < deadline, "the server did not leave after its idle time"
        time.sleep(0.5)
    assert not list(Path(env["XDG_RUNTIME_DIR"]).rglob("*.sock"))


def test_a_long_runtime_folder_falls_back_to_tmp(tmp_path, env):
    env["XDG_RUNTIME_DIR"] = str(tmp_path / ("long" * 30))
    Path(env["XDG_RUNTIME_DIR"]).mkdir()
    done = run([script(tmp_path, "print('ran')")], env, tmp_path)
    assert done.returncode == 0 and done.stdout == "ran\n"
    assert "warm: " in done.stderr and "cold" not in done.stderr


def test_a_server_that_cannot_start_leaves_the_script_to_run_cold(tmp_path, env):
    """A server that dies at start (here: a library it preloads fails to import) is noticed
    at once, and the script still runs, cold, with a line saying so."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "numpy.py").write_text("raise ImportError('a broken numpy')\n")
    env["PYTHONPATH"] = str(broken)
    start = time.monotonic()
    done = run([script(tmp_path, "print('ran')")], env, tmp_path)
    assert done.returncode == 0 and done.stdout == "ran\n"
    assert "the server did not start" in done.stderr
    assert "running the script cold" in done.stderr
    assert time.monotonic() - start < 60, "the client waited out its start timeout"
    log = next(Path(env["XDG_RUNTIME_DIR"]).rglob("*.log")).read_text()
    assert "a broken numpy" in log


def test_warm_and_cold_pipelines_write_identical_results(pipeline, tmp_path_factory):
    """The `pipeline` fixture ran through the warm server; the same config run cold must
    write the same bytes to every result (logs and benchmark timings aside)."""
    cold = copy_project(tmp_path_factory.mktemp("cold"), small_pipeline_config())
    snakemake(cold, "--cores", "2", env={"PARITY_WARM": "0"})
    compared = 0
    for path in sorted((cold / "results").rglob("*")):
        relative = path.relative_to(cold / "results")
        if path.is_dir() or relative.parts[0] in ("logs", "benchmarks"):
            continue
        assert (pipeline / "results" / relative).read_bytes() == path.read_bytes(), relative
        compared += 1
    assert compared > 100


def test_the_server_preloads_pandas_and_matplotlib_after_it_answers(tmp_path, env):
    """The server takes work once PyTorch is imported; pandas and matplotlib follow while it
    is idle, so that a script forked later finds them imported."""
    probe = script(tmp_path, "import sys; print('pandas' in sys.modules, 'torch' in sys.modules)")
    seen = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (not seen or seen[-1] != "True True"):
        done = run([probe], env, tmp_path)
        assert done.returncode == 0 and "cold" not in done.stderr, done.stderr
        seen.append(done.stdout.strip())
        time.sleep(0.2)
    assert seen[-1] == "True True", seen
    assert all(line.endswith("True") for line in seen)  # PyTorch from the first answer on


def test_a_library_that_fails_to_preload_later_is_left_to_the_scripts(tmp_path, env):
    """A broken library of PRELOAD_LATER stops neither the server nor the scripts that do not
    import it; one that does meets the error itself, as it would cold."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "markdown.py").write_text("raise ImportError('a broken markdown')\n")
    env["PYTHONPATH"] = os.pathsep.join([str(broken), env.get("PYTHONPATH", "")])
    log = None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        done = run([script(tmp_path, "print('ran')")], env, tmp_path)
        assert done.returncode == 0 and done.stdout == "ran\n", done.stderr
        assert "cold" not in done.stderr
        log = next(Path(env["XDG_RUNTIME_DIR"]).rglob("*.log")).read_text()
        if "preloading markdown failed" in log:
            break
        time.sleep(0.2)
    assert "preloading markdown failed" in log and "a broken markdown" in log
    uses = run([script(tmp_path, "import markdown", "uses.py")], env, tmp_path)
    assert uses.returncode == 1 and "a broken markdown" in uses.stderr
    assert "warm: uses.py exit 1" in uses.stderr  # the server still answers
