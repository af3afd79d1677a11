#!/usr/bin/env bash
# Builds the wheel to hand out, dist/ede_eeg-VERSION-cp310-abi3-manylinux_2_28_x86_64.whl: the
# extension linked by zig against glibc 2.28's symbols (maturin --zig), so it loads on any
# x86_64 Linux of 2018 or later and the package index takes it; `auditwheel show` then reads
# its tag back. Needs Rust and python3; the tools come from packaging/requirements.txt.
#   packaging/wheel.sh               a release build
#   PROFILE=dev packaging/wheel.sh   the dev profile (CI: the same packaging, a quicker compile)
set -euo pipefail
cd "$(dirname "$0")/.."
. packaging/tools.sh
profile="${PROFILE:-release}"
# zig's C++ compiler is clang 20, which parses template bodies that are never instantiated
# and rejects two in liblsl's bundled Boost (flat_tree's merge_unique calls an `insert` it lacks);
# g++ and older clang did not look. Delayed parsing checks only what is used. Named for the
# target, so this build's flags replace CXXFLAGS (.cargo/config.toml) and g++ never sees them.
export CXXFLAGS_x86_64_unknown_linux_gnu="-include liblsl_compat.h -fdelayed-template-parsing"
out=dist
mkdir -p "$out"
rm -f "$out"/ede_eeg-*.whl
maturin build -m python/Cargo.toml --locked --profile "$profile" --zig \
  --compatibility manylinux_2_28 --out "$out"
wheel=$(ls "$out"/ede_eeg-*.whl)
auditwheel show "$wheel"
auditwheel show "$wheel" | grep -q 'manylinux_2_28_x86_64' ||
  { echo "wheel.sh: $wheel is not manylinux_2_28" >&2; exit 1; }
size=$(stat -c %s "$wheel")
echo "wheel.sh: $wheel, $((size / 1024 / 1024)) MiB"
[ "$size" -lt $((40 * 1024 * 1024)) ] || { echo "wheel.sh: the wheel is over 40 MB" >&2; exit 1; }
