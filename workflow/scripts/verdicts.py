#!/usr/bin/env python3
"""Rule `verdicts`: results/verdicts.json, every experiment's verdict record collected.

    python workflow/scripts/verdicts.py --collect results/verdicts/*.json \
        --out results/verdicts.json

Its code: src/torch_burn_parity/judgement/judge.py.
"""

from torch_burn_parity.judgement.judge import main

if __name__ == "__main__":
    main()
