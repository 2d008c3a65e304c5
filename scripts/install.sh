#!/bin/sh
# Installs Trimgate from a release on Linux or macOS: the `trimgate` command, and with
# --app the desktop app too.
#
#   curl -fsSL https://github.com/trimgate/trimgate/releases/latest/download/install.sh | sh
#   curl -fsSL https://github.com/trimgate/trimgate/releases/latest/download/install.sh | sh -s -- --app
#
# It picks the CLI tarball trimgate-<version>-<target triple>.tar.gz for this machine,
# downloads it with SHA256SUMS, refuses it unless its checksum is listed and matches, checks
# that the binary runs here, then puts it in $TRIMGATE_INSTALL_DIR (default ~/.local/bin)
# in one rename, so a failed run leaves the installed version as it was.
#
# Running it again upgrades in place. Your config, the provider keys in the OS keychain and
# the ledger stay as they are: they live in the platform's own folders (~/.config/trimgate
# and ~/.local/share/trimgate on Linux, ~/Library/Application Support/dev.trimgate.trimgate
# on macOS) and in the keychain, which this script never reads or writes.
#
# Environment:
#   TRIMGATE_VERSION       the version to install (default: the release's latest.json)
#   TRIMGATE_RELEASE_URL   where the release's files are (default: the latest GitHub
#                          release, or the tag v$TRIMGATE_VERSION's when that is set)
#   TRIMGATE_INSTALL_DIR   where `trimgate` goes (default: ~/.local/bin)
# For the tests only: TRIMGATE_TEST_UNAME_S and TRIMGATE_TEST_UNAME_M stand in for
# `uname -s` and `uname -m`, so a test can play another OS or architecture.
#
# Everything runs from main, at the end: a download cut short runs nothing.
set -eu

REPO_URL="https://github.com/trimgate/trimgate"
APP_NAME="Trimgate"

usage() {
  cat <<'EOF'
Installs Trimgate's `trimgate` command (and with --app, the desktop app) from a release.

usage: install.sh [--app] [--help]
       curl -fsSL https://github.com/trimgate/trimgate/releases/latest/download/install.sh | sh -s -- --app

  --app     also install the desktop app: on Linux the .deb (apt-get or dpkg) or the .rpm
            (dnf, zypper or rpm), else the AppImage into the install dir; on macOS
            Trimgate.app into /Applications (from the .dmg)
  --help    show this

environment:
  TRIMGATE_VERSION       version to install (default: the latest release's)
  TRIMGATE_RELEASE_URL   base URL of the release's files
                         (default: https://github.com/trimgate/trimgate/releases/latest/download)
  TRIMGATE_INSTALL_DIR   where `trimgate` goes (default: ~/.local/bin)

Re-running upgrades in place; config, keychain entries and the ledger are never touched.
EOF
}

say() { printf '%s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Downloads $1 to $2 with curl or wget; fails with the URL named.
fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$2" "$1" 2>/dev/null || die "cannot download $1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || die "cannot download $1"
  else
    die "neither curl nor wget is installed: install one and run this again"
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  else
    die "neither sha256sum nor shasum is installed: cannot verify the download"
  fi
}

# The checksum SHA256SUMS ($1) lists for the file name $2 (a `*` before the name, binary
# mode, is allowed), or nothing.
listed_sum() {
  awk -v name="$2" '$2 == name || $2 == "*" name { print tolower($1); exit }' "$1"
}

# Downloads the release file $1 into $work and checks it against SHA256SUMS.
fetch_verified() {
  listed=$(listed_sum "$work/SHA256SUMS" "$1")
  [ -n "$listed" ] || die "SHA256SUMS has no entry for $1: refusing to install it"
  fetch "$base/$1" "$work/$1"
  actual=$(sha256_of "$work/$1")
  [ "$actual" = "$listed" ] || die "checksum mismatch for $1 (SHA256SUMS says $listed, the download is $actual): refusing to install it"
}

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "installing the app takes root: run this as root or install sudo"
  fi
}

detect_platform() {
  os=$(printf '%s' "${TRIMGATE_TEST_UNAME_S:-$(uname -s)}")
  machine=$(printf '%s' "${TRIMGATE_TEST_UNAME_M:-$(uname -m)}")
  case "$os" in
    Linux) os=linux ;;
    Darwin) os=macos ;;
    *) die "unsupported OS: $os (Trimgate's installer knows Linux and macOS; Windows has an installer on the release page)" ;;
  esac
  case "$machine" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) die "unsupported architecture: $machine (Trimgate ships x86_64 and aarch64 builds)" ;;
  esac
  # A shell under Rosetta reports x86_64 on an Apple silicon Mac: take the native build.
  if [ "$os" = macos ] && [ "$arch" = x86_64 ] && [ -z "${TRIMGATE_TEST_UNAME_M:-}" ] &&
    [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
    arch=aarch64
  fi
  if [ "$os" = linux ]; then
    # The Linux builds link glibc; musl systems (Alpine) cannot run them.
    if ldd --version 2>&1 | grep -qi musl; then
      die "this system uses musl libc, which Trimgate's Linux builds do not support: use the container image instead"
    fi
    triple="$arch-unknown-linux-gnu"
  else
    triple="$arch-apple-darwin"
  fi
}

# The desktop app's file for this platform: its name in $app_file, how to install it in
# $app_kind. On Linux the package tool present decides.
pick_app() {
  if [ "$os" = macos ]; then
    case "$arch" in x86_64) a=x64 ;; *) a=aarch64 ;; esac
    app_kind=dmg
    app_file="${APP_NAME}_${version}_${a}.dmg"
    return
  fi
  if command -v apt-get >/dev/null 2>&1 || command -v dpkg >/dev/null 2>&1; then
    case "$arch" in x86_64) a=amd64 ;; *) a=arm64 ;; esac
    app_kind=deb
    app_file="${APP_NAME}_${version}_${a}.deb"
  elif command -v dnf >/dev/null 2>&1 || command -v zypper >/dev/null 2>&1 || command -v rpm >/dev/null 2>&1; then
    app_kind=rpm
    app_file="${APP_NAME}-${version}-1.${arch}.rpm"
  else
    case "$arch" in x86_64) a=amd64 ;; *) a=aarch64 ;; esac
    app_kind=appimage
    app_file="${APP_NAME}_${version}_${a}.AppImage"
  fi
}

install_app() {
  pkg="$work/$app_file"
  case "$app_kind" in
    deb)
      if command -v apt-get >/dev/null 2>&1; then
        # apt-get installs the webview libraries the package depends on; dpkg would not.
        as_root apt-get install -y "$pkg" || die "apt-get could not install $app_file"
      else
        as_root dpkg -i "$pkg" || die "dpkg could not install $app_file (its dependencies: libwebkit2gtk-4.1-0, libgtk-3-0, libayatana-appindicator3-1)"
      fi
      say "installed the desktop app ($app_file): start Trimgate from the applications menu"
      ;;
    rpm)
      if command -v dnf >/dev/null 2>&1; then
        as_root dnf install -y "$pkg" || die "dnf could not install $app_file"
      elif command -v zypper >/dev/null 2>&1; then
        as_root zypper --non-interactive install --allow-unsigned-rpm "$pkg" || die "zypper could not install $app_file"
      else
        as_root rpm -U --replacepkgs "$pkg" || die "rpm could not install $app_file"
      fi
      say "installed the desktop app ($app_file): start Trimgate from the applications menu"
      ;;
    appimage)
      target="$install_dir/trimgate-desktop"
      cp "$pkg" "$install_dir/.trimgate-desktop.new.$$"
      chmod 755 "$install_dir/.trimgate-desktop.new.$$"
      mv -f "$install_dir/.trimgate-desktop.new.$$" "$target"
      say "installed the desktop app (AppImage) as $target (it needs FUSE 2: libfuse2)"
      ;;
    dmg)
      mount="$work/mnt"
      mkdir -p "$mount"
      hdiutil attach -quiet -nobrowse -readonly -mountpoint "$mount" "$pkg" || die "hdiutil could not open $app_file"
      mounted=$mount
      [ -d "$mount/$APP_NAME.app" ] || die "$app_file holds no $APP_NAME.app"
      apps=/Applications
      if [ ! -w "$apps" ]; then
        apps="$HOME/Applications"
        mkdir -p "$apps"
      fi
      # Beside the old app first, then swapped in, so a failed copy leaves the old one.
      rm -rf "$apps/.$APP_NAME.app.new"
      ditto "$mount/$APP_NAME.app" "$apps/.$APP_NAME.app.new" || die "could not copy $APP_NAME.app to $apps"
      rm -rf "$apps/$APP_NAME.app"
      mv "$apps/.$APP_NAME.app.new" "$apps/$APP_NAME.app"
      hdiutil detach -quiet "$mount" || true
      mounted=
      say "installed the desktop app as $apps/$APP_NAME.app"
      ;;
  esac
}

cleanup() {
  if [ -n "${mounted:-}" ]; then hdiutil detach -quiet "$mounted" 2>/dev/null || true; fi
  if [ -n "${work:-}" ]; then rm -rf "$work"; fi
}

main() {
  want_app=0
  for arg in "$@"; do
    case "$arg" in
      --app) want_app=1 ;;
      -h | --help) usage; exit 0 ;;
      *) die "unknown option: $arg (see --help)" ;;
    esac
  done

  detect_platform

  version=${TRIMGATE_VERSION:-}
  version=${version#v}
  if [ -n "${TRIMGATE_RELEASE_URL:-}" ]; then
    base=${TRIMGATE_RELEASE_URL%/}
  elif [ -n "$version" ]; then
    base="$REPO_URL/releases/download/v$version"
  else
    base="$REPO_URL/releases/latest/download"
  fi
  install_dir=${TRIMGATE_INSTALL_DIR:-$HOME/.local/bin}

  work=$(mktemp -d 2>/dev/null || mktemp -d -t trimgate-install)
  mounted=
  trap cleanup EXIT
  trap 'exit 1' HUP INT TERM

  if [ -z "$version" ]; then
    fetch "$base/latest.json" "$work/latest.json"
    version=$(sed -n 's/.*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$work/latest.json" | head -n 1)
    [ -n "$version" ] || die "$base/latest.json names no version: set TRIMGATE_VERSION"
  fi
  case "$version" in
    *[!0-9A-Za-z.+-]*) die "not a version: $version" ;;
  esac

  cli_file="trimgate-$version-$triple.tar.gz"
  fetch "$base/SHA256SUMS" "$work/SHA256SUMS"

  # Everything is downloaded and checked before anything is installed.
  if [ "$want_app" = 1 ]; then
    pick_app
    [ -n "$(listed_sum "$work/SHA256SUMS" "$app_file")" ] ||
      die "this release has no desktop app for $os $arch ($app_file is not in it): run without --app for the trimgate command alone"
  fi
  fetch_verified "$cli_file"
  if [ "$want_app" = 1 ]; then
    fetch_verified "$app_file"
  fi

  mkdir -p "$work/cli"
  tar -xzf "$work/$cli_file" -C "$work/cli" || die "$cli_file is not a readable tarball"
  new=
  for candidate in "$work/cli/trimgate" "$work/cli"/*/trimgate; do
    if [ -f "$candidate" ]; then new=$candidate; break; fi
  done
  [ -n "$new" ] || die "$cli_file holds no trimgate binary"
  chmod 755 "$new"
  "$new" --version >/dev/null 2>&1 || die "the downloaded trimgate does not run on this machine ($triple): nothing was changed"

  mkdir -p "$install_dir" || die "cannot create $install_dir"
  # Copied beside the old binary, then renamed over it: a running trimgate keeps its file,
  # and a failure leaves the installed one in place.
  staged="$install_dir/.trimgate.new.$$"
  cp "$new" "$staged" || die "cannot write to $install_dir"
  chmod 755 "$staged"
  mv -f "$staged" "$install_dir/trimgate" || { rm -f "$staged"; die "cannot replace $install_dir/trimgate"; }
  say "installed trimgate $version ($triple) as $install_dir/trimgate"

  if [ "$want_app" = 1 ]; then
    install_app
  fi

  case ":$PATH:" in
    *":$install_dir:"*) ;;
    *) say "note: $install_dir is not on your PATH: add it, e.g. with this line in ~/.profile (or your shell's rc file):"
       say "  export PATH=\"$install_dir:\$PATH\"" ;;
  esac
}

main "$@"
