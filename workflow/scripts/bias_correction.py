#!/usr/bin/env python3
"""Rule `bias_correction`: Burn's f32 Adam factor against the same formula in f64.

    python workflow/scripts/bias_correction.py results/runs/adam/burn-f32.json \
        --csv OUT.csv --md OUT.md

Its code: src/torch_burn_parity/analysis/bias_correction.py.
"""

from torch_burn_parity.analysis.bias_correction import main

if __name__ == "__main__":
    main()
