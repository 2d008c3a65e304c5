#!/usr/bin/env bash
# Builds the desktop app's Linux release (scripts/release.sh: .deb, .rpm, the command's
# tarball, SHA256SUMS) for the desktop tests and prints the .deb's path.
#
# The packages are the release build with two changes from tauri.conf.json, for the updater
# tests in test_deb.py: the updater trusts a TEST public key instead of the release key, and
# asks a test endpoint (an http:// name under .test, which the test serves through a proxy on
# 127.0.0.1). The test key pair is made here on first use and kept beside the build output in
# $CARGO_TARGET_DIR/desktop-test/ — never in the repository: it signs nothing but test
# updates, and a stable key lets cargo reuse the build. Everything else (binary, UI,
# capabilities, package layout) is what a release ships.
#
# Cost: a clean release build is about 15 minutes on 2 cores (6 after a change to the app
# crate alone, 8 after a gateway-core change); with nothing changed, seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
state="$CARGO_TARGET_DIR/desktop-test"
mkdir -p "$state"

(cd src-tauri && npm ci --no-audit --no-fund --silent) >&2
if [ ! -f "$state/updater-test.key.pub" ]; then
  (cd src-tauri && npx --no-install tauri signer generate --ci -p "" -w "$state/updater-test.key" --force >/dev/null)
fi
pubkey=$(cat "$state/updater-test.key.pub")
cat > "$state/tauri.test.conf.json" <<JSON
{
  "plugins": {
    "updater": {
      "pubkey": "$pubkey",
      "endpoints": ["http://updates.trimgate.test/desktop/latest.json"],
      "dangerousInsecureTransportProtocol": true
    }
  }
}
JSON

# The release script's own build (the workflow's Linux leg): the .deb and .rpm, the command's
# tarball and SHA256SUMS, in $state/dist.
bash scripts/release.sh --out "$state/dist" --bundles deb,rpm --config "$state/tauri.test.conf.json" >&2
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
deb="$state/dist/Trimgate_${version}_amd64.deb"
[ -f "$deb" ] || { echo "no package at $deb" >&2; exit 1; }
echo "$deb"
