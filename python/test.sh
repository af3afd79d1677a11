#!/usr/bin/env bash
# The Python package's tests in a fresh virtual environment: `pip install ./python` (maturin,
# fetched by pip, builds the extension with the dev profile that `cargo test` already built,
# so nothing but the extension compiles again), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-test-venv
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
MATURIN_PEP517_ARGS="${MATURIN_PEP517_ARGS:---profile dev}" "$venv/bin/pip" install -q "./python[test]"
"$venv/bin/pytest" -q python/tests
