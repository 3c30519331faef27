"""The package's folders keep their direction: what a stage computes never depends on a
stage after it. Read from the import statements (any depth, inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src/torch_burn_parity"
# folder -> the folders it must not import: the numbers never depend on how they are
# judged or drawn, the models never on how a config is checked.
FORBIDDEN = {
    "analysis": {"judgement", "report", "tooling"},
    "judgement": {"report", "tooling"},
    "models": {"config", "analysis", "judgement", "report", "training", "tooling"},
    "io": {"config", "analysis", "judgement", "report", "training", "tooling"},
    "optimizers": {"config", "analysis", "judgement", "report", "training", "tooling"},
}


def imported_folders(path: Path) -> set[str]:
    """The package folders (or root modules) one source file imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found |= {n.split(".")[1] for n in names if n.startswith("torch_burn_parity.")}
    return found


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_a_folder_imports_nothing_downstream_of_it(folder):
    wrong = {
        str(path.relative_to(PACKAGE)): sorted(imported_folders(path) & FORBIDDEN[folder])
        for path in (PACKAGE / folder).rglob("*.py")
    }
    assert {file: folders for file, folders in wrong.items() if folders} == {}


def test_the_reader_sees_every_kind_of_import(tmp_path):
    source = tmp_path / "x.py"
    source.write_text(
        "import torch_burn_parity.report.plots\n"
        "from torch_burn_parity.judgement import verdict\n"
        "def f():\n    from torch_burn_parity import tooling\n"
    )
    assert imported_folders(source) == {"report", "judgement", "tooling"}
