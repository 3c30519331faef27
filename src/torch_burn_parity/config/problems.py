"""A problem of a config: its key path and its one line (Problem, ConfigError), and the
helpers that word one the same way everywhere (a bound as the schema states it, a value as
the config spells it, an unknown key with the closest known one)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from torch_burn_parity.suggest import closest_key


class ConfigError(ValueError):
    """An experiment the trainers cannot run as written."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a config, at a key path such as ('experiments', 'adam', 'lr')."""

    path: tuple[str | int, ...]
    message: str

    def __str__(self) -> str:
        return f"{key_path(self.path)}: {self.message}"


def key_path(path: tuple[str | int, ...]) -> str:
    """('experiments', 'adam', 'betas', 1) -> 'experiments.adam.betas[1]'."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def suggest(key: Any, known: list[str]) -> str | None:
    """The closest known key, as the config check suggests it."""
    return closest_key(key, known) if isinstance(key, str) else None


def unknown_keys(at: tuple, keys: list, known: list[str], what: str) -> tuple[list, set]:
    """A problem per key of `keys` not in `known`, with the closest known key; and the known
    keys suggested (a missing key an unknown one suggests needs no line of its own)."""
    problems, suggested = [], set()
    for key in keys:
        if key in known:
            continue
        close = suggest(key, known)
        suggested.add(close)
        hint = f"; did you mean {close!r}?" if close else f" (known: {', '.join(known)})"
        problems.append(Problem((*at, key), f"unknown key of {what}{hint}"))
    return problems, suggested


def show(value: Any) -> str:
    """A value as the config spells it."""
    spelled = {True: "true", False: "false", None: "null"}
    return spelled[value] if value is None or isinstance(value, bool) else repr(value)


def bound_problem(at: tuple, key: str, value: Any, low: str, high: str = "") -> Problem | None:
    """The schema's line for a bound, for a value the trainer run by hand would crash on:
    low is '>0', '>=0' or '>=1' (integers), high '' or '<=1'."""
    integer = low == ">=1"
    if not (is_integer(value) if integer else is_number(value)) or (
        isinstance(value, float) and not math.isfinite(value)
    ):
        kind = "an integer" if integer else "a number"
        return Problem((*at, key), f"expected {kind}, got {show(value)}")
    below = value <= 0 if low == ">0" else value < 0 if low == ">=0" else value < 1
    above = high == "<=1" and value > 1
    if not (below or above):
        return None
    shown = {">0": "0 < ", ">=0": "0 ≤ ", ">=1": "1 ≤ "}[low]
    if high:
        bounds = f"{shown}{key} ≤ 1"
    else:
        bounds = f"{key} {'>' if low == '>0' else '≥'} {shown.split()[0]}"
    return Problem((*at, key), f"{show(value)} is out of range ({bounds})")
