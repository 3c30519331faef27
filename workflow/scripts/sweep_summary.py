#!/usr/bin/env python3
"""Rule `sweep_summary`: one sweep's summary, its rows, verdicts and parity map.

    python workflow/scripts/sweep_summary.py --spec results/specs/sweeps/SWEEP.json \
        --results results

Its code: src/torch_burn_parity/report/sweep_summary.py.
"""

from torch_burn_parity.report.sweep_summary import main

if __name__ == "__main__":
    main()
