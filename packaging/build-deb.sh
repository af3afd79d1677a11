#!/usr/bin/env bash
# Builds the Debian/Ubuntu package, target/debian/ede_VERSION-1_ARCH.deb, with cargo-deb
# (installed if missing; its settings are [package.metadata.deb] in Cargo.toml): the stripped
# binary, its run-time dependencies, a desktop entry with the icon, and .edf/.bdf as MIME types
# opened with ede.
#   packaging/build-deb.sh               a release build, the package to hand out
#   PROFILE=dev packaging/build-deb.sh   the binary `cargo test` already built (CI: it checks
#                                        the packaging without a second, release, compile)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-deb >/dev/null || cargo install --locked cargo-deb --version 3.8.0
profile="${PROFILE:-release}"
if [ "$profile" = release ]; then
  cargo deb -p ede --locked
else
  cargo build --locked --profile "$profile" --bin ede
  cargo deb -p ede --profile "$profile" --no-build --strip --fast
fi
