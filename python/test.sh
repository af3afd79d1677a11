#!/usr/bin/env bash
# The Python package as a researcher gets it: the manylinux wheel (packaging/wheel.sh, with the
# dev profile unless PROFILE says otherwise; WHEEL=path tests one already built) installed into
# a fresh virtual environment with no cargo on PATH. Then what a new user tries first: `ede
# --version`, `ede info` on a recording, `ede.read_raw`, `ede.xapen` on an array and the
# viewer's screenshot under Xvfb; then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${WHEEL:-}" ]; then
  PROFILE="${PROFILE:-dev}" packaging/wheel.sh
  WHEEL=$(ls dist/ede_eeg-*.whl)
fi
venv="$PWD/target/python-test-venv"
rm -rf "$venv"
python3 -m venv "$venv"
# Nothing of Rust's on PATH: rustup's folder left out, and cargo, rustc and rustup wherever
# else they live shadowed by stand-ins that fail, so that nothing here can build with them.
no_rust=$(mktemp -d)
for tool in cargo rustc rustup; do
  printf '#!/bin/sh\necho "python/test.sh: %s was run, but the wheel must need no Rust" >&2\nexit 1\n' \
    "$tool" >"$no_rust/$tool"
  chmod +x "$no_rust/$tool"
done
clean_path="$venv/bin:$no_rust:$(echo "$PATH" | tr ':' '\n' | grep -v -e '\.cargo' -e rustup | paste -sd:)"
run() { env PATH="$clean_path" "$@"; }
run pip install -q --upgrade pip
run pip install -q "$WHEEL[test]"
recording=../shared/data/eeg/eeglab_sample_32ch_128hz.edf
[ -f "$recording" ] || recording=tests/fixtures/fif_split_raw.fif
run ede --version
run ede info "$recording" >/dev/null
run python -c "
import sys, numpy as np, ede
raw = ede.read_raw(sys.argv[1])
m = ede.xapen(np.random.default_rng(0).standard_normal((3, 2048)), sfreq=250.0, epoch_len=1024, backend='cpu')
assert raw.info['nchan'] > 0 and m.shape == (3, 3), (raw, m.shape)
print(f'python/test.sh: ede {ede.__version__} read {raw.info[\"nchan\"]} channels; xapen {m.shape}')
" "$recording"
shot=$(mktemp -d)/page.png
run xvfb-run -a -s "-screen 0 1280x800x24" ede "$recording" --screenshot "$shot"
[ "$(stat -c %s "$shot")" -gt 10000 ] || { echo "python/test.sh: no page drawn" >&2; exit 1; }
run pytest -q python/tests
