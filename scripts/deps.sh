#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Trimgate needs, when they are missing:
#   scripts/deps.sh build    — to build (pkg-config, libdbus-1-dev for the OS keychain, and
#                              the webview stack the desktop app (src-tauri) links)
#   scripts/deps.sh test     — also the tests' (python3-venv, a keychain daemon on D-Bus,
#                              valgrind for the instruction gate, buildah and umoci for the
#                              server image, redis-server and nginx for the shared limits
#                              and the scale-out test, ruby to check the Homebrew files)
#   scripts/deps.sh image    — to build the server image (buildah, CA certificates)
#   scripts/deps.sh desktop  — also the desktop tests' (Xvfb, WebKitWebDriver, screenshots,
#                              rpm to read the .rpm)
set -euo pipefail
want=(pkg-config libdbus-1-dev
  build-essential file libssl-dev libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev libxdo-dev)
case "${1:-build}" in
  test) want+=(python3-venv gnome-keyring libsecret-tools dbus-x11 valgrind buildah umoci ca-certificates redis-server nginx systemd ruby) ;;
  image) want=(pkg-config build-essential buildah ca-certificates) ;;
  desktop) want+=(python3-venv gnome-keyring libsecret-tools dbus-x11
    xvfb xauth webkit2gtk-driver imagemagick x11-utils iproute2 rpm) ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
echo "installing: ${missing[*]}" >&2
# Another apt may hold the lock for a moment: wait and try once more.
as_root apt-get update -qq || { sleep 15; as_root apt-get update -qq; }
as_root apt-get install -y -qq "${missing[@]}" >/dev/null || { sleep 15; as_root apt-get install -y -qq "${missing[@]}" >/dev/null; }
