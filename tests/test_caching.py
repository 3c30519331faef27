"""Caching by file dependency, derived from the code: editing any script or module reruns
exactly the jobs that run code importing it, and everything downstream of them.

Nothing here is hand-picked. Which module a script uses comes from its imports (ast,
transitively, within workflow/scripts); which script a job runs comes from its shell command
in a `--forceall` dry run (and `cargo build` uses every file of the crate it builds); which
jobs are downstream comes from the same dry run's input and output files. A new script or
module is covered by adding it to workflow/scripts, a new rule by adding it to the workflow.

For each file:
- every job that runs code importing it lists it as an input (in the `--forceall` listing).
  Only that makes Snakemake rerun the job for an edit of the file itself; the dry run below
  cannot show it for a job that sits downstream of another user of the file (the report,
  below the plots, reruns anyway when verdict.py changes), and it prints no reason then
  that would tell the two apart;
- after appending a comment (text and modification time restored after), the plain dry run
  plans exactly the jobs that use it plus their dependents: no more (editing compare.py
  reruns no training), no fewer.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from conftest import ROOT
from pipeline_helpers import Job, dry_run, edited

SCRIPTS = "workflow/scripts"
CRATE = "rust"


def crate_files(root: Path) -> list[str]:
    """Every file `cargo build` compiles the Burn trainer from."""
    crate = root / CRATE
    files = [crate / "Cargo.toml", crate / "Cargo.lock", crate / "build.rs"]
    files += sorted((crate / "src").rglob("*.rs"))
    return [str(f.relative_to(root)) for f in files if f.is_file()]


def script_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in (root / SCRIPTS).glob("*.py"))


# Collected from the project itself: a new script or source file gets its own test case.
EDITABLE = script_files(ROOT) + crate_files(ROOT)


@cache
def direct_imports(path: Path) -> frozenset[str]:
    """The sibling modules (workflow/scripts/*.py) a script imports itself."""
    siblings = {p.stem for p in path.parent.glob("*.py")} - {path.stem}
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return frozenset(names & siblings)


def imports_of(path: Path) -> set[str]:
    """The sibling modules a script imports, directly or through another one."""
    found: set[str] = set()
    todo = [path]
    while todo:
        for name in direct_imports(todo.pop()) - found:
            found.add(name)
            todo.append(path.parent / f"{name}.py")
    return found - {path.stem}


# How rules start their scripts (`python workflow/scripts/warm.py SCRIPT ARGS`): it runs
# a script as `python SCRIPT ARGS` would and computes nothing, so no output depends on it.
LAUNCHER = f"{SCRIPTS}/warm.py"


def code_of(job: Job, root: Path) -> set[str]:
    """The source files whose edit must rerun `job`: its scripts and what they import."""
    used: set[str] = set()
    for script in set(re.findall(rf"{SCRIPTS}/\w+\.py", job.shell)) - {LAUNCHER}:
        used.add(script)
        used |= {f"{SCRIPTS}/{name}.py" for name in imports_of(root / script)}
    if re.search(r"\bcargo build\b", job.shell):
        used |= set(crate_files(root))
    return used


def named_by_rules(root: Path) -> set[str]:
    """Scripts the rule files name, whether or not this config instantiates their rules."""
    text = "\n".join(p.read_text() for p in (root / "workflow/rules").glob("*.smk"))
    return {
        f"{SCRIPTS}/{n}.py" for n in re.findall(r"(?:\{SCRIPTS\}|workflow/scripts)/(\w+)\.py", text)
    }


def workflow_imports(root: Path) -> set[str]:
    """Modules the workflow definition imports at parse time (and what they import)."""
    names: set[str] = set()
    for path in [root / "Snakefile", *sorted((root / "workflow/rules").glob("*.smk"))]:
        names |= set(re.findall(r"^\s*(?:from|import) (\w+)", path.read_text(), flags=re.M))
    scripts = root / SCRIPTS
    names = {n for n in names if (scripts / f"{n}.py").is_file()}
    for name in list(names):
        names |= imports_of(scripts / f"{name}.py")
    return {f"{SCRIPTS}/{n}.py" for n in names}


def downstream(jobs: list[Job], start: set) -> set:
    """`start` and every job that reads, directly or not, a file one of them writes."""
    readers: dict[str, list[Job]] = {}
    for job in jobs:
        for f in job.inputs:
            readers.setdefault(f, []).append(job)
    seen, todo = set(start), [j for j in jobs if j.key in start]
    while todo:
        job = todo.pop()
        for f in job.outputs:
            for reader in readers.get(f, []):
                if reader.key not in seen:
                    seen.add(reader.key)
                    todo.append(reader)
    return seen


@pytest.fixture(scope="module")
def every_job(pipeline) -> list[Job]:
    """All jobs of the pipeline, with their files and commands (a --forceall dry run)."""
    jobs = dry_run(pipeline, "--forceall")
    assert len({j.key for j in jobs}) == len(jobs) > 20
    return jobs


def test_the_derivation_sees_every_script(pipeline, every_job):
    """Each script is run by a job, imported by one that is, or used by the workflow itself.

    Guards the derivation: a script no job is found to use would pass the test below
    vacuously (nothing planned, nothing expected).
    """
    used = set().union(*(code_of(job, pipeline) for job in every_job))
    assert {"analyse", "report", "train_burn", "build_burn"} <= {j.rule for j in every_job}
    assert f"{SCRIPTS}/verdict.py" in code_of(
        next(j for j in every_job if j.rule == "report"), pipeline
    )
    # A script only a rule this small config does not instantiate runs (the sweep summary)
    # is named by the rule files; anything else would be covered by nothing.
    unaccounted = set(script_files(pipeline)) - used - workflow_imports(pipeline)
    unaccounted -= named_by_rules(pipeline)
    assert not unaccounted, f"no job runs or imports {sorted(unaccounted)}"
    assert set(crate_files(pipeline)) <= used


@pytest.mark.parametrize("source", EDITABLE)
def test_editing_a_source_reruns_its_users_and_their_dependents_only(pipeline, every_job, source):
    path = pipeline / source
    users = [job for job in every_job if source in code_of(job, pipeline)]
    unlisted = sorted(
        f"{job.rule} -> {job.outputs[0]}" for job in users if source not in job.inputs
    )
    assert not unlisted, (
        f"{unlisted} run code that imports {source} but do not list it as an input:"
        " editing it would leave their outputs stale"
    )
    expected = downstream(every_job, {job.key for job in users})
    comment = "\n// edited\n" if source.endswith(".rs") else "\n# edited\n"
    with edited(path, lambda text: text + comment):
        planned = {job.key: job for job in dry_run(pipeline)}

    def show(keys) -> list[str]:
        return sorted(f"{rule} -> {', '.join(outputs) or '(target)'}" for rule, outputs in keys)

    assert set(planned) == expected, (
        f"editing {source}: reruns {show(set(planned) - expected)} that do not use it"
        f" (nor depend on a job that does); does not rerun {show(expected - set(planned))}"
    )
