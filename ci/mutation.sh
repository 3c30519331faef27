#!/usr/bin/env bash
# Mutation testing of the judgement core, not part of every CI run (it takes a while):
#   mutmut        over the package's judgement/{verdict,judge,step_one,effect,fixes}.py,
#                 analysis/{gaps,compare,config_diff,layer_settings,layers_table}.py and
#                 config/{parity_config,resolve,param_groups}.py
#                 against the fast unit tests ([tool.mutmut] in pyproject.toml);
#   cargo-mutants over rust/src/config.rs and rust/src/adam_factors.rs against the crate's
#                 lib tests, rust/tests/adam_factors.rs and rust/tests/burn_scalars.rs.
# Prints each tool's score (killed / total), mutmut's per file, and the survivors; exits 1
# if either score, or any one file's, is below 95 %. Weekly in .github/workflows/mutation.yml.
#
#   bash ci/mutation.sh                       # both
#   MUTATION_ONLY=python bash ci/mutation.sh  # or rust
#   MUTATION_JOBS=2 bash ci/mutation.sh       # mutants in parallel (default 1)
set -euo pipefail
cd "$(dirname "$0")/.."
THRESHOLD=95
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
    mkdir -p mutants/rust
    # The trainer's manifest and lock file, which a port's crate is checked against
    # (models/port_crate.py): files in a folder mutmut does not create (its also_copy copies
    # a file into an existing folder only).
    cp rust/Cargo.toml rust/Cargo.lock mutants/rust/
    if ! uv run mutmut run --max-children "$JOBS" > mutants/run.log 2>&1; then
        tail -c 4000 mutants/run.log
        echo "mutmut failed (log: mutants/run.log)" >&2
        return 1
    fi
    # Score: killed (and timed out) / total. Mutants that change only a help text, and
    # survivors that a rule below shows equivalent, are left out of the total; "accepted"
    # survivors stay in. Every survivor is printed with its change and the reason.
    uv run python - "$THRESHOLD" << 'EOF'
import re
import sys
from collections import Counter

from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files

HELP = [(r",?\s*\b(help=(\"[^\"]*\"|None)|description=(None|__doc__\.splitlines\(\)\[\d+\]))", ""),
        (r",\s*\)", ")")]  # fmt: skip
# (verdict, file, the changed code must contain, substitutions that make the original and
# the mutant equal, reason). Matched on the code, not on mutant numbers.
RULES = [
    ("equivalent", "verdict.py gaps.py", r"np\.asarray\(",
     [(r",\s*(float|None|dtype=(np\.float64|None))?\s*\)", ")")],
     "dtype of an input that is a float array already (run files, steps tables)"),
    ("equivalent", "verdict.py", r"np\.nanmax\(f64_f64", [(r",\s*(initial=(0\.0|None))?\s*\)", ")")],
     "gaps are |a - b| >= 0, and an all-NaN series is reported as NaN on the next line"),
    ("equivalent", "judge.py", r"np\.nanmax\((counterfactual|steps)\[",
     [(r",\s*(initial=(0\.0|None))?\s*\)", ")")],
     "a per-step table is never empty (one row per step, checked when read)"),
    ("equivalent", "verdict.py", r"np\.max\(series", [(r",\s*(initial=(0\.0|None))?\s*\)", ")"),
                                                       (r'float\("(?i:nan)"\)', "nan")],
     "the series is never empty here and its gaps are >= 0; NaN is NaN in any case"),
    ("equivalent", "verdict.py judge.py layers_table.py", r'float\("nan"\)',
     [(r'float\("(?i:nan)"\)', "nan")], "the same NaN"),
    ("equivalent", "verdict.py", r"closes = False", [(r"closes = (False|None)", "")],
     "only its truth value is used"),
    ("equivalent", "gaps.py", r"report_steps if s <= last", [(r"s <=? last", "")],
     "the last step is added to the set anyway"),
    ("equivalent", "gaps.py", r"\] = np\.nan", [(r"= (np\.nan|None)", "")],
     "numpy stores None as NaN in a float array"),
    ("equivalent", "compare.py config_diff.py judge.py resolve.py layers_table.py",
     r"add_argument\(.*type=Path",
     [(r"\btype=(Path|None),?\s*", ""), (r",\s*\)", ")")],
     "the path is only passed on to functions that take a str as well"),
    ("equivalent", "config_diff.py layers_table.py", r"index=False",
     [(r"index=(False|None)", "")],
     "pandas treats index=None as False here"),
    ("equivalent", "config_diff.py", r"pd\.DataFrame\(diff_rows",
     [(r",\s*(columns=(COLUMNS|None))?\s*\)", ")")],
     "diff_rows' dicts have exactly COLUMNS' keys, in that order"),
    ("equivalent", "parity_config.py", r"zip\(index, bounds",
     [(r",\s*(strict=(True|False|None))?\s*\)", ")")],
     "bounds is built with the index's length"),
    ("equivalent", "parity_config.py", r"wanted = bool if", [(r"wanted = .*", "")],
     "a bool nesterov is checked by the isinstance(value, bool) test on the next line"),
    ("equivalent", "parity_config.py", r"problems \+= keep_default_problems",
     [(r"problems \+?= ", "")], "problems is still empty there"),
    ("equivalent", "parity_config.py resolve.py", r'encoding="utf-8"',
     [(r'encoding="(?i:utf-8)"', "")],
     "the same codec"),
    ("accepted", "parity_config.py resolve.py", r'encoding="utf-8"',
     [(r"encoding=(\"utf-8\"|None)", "")],
     "the locale's encoding: UTF-8 on every machine this runs on"),
]


def changed(diff: str) -> tuple[str, str]:
    lines = [x for x in diff.splitlines() if not x.startswith(("---", "+++"))]
    old = " / ".join(x[1:].strip() for x in lines if x.startswith("-"))
    return old, " / ".join(x[1:].strip() for x in lines if x.startswith("+"))


def same_after(subs, old: str, new: str) -> bool:
    for pattern, repl in subs:
        old, new = re.sub(pattern, repl, old), re.sub(pattern, repl, new)
    return old == new


def rule_for(path, old: str, new: str):
    for verdict, files, needle, subs, reason in RULES:
        if path.name in files.split() and re.search(needle, old) and same_after(subs, old, new):
            return verdict, reason
    return None, ""


counts, by_file, lines = Counter(), {}, []
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    mine = by_file.setdefault(path.name, Counter())
    for name, code in data.exit_code_by_key.items():
        status = status_by_exit_code[code]
        if status not in ("killed", "timeout"):
            old, new = changed(get_diff_for_mutant(name, path=path))
            if same_after(HELP, old, new):
                status = "help text"
            else:
                verdict, reason = rule_for(path, old, new)
                status = "equivalent" if verdict == "equivalent" else status
                lines.append(f"  {verdict or status:<10} {name}: {reason or 'not equivalent'}"
                             f"\n      - {old}\n      + {new}")
        counts[status] += 1
        mine[status] += 1


def score(c: Counter) -> tuple[int, int, float]:
    total = sum(c.values()) - c["help text"] - c["equivalent"]
    caught = c["killed"] + c["timeout"]
    return caught, total, 100 * caught / max(total, 1)


threshold = float(sys.argv[1])
print("\n".join(lines))
below = []
for name, c in by_file.items():
    caught, total, percent = score(c)
    mark = "" if percent >= threshold else f"   below {threshold:g} %"
    below += [name] if mark else []
    print("  %-18s %d / %d killed (%.1f %%)%s" % (name, caught, total, percent, mark))
caught, total, percent = score(counts)
print(f"mutmut: {counts['killed']} killed, {counts['timeout']} timeout, {counts['survived']}"
      f" survived, {counts['no tests']} no tests of {total} (left out: {counts['equivalent']}"
      f" equivalent, {counts['help text']} help text): score {percent:.1f} %")
if below:
    print(f"mutmut: under {threshold:g} %: {', '.join(below)}")
sys.exit(0 if percent >= threshold and not below else 1)
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
    # the proofs that the recorded Adam factors and AdamW corrections are the ones Burn applies.
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
        --no-times --colors never -o ../mutants -- --locked --lib --test adam_factors --test burn_scalars) ||
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
