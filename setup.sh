#!/usr/bin/env bash
# Installs the system packages ede needs on Debian/Ubuntu: a Vulkan loader and Mesa's drivers
# (lavapipe gives a software GPU where there is no hardware one), the X11/Wayland client
# libraries winit loads at run time, Xvfb for screenshots and UI runs without a display, and a C
# compiler (the mimalloc allocator is built from C; liblsl, for live LSL streams, from C++ with
# cmake), and zenity: the file dialog where there is no desktop portal (rfd falls back to it;
# without either, File > Open offers a path field); for whole studies (workflow/), Python's venv
# for Snakemake and its Slurm plugin (into .venv/), and Slurm with munge, which the workflow's
# test runs as a one-node cluster (workflow/slurm/one-node.sh).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs="gcc g++ cmake libc6-dev mesa-vulkan-drivers libvulkan1 xvfb xauth libxkbcommon-x11-0 libx11-6 libxcursor1 libxrandr2 libxi6 libwayland-client0 libwayland-cursor0 libegl1 zenity python3 python3-venv slurm-wlm munge"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi
command -v cargo >/dev/null || { echo "setup.sh: install Rust first (https://rustup.rs)" >&2; exit 1; }
# Snakemake and its Slurm executor, pinned, in the project's own environment.
cd "$(dirname "$0")"
if ! .venv/bin/snakemake --version 2>/dev/null | grep -qx "9.27.1" ||
  ! .venv/bin/pip show snakemake-executor-plugin-slurm 2>/dev/null | grep -qx "Version: 2.8.0"; then
  python3 -m venv .venv
  .venv/bin/pip install -q "snakemake==9.27.1" "snakemake-executor-plugin-slurm==2.8.0"
fi
