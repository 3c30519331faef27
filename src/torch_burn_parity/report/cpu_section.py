"""The report's "What depends on your CPU": the CPU paths the runs took, what would move on
another, and a warning when the runs did not all take the same one.

Imported by report.py; the paths come from each run file's meta (cpu_path.describe).
"""

from __future__ import annotations

from collections.abc import Iterable

from torch_burn_parity.config import machine
from torch_burn_parity.config.cpu_path import DEFAULT, describe

BACKEND_NAMES = {"flex": "Flex", "ndarray": "NdArray"}


def paths_by_side(metas: Iterable[dict]) -> dict[str, set[str]]:
    """{'PyTorch' | 'Burn, Flex' | 'Burn, NdArray': the paths its runs took}."""
    sides: dict[str, set[str]] = {}
    for meta in metas:
        if meta.get("framework") == "burn":
            side = f"Burn, {BACKEND_NAMES.get(meta.get('backend', 'flex'), meta.get('backend'))}"
        else:
            side = "PyTorch"
        sides.setdefault(side, set()).add(describe(meta))
    return sides


def settings(metas: Iterable[dict]) -> set[str]:
    """The cpu_path settings the runs were made under (`native` for runs that predate it)."""
    return {(m.get("cpu_path") or {}).get("setting", DEFAULT) for m in metas}


def cpus(metas: Iterable[dict]) -> set[str]:
    """The CPUs the runs record (machine.label), `unknown` for a run that records none."""
    return {machine.label(m) or "unknown" for m in metas}


def cpu_section(metas: list[dict], largest_rounding_gap: float | None) -> str:
    """The section's Markdown. `largest_rounding_gap`: the largest f64 gap among experiments
    judged equivalent up to rounding (None if there is none)."""
    sides = paths_by_side(metas)
    setting = ", ".join(sorted(settings(metas)))
    lines = ["## What depends on your CPU\n"]
    mixed = [side for side, paths in sides.items() if len(paths) > 1]
    machines = cpus(metas)
    if mixed or len(machines) > 1 or any("unknown" in p for p in set().union(*sides.values())):
        what = "; ".join(f"{side}: {', '.join(f'`{p}`' for p in sorted(sides[side]))}"
                         for side in mixed) or f"CPUs {', '.join(sorted(machines))}"  # fmt: skip
        lines.append(
            f"**Warning: the runs did not all take one CPU path ({what}). Differences between"
            " runs of different paths include each path's own rounding.**\n"
        )
    lines.append(f"The runs took these kernel paths (`cpu_path: {setting}`):\n")
    lines += [f"- {side}: {', '.join(f'`{p}`' for p in sorted(paths))}"
              for side, paths in sorted(sides.items())]  # fmt: skip
    rounding = (
        f" The largest f64 gap this report calls rounding is {largest_rounding_gap:.2g}."
        if largest_rounding_gap is not None
        else ""
    )
    lines += [
        "",
        "On another CPU path the same runs round differently. The figures that are rounding —"
        " the f32 gaps and f32 compare outputs where they are rounding, the `torch-f64` and"
        " `burn-f64` columns (each framework's f32-vs-f64 gap), the rounding floor made of them,"
        " and the f64 gap of an experiment equivalent up to rounding — can come out several"
        " times larger or smaller; an f64 gap that is an algorithmic difference moves far less"
        " (measured for the default config over the CPU paths of the documentation's What"
        f" depends on the CPU, docs/cpu.md).{rounding} For the default config the verdicts were"
        " the same on every path measured.\n",
        "`cpu_path: avx2` pins PyTorch's kernel choices to their AVX2 forms (`compatible`: to"
        " their most portable ones), but not MKL's vector math (square roots, exponentials of"
        " whole tensors), whose last bit may still move. Burn has no such switch; gemm, which"
        " its Flex backend calls, has one set of kernels for every CPU with FMA (its AVX-512"
        " ones are not compiled in).\n",
    ]
    return "\n".join(lines)
