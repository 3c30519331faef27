"""Lint checks that need more than a one-line command: Snakemake's linter and actionlint."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

ACTIONLINT_VERSION = "v1.7.12"
TOOLS = ROOT / ".ci-tools"
WORKFLOW = ROOT / ".github" / "workflows" / "pipeline.yml"
MUTATION_WORKFLOW = ROOT / ".github" / "workflows" / "mutation.yml"
# The one lint the project accepts, and why: software comes from uv.lock and
# rust/Cargo.lock, not from per-rule conda or container directives (see the Snakefile).
ACCEPTED_LINTS = {"Specify a conda environment or container for each rule."}


def snakemake_lints() -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint"], cwd=ROOT, capture_output=True, text=True
    )
    return set(re.findall(r"^\s+\* (.+?):?$", proc.stdout + proc.stderr, re.M))


def test_snakemake_lint_finds_only_the_accepted_lint():
    lints = snakemake_lints()
    assert lints, "snakemake --lint reported nothing: the check itself is broken"
    assert lints <= ACCEPTED_LINTS, lints - ACCEPTED_LINTS


@pytest.fixture(scope="module")
def actionlint() -> str:
    """actionlint from PATH or .ci-tools/, else built from the Go module proxy."""
    found = shutil.which("actionlint") or shutil.which("actionlint", path=str(TOOLS))
    if found:
        return found
    if not shutil.which("go"):
        pytest.skip("actionlint not found and no Go toolchain to build it")
    subprocess.run(
        ["go", "install", f"github.com/rhysd/actionlint/cmd/actionlint@{ACTIONLINT_VERSION}"],
        env={**os.environ, "GOBIN": str(TOOLS)},
        check=True,
    )
    return str(TOOLS / "actionlint")


@pytest.mark.parametrize("workflow", [WORKFLOW, MUTATION_WORKFLOW], ids=lambda p: p.name)
def test_github_workflow_passes_actionlint(actionlint, workflow):
    proc = subprocess.run([actionlint, str(workflow)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_catches_a_broken_workflow(actionlint, tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on: ubuntu-latest", "runs-on: [}"))
    proc = subprocess.run([actionlint, str(broken)], capture_output=True, text=True)
    assert proc.returncode != 0


def test_mutation_workflow_runs_the_mutation_script_on_a_schedule():
    text = MUTATION_WORKFLOW.read_text()
    assert re.search(r"^  schedule:\n    - cron: ", text, re.M)
    assert "bash ci/mutation.sh" in text and "workflow_dispatch:" in text


def test_workflow_publishes_what_ci_collects():
    text = WORKFLOW.read_text()
    assert "bash ci/pipeline.sh" in text and "actions/upload-artifact@v7" in text
    assert "if: always()" in text and "cancel-in-progress: true" in text
    assert "cache-dependency-glob: uv.lock" in text
