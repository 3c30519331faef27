"""Remove a report that a stopped run left behind incomplete underneath it.

When a job fails (a damaged run file, one trained on other inputs, a crashing script),
Snakemake removes that job's outputs but keeps `results/report.md` and `results/report.html`
from the last complete run. Once the user removes the bad file, nothing would be rerun:
Snakemake reruns a job whose output is missing only when a job that needs it runs, and the
old report, newer than every input still there, looks up to date ("Nothing to be done",
with missing tables and a report of runs that no longer exist). common.smk calls
`remove_stale_report()` from `onerror:`, after a failed run: if any file the report is built
from is missing, the report is removed, so the next plain run rebuilds everything missing
(retraining a removed run file) and the report from it.

    python -m torch_burn_parity.tooling.stale_report --report results/report.md ... --needs FILE ...
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path


def remove_stale_report(reports: Iterable[str | Path], needs: Iterable[str | Path]) -> list[Path]:
    """Remove the `reports` that exist if a file of `needs` is missing; return those removed."""
    missing = [str(f) for f in needs if not Path(f).exists()]
    present = [Path(r) for r in reports if Path(r).exists()]
    if not missing or not present:
        return []
    for report in present:  # a file, or a folder of pages
        if report.is_dir():
            shutil.rmtree(report)
        else:
            report.unlink(missing_ok=True)
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    print(
        f"stale_report: removed {', '.join(map(str, present))}: built from files this run"
        f" left missing ({missing[0]}{more}); the next run rebuilds them",
        file=sys.stderr,
    )
    return present


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", nargs="+", required=True, help="the final outputs")
    parser.add_argument("--needs", nargs="+", required=True, help="the files they are built from")
    args = parser.parse_args(argv)
    remove_stale_report(args.report, args.needs)


if __name__ == "__main__":
    main()
