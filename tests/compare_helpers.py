"""Running compare as the design has it: `workflow/scripts/compare.py pt.json burn.json`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import ROOT

COMPARE_SCRIPT = ROOT / "workflow" / "scripts" / "compare.py"


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def run(*args) -> subprocess.CompletedProcess:
    """compare.py run as a program on these arguments."""
    cmd = [str(COMPARE_SCRIPT), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True)
