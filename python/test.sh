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
# Nothing of Rust's on PATH: the wheel must need none of it.
clean_path="$venv/bin:$(echo "$PATH" | tr ':' '\n' | grep -v -e cargo -e rustup | paste -sd:)"
run() { env PATH="$clean_path" "$@"; }
run sh -c '! command -v cargo >/dev/null' || { echo "python/test.sh: cargo is still on PATH" >&2; exit 1; }
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
