"""Scenarios over dependency trees, lock files, version and tag listings, long one-line
git histories, a repository map and container tools (outputs of capture_deps.sh).

Loaded by build.py, which injects Scenario, Turn, bash, read, grep, output, strip_ansi,
middle and OUTPUTS. Needles are picked from the middle of each output by code: an entry
deep in a tree with the package above it, a package's version and checksum in the middle
of a lock file, a release from the middle of a version list, a commit line from the middle
of a history. The held-out sessions are kept out of tuning.
"""
import re

TREE_LINE = re.compile(r"^([│ ]*)[├└]── (.+)$")


def tree_entry(name, min_depth):
    """A tree line from the middle third of `name` at least `min_depth` levels deep that
    the tool does not mark as listed above, and the entry above it (its parent)."""
    rows = output(name).splitlines()
    entries = []
    for i, row in enumerate(rows):
        m = TREE_LINE.match(row)
        if m:
            entries.append((i, len(m.group(1)), m.group(2)))
    third = len(entries) // 3
    deep = [e for e in entries[third: 2 * third]
            if e[1] >= 4 * min_depth and not e[2].endswith(("(*)", "deduped"))]
    i, depth, _ = middle(deep)
    parent = next(text for j, d, text in reversed(entries) if j < i and d < depth)
    return rows[i], parent


def lock_package(text, pattern):
    """Name, version and one more field of the package in the middle of a lock file."""
    blocks = [b for b in text.split("\n[[package]]\n")[1:]]
    block = middle(blocks)
    name = re.search(r'^name = "([^"]+)"$', block, re.M).group(1)
    version = re.search(r'^version = "([^"]+)"$', block, re.M).group(1)
    extra = re.findall(pattern, block, re.M)
    return name, version, middle(extra)


def facts():
    f = {}
    # cargo tree of the workspace: an entry deep in the tree, and its parent.
    line, parent = tree_entry("cargo-tree-workspace", 3)
    f["CARGO_TREE_NEEDLES"] = [line, parent]
    f["cargo_tree_pkg"] = line.split("── ", 1)[1].split(" v")[0]
    # cargo tree --duplicates: a crate listed in two versions, from the middle.
    dupes = [l for l in output("cargo-tree-duplicates").splitlines() if re.match(r"^\S+ v\S+", l)]
    dup = middle(dupes)
    f["DUPLICATE_NEEDLES"] = [dup]
    f["dup_crate"] = dup.split(" ")[0]
    # pipdeptree: an entry two levels deep, and its parent.
    line, parent = tree_entry("pipdeptree-tools", 2)
    f["PIPDEPTREE_NEEDLES"] = [line, parent]
    f["pipdeptree_pkg"] = line.split("── ", 1)[1].split(" ")[0]
    # Cargo.lock: the package in the middle, its version and checksum.
    name, version, checksum = lock_package(output("cat-cargo-lock"), r'^checksum = "([0-9a-f]{64})"$')
    f["cargo_lock_pkg"] = name
    f["CARGO_LOCK_NEEDLES"] = [f'name = "{name}"', f'version = "{version}"', f'checksum = "{checksum}"']
    # poetry.lock: the package in the middle, its version and the hash of one of its files.
    name, version, (file, digest) = lock_package(output("cat-poetry-lock"), r'\{file = "([^"]+)", hash = "(sha256:[0-9a-f]{64})"\}')
    f["poetry_pkg"] = name
    f["POETRY_LOCK_NEEDLES"] = [f'name = "{name}"', f'version = "{version}"', f'{{file = "{file}", hash = "{digest}"}}']
    # npm view <pkg> versions: a release from the middle of each list.
    ts = re.findall(r"^  '([^']+)',?$", output("npm-view-typescript-versions"), re.M)
    f["ts_release"] = middle([v for v in ts if re.fullmatch(r"\d+\.\d+\.\d+", v)])
    f["TS_VERSIONS_NEEDLES"] = [f"'{f['ts_release']}'", f"'{middle(ts)}'"]
    react = re.findall(r"^  '([^']+)',?$", output("npm-view-react-versions"), re.M)
    f["REACT_VERSIONS_NEEDLES"] = [f"'{middle(react)}'", f"'{react[len(react) // 3]}'"]
    # git tag / git branch -a of the cloned project.
    tags = output("git-tag-sorted-relay").splitlines()
    f["TAG_NEEDLES"] = [middle(tags), tags[len(tags) // 3]]
    branches = output("git-branch-all-relay").splitlines()
    release = [b for b in branches if "/release/" in b]
    f["BRANCH_NEEDLES"] = [middle(release)]
    f["release_branch"] = middle(release).rsplit("/", 1)[1]
    # buildah: the tagged image's row.
    f["BUILDAH_NEEDLES"] = [l for l in output("buildah-images").splitlines() if l.startswith("localhost/trimgate")]
    # git log --format='%h %an %ad %s': a commit line from the middle of each history.
    log = output("git-log-author-date").splitlines()
    f["AUTHOR_LOG_NEEDLES"] = [middle(log)]
    f["author_log_subject"] = middle(log).split(" +0000 ", 1)[1]
    relay = output("git-log-author-date-relay").splitlines()
    f["RELAY_LOG_NEEDLES"] = [relay[len(relay) // 3]]
    f["relay_hash"] = relay[len(relay) // 3].split(" ")[0]
    # kubectl kustomize: the image the deployment runs.
    f["KUSTOMIZE_NEEDLES"] = [l.strip() for l in output("kubectl-kustomize").splitlines() if l.strip().startswith("image: ")][:1]
    # aider's repository map: a file from the middle of the map and its first symbol line.
    rmap = output("aider-repo-map").split("\n\n")
    files = [b for b in rmap if re.match(r"^[\w./-]+:\n", b) and "\n│" in b]
    block = middle(files)
    f["REPO_MAP_NEEDLES"] = [block.split("\n", 1)[0], next(l for l in block.splitlines() if l.startswith("│"))]
    f["map_file"] = block.split("\n", 1)[0].rstrip(":")
    # buildah inspect: the image's id; pip's refusal: the versions it could have installed.
    inspect = output("buildah-inspect-trimgate")
    f["INSPECT_NEEDLES"] = [re.search(r'"FromImageID": "[0-9a-f]{64}"', inspect).group(0)]
    f["PIP_NO_VERSION_NEEDLES"] = [re.search(r"ERROR: No matching distribution found for \S+", output("pip-install-no-such-version")).group(0)]
    return f


SCENARIOS = [
    Scenario(
        "deps-cargo-tree", "large",
        "Why is {cargo_tree_pkg} in our build? Show me which crate pulls it in, and which crates we build twice in different versions.",
        [
            Turn([bash("cargo tree", "cargo-tree-workspace", "CARGO_TREE_NEEDLES")], say="Printing the workspace's dependency tree."),
            Turn([bash("cargo tree --duplicates", "cargo-tree-duplicates", "DUPLICATE_NEEDLES")],
                 user="And the duplicates? Which versions of {dup_crate} do we have?"),
            Turn([bash("tools/bin/pipdeptree", "pipdeptree-tools", "PIPDEPTREE_NEEDLES"), bash("tools/bin/pip freeze", "pip-freeze-tools")],
                 user="Same question for the Python tools venv: who requires {pipdeptree_pkg}?"),
            Turn([bash("git tag --sort=-v:refname", "git-tag-sorted-relay", "TAG_NEEDLES")],
                 user="Last thing: in relay/, list the tags newest first."),
        ],
    ),
    Scenario(
        "deps-versions-and-tags", "large",
        "Was TypeScript {ts_release} a real release? List what npm has, then show me relay's tags and release branches.",
        [
            Turn([bash("npm view typescript versions", "npm-view-typescript-versions", "TS_VERSIONS_NEEDLES")]),
            Turn([bash("git tag", "git-tag-relay", "TAG_NEEDLES"), bash("git branch -a", "git-branch-all-relay", "BRANCH_NEEDLES")],
                 say="Now the tags and branches of relay."),
            Turn([bash("buildah images", "buildah-images", "BUILDAH_NEEDLES")],
                 user="Is there a release/{release_branch} image built locally? Check buildah."),
        ],
    ),
    Scenario(
        "deps-lock-files", "huge",
        "Audit our lock files: which version and checksum does Cargo.lock pin for {cargo_lock_pkg}, and what does poetry.lock pin for {poetry_pkg}?",
        [
            Turn([bash("cat Cargo.lock", "cat-cargo-lock", "CARGO_LOCK_NEEDLES")], say="Reading Cargo.lock."),
            Turn([bash("cd orders && cat poetry.lock", "cat-poetry-lock", "POETRY_LOCK_NEEDLES")]),
            Turn([bash("npm view react versions", "npm-view-react-versions", "REACT_VERSIONS_NEEDLES")],
                 user="Unrelated: which React versions are published? I need an old experimental build."),
        ],
    ),
    Scenario(
        "deps-history-authors", "large",
        "Who committed \"{author_log_subject}\" and when? Then tell me who made commit {relay_hash} in relay/.",
        [
            Turn([bash("git log --format='%h %an %ad %s' --date=iso", "git-log-author-date", "AUTHOR_LOG_NEEDLES")]),
            Turn([bash("cd relay && git log --format='%h %an %ad %s' --date=iso", "git-log-author-date-relay", "RELAY_LOG_NEEDLES")]),
            Turn([bash("kubectl kustomize deploy/kubernetes", "kubectl-kustomize", "KUSTOMIZE_NEEDLES"),
                  bash("kubectl get events --request-timeout=5s", "kubectl-get-events", error=True)],
                 user="Which image does our Kubernetes deployment run? And are there events in the cluster?"),
        ],
        held_out=True,
    ),
    Scenario(
        "deps-repo-map", "large",
        "Give me aider's map of this repository and tell me what {map_file} defines.",
        [
            Turn([bash("aider --show-repo-map --map-tokens 8192 --model gpt-4o", "aider-repo-map", "REPO_MAP_NEEDLES")]),
            Turn([bash("buildah inspect localhost/trimgate:0.1.0", "buildah-inspect-trimgate", "INSPECT_NEEDLES")],
                 user="And what is in the trimgate:0.1.0 image we built? Inspect it."),
            Turn([bash("tools/bin/pip install --dry-run 'django==1.0.99'", "pip-install-no-such-version", "PIP_NO_VERSION_NEEDLES", error=True)],
                 user="Someone pinned django==1.0.99 in the tools venv. Does that exist?"),
        ],
        held_out=True,
    ),
]
