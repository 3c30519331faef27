#!/usr/bin/env bash
# Mutation testing of the judgement core, not part of every CI run (it takes a while):
#   mutmut        over workflow/scripts/{verdict,gaps,compare,parity_config,config_diff}.py
#                 against the fast unit tests ([tool.mutmut] in pyproject.toml);
#   cargo-mutants over rust/src/config.rs and rust/src/adam_factors.rs against the crate's
#                 lib tests and rust/tests/adam_factors.rs.
# Prints each tool's score (killed / total) and its survivors; exits 1 if either score is
# below 90 %.
#
#   bash ci/mutation.sh                       # both
#   MUTATION_ONLY=python bash ci/mutation.sh  # or rust
#   MUTATION_JOBS=2 bash ci/mutation.sh       # mutants in parallel (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
THRESHOLD=90
JOBS=${MUTATION_JOBS:-1}
ONLY=${MUTATION_ONLY:-}
CARGO_MUTANTS_VERSION=27.1.0
status=0

stage() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
count() { if [ -s "$1" ]; then grep -c . "$1"; else echo 0; fi; } # lines of a list file

python_mutants() {
    stage "mutmut"
    if ! command -v uv > /dev/null; then
        python3 -m pip install --quiet uv
    fi
    uv sync --locked --quiet # mutmut is pinned in the dev group
    # A fresh run: mutmut keeps results per mutant name across runs.
    rm -rf mutants
    mkdir -p mutants
    # The tests import the scripts as top-level modules (tests/conftest.py puts
    # workflow/scripts on sys.path); mutmut names their mutants after the path
    # (workflow.scripts.verdict.…) and switches a mutant on only in the module of that name.
    # This plugin (pytest_add_cli_args in pyproject.toml) makes both names one module.
    cat > mutants/mutmut_module_aliases.py << 'EOF'
"""Written by ci/mutation.sh: each mutated script under its path name and its import name."""

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "workflow" / "scripts"))
for name in ("parity_config", "verdict", "gaps", "compare", "config_diff"):
    sys.modules[name] = importlib.import_module(f"workflow.scripts.{name}")
EOF
    if ! uv run mutmut run --max-children "$JOBS" > mutants/run.log 2>&1; then
        tail -c 4000 mutants/run.log
        echo "mutmut failed (log: mutants/run.log)" >&2
        return 1
    fi
    # Score: killed (and timed out) / total, where total leaves out only mutants that change
    # nothing but a command-line help text. Every other survivor is listed with its diff.
    uv run python - "$THRESHOLD" << 'EOF'
import re
import sys
from collections import Counter

from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files

HELP = re.compile(r",?\s*\b(help=(\"[^\"]*\"|None)|description=(None|__doc__\.splitlines\(\)\[\d+\]))")


def changed(diff: str) -> tuple[list[str], list[str]]:
    lines = [x for x in diff.splitlines() if not x.startswith(("---", "+++"))]
    return [x[1:] for x in lines if x.startswith("-")], [x[1:] for x in lines if x.startswith("+")]


def help_only(diff: str) -> bool:
    def norm(lines):
        return [re.sub(r",\s*\)", ")", HELP.sub("", x)).strip() for x in lines]

    old, new = changed(diff)
    return bool(old) and norm(old) == norm(new)


statuses, survivors, help_text = Counter(), [], 0
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    for name, code in data.exit_code_by_key.items():
        status = status_by_exit_code[code]
        if status in ("killed", "timeout"):
            statuses[status] += 1
            continue
        diff = get_diff_for_mutant(name, path=path)
        if help_only(diff):
            help_text += 1
            continue
        statuses[status] += 1
        old, new = changed(diff)
        survivors.append(f"  {status:<9} {name}\n      - {' / '.join(s.strip() for s in old)}"
                         f"\n      + {' / '.join(s.strip() for s in new)}")
total = sum(statuses.values())
score = 100 * (statuses["killed"] + statuses["timeout"]) / max(total, 1)
print("\n".join(survivors))
print(f"mutmut: {statuses['killed']} killed, {statuses['timeout']} timeout,"
      f" {statuses['survived']} survived, {statuses['no tests']} no tests"
      f" ({sum(v for k, v in statuses.items() if k not in ('killed', 'timeout', 'survived', 'no tests'))} other)"
      f" of {total} ({help_text} help-text mutants left out): score {score:.1f} %")
sys.exit(0 if score >= float(sys.argv[1]) else 1)
EOF
}

rust_mutants() {
    stage "cargo-mutants"
    if ! cargo mutants --version 2> /dev/null | grep -q "$CARGO_MUTANTS_VERSION"; then
        cargo install cargo-mutants --locked --version "$CARGO_MUTANTS_VERSION"
    fi
    # The mutants build in a copy of rust/ (the work tree is never touched), in the release
    # profile the project builds Burn with, into a target dir of their own: seeded once from
    # rust/target/release with its timestamps (cargo then sees every dependency as fresh), so
    # each mutant rebuilds only this crate, and the trainer in rust/target/release is never
    # a mutant. One target dir: one mutant at a time. The tests: the lib's unit tests and
    # the proof that the recorded Adam factors are the ones Burn applies.
    local out=mutants/mutants.out target=rust/target/mutants
    cargo build --release --locked --quiet --manifest-path rust/Cargo.toml
    if [ ! -d "$target/release" ]; then
        mkdir -p "$target"
        cp -a rust/target/release "$target/"
    fi
    rm -rf "$out" "$out.old"
    mkdir -p mutants
    (cd rust && CARGO_TARGET_DIR="$PWD/target/mutants" cargo mutants \
        --file src/config.rs --file src/adam_factors.rs --profile release -j 1 \
        --no-times --colors never -o ../mutants -- --locked --lib --test adam_factors) ||
        true # missed mutants exit non-zero: the score below decides
    local caught missed timeout unviable total
    caught=$(count "$out/caught.txt")
    missed=$(count "$out/missed.txt")
    timeout=$(count "$out/timeout.txt")
    unviable=$(count "$out/unviable.txt")
    total=$((caught + missed + timeout))
    if [ "$total" -eq 0 ]; then
        echo "cargo-mutants tested no mutant (see $out/)" >&2
        return 1
    fi
    echo "survivors:"
    sed 's/^/  /' "$out/missed.txt"
    awk -v c="$caught" -v t="$timeout" -v m="$missed" -v u="$unviable" -v n="$total" \
        -v th="$THRESHOLD" 'BEGIN {
            s = 100 * (c + t) / n
            printf "cargo-mutants: %d caught, %d timeout, %d missed of %d (%d unviable left out): score %.1f %%\n", c, t, m, n, u, s
            exit s >= th ? 0 : 1
        }'
}

start=$SECONDS
if [ "$ONLY" != rust ]; then
    python_mutants || status=1
fi
if [ "$ONLY" != python ]; then
    rust_mutants || status=1
fi
stage "done in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
exit "$status"
