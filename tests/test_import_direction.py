"""The package's folders keep their direction: what a stage computes never depends on a
stage after it. Read from the import statements (any depth, inside functions too)."""

from __future__ import annotations

import ast
import re
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


def module_imports(path: Path) -> set[str]:
    """The package modules one source file imports, as dotted names (`report.experiment`);
    `from package import module` counts as the module when it is one."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if not name.startswith("torch_burn_parity."):
                continue
            relative = name.removeprefix("torch_burn_parity.").replace(".", "/")
            if (PACKAGE / f"{relative}.py").exists():
                found.add(relative.replace("/", "."))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node, or with a self-loop."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_the_package_imports_itself_back():
    """No circle of imports between the package's modules, type-only ones included."""
    graph = {
        str(path.relative_to(PACKAGE).with_suffix("")).replace("/", "."): module_imports(path)
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py"
    }
    assert cycles(graph) == []


RUST = Path(__file__).resolve().parents[1] / "rust/src"


def test_no_module_of_the_burn_trainer_imports_itself_back():
    """The trainer's top-level modules (a folder is one) import one another in one direction."""
    graph: dict[str, set[str]] = {}
    for path in RUST.rglob("*.rs"):
        if path.name == "tests.rs" or path.parent.name in ("tests",):
            continue
        top = path.relative_to(RUST).parts[0].removesuffix(".rs")
        code = "\n".join(
            line for line in path.read_text(encoding="utf-8").splitlines()
            if not line.lstrip().startswith("//")
        )  # fmt: skip
        used = set(re.findall(r"\bcrate::(\w+)", code))
        for group in re.findall(r"\buse crate::\{([^}]*)\}", code):
            used |= set(re.findall(r"^\s*(\w+)", group, re.M)) | set(
                re.findall(r",\s*(\w+)", group)
            )
        modules = {p.stem for p in RUST.glob("*.rs")} | {
            p.name for p in RUST.iterdir() if p.is_dir()
        }
        graph.setdefault(top, set()).update((used & modules) - {top})
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
