#!/usr/bin/env bash
# Captures real outputs of dependency tools, lock files, version listings and container
# tools for the savings corpus, next to the ones capture.sh writes.
#
# Every file this writes is the combined stdout+stderr of one real command, run on this
# machine against the Trimgate checkout or against a small throwaway project created
# here under a temporary directory. Unlike capture.sh it replaces only its own outputs
# (the names below) and leaves every other file in outputs/ alone; its MANIFEST rows go
# into their own section at the end of outputs/MANIFEST.md, replaced on each run.
#
# Usage: bash bench/corpus/capture_deps.sh   (needs cargo, python3 with venv, npm, git,
# buildah and kubectl, and the PyPI and npm registries; kubectl needs no cluster.)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
OUT="$here/outputs"
mkdir -p "$OUT"
T="$(mktemp -d /tmp/trimgate-corpus-deps.XXXXXX)"
trap 'rm -rf "$T"' EXIT
ROWS="$T/manifest-rows.md"
: >"$ROWS"

# run and manifest_row: one output and its MANIFEST row.
source "$here/capture_lib.sh"

########################################################################################
# 1. Rust: the Trimgate workspace's dependency tree and lock file
########################################################################################
run cargo-tree-workspace "$repo" "cargo tree --offline"
run cargo-tree-duplicates "$repo" "cargo tree --offline --duplicates"
run cat-cargo-lock "$repo" "cat Cargo.lock"

########################################################################################
# 2. Python: a venv with poetry and pipdeptree, and a small poetry project
########################################################################################
python3 -m venv "$T/tools"
"$T/tools/bin/pip" install -q --disable-pip-version-check poetry pipdeptree >/dev/null
run pip-freeze-tools "$T" "tools/bin/pip freeze"
run pipdeptree-tools "$T" "tools/bin/pipdeptree"
mkdir -p "$T/orders/orders"
touch "$T/orders/orders/__init__.py"
cat >"$T/orders/pyproject.toml" <<'EOF'
[tool.poetry]
name = "orders"
version = "0.3.0"
description = "Order intake service"
authors = ["Orders Team <orders@example.com>"]
packages = [{ include = "orders" }]

[tool.poetry.dependencies]
python = "^3.10"
fastapi = "^0.115"
uvicorn = { version = "^0.32", extras = ["standard"] }
sqlalchemy = "^2.0"
pydantic-settings = "^2.6"
httpx = "^0.27"
boto3 = "^1.35"
celery = { version = "^5.4", extras = ["redis"] }

[tool.poetry.group.dev.dependencies]
pytest = "^8.3"
mypy = "^1.13"
ruff = "^0.8"

[build-system]
requires = ["poetry-core>=1.0.0"]
build-backend = "poetry.core.masonry.api"
EOF
run poetry-lock "$T/orders" "POETRY_VIRTUALENVS_CREATE=false $T/tools/bin/poetry lock --no-interaction"
run cat-poetry-lock "$T/orders" "cat poetry.lock"
run pip-index-versions-numpy "$T" "tools/bin/pip index versions numpy --disable-pip-version-check"
run pip-install-no-such-version "$T" "tools/bin/pip install --disable-pip-version-check --dry-run 'django==1.0.99'"

########################################################################################
# 3. Version listings: npm's view of long-lived packages
########################################################################################
run npm-view-typescript-versions "$T" "npm view typescript versions"
run npm-view-react-versions "$T" "npm view react versions"

########################################################################################
# 4. Git: a project with a long release history (tags, release and feature branches,
#    cloned so remote-tracking branches appear), and Trimgate's own history.
########################################################################################
# The history is made here, deterministically: 4 minor lines a year with patch releases,
# release candidates before each minor, a release branch per minor and short-lived
# feature branches, committed by a handful of people.
git init -q -b main "$T/relay-upstream"
(
  cd "$T/relay-upstream"
  git config user.email ci@example.com
  git config user.name ci
  people=("Ana Souza <ana@example.com>" "Bo Lindqvist <bo@example.com>" "Chidi Okeke <chidi@example.com>" "Dana Kim <dana@example.com>" "Eitan Levi <eitan@example.com>")
  areas=(router parser codec pool tls metrics config cli docs retry)
  n=0
  day=0
  commit() {
    n=$((n + 1)); day=$((day + 1))
    local who=${people[$((n % 5))]} area=${areas[$((n % 10))]}
    local when
    when=$(date -u -d "2019-01-01 + $((day * 11 / 4)) days + $((n * 37 % 600)) minutes" +%Y-%m-%dT%H:%M:%SZ)
    echo "$n $area" >>"$area.txt"
    git add -A
    GIT_AUTHOR_DATE=$when GIT_COMMITTER_DATE=$when git -c user.name="${who% <*}" -c user.email="${who#*<}" \
      commit -q -m "$area: $1 ($n)"
  }
  for major in 0 1 2; do
    minors=$([ $major = 0 ] && echo 12 || echo 9)
    for minor in $(seq 0 "$minors"); do
      for rc in 1 2; do
        commit "prepare $major.$minor.0-rc.$rc"
        git tag -a "v$major.$minor.0-rc.$rc" -m "release candidate $major.$minor.0-rc.$rc"
      done
      commit "release $major.$minor.0"
      git tag -a "v$major.$minor.0" -m "release $major.$minor.0"
      git branch "release/$major.$minor"
      patches=$(((major * 7 + minor * 3) % 9 + 2))
      for p in $(seq 1 "$patches"); do
        commit "fix regression in patch $major.$minor.$p"
        git tag -a "v$major.$minor.$p" -m "release $major.$minor.$p"
      done
      if [ $((minor % 2)) = 0 ]; then
        git branch "feature/${areas[$(((major + minor) % 10))]}-rework-$major$minor"
      fi
    done
  done
  for who in ana bo chidi; do git branch "dev/$who/scratch"; done
)
git clone -q "$T/relay-upstream" "$T/relay"
(cd "$T/relay" && git checkout -q -b local/bench-tweaks)
run git-tag-relay "$T/relay" "git tag"
run git-tag-sorted-relay "$T/relay" "git tag --sort=-v:refname"
run git-branch-all-relay "$T/relay" "git branch -a"
run git-log-author-date-relay "$T/relay" "git log --format='%h %an %ad %s' --date=iso"
run git-log-author-date "$repo" "git log --format='%h %an %ad %s' --date=iso"

########################################################################################
# 5. Containers and Kubernetes, as far as they run here (buildah has images; kubectl
#    has no cluster, docker no daemon: their failures are real outputs too)
########################################################################################
run buildah-images "$repo" "buildah images"
run buildah-images-all "$repo" "buildah images --all"
run buildah-containers "$repo" "buildah containers"
run buildah-inspect-trimgate "$repo" "buildah inspect localhost/trimgate:0.1.0"
run kubectl-dry-run-yaml "$repo" "kubectl apply --dry-run=client --validate=false -f deploy/kubernetes/ -o yaml"
run kubectl-kustomize "$repo" "kubectl kustomize deploy/kubernetes"
run kubectl-get-events "$repo" "kubectl get events --request-timeout=5s"
run docker-ps "$repo" "docker ps -a"

########################################################################################
# 6. Repository maps: aider's --show-repo-map on the Trimgate checkout (no model call
#    is needed to build the map; the key is a placeholder that is never used)
########################################################################################
# aider keeps its caches and chat history in the repository it maps: it runs on a clone
# of the checkout's HEAD so that the checkout stays as it was.
python3 -m venv "$T/aider"
if "$T/aider/bin/pip" install -q --disable-pip-version-check aider-chat >/dev/null 2>&1; then
  git clone -q "$repo" "$T/trimgate"
  run aider-repo-map "$T/trimgate" "OPENAI_API_KEY=unused $T/aider/bin/aider --show-repo-map --no-check-update --no-analytics --no-gitignore --no-show-model-warnings --map-tokens 8192 --model gpt-4o"
fi

########################################################################################
manifest="$OUT/MANIFEST.md"
marker="## Outputs of capture_deps.sh"
drop_section "$manifest" "$marker"
{
  echo
  echo "$marker"
  echo
  echo "Written by \`bench/corpus/capture_deps.sh\` on $(uname -sm), $(cargo --version | cut -d' ' -f1-2), node $(node --version), $(python3 --version), $(git --version)."
  echo
  cat "$ROWS"
} >>"$manifest"
du -sh "$OUT"
