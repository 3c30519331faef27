"""workflow/scripts/: one thin script per rule that runs Python, each importing the
package (the design's layout: the rules run small programs; the work is in the package)."""

from __future__ import annotations

import ast
import re

from conftest import ROOT

SCRIPTS = ROOT / "workflow" / "scripts"
RULES = ROOT / "workflow" / "rules"


def python_commands() -> list[str]:
    """Every `python ...` command in the rules' shell commands (comments left out)."""
    lines = [line for p in sorted(RULES.glob("*.smk")) for line in p.read_text().splitlines()]
    code = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    return re.findall(r"python (?:-m \S+ )?[\w./-]+", code)


def test_every_python_command_of_a_rule_runs_a_workflow_script():
    commands = python_commands()
    assert len(commands) >= 10
    launcher = "-m torch_burn_parity.tooling.warm "
    scripts = {c.split()[-1] for c in commands}
    assert all(c.startswith(("python workflow/scripts/", f"python {launcher}")) for c in commands)
    assert all(re.fullmatch(r"workflow/scripts/[a-z_]+\.py", s) for s in scripts), scripts
    assert all((ROOT / s).is_file() for s in scripts)
    # every script but the seed's compare.py is some rule's
    assert {f"workflow/scripts/{p.name}" for p in SCRIPTS.glob("*.py")} - scripts == {
        "workflow/scripts/compare.py"
    }


def test_each_script_is_thin_and_imports_the_package():
    for path in SCRIPTS.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert any(m.startswith("torch_burn_parity.") for m in imported), path.name
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        if path.name == "analyse.py":  # the stages of its rule, in order, and nothing else
            assert [f.name for f in functions] == ["analyse"]
        else:  # the package's main, called
            assert functions == [] and len(path.read_text().splitlines()) <= 20, path.name
