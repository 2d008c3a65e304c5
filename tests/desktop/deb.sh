#!/usr/bin/env bash
# The desktop app as a user gets it: builds the .deb (or takes TRIMGATE_DEB=path), installs
# it with dpkg, runs test_deb.py against the installed app on a virtual display (Xvfb) with
# a private D-Bus session, then removes the package. Screenshots and the app's output go to
# tests/desktop/artifacts/.
#
# Installs and removes a system package: run it as root on a machine (or CI) where that is
# fine. Takes about 10 minutes with a clean build (see build-deb.sh), 1 minute when warm.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

bash scripts/deps.sh desktop
for tool in xvfb-run dbus-run-session gnome-keyring-daemon secret-tool import xwininfo WebKitWebDriver ss dpkg-deb rpm npm; do
  command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }
done

deb="${TRIMGATE_DEB:-}"
if [ -z "$deb" ]; then
  deb=$(bash tests/desktop/build-deb.sh)
fi
package=$(dpkg-deb -f "$deb" Package)
echo "== package: $deb ($(du -k "$deb" | cut -f1) KiB, $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version))"

echo "== the mock provider (trimgate mock)"
cargo build --quiet -p trimgate

venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/sdk/requirements.txt

if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
  echo "note: $package is installed already; the test replaces it and removes it at the end" >&2
fi
as_root dpkg -i "$deb" >/dev/null
trap 'as_root dpkg -r "$package" >/dev/null 2>&1 || true' EXIT

art=tests/desktop/artifacts
mkdir -p "$art"
echo "== installed; testing it on Xvfb"
TRIMGATE_DEB="$deb" \
TRIMGATE_DEB_PACKAGE="$package" \
TRIMGATE_UPDATER_TEST_KEY="$CARGO_TARGET_DIR/desktop-test/updater-test.key" \
TRIMGATE_TAURI_CLI="$root/src-tauri/node_modules/.bin/tauri" \
TRIMGATE_BIN="$CARGO_TARGET_DIR/debug/trimgate" \
  xvfb-run -a -s "-screen 0 1280x800x24" \
  dbus-run-session -- bash -c '
    # An unlocked Secret Service (gnome-keyring) for the keys the window stores.
    printf "\n" | gnome-keyring-daemon --unlock --components=secrets >/dev/null
    exec "$0" -m pytest tests/desktop -q -p no:cacheprovider' "$venv/bin/python" \
  2> "$art/session.stderr" || { status=$?; tail -n 30 "$art/session.stderr" >&2; exit "$status"; }
