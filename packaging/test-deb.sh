#!/usr/bin/env bash
# The .deb as a clinician's machine gets it (run by .ci/run, as root or with sudo): built,
# installed with apt-get, and the installed ede run: its version, a page drawn under Xvfb, the
# desktop entry and icon in place, and .edf/.bdf files (a BDF by its BIOSEMI header, not as an
# X11 font) typed as recordings ede opens. Removed again at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
PROFILE="${PROFILE:-dev}" packaging/build-deb.sh
deb=$(ls -t target/debian/ede_*.deb | head -1)
echo "test-deb: $deb, $(du -h "$deb" | cut -f1)"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "./$deb"
trap '$SUDO apt-get remove -y -q ede >/dev/null' EXIT
# The package's version, and the commit the binary is from.
/usr/bin/ede --version | grep -qx "ede $(dpkg-query -W -f '${Version}' ede | sed 's/-[0-9]*$//') (.*)"
test -f /usr/share/applications/ede.desktop
test -f /usr/share/icons/hicolor/128x128/apps/ede.png
out=$(mktemp -d)
xvfb-run -a -s "-screen 0 1280x800x24" /usr/bin/ede tests/fixtures/fif_split_raw.fif \
  --screenshot "$out/page.png"
test "$(stat -c %s "$out/page.png")" -gt 10000
# What a file manager asks (shared-mime-info's database, refreshed by dpkg's trigger).
if command -v gio >/dev/null; then
  cp ../shared/data/bdf/test_generator_2.bdf "$out/x.bdf" 2>/dev/null ||
    printf '\377BIOSEMI%248s' "" >"$out/x.bdf"
  printf '0       %248s' "" >"$out/x.edf"
  gio info -a standard::content-type "$out/x.edf" | grep -q application/x-edf
  gio info -a standard::content-type "$out/x.bdf" | grep -q application/x-bdf
fi
echo "test-deb: installed, ran, drew a page; .edf and .bdf are ede's"
