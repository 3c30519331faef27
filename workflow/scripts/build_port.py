#!/usr/bin/env python3
"""Rule `build_port`: your port's Burn binary, built in the trainer's target folder.

    python workflow/scripts/build_port.py --crate CRATE --bin BIN \
        --out results/bin/ports/PORT --log LOG

Its code: src/torch_burn_parity/tooling/build_port.py.
"""

from torch_burn_parity.tooling.build_port import main

if __name__ == "__main__":
    main()
