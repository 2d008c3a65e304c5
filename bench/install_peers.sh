#!/usr/bin/env bash
# Installs the peer gateways the campaign measures beside Trimgate, at pinned versions,
# into bench/peers/ (git-ignored), from their registries:
#   LiteLLM proxy   PyPI  litellm[proxy]==$LITELLM_VERSION, in a venv (1.109 and
#                         later pin litellm-proxy-extras / litellm-proxy releases that
#                         PyPI does not serve, so their proxy extra cannot install)
#   Portkey gateway npm   @portkey-ai/gateway@$PORTKEY_VERSION, with @hono/node-server
#                         pinned to 1.13.5 (its streaming breaks with later releases)
# and wrk and nginx-light from apt when missing. Idempotent: a peer whose pinned version
# is already installed is left as it is.
#
#   bench/install_peers.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PEERS=$HERE/peers
LITELLM_VERSION=${LITELLM_VERSION:-1.106.12}
PORTKEY_VERSION=${PORTKEY_VERSION:-1.15.2}
HONO_NODE_SERVER_VERSION=1.13.5

log() { echo "[peers] $*" >&2; }
mkdir -p "$PEERS"

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || need+=(nginx-light)
if ((${#need[@]})); then
  log "apt-get install ${need[*]}"
  apt-get update -qq >&2
  apt-get install -y -qq "${need[@]}" >&2
fi

# LiteLLM
venv=$PEERS/litellm
if [[ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))' 2>/dev/null)" != "$LITELLM_VERSION" ]]; then
  log "LiteLLM $LITELLM_VERSION into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "litellm[proxy]==$LITELLM_VERSION" >&2
fi
log "LiteLLM $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))')"

# Portkey
pk=$PEERS/portkey
if [[ "$(node -p "require('$pk/node_modules/@portkey-ai/gateway/package.json').version" 2>/dev/null)" != "$PORTKEY_VERSION" ]]; then
  log "Portkey gateway $PORTKEY_VERSION into $pk"
  rm -rf "$pk"
  mkdir -p "$pk"
  cat >"$pk/package.json" <<JSON
{
  "name": "trimgate-bench-portkey",
  "private": true,
  "dependencies": { "@portkey-ai/gateway": "$PORTKEY_VERSION" },
  "overrides": { "@hono/node-server": "$HONO_NODE_SERVER_VERSION" }
}
JSON
  (cd "$pk" && npm install --no-audit --no-fund --loglevel=error >&2)
fi
log "Portkey $(node -p "require('$pk/node_modules/@portkey-ai/gateway/package.json').version"), @hono/node-server $(node -p "require('$pk/node_modules/@hono/node-server/package.json').version")"
