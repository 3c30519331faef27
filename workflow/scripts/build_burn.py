#!/usr/bin/env python3
"""Rule `build_burn`: the Burn trainer, built and copied out of cargo's target folder.

    python workflow/scripts/build_burn.py --manifest rust/Cargo.toml \
        --out results/bin/parity-train --log results/logs/build_burn.log

Its code: src/torch_burn_parity/tooling/build_burn.py.
"""

from torch_burn_parity.tooling.build_burn import main

if __name__ == "__main__":
    main()
