#!/usr/bin/env bash
# Renders the icons the bundles and the tray use from the SVGs in this folder:
#   trimgate.svg  the app's mark (a token stream narrowed by a gate, one trimmed token out)
#   tray.svg      the same mark, full-bleed, for the tray; tray-paused.svg while the
#                 optimizers are paused; tray-template.svg and tray-template-paused.svg the
#                 same mark as macOS menu bar template images
# Needs rsvg-convert (apt librsvg2-bin) and the Tauri CLI from src-tauri/package.json.
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd ../src-tauri && npm ci --no-audit --no-fund --silent && npx tauri icon "$here/trimgate.svg" -o "$out" >/dev/null)
for f in 32x32.png 128x128.png 128x128@2x.png icon.png icon.ico icon.icns; do
  cp "$out/$f" "$here/$f"
done
rsvg-convert -w 64 -h 64 tray.svg -o tray.png
rsvg-convert -w 64 -h 64 tray-paused.svg -o tray-paused.png
# macOS's menu bar: template images (black and alpha), which it draws in its own colours.
rsvg-convert -w 64 -h 64 tray-template.svg -o tray-template.png
rsvg-convert -w 64 -h 64 tray-template-paused.svg -o tray-template-paused.png
echo "icons rendered in $here"
