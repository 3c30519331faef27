"""Markdown as the report writes it: compact tables, trends, numbers that print apart."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from torch_burn_parity.judgement import verdict as vd
from torch_burn_parity.report.verdict_text import e

# One key of a compare output: 'sgd.params.fc.bias  n=  3  max|diff|=5.07e-07'.
COMPARE_LINE = re.compile(r"^(\S+)\s+n=\s*(\d+)\s+max\|diff\|=(\S+)$", re.M)


def distinct(a: float, b: float, digits: int = 4) -> tuple[str, str]:
    """a and b with `digits` significant digits, more when that would print two different
    numbers alike (never more than 17, which tell any two f64 apart)."""
    while digits < 17 and a != b and f"{a:.{digits}g}" == f"{b:.{digits}g}":
        digits += 1
    return f"{a:.{digits}g}", f"{b:.{digits}g}"


def trend(gaps) -> str:
    """'grows from 2.23e-10 at step 1 to 3.71e-06 at step 100 (1.66e+04×)', or 'shrinks …'."""
    gaps = np.asarray(gaps, float)
    first, last, n = gaps[0], gaps[-1], len(gaps)
    if first == last:
        return f"stays at {e(first)} from step 1 to step {n}"
    verb = "grows" if last > first else "shrinks"
    ratio = f" ({vd.growth(gaps):.3g}×)" if first > 0 else ""
    return f"{verb} from {e(first)} at step 1 to {e(last)} at step {n}{ratio}"


def compare_verdict(text: str) -> tuple[str, str]:
    """(worst, OK|MISMATCH) from the last line of a compare output."""
    last = text.strip().splitlines()[-1]  # worst=3.52e-06 tol=1e-06 MISMATCH
    fields = dict(part.split("=", 1) for part in last.split()[:2])
    return fields["worst"], last.split()[-1]


def compact(md: str) -> str:
    """A Markdown pipe table without the alignment padding (same table, far fewer bytes)."""
    out = []
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if all(set(c) <= set(":-") for c in cells):
                cells = [":--" if c.startswith(":") else "---" for c in cells]
            line = "| " + " | ".join(cells) + " |"
        out.append(line)
    return "\n".join(out)


def md_table(frame: pd.DataFrame) -> str:
    return compact(frame.to_markdown(index=False, disable_numparse=True))


def body(md: str) -> str:
    """A table file's content without its own '### title' line (the report titles it)."""
    lines = md.strip().splitlines()
    if lines and lines[0].startswith("#"):
        lines = lines[1:]
    return compact("\n".join(lines).strip())


def group_setting(group: dict) -> str:
    """One parameter group as configured: its globs, then what it sets."""
    params = group["params"] if isinstance(group["params"], list) else [group["params"]]
    values = [setting(k, v) if k == "optimizer" else f"{k} {setting(k, v)}"
              for k, v in group.items() if k != "params"]  # fmt: skip
    return f"[{', '.join(params)}]: {', '.join(values)}"


def setting(key: str, value) -> str:
    """One config value as a person writes it: 'burn: eps', '[0.9, 0.999]', 'f32 1e-05'."""
    if key == "keep_defaults":
        return "; ".join(f"{fw}: {', '.join(keys)}" for fw, keys in value.items()) or "none"
    if key == "tolerance":
        return ", ".join(f"{dt} {tol:g}" for dt, tol in value.items())
    if key == "schedule":
        rest = ", ".join(f"{k} {v:g}" for k, v in value.items() if k != "kind")
        return f"{value['kind']} ({rest})" if rest else value["kind"]
    if key == "clip_grad":
        return "none" if value is None else ", ".join(f"{k} {v:g}" for k, v in value.items())
    if key == "param_groups":  # '[fc.weight]: muon, lr 0.02 · [*.bias]: weight_decay 0'
        return " · ".join(group_setting(g) for g in value)
    if isinstance(value, list):  # numbers ([0.9, 0.999]) or names (burn_fixes)
        return "[" + ", ".join(v if isinstance(v, str) else f"{v:g}" for v in value) + "]"
    return value if isinstance(value, str) else json.dumps(value)
