"""judgement/judge.py as a program: the tables and run files it reads, the record it writes,
`--collect`'s document of every record, and bad files refused in one line, nothing written.
The judgements themselves: test_judge.py."""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict

import pandas as pd
import pytest

from conftest import python_module
from test_judge import synthetic
from torch_burn_parity.judgement import judge
from torch_burn_parity.judgement import verdict as vd


def test_a_malformed_record_is_refused_naming_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"experiment": "x"}')
    proc = subprocess.run(
        [*python_module("judgement.judge"), "--collect", bad, "--out", tmp_path / "v.json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"judge: {bad}: not a verdict record (missing model,")
    assert not (tmp_path / "v.json").exists()


def write_tables(folder, tables: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for kind, frame in tables.items():
        if frame is not None:
            frame.to_csv(folder / f"{kind}_x.csv", index=False, float_format="%.17g")


def write_runs(folder, runs: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for (fw, dt), block in runs.items():
        (folder / f"{fw}-{dt}.json").write_text(json.dumps({"x": block}))


def test_main_writes_the_record_and_collect_gathers_records(tmp_path, capsys):
    tables, runs = synthetic(shift=1e-9)
    write_tables(tmp_path / "tables", tables)
    write_runs(tmp_path / "runs", runs)
    out = tmp_path / "verdicts" / "x.json"
    argv = ["--experiment", "x", "--tables", str(tmp_path / "tables"), "--runs",
            str(tmp_path / "runs"), "--tol-f32", "1e-6", "--out", str(out)]  # fmt: skip
    judge.main(argv)
    assert out.read_text().startswith('{\n "experiment": "x",\n "model": "cnn1d",')
    record = judge.read_record(out)
    assert record == asdict(judge.judge_experiment("x", tables, runs, 1e-6)) | {"divergence": []}
    assert capsys.readouterr().out == f"x: {record['verdict']}\n"
    second = tmp_path / "verdicts" / "y.json"
    second.write_text(json.dumps(dict(record, experiment="y")))
    judge.main(["--collect", str(out), str(second), "--out", str(tmp_path / "all.json")])
    gathered = json.loads((tmp_path / "all.json").read_text())["experiments"]
    assert [r["experiment"] for r in gathered] == ["x", "y"]


def test_main_refuses_half_its_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        judge.main(["--experiment", "x", "--out", str(tmp_path / "v.json")])
    assert stop.value.code == 2
    assert "give --collect, or --experiment, --tables, --runs and --tol-f32" in (
        capsys.readouterr().err
    )


def test_a_per_step_table_of_other_length_is_refused_in_process(tmp_path):
    tables, runs = synthetic(steps=5)
    tables["counterfactual"] = tables["counterfactual"].iloc[:4]
    write_tables(tmp_path, tables)
    assert len(judge.read_tables(tmp_path, "x", layers=False)["counterfactual"]) == 4
    with pytest.raises(judge.FormatError, match=r"counterfactual_x\.csv: 4 rows, but the runs"):
        judge.read_tables(tmp_path, "x", layers=False, steps=5)
    # the program checks the tables against the runs' recorded steps
    write_runs(tmp_path / "runs", runs)
    argv = ["--experiment", "x", "--tables", str(tmp_path), "--runs", str(tmp_path / "runs"),
            "--tol-f32", "1e-6", "--out", str(tmp_path / "x.json")]  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        judge.main(argv)
    assert str(stop.value).endswith("counterfactual_x.csv: 4 rows, but the runs record 5 steps")
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not a verdict record ("),
        ("[1, 2]", "not a verdict record (missing experiment, model,"),
        ('{"experiment": "x"}', "not a verdict record (missing model, model_size, optimizer,"),
    ],
)
def test_read_record_names_the_file_and_what_is_wrong(tmp_path, text, problem):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(judge.FormatError) as error:
        judge.read_record(path)
    assert str(error.value).startswith(f"{path}: {problem}")
    with pytest.raises(judge.FormatError, match="No such file"):
        judge.read_record(tmp_path / "absent.json")


def test_main_reads_the_layers_when_every_run_holds_them_and_needs_its_out(tmp_path):
    tables, runs = synthetic(shift=1e-9)
    write_runs(tmp_path / "runs", runs)
    write_tables(tmp_path / "tables", tables)
    argv = ["--experiment", "x", "--tables", str(tmp_path / "tables"), "--runs",
            str(tmp_path / "runs"), "--tol-f32", "1e-6"]  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        judge.main(argv)  # no --out
    assert stop.value.code == 2
    for block in runs.values():
        block["layers"] = []
    write_runs(tmp_path / "runs", runs)
    with pytest.raises(SystemExit) as stop:  # no layers table beside them
        judge.main([*argv, "--out", str(tmp_path / "v.json")])
    assert "layers_x.csv" in str(stop.value)
    with pytest.raises(SystemExit) as stop:  # the runs of another experiment
        judge.main([*[a.replace("x", "y") if a == "x" else a for a in argv],
                    "--out", str(tmp_path / "v.json")])  # fmt: skip
    assert "no experiment 'y'" in str(stop.value)


def test_collect_refuses_a_record_at_odds_with_itself_and_writes_one_document(tmp_path, capsys):
    tables, runs = synthetic(shift=1e-9)
    record = asdict(judge.judge_experiment("x", tables, runs, 1e-6))
    good, bad = tmp_path / "x.json", tmp_path / "y.json"
    good.write_text(json.dumps(record))
    bad.write_text(json.dumps(dict(record, experiment="y", verdict=vd.EQUIVALENT)))
    out = tmp_path / "all.json"
    with pytest.raises(SystemExit) as stop:
        judge.main(["--collect", str(good), str(bad), "--out", str(out)])
    assert str(stop.value).startswith(f"judge: {bad}: y: verdict 'equivalent up to rounding',")
    assert not out.exists()
    with pytest.raises(SystemExit) as stop:
        judge.main(["--collect", str(tmp_path / "none.json"), "--out", str(out)])
    assert str(stop.value).startswith("judge: ") and "none.json" in str(stop.value)
    judge.main(["--collect", str(good), "--out", str(out)])
    assert out.read_text().startswith('{\n "version": ')  # one space per level, as written
    assert capsys.readouterr().out.endswith(f"1 verdicts -> {out}\n")


def test_read_tables_keeps_the_config_diffs_words_and_reads_the_layers_when_asked(tmp_path):
    tables, _ = synthetic()
    row = {"hyperparameter": "eps", "torch": "NA", "burn": "None", "status": "same", "note": ""}
    tables["config_diff"] = pd.DataFrame([row])
    tables["layers"] = pd.DataFrame({"step": [1], "phase": ["forward"], "layer": ["conv"]})
    write_tables(tmp_path, tables)
    found = judge.read_tables(tmp_path, "x", layers=True)
    assert found["config_diff"].iloc[0].tolist() == ["eps", "NA", "None", "same", ""]
    assert found["layers"]["layer"].tolist() == ["conv"]
    assert judge.read_tables(tmp_path, "x", layers=False)["layers"] is None
