"""The code digest a rule reads in place of the files its script runs (tooling/code.py):
its text changes when, and only when, one of those files does."""

from __future__ import annotations

import hashlib
from pathlib import Path

from torch_burn_parity.tooling.code import code_digest


def project(tmp_path: Path) -> list[str]:
    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.py").write_text("x = 1\n")
    (tmp_path / "src/b.py").write_text("y = 2\n")
    return ["src/a.py", "src/b.py"]


def test_a_line_per_file_as_sha256sum_writes_it(tmp_path):
    files = project(tmp_path)
    expected = "".join(
        f"{hashlib.sha256((tmp_path / f).read_bytes()).hexdigest()}  {f}\n" for f in files
    )
    assert code_digest(files, tmp_path) == expected


def test_an_edit_or_another_file_changes_it_and_a_touch_does_not(tmp_path):
    files = project(tmp_path)
    before = code_digest(files, tmp_path)
    (tmp_path / "src/b.py").touch()
    assert code_digest(files, tmp_path) == before
    (tmp_path / "src/b.py").write_text("y = 3\n")
    edited = code_digest(files, tmp_path)
    assert edited != before
    (tmp_path / "src/c.py").write_text("")
    assert code_digest([*files, "src/c.py"], tmp_path) != edited
