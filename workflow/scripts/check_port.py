#!/usr/bin/env python3
"""Rule `check_port`: your port checked once, before any of its trainings.

    python workflow/scripts/check_port.py --spec SPEC --data DATA --binary BINARY \
        --out results/ports/PORT.checked

Its code: src/torch_burn_parity/training/check_port.py.
"""

from torch_burn_parity.training.check_port import main

if __name__ == "__main__":
    main()
