"""tooling/stages.py: a job's stages in one process, each to its own log; a failed stage
ends the job in one line and takes what runs beside it down with it."""

from __future__ import annotations

import http.server
import json
import json.tool
import os
import sys

import pytest

from torch_burn_parity.analysis import compare
from torch_burn_parity.tooling import stages
from torch_burn_parity.tooling.stages import Job, StageFailed, flat


def test_a_stage_writes_to_its_own_log_even_from_c_level_output(tmp_path, capfd):
    def main(argv):
        print("from python", argv)
        os.write(1, b"from the file descriptor\n")
        print("to stderr", file=sys.stderr)

    job = Job("analyse")
    job.stage("first", main, ["--steps", [1, 2], 0.5], tmp_path / "first.log")
    log = (tmp_path / "first.log").read_text()
    assert "from python ['--steps', '1', '2', '0.5']" in log
    assert "from the file descriptor" in log and "to stderr" in log
    out, err = capfd.readouterr()
    assert out == "" and err.startswith("analyse: first ") and "first.log" in err


def test_append_keeps_the_earlier_stage_output(tmp_path):
    job = Job("analyse")
    job.stage("a", lambda argv: print("one"), [], tmp_path / "x.log")
    job.stage("b", lambda argv: print("two"), [], tmp_path / "x.log", append=True)
    assert (tmp_path / "x.log").read_text() == "one\ntwo\n"


@pytest.mark.parametrize(
    "main, status, logged",
    [
        (lambda argv: sys.exit(2), 2, ""),
        (lambda argv: sys.exit("a one-line refusal"), 1, "a one-line refusal\n"),
        (lambda argv: 1, 1, ""),  # compare.main returns its status
        (lambda argv: 1 / 0, 1, "ZeroDivisionError: division by zero\n"),  # its traceback
    ],
)
def test_a_failed_stage_names_itself_and_its_log(tmp_path, main, status, logged):
    job = Job("analyse")
    with pytest.raises(StageFailed) as failure:
        job.stage("steps table", main, [], tmp_path / "steps.log")
    assert str(failure.value) == (
        f"analyse: steps table failed (exit {status}); its log: {tmp_path / 'steps.log'}"
    )
    assert (tmp_path / "steps.log").read_text().endswith(logged)


def test_a_successful_stage_leaves_argv_as_it_was(tmp_path):
    before = list(sys.argv)
    seen = []
    Job("j").stage("name", lambda argv: seen.append(sys.argv[0]), [], tmp_path / "l.log")
    assert seen == ["name"] and sys.argv == before


def test_flat_spreads_lists():
    assert flat(["--a", [1, [2, 3]], ("x",), 0.1]) == ["--a", "1", "2", "3", "x", "0.1"]


def test_a_failed_stage_kills_what_runs_beside_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_WARM", "0")
    job = Job("analyse")
    # a module that runs until killed, as a long replay does
    job.beside("replay", http.server, ["0", "--bind", "127.0.0.1"], tmp_path / "replay.log")
    _, _, process = job.beside_processes[0]
    with pytest.raises(StageFailed):
        job.stage("probe", lambda argv: sys.exit(1), [], tmp_path / "probe.log")
    assert process.poll() is not None  # killed, not left running
    assert job.beside_processes == []


def test_wait_takes_the_exit_status_of_what_ran_beside(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_WARM", "0")
    job = Job("analyse")
    # `python -m json.tool` on a missing file exits 2 (argparse), as a failed replay exits
    job.beside("replay", json.tool, [tmp_path / "missing.json"], tmp_path / "replay.log")
    with pytest.raises(StageFailed, match=r"analyse: replay failed \(exit 2\); its log: "):
        job.wait("replay")
    job.beside("replay", json.tool, ["--help"], tmp_path / "replay.log")
    job.wait("replay")


def test_run_job_exits_with_the_one_line(tmp_path, capsys):
    def body(job, rule):
        assert rule == {"input": {}}
        job.stage("compare", compare.main, ["/no/such.json", "/no/such.json"], tmp_path / "c.log")

    with pytest.raises(SystemExit) as end:
        stages.run_job("analyse", body, [json.dumps({"input": {}})])
    assert end.value.code == f"analyse: compare failed (exit 2); its log: {tmp_path / 'c.log'}"
    assert "/no/such.json" in (tmp_path / "c.log").read_text()
    with pytest.raises(SystemExit, match="not the rule's JSON"):
        stages.run_job("analyse", body, ["{"])
