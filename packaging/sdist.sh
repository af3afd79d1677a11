#!/usr/bin/env bash
# Builds the source distribution, dist/ede_eeg-VERSION.tar.gz, which `pip install` builds where
# Rust is present. It records the commit it is made from (build-support/commit, read by
# build.rs), so that the ede it builds prints the same `ede --version` as the wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/tools.sh
mkdir -p dist
rm -f dist/ede_eeg-*.tar.gz
git log -1 --format='%h %cs' --abbrev=10 >build-support/commit
trap 'rm -f build-support/commit' EXIT
maturin sdist -m python/Cargo.toml --out dist
echo "sdist.sh: $(ls dist/ede_eeg-*.tar.gz)"
