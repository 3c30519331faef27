"""The layers a port records, named at any depth: dotted submodule names as PyTorch's
`named_modules()` gives them (`layer1.0.bn1`, `transformer.h.3.mlp`) and globs over them.

A glob matches segment by segment: it has as many dot-separated segments as the names it
matches, and each segment is an `fnmatch` pattern (`*` any run of characters, `?` one, `[…]`
one of a set), so `transformer.h.*` is each block and not everything inside one, and
`layer*.*.bn?` each BatchNorm of a torchvision ResNet's blocks. The Burn side matches the
same way (rust/src/port/layers.rs). A port's `layers:` expands, pattern after pattern, to
the matching submodules in the module's own order; a pattern that matches nothing is
refused with the nearest names.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from fnmatch import fnmatchcase

GLOB_CHARS = "*?["
NEAREST = 3


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in GLOB_CHARS)


def matches(name: str, pattern: str) -> bool:
    """Whether submodule `name` is matched by `pattern`, segment by segment."""
    names, patterns = name.split("."), pattern.split(".")
    return len(names) == len(patterns) and all(map(fnmatchcase, names, patterns))


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    return any(matches(name, p) for p in patterns)


def syntax_problem(pattern: str) -> str | None:
    """Why `pattern` cannot name a submodule (one line), or None."""
    if not pattern or any(not segment for segment in pattern.split(".")):
        return f"{pattern!r}: an empty name segment (dotted names, e.g. 'layer1.0.bn1')"
    if pattern.count("[") != pattern.count("]"):
        return f"{pattern!r}: an unclosed [ … ] set"
    return None


def nearest(pattern: str, names: list[str]) -> list[str]:
    """The submodule names closest to `pattern`: among those at its place (its parent's
    children, the parent a glob too: `blocks.*.mlp` looks among `blocks.*.*`), else among
    all, by difflib's similarity."""
    parent = pattern.rpartition(".")[0]
    place = [n for n in names if matches(n, f"{parent}.*" if parent else "*")]
    return difflib.get_close_matches(pattern, place or names, n=NEAREST, cutoff=0.0)


def expand(patterns: Iterable[str], names: list[str]) -> tuple[list[str], str | None]:
    """The submodules `patterns` name, in order: each pattern's matches in `names`' order,
    a name matched twice kept once. Second value: the first pattern that matches nothing
    (None when every one matches)."""
    found: list[str] = []
    for pattern in patterns:
        hits = [n for n in names if n and matches(n, pattern)]
        if not hits:
            return found, pattern
        found += [n for n in hits if n not in found]
    return found, None
