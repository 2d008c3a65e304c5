#!/usr/bin/env bash
# Builds what a Linux release ships, into one folder: the desktop app's bundles (`tauri build`:
# .deb, .rpm, and an AppImage where its tools can be fetched), the `trimgate` command as a
# tarball, and SHA256SUMS over all of it. The release workflow's Linux legs run this; so does
# the desktop test (tests/desktop/build-deb.sh), so what the workflow does on Linux is what
# CI tests here.
#
#   bash scripts/release.sh --out DIR [--bundles deb,rpm,appimage] [--config JSON]...
#
#   --out DIR       where the artifacts go (made if missing; files of the same names replaced)
#   --bundles LIST  the bundle kinds (default deb,rpm,appimage; an AppImage needs the network,
#                   since the bundler downloads its tools)
#   --config JSON   merged over tauri.conf.json, in order (the tests' updater key and endpoint)
#
# With TAURI_SIGNING_PRIVATE_KEY (and _PASSWORD) set, each bundle gets its updater signature
# (`<bundle>.sig`, from createUpdaterArtifacts); scripts/latest_json.py pairs them into the
# release's latest.json. The app is the `release` profile (fat LTO), and so is the command
# packaged as /usr/bin/trimgate, with the window's files embedded.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

out=""
bundles="deb,rpm,appimage"
configs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --bundles) bundles="$2"; shift 2 ;;
    --config) configs+=(--config "$2"); shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "release.sh: --out DIR is required" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
# What an earlier run left there (another version, signatures of an earlier build) would be
# summed with this release's files.
rm -f "$out"/Trimgate[-_]* "$out"/trimgate-*.tar.gz "$out"/SHA256SUMS

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
triple=$(rustc -vV | sed -n 's/^host: //p')
echo "== release $version for $triple: $bundles" >&2

bash scripts/deps.sh build >&2
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent) >&2
(cd src-tauri && npm ci --no-audit --no-fund --silent) >&2

# The command, with the window's files just built embedded (`trimgate serve` serves /ui).
start=$(date +%s)
cargo build --release --quiet -p trimgate >&2
echo "cargo build --release -p trimgate: $(( $(date +%s) - start )) s" >&2
cli="$CARGO_TARGET_DIR/release/trimgate"

# tauri.conf.json names the command under ../target; this build's target dir may be another.
files="{\"/usr/bin/trimgate\":\"$cli\"}"
paths="{\"bundle\":{\"linux\":{\"deb\":{\"files\":$files},\"rpm\":{\"files\":$files}}}}"
sign=()
if [ -n "${TAURI_SIGNING_PRIVATE_KEY:-}" ]; then
  sign=(--config '{"bundle":{"createUpdaterArtifacts":true}}')
fi
# The bundler leaves earlier bundles and signatures in place: start from none.
rm -rf "$CARGO_TARGET_DIR/release/bundle/deb" "$CARGO_TARGET_DIR/release/bundle/rpm" "$CARGO_TARGET_DIR/release/bundle/appimage"
start=$(date +%s)
(cd src-tauri && npx --no-install tauri build --bundles "$bundles" --config "$paths" "${sign[@]}" "${configs[@]}") >&2
echo "tauri build: $(( $(date +%s) - start )) s" >&2

bundle="$CARGO_TARGET_DIR/release/bundle"
IFS=, read -r -a kinds <<< "$bundles"
for kind in "${kinds[@]}"; do
  case "$kind" in
    deb) pattern="$bundle/deb/Trimgate_${version}_*.deb" ;;
    rpm) pattern="$bundle/rpm/Trimgate-${version}-1.*.rpm" ;;
    appimage) pattern="$bundle/appimage/Trimgate_${version}_*.AppImage" ;;
    *) echo "release.sh: unknown bundle kind $kind" >&2; exit 2 ;;
  esac
  found=0
  for f in $pattern; do
    [ -f "$f" ] || continue
    found=1
    cp "$f" "$out/"
    if [ ${#sign[@]} -gt 0 ]; then
      [ -f "$f.sig" ] || { echo "release.sh: no updater signature $f.sig" >&2; exit 1; }
      cp "$f.sig" "$out/"
    fi
  done
  [ "$found" = 1 ] || { echo "release.sh: no $kind bundle at $pattern" >&2; exit 1; }
done

# The command alone, for servers and scripts/install.sh: `trimgate` at the archive's root.
tarball="trimgate-${version}-${triple}.tar.gz"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$cli" "$stage/trimgate"
cp LICENSE* "$stage/" 2>/dev/null || true
tar -C "$stage" -czf "$out/$tarball" .

(cd "$out" && rm -f SHA256SUMS && sha256sum -- * > SHA256SUMS.tmp && grep -v ' SHA256SUMS.tmp$' SHA256SUMS.tmp > SHA256SUMS && rm SHA256SUMS.tmp)
echo "== $out:" >&2
ls -l "$out" >&2
