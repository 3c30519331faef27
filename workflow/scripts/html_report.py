#!/usr/bin/env python3
"""Rule `html_report`: the report as HTML, for Snakemake's report.

    python workflow/scripts/html_report.py --report results/report.md ...

Its code: src/torch_burn_parity/report/render_html.py.
"""

from torch_burn_parity.report.render_html import main

if __name__ == "__main__":
    main()
