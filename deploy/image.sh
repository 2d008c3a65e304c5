#!/usr/bin/env bash
# Builds Trimgate's server image from deploy/Containerfile:
#   1. the headless release binary (`--no-default-features`: no keychain, no D-Bus);
#   2. a root filesystem staged beside it: the binary, the shared libraries `ldd` names
#      (with the loader), the CA bundle, passwd/group for uid 65532, an empty /data;
#   3. `buildah build` (or `docker build` when there is no buildah) of the Containerfile.
# Prints the image's name. Options (env): IMAGE (default trimgate:<version>),
# OCI_ARCHIVE (also write the image there as an OCI archive), CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
image="${IMAGE:-trimgate:$version}"

echo "== the server binary (release, no keychain)" >&2
# Its own target dir: another feature set would otherwise rebuild the desktop build's crates.
server_target="$CARGO_TARGET_DIR/server"
CARGO_TARGET_DIR="$server_target" cargo build --release --quiet -p trimgate --no-default-features
bin="$server_target/release/trimgate"

echo "== the root filesystem" >&2
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
rootfs="$context/rootfs"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$rootfs/proc" "$rootfs/run/secrets" "$context/data"
install -m 0755 "$bin" "$rootfs/usr/local/bin/trimgate"
# Each library at the path the loader looks for it, as a file (not a link).
ldd "$bin" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }' | while read -r lib; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
ca=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca" ] || { echo "no CA bundle at $ca (apt install ca-certificates)" >&2; exit 1; }
cp -L "$ca" "$rootfs$ca"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/data:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
chmod 1777 "$rootfs/tmp"
cp deploy/Containerfile "$context/Containerfile"

echo "== $image" >&2
if command -v buildah >/dev/null; then
  buildah build --quiet --format docker --build-arg "VERSION=$version" -t "$image" -f "$context/Containerfile" "$context" >&2
  if [ -n "${OCI_ARCHIVE:-}" ]; then
    rm -f "$OCI_ARCHIVE"
    buildah push --quiet "$image" "oci-archive:$OCI_ARCHIVE:$image" >&2
  fi
else
  docker build --build-arg "VERSION=$version" -t "$image" -f "$context/Containerfile" "$context" >&2
fi
echo "$image"
