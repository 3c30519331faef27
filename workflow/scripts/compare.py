#!/usr/bin/env python3
"""The seed's compare.py: two run files compared key by key, in the seed's format. The
`analyse` rule runs the same main among its stages (workflow/scripts/analyse.py).

    python workflow/scripts/compare.py pt.json burn.json [--tol 1e-6]

Its code: src/torch_burn_parity/analysis/compare.py.
"""

import sys

from torch_burn_parity.analysis.compare import main

if __name__ == "__main__":
    sys.exit(main())
