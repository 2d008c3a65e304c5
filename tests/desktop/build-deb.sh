#!/usr/bin/env bash
# Builds the desktop app's .deb for the desktop tests and prints its path.
#
# The package is the release build with three changes from tauri.conf.json. Two are for the
# updater tests in test_deb.py: the updater trusts a TEST public key instead of the release
# key, and asks a test endpoint (an http:// name under .test, which the test serves through
# a proxy on 127.0.0.1). The test key pair is made here on first use and kept beside the
# build output in $CARGO_TARGET_DIR/desktop-test/ — never in the repository: it signs
# nothing but test updates, and a stable key lets cargo reuse the build. The third names
# where this build's `trimgate` is (the target dir may not be ../target). Everything else
# (binary, UI, capabilities, package layout) is what a release ships.
#
# Cost: a clean release build is about 15 minutes on 2 cores (6 after a change to the app
# crate alone, 8 after a gateway-core change); with nothing changed, seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
state="$CARGO_TARGET_DIR/desktop-test"
mkdir -p "$state"

bash scripts/deps.sh build

# The window's files, built the way scripts/test.sh builds them (the package embeds them).
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent) >&2

(cd src-tauri && npm ci --no-audit --no-fund --silent)
tauri() { (cd "$root/src-tauri" && npx --no-install tauri "$@"); }

if [ ! -f "$state/updater-test.key.pub" ]; then
  tauri signer generate --ci -p "" -w "$state/updater-test.key" --force >/dev/null
fi
pubkey=$(cat "$state/updater-test.key.pub")
# The package ships the `trimgate` command as /usr/bin/trimgate (bundle.linux.deb.files):
# the release build, with the window's files just built embedded for `trimgate serve`.
# tauri.conf.json names it under ../target; this build's target dir may be elsewhere.
start=$(date +%s)
cargo build --release -p trimgate >&2
echo "cargo build --release -p trimgate: $(( $(date +%s) - start )) s" >&2
cli="$CARGO_TARGET_DIR/release/trimgate"
cat > "$state/tauri.test.conf.json" <<JSON
{
  "bundle": {"linux": {"deb": {"files": {"/usr/bin/trimgate": "$cli"}}}},
  "plugins": {
    "updater": {
      "pubkey": "$pubkey",
      "endpoints": ["http://updates.trimgate.test/desktop/latest.json"],
      "dangerousInsecureTransportProtocol": true
    }
  }
}
JSON

start=$(date +%s)
tauri build --bundles deb --config "$state/tauri.test.conf.json" >&2
echo "tauri build: $(( $(date +%s) - start )) s" >&2
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
deb="$CARGO_TARGET_DIR/release/bundle/deb/Trimgate_${version}_amd64.deb"
[ -f "$deb" ] || { echo "no package at $deb" >&2; exit 1; }
echo "$deb"
