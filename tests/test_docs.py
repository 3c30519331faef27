"""The README and the documentation site: a README of a few screens whose links all reach
a page and a heading, a site that builds strictly (a broken link or anchor fails it), and a
config keys page that is the schema's own descriptions."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import ROOT
from torch_burn_parity.config.check_config import SCHEMA

README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)")


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings, as mkdocs' toc writes them."""
    found = set()
    for line in page.read_text().splitlines():
        if m := re.match(r"^#{1,6} (.+)", line):
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            found.add(re.sub(r"\s+", "-", text))
    return found


def test_the_readme_fits_on_a_few_screens_and_its_links_reach_a_heading():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200
    links = [m for m in LINK.finditer(README.read_text()) if not m.group(1).startswith("http")]
    assert len(links) >= 10
    for link in links:
        target = ROOT / link.group(1)
        assert target.exists(), link.group(0)
        if link.group(2):
            assert link.group(2) in anchors(target), link.group(0)


def keys_page():
    """docs/keys_page.py, the generator of the config keys page (not in the package)."""
    spec = importlib.util.spec_from_file_location("keys_page", ROOT / "docs/keys_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_config_keys_page_is_the_schemas():
    page = keys_page().page(yaml.safe_load(SCHEMA.read_text()))
    assert (ROOT / "docs/config-keys.md").read_text() == page, (
        "docs/config-keys.md is stale: uv run python docs/keys_page.py"
    )
    # every key of an experiment, and each optimizer's hyperparameters, with its description
    assert "| `label_smoothing` | number |" in page and "### `optimizer: muon`" in page
    assert "| `cpu_path` | `native` \\| `avx2` \\| `compatible` |  | `native` |" in page


def mkdocs(folder: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(folder / "site")], cwd=folder, env=env, capture_output=True,
                          text=True)  # fmt: skip


def test_the_site_builds_strictly_and_a_broken_link_fails_it(tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    built = mkdocs(copy)
    assert built.returncode == 0, built.stderr
    assert (copy / "site/config-keys/index.html").is_file()
    for broken in ("[x](nowhere.md)", "[x](running.md#no-such-heading)"):
        page = copy / "docs/by-hand.md"
        page.write_text(page.read_text() + f"\n{broken}\n")
        proc = mkdocs(copy)
        assert proc.returncode != 0, broken
        page.write_text((ROOT / "docs/by-hand.md").read_text())
