"""The source files a module runs: itself, every module of this package it imports, and
the data it names beside it (report.py's "templates", check_config.py's schema).

The workflow's rules list these as inputs, so editing a module reruns exactly the jobs that
run code importing it (directly or through another module) and nothing else. Read from
the import statements with `ast`, never by importing: the workflow derives its rules
before any job runs, and without PyTorch.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from functools import cache
from pathlib import Path

PACKAGE = "torch_burn_parity"
# A name a module may give a file or folder beside it (no path, not private).
DATA_NAME = re.compile(r"[A-Za-z][\w.-]*")
SRC = Path(__file__).resolve().parents[2]


def put_first_for_jobs(src: str) -> None:
    """Put `src` first on PYTHONPATH, for every process this one starts (the jobs): a copy
    of the project runs its own code, not that of the checkout the package was installed
    from."""
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))


def module_path(module: str, src: Path = SRC) -> Path:
    """The file of a dotted module name of this package (a package's `__init__.py`)."""
    path = src.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def source_names(text: str, filename: str) -> tuple[frozenset[str], frozenset[str]]:
    """(every dotted name its import statements name, every string constant that could name
    a file beside it) of one source text: one parse for both."""
    imports: set[str] = set()
    strings: set[str] = set()
    for node in ast.walk(ast.parse(text, filename=filename)):
        if isinstance(node, ast.Import):
            imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from pkg.folder import module` names a module; `from pkg.m import f` a name.
            imports.add(node.module)
            imports.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and DATA_NAME.fullmatch(node.value)
            and not node.value.endswith(".py")
        ):
            strings.add(node.value)
    return frozenset(imports), frozenset(strings)


@cache
def scanned(path: Path) -> tuple[frozenset[str], frozenset[str]]:
    """source_names of one file, read once per process."""
    return source_names(path.read_text(), str(path))


def imported_modules(path: Path, src: Path = SRC) -> frozenset[str]:
    """The package's modules one file imports itself, anywhere in it (lazy imports too)."""
    ours = {n for n in scanned(path)[0] if n == PACKAGE or n.startswith(f"{PACKAGE}.")}
    return frozenset(n for n in ours if module_path(n, src).is_file())


@cache
def data_files(path: Path) -> tuple[Path, ...]:
    """The data a module reads from beside it: each file or folder (every file in it) that
    it names by a plain name in a string constant ("templates", "config.schema.yaml")."""
    found: list[Path] = []
    for name in sorted(scanned(path)[1]):
        beside = path.parent / name
        if beside.is_dir():
            found += sorted(f for f in beside.rglob("*") if f.is_file())
        elif beside.is_file():
            found.append(beside)
    return tuple(found)


def module_files(*modules: str, src: Path = SRC) -> list[str]:
    """Every file that running these modules reads code from, relative to src's parent.

    Each module is named within the package (`analysis.compare`); the package folders'
    `__init__.py` files come with the modules below them, as Python imports them too.
    """
    todo = [f"{PACKAGE}.{m}" for m in modules]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_path(name, src)
        if not path.is_file():
            raise ValueError(f"no module {name} under {src}")
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages
        todo += imported_modules(path, src)
    root = src.parent
    paths = {module_path(n, src) for n in seen}
    paths |= {f for path in list(paths) for f in data_files(path)}
    return sorted(str(p.relative_to(root)) for p in paths)


def script_files(script: str, src: Path = SRC) -> list[str]:
    """A workflow script (a path relative to the project, workflow/scripts/x.py) and every
    file of the package it runs, as module_files gives them: its imports read the same way."""
    path = src.parent / script
    if not path.is_file():
        raise ValueError(f"no workflow script {script} under {src.parent}")
    prefix = f"{PACKAGE}."
    modules = sorted(m.removeprefix(prefix) for m in imported_modules(path, src) if m != PACKAGE)
    return [script, *module_files(*modules, src=src)]


def code_digest(files: list[str], root: Path = SRC.parent) -> str:
    """The sha256 of each file (paths relative to the project), a line each as `sha256sum`
    writes them: one small file whose text changes when, and only when, the code does.

    A rule lists its script and this digest of everything the script runs instead of the
    50-100 files themselves: Snakemake hashes every input of a job once per output when the
    job ends, and sizes each input whenever it schedules, so a job's bookkeeping grows
    with its input count (rule code_digest in workflow/rules/code.smk).
    """
    lines = []
    for name in files:
        digest = hashlib.sha256((root / name).read_bytes()).hexdigest()
        lines.append(f"{digest}  {name}\n")
    return "".join(lines)
