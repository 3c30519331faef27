#!/usr/bin/env bash
# The one CI entry point, called by .ci/run and by .github/workflows/pipeline.yml:
# set up as the README says, lint (the documentation site built strictly among it), test,
# run the pipeline, build the HTML report and collect everything worth publishing into
# artifacts/.
#
#   bash ci/pipeline.sh            # all stages
#   SKIP_PIPELINE=1 bash ci/pipeline.sh   # set-up, lint and tests only
set -euo pipefail
cd "$(dirname "$0")/.."
ACTIONLINT_VERSION=v1.7.12

stage() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

stage "set-up"
if ! command -v uv > /dev/null; then
    echo "uv not found: installing it from PyPI"
    python3 -m pip install --quiet uv
fi
if ! command -v cargo > /dev/null; then
    echo "cargo not found: install a Rust toolchain (https://rustup.rs)" >&2
    exit 1
fi
uv sync --locked --compile-bytecode
# A real browser for tests/test_browser.py: Debian's Chromium (Playwright's own browser
# download is not used). GitHub's runners bring Google Chrome instead.
if ! command -v chromium > /dev/null && ! command -v google-chrome > /dev/null; then
    echo "installing Chromium from Debian's packages"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium > /dev/null
fi
# qemu-user for tests/test_cpu_path.py: the same runs on an emulated AVX2-only CPU (Haswell)
# and one without FMA (Nehalem), as Burn's and PyTorch's kernel dispatchers see them.
if ! command -v qemu-x86_64 > /dev/null; then
    echo "installing qemu-user from Debian's packages"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq qemu-user > /dev/null
fi
# actionlint checks the GitHub Actions workflow (tests/test_lint.py); built from the Go
# module proxy when Go is available and actionlint is not already on PATH.
if ! command -v actionlint > /dev/null && command -v go > /dev/null; then
    GOBIN="$PWD/.ci-tools" go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
fi
export PATH="$PWD/.ci-tools:$PATH"

stage "lint"
uv run ruff check .
uv run ruff format --check .
uv run snakefmt --check Snakefile workflow/rules/
# The documentation site, strictly: a broken link or anchor fails (mkdocs.yml).
NO_MKDOCS_2_WARNING=1 uv run mkdocs build --strict --site-dir site
(cd rust && cargo fmt --check && cargo clippy --release --locked --all-targets -- -D warnings)
# The example ports' crates, checked against the trainer's target folder (Burn checked once).
for crate in examples/byo/burn examples/ports/*/burn; do
    (cd "$crate" && cargo fmt --check \
        && CARGO_TARGET_DIR="$OLDPWD/rust/target" cargo clippy --release --locked -- -D warnings)
done

stage "tests"
# tests/test_slurm.py runs a small sweep on a real SLURM cluster: start a one-node one
# (as root) unless a node is already up, e.g. started by the GitHub workflow, and stop it
# after the tests; REQUIRE_SLURM=1 makes a missing cluster fail that test, not skip it.
SLURM_SUDO=""
[ "$(id -u)" = 0 ] || SLURM_SUDO=sudo
SLURM_STARTED=""
SLURM_NODES="$(sinfo --noheader --format=%T 2> /dev/null || true)"
if ! grep -qxE 'idle|mixed' <<< "$SLURM_NODES"; then
    $SLURM_SUDO bash ci/slurm-up.sh
    SLURM_STARTED=1
    trap '$SLURM_SUDO bash ci/slurm-down.sh' EXIT
fi
REQUIRE_SLURM=1 uv run pytest
if [ -n "$SLURM_STARTED" ]; then
    $SLURM_SUDO bash ci/slurm-down.sh
    trap - EXIT
fi

if [ -n "${SKIP_PIPELINE:-}" ]; then
    exit 0
fi

stage "pipeline"
uv run snakemake --cores 4
uv run snakemake --report results/snakemake_report.html

stage "artifacts"
rm -rf artifacts
mkdir -p artifacts
cp results/report.md results/report.html results/snakemake_report.html \
    results/provenance.json artifacts/
cp -r results/pages results/tables results/html results/plots results/runs results/compare results/logs results/benchmarks artifacts/
cp -r site artifacts/docs
find artifacts -type f | sort
