#!/usr/bin/env python3
"""Rule `report`: results/report.md and its pages, from every table and verdict.

    python workflow/scripts/report.py --config results/specs/report/config.json --results results

Its code: src/torch_burn_parity/report/report.py.
"""

from torch_burn_parity.report.report import main

if __name__ == "__main__":
    main()
