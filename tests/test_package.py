"""The package: every module imports, and the folders hold what the documentation says."""

from __future__ import annotations

import importlib
import re

import pytest

from conftest import ROOT

SRC = ROOT / "src"
MODULES = sorted(
    ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
    for path in (SRC / "torch_burn_parity").rglob("*.py")
)


@pytest.mark.parametrize("module", MODULES)
def test_every_module_imports(module):
    importlib.import_module(module)


def test_the_layout_page_names_every_folder():
    readme = (ROOT / "docs/design.md").read_text()
    folders = {
        p.name for p in (SRC / "torch_burn_parity").iterdir() if (p / "__init__.py").is_file()
    }
    named = set(re.findall(r"^\| `(\w+)/` \|", readme, flags=re.M))
    assert folders == named


def test_no_module_edits_sys_path():
    for path in (SRC / "torch_burn_parity").rglob("*.py"):
        assert "sys.path.insert" not in path.read_text(), path
