#!/usr/bin/env python3
"""Rule `provenance`: versions, CPU and SIMD flags, threads, git commit and config hash.

    python workflow/scripts/provenance.py --config results/specs/report/config.json \
        --runs RUN ... --out results/provenance.json

Its code: src/torch_burn_parity/report/provenance.py.
"""

from torch_burn_parity.report.provenance import main

if __name__ == "__main__":
    main()
