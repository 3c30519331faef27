"""Caching by file dependency, derived from the code: editing any module of the package or
source of the crate reruns exactly the jobs that run code importing it, and everything
downstream of them.

Nothing here is hand-picked, nor taken from the workflow's own derivation
(tooling/code.py): which modules a module uses comes from its imports (ast, transitively,
within src/torch_burn_parity, with the packages Python imports on the way); which module a
job runs comes from its shell command in a `--forceall` dry run (and `cargo build` uses
every file of the crate it builds); which jobs are downstream comes from the same dry run's
input and output files. A new module is covered by adding it to the package, a new rule by
adding it to the workflow.

For each file:
- every job that runs code importing it lists it as an input (in the `--forceall` listing),
  itself or through the code digest it reads (rule code_digest, whose job lists the files
  of one script's code and writes their sha256s).
  Only that makes Snakemake rerun the job for an edit of the file itself; the dry run below
  cannot show it for a job that sits downstream of another user of the file (the report,
  below the plots, reruns anyway when verdict.py changes), and it prints no reason then
  that would tell the two apart;
- no job that does not run it lists it as an input;
- after appending a comment (text and modification time restored after), the plain dry run
  plans exactly the jobs that use it plus their dependents: no more (editing compare.py
  reruns no training), no fewer. Given the two checks above, files with the same users are
  planned from the same input lists: the dry run runs for the first file of each set of
  users (about 15 dry runs of 3 s for the ~180 files).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from conftest import ROOT
from pipeline_helpers import Job, dry_run, edited

PACKAGE = "torch_burn_parity"
SRC = "src"
CRATE = "rust"
DOTTED = rf"\b{PACKAGE}(?:\.\w+)+"
# A rule's script (workflow/scripts/): it runs what it imports from the package.
SCRIPT = r"\bworkflow/scripts/[a-z_]+\.py\b"


def crate_files(root: Path) -> list[str]:
    """Every file `cargo build` compiles the Burn trainer from."""
    crate = root / CRATE
    files = [crate / "Cargo.toml", crate / "Cargo.lock", crate / "build.rs"]
    files += sorted((crate / "src").rglob("*.rs"))
    return [str(f.relative_to(root)) for f in files if f.is_file()]


def package_files(root: Path) -> list[str]:
    """Every file of the package: its modules and the data they read (templates)."""
    files = (root / SRC / PACKAGE).rglob("*")
    return sorted(
        str(p.relative_to(root)) for p in files if p.is_file() and "__pycache__" not in p.parts
    )


def script_files(root: Path) -> list[str]:
    """Every workflow script."""
    return sorted(str(p.relative_to(root)) for p in (root / "workflow/scripts").glob("*.py"))


# Collected from the project itself: a new module or source file gets its own test case.
EDITABLE = package_files(ROOT) + script_files(ROOT) + crate_files(ROOT)


def file_of(root: Path, dotted: str) -> Path | None:
    """The file of a dotted name if it is a module or package of ours, else None."""
    base = root / SRC / Path(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@cache
def direct_imports(root: Path, path: Path) -> frozenset[str]:
    """The package's modules a file imports itself, and the packages they sit in."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    found = set()
    for name in names:
        parts = name.split(".")
        found |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return frozenset(n for n in found if n.split(".")[0] == PACKAGE and file_of(root, n))


@cache
def data_of(path: Path) -> frozenset[str]:
    """Files beside a module that it names by a plain name in a string: a data file, or
    every file of a folder ("templates", "config.schema.yaml")."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
            if not re.fullmatch(r"[A-Za-z][\w.-]*", name) or name.endswith(".py"):
                continue
            beside = path.parent / name
            if beside.is_dir():
                found |= {str(f) for f in beside.rglob("*") if f.is_file()}
            elif beside.is_file():
                found.add(str(beside))
    return frozenset(found)


def imports_of(root: Path, dotted: str) -> set[str]:
    """The files a module runs code from: its own, what it imports, directly or not, and
    the data folders each of them names."""
    parts = dotted.split(".")
    found = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    todo = list(found)
    while todo:
        for name in direct_imports(root, file_of(root, todo.pop())) - found:
            found.add(name)
            todo.append(name)
    files = {file_of(root, n) for n in found}
    data = {Path(f) for path in files for f in data_of(path)}
    return {str(f.relative_to(root)) for f in files | data}


# How rules start their modules (`python -m torch_burn_parity.tooling.warm MODULE ARGS`):
# it runs a module as `python -m MODULE ARGS` would and computes nothing, so no output
# depends on it.
LAUNCHER = f"{PACKAGE}.tooling.warm"
# The server it starts (and forks each job from) is run by no job's code either.
LAUNCHER_SERVER = f"{SRC}/{PACKAGE}/tooling/warm_server.py"


def code_of(job: Job, root: Path) -> set[str]:
    """The source files whose edit must rerun `job`: its modules and what they import."""
    used: set[str] = set()
    for module in set(re.findall(DOTTED, job.shell)) - {LAUNCHER}:
        assert file_of(root, module), f"{job.rule} runs {module}, which is not in the package"
        used |= imports_of(root, module)
    for script in set(re.findall(SCRIPT, job.shell)):
        assert (root / script).is_file(), f"{job.rule} runs {script}, which is not there"
        used |= scripts_code(root, script)
    if "workflow/scripts/build_burn.py" in job.shell:  # builds the trainer's crate
        used |= set(crate_files(root))
    return used


def scripts_code(root: Path, script: str) -> set[str]:
    """A workflow script's file and the files of every module it imports."""
    modules = direct_imports(root, root / script)
    return {script}.union(*(imports_of(root, m) for m in modules))


def named_by_rules(root: Path) -> set[str]:
    """Code the rule files run, whether or not this config instantiates their rules."""
    text = "\n".join(p.read_text() for p in (root / "workflow/rules").glob("*.smk"))
    modules = set(re.findall(DOTTED, text))
    scripts = set(re.findall(SCRIPT, text))
    return set().union(
        *(imports_of(root, m) for m in modules), *(scripts_code(root, s) for s in scripts)
    )


def workflow_imports(root: Path) -> set[str]:
    """Modules the workflow definition imports at parse time (and what they import)."""
    names: set[str] = set()
    for path in [root / "Snakefile", *sorted((root / "workflow/rules").glob("*.smk"))]:
        names |= set(re.findall(rf"^\s*from ({DOTTED}) import", path.read_text(), flags=re.M))
    return set().union(*(imports_of(root, n) for n in names))


DIGEST_RULE = "code_digest"


def listed_code(job: Job, jobs: list[Job]) -> set[str]:
    """The files `job` lists as inputs, with those of each code digest among them: an edit
    of one reruns the digest's job, and the digest's readers after it."""
    digests = {f: d for d in jobs if d.rule == DIGEST_RULE for f in d.outputs}
    return set(job.inputs).union(*(digests[f].inputs for f in job.inputs if f in digests))


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
    """Each module is run by a job, imported by one that is, or used by the workflow itself.

    Guards the derivation: a script no job is found to use would pass the test below
    vacuously (nothing planned, nothing expected).
    """
    used = set().union(*(code_of(job, pipeline) for job in every_job))
    assert {"analyse", "report", "train_burn", "build_burn"} <= {j.rule for j in every_job}
    assert f"{SRC}/{PACKAGE}/judgement/verdict.py" in code_of(
        next(j for j in every_job if j.rule == "report"), pipeline
    )
    # A module only a rule this small config does not instantiate runs (the sweep summary)
    # is named by the rule files; anything else would be covered by nothing.
    unaccounted = set(package_files(pipeline) + script_files(pipeline))
    unaccounted -= used | workflow_imports(pipeline)
    unaccounted -= named_by_rules(pipeline) | {LAUNCHER_SERVER}
    # The seed's own program, for a person (its main is a stage of the analyse job's script).
    assert unaccounted <= {"workflow/scripts/compare.py"}, (
        f"no job runs or imports {sorted(unaccounted)}"
    )
    assert set(crate_files(pipeline)) <= used


# The users (job keys) whose plan a dry run has already shown to be exactly them and their
# dependents: another file with the same users is planned from the same input lists.
PLANNED_FOR_USERS: set[frozenset] = set()


@pytest.mark.parametrize("source", EDITABLE)
def test_editing_a_source_reruns_its_users_and_their_dependents_only(pipeline, every_job, source):
    path = pipeline / source
    users = [job for job in every_job if source in code_of(job, pipeline)]
    unlisted = sorted(
        f"{job.rule} -> {job.outputs[0]}"
        for job in users
        if source not in listed_code(job, every_job)
    )
    assert not unlisted, (
        f"{unlisted} run code that imports {source} but do not list it as an input:"
        " editing it would leave their outputs stale"
    )
    # Snakemake reruns a job whose input is newer than its outputs: with the users listing
    # the file, an edit reruns exactly them and their dependents unless another job lists it
    # too. That is checked here for every file; the dry run below shows it once for each
    # set of users (Snakemake's own plan, not this reading of it).
    overlisted = sorted(
        f"{job.rule} -> {job.outputs[0]}"
        for job in every_job
        if job.rule != DIGEST_RULE and source in listed_code(job, every_job) and job not in users
    )
    assert not overlisted, f"{overlisted} list {source} as an input but do not run it"
    user_keys = frozenset(job.key for job in users)
    if user_keys in PLANNED_FOR_USERS:
        return
    # The digests that list the file rerun first (only the users read them: checked above).
    digests = {job.key for job in every_job if job.rule == DIGEST_RULE and source in job.inputs}
    expected = downstream(every_job, set(user_keys) | digests)
    comment = "\n// edited\n" if source.endswith(".rs") else "\n# edited\n"
    with edited(path, lambda text: text + comment):
        planned = {job.key: job for job in dry_run(pipeline)}

    def show(keys) -> list[str]:
        return sorted(f"{rule} -> {', '.join(outputs) or '(target)'}" for rule, outputs in keys)

    assert set(planned) == expected, (
        f"editing {source}: reruns {show(set(planned) - expected)} that do not use it"
        f" (nor depend on a job that does); does not rerun {show(expected - set(planned))}"
    )
    PLANNED_FOR_USERS.add(user_keys)
