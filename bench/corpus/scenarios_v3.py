"""Scenarios over the kinds of output the optimizer does not shrink yet (outputs of
capture_v3.sh): ripgrep's four shapes (path:line:text, path:text through a pipe, file
headings, context lines with `--` separators) and grep under a path with a space in it,
flat package listings (pip freeze, pip list, npm ls --depth=0, cargo tree --depth 1),
aider's repository map of a crate, minified bundles read whole, machine JSON (cargo
metadata, pip list --format=json, pip inspect), version listings, crate changelogs, and
test runs whose failures print stacks through node_modules (mocha, node --test).

Loaded by build.py, which injects Scenario, Turn, bash, read, grep, output, strip_ansi,
middle and OUTPUTS. Needles are picked from the middle of each output by code: a match
from the middle of a search, a package==version from the middle of a listing, a rule from
the middle of a stylesheet, a value deep in a JSON document, a release from the middle of
a changelog or a version list, the failing tests with their assertions and the frames in
the project's own code. The held-out sessions are kept out of tuning.
"""
import json
import re


def lines_of(name):
    return output(name).splitlines()


def pieces(name, pattern, line_has=""):
    """The stretches of lines free of colour codes that match `pattern`: a needle must
    be a plain substring of the output."""
    found = []
    for line in lines_of(name):
        if line_has not in line:
            continue
        for piece in re.split(r"\x1b\[[0-9;]*[A-Za-z]", line):
            if piece.strip() and re.search(pattern, piece.strip()):
                found.append(piece.strip())
    assert found, f"{name}: nothing matches {pattern!r}"
    return found


def rg_match(name):
    """ripgrep -n: a `path:line:text` match from the middle and the path and line."""
    rows = [l for l in lines_of(name) if re.match(r"^[\w./-]+:\d+:\S", l)]
    row = middle(rows)
    path, line = re.match(r"^([\w./-]+):(\d+):", row).groups()
    return row, path, int(line)


def rg_context(name):
    """ripgrep -n -C 2: a match from the middle, with the context line that follows it
    (`path-NN-text`) when there is one, else the one before it."""
    rows = lines_of(name)
    matches = [i for i, l in enumerate(rows) if re.match(r"^[\w./-]+:\d+:", l)]
    i = middle(matches)
    path, line = re.match(r"^([\w./-]+):(\d+):", rows[i]).groups()
    after, before = f"{path}-{int(line) + 1}-", f"{path}-{int(line) - 1}-"
    context = next((l for l in rows[i + 1:i + 3] if l.startswith(after)), None) \
        or next(l for l in rows[i - 2:i] if l.startswith(before))
    assert "--" in rows, f"{name}: no `--` separators"
    return rows[i], context, f"{path}:{line}"


def facts():
    f = {}
    # ---------------------------------------------------------------- ripgrep and grep
    row, path, _ = rg_match("rg-n-tokio-unsafe")
    same_file = [l for l in lines_of("rg-n-tokio-unsafe") if l.startswith(path + ":")]
    f["rg_unsafe_file"] = path
    f["RG_UNSAFE_NEEDLES"] = [row] + ([same_file[0]] if same_file[0] != row else [])
    # rg through a pipe prints path:text, without line numbers.
    piped = [l for l in lines_of("rg-tokio-pub-fn-sorted") if re.match(r"^[\w./-]+\.rs:\s*pub fn \w+", l)]
    row = middle(piped)
    f["pub_fn"] = re.search(r"pub fn (\w+)", row).group(1)
    f["RG_PUBFN_NEEDLES"] = [row]
    # rg --heading: a file heading from the middle and a line listed under it.
    groups = [g.split("\n") for g in output("rg-heading-tokio-waker").strip("\n").split("\n\n")]
    group = middle(groups)
    f["heading_file"] = group[0]
    f["RG_HEADING_NEEDLES"] = [group[0], middle(group[1:])]
    # rg -n -C 2: a match and a context line next to it.
    match, context, loc = rg_context("rg-context-tokio-unsafe")
    f["ctx_unsafe_loc"] = loc
    f["RG_CTX_UNSAFE_NEEDLES"] = [match, context]
    match, context, loc = rg_context("rg-context-tokio-spawn-blocking")
    f["ctx_sb_loc"] = loc
    f["RG_CTX_SB_NEEDLES"] = [match, context]
    # grep -rn under `vendor libs/` (a space in the path).
    rows = [l for l in lines_of("grep-rn-spaced-path-serde-json") if l.startswith("vendor libs/serde_json/src/")]
    row = middle(rows)
    f["error_code"] = re.search(r"ErrorCode::(\w+)", row).group(1)
    f["GREP_SPACED_NEEDLES"] = [row]

    # ---------------------------------------------------------------- changelogs
    text = output("cat-changelog-tokio")
    releases = re.findall(r"^# (\d+\.\d+\.\d+) \(.+\)$", text, re.M)
    ver = middle(releases)
    section = text.split(f"\n# {ver} (", 1)[1].split("\n# ", 1)[0]
    heading = f"# {ver} (" + section.split("\n", 1)[0]
    bullets = [l for l in section.splitlines() if l.startswith("- ")]
    f["tokio_cl_ver"] = ver
    f["TOKIO_CL_NEEDLES"] = [heading, middle(bullets)]
    text = output("cat-changelog-regex")
    releases = re.findall(r"^(\d+\.\d+\.\d+) \((\d{4}-\d\d-\d\d)\)\n=+$", text, re.M)
    # A release from the middle whose notes list at least one bug by number.
    with_bugs = []
    for ver, date in releases:
        section = text.split(f"{ver} ({date})\n=", 1)[1].split("\n\n\n", 1)[0]
        bugs = re.findall(r"^\* \[BUG #\d+\]\(\S+\):$", section, re.M)
        if bugs:
            with_bugs.append((ver, date, bugs))
    ver, date, bugs = middle(with_bugs)
    f["regex_cl_ver"] = ver
    f["REGEX_CL_NEEDLES"] = [f"{ver} ({date})", middle(bugs)]

    # ---------------------------------------------------------------- flat listings
    freeze = [l for l in lines_of("pip-freeze-sdk") if "==" in l]
    f["freeze_pkg"] = middle(freeze).split("==")[0]
    f["FREEZE_NEEDLES"] = [middle(freeze)]
    rows = [l for l in lines_of("pip-list-sdk")[2:] if re.match(r"^\S+\s+\S+$", l)]
    row = rows[len(rows) // 3]
    f["list_pkg"] = row.split()[0]
    f["PIP_LIST_NEEDLES"] = [row]
    listed = json.loads(output("pip-list-json-sdk"))
    entry = listed[2 * len(listed) // 3]
    needle = json.dumps(entry, ensure_ascii=False)
    assert needle in output("pip-list-json-sdk"), needle
    f["json_pkg"] = entry["name"]
    f["PIP_JSON_NEEDLES"] = [needle]
    rows = [l for l in lines_of("npm-ls-depth0-storefront") if re.match(r"^[├└]── \S+@\S+$", l)]
    f["npm_d0_pkg"] = middle(rows)[4:].rsplit("@", 1)[0]
    f["NPM_D0_NEEDLES"] = [middle(rows)]
    rows = lines_of("cargo-tree-depth1-workspace")
    deps = [i for i, l in enumerate(rows) if re.match(r"^[├└]── \S+ v\S+", l)]
    i = middle(deps)
    member = next(rows[j] for j in range(i, -1, -1) if re.match(r"^\S+ v\S+ \(", rows[j]))
    f["d1_crate"] = rows[i][4:].split(" ")[0]
    f["d1_member"] = member.split(" ")[0]
    f["CARGO_TREE_D1_NEEDLES"] = [rows[i], member]

    # ---------------------------------------------------------------- machine JSON
    inspect = json.loads(output("pip-inspect-requests"))
    installed = {p["metadata"]["name"]: p for p in inspect["installed"]}
    requested = next(p for p in inspect["installed"] if p.get("requested") and p["metadata"]["name"] not in ("pip", "setuptools"))
    req_name = requested["metadata"]["name"]
    reqs = [r for r in requested["metadata"].get("requires_dist", []) if "extra ==" not in r]
    req = middle(reqs)
    dep = re.match(r"[A-Za-z0-9_.-]+", req).group(0)
    dep_pkg = next(p for n, p in installed.items() if n.lower().replace("_", "-") == dep.lower().replace("_", "-"))
    f["inspect_pkg"], f["inspect_dep"] = req_name, dep
    f["PIP_INSPECT_NEEDLES"] = [json.dumps(req), f'"metadata_location": {json.dumps(dep_pkg["metadata_location"])}']
    for n in f["PIP_INSPECT_NEEDLES"]:
        assert n in output("pip-inspect-requests"), n
    # cargo metadata --no-deps (one compact line): a dependency of a workspace package,
    # as serde_json writes it.
    line = next(l for l in lines_of("cargo-metadata-workspace-nodeps") if l.startswith("{"))
    meta = json.loads(line)
    pkg = max(meta["packages"], key=lambda p: len(p["dependencies"]))
    deps = [d for d in pkg["dependencies"] if d["source"]]
    d = middle(deps)
    needle = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
    assert needle in line, needle
    f["meta_ws_pkg"], f["meta_ws_dep"] = pkg["name"], d["name"]
    f["META_WS_NEEDLES"] = [needle]
    # The same, pretty-printed: a target deep in the middle package.
    pretty = output("cargo-metadata-workspace-pretty")
    meta = json.loads(pretty)
    pkg = middle(meta["packages"])
    target = middle(pkg["targets"])
    f["meta_pretty_pkg"], f["meta_pretty_target"] = pkg["name"], target["name"]
    f["META_PRETTY_NEEDLES"] = [f'"manifest_path": "{pkg["manifest_path"]}"', f'"src_path": "{target["src_path"]}"']
    # jq over the whole metadata: a package from the middle of the aws- selection and
    # one of its dependencies with its version requirement.
    text = output("cargo-metadata-aws-jq")
    pkgs = json.loads(text)
    pkg = middle(pkgs)
    deps = [d for d in pkg["dependencies"] if d["kind"] is None]
    d = middle(deps)
    start = text.index(f'"id": "{pkg["id"]}"')
    block = re.compile(r'"name": "%s",\n\s*"source": "[^"]*",\n\s*"req": "%s",' % (re.escape(d["name"]), re.escape(d["req"])))
    m = block.search(text, start)
    assert m, (pkg["name"], d["name"])
    f["jq_pkg"], f["jq_dep"] = pkg["name"], d["name"]
    f["JQ_NEEDLES"] = [f'"id": "{pkg["id"]}"', m.group(0)]

    # ---------------------------------------------------------------- minified bundles
    react = output("cat-react-dom-min")
    f["REACT_MIN_NEEDLES"] = [re.search(r'\w+\.version="[^"]+"', react).group(0),
                              re.search(r"\w+\.unstable_batchedUpdates=\w+", react).group(0),
                              "react-dom.production.min.js"]
    lodash = output("cat-lodash-min")
    f["LODASH_NEEDLES"] = [re.search(r'\w+="\d+\.\d+\.\d+"', lodash).group(0),
                           re.search(r"\w+\.sumBy=\w+", lodash).group(0)]
    css = output("cat-bootstrap-min-css")
    rules = re.findall(r"\}(\.[a-z][\w-]*\{[^{}]{20,160}\})", css)
    rule = middle(rules)
    f["css_class"] = rule.split("{", 1)[0]
    f["CSS_NEEDLES"] = [rule, re.search(r"--bs-primary:#[0-9a-f]{6}", css).group(0)]

    # ---------------------------------------------------------------- version listings
    versions = json.loads(output("npm-view-react-dom-versions-json"))
    stable = [v for v in versions if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    f["react_dom_stable"] = middle(stable)
    f["REACT_DOM_VERSIONS_NEEDLES"] = [f'"{middle(stable)}"', f'"{middle(versions)}"']
    versions = json.loads(output("npm-view-types-node-versions-json"))
    f["types_node_ver"] = middle(versions)
    f["TYPES_NODE_NEEDLES"] = [f'"{middle(versions)}"']
    text = output("pip-index-versions-boto3")
    latest = re.search(r"^boto3 \((\S+)\)$", text, re.M)
    listed = re.search(r"^Available versions: (.+)$", text, re.M).group(1).split(", ")
    f["boto_ver"] = middle(listed)
    f["BOTO_NEEDLES"] = [latest.group(0), f", {middle(listed)}, "]

    # ---------------------------------------------------------------- test runs
    # mocha --color: the failure list, the assertions and the test frames are coloured
    # as whole spans; the server-side stacks express prints go to stderr uncoloured. The
    # needles are the escape-free spans.
    m = "mocha-storefront"
    titles = pieces(m, r"^\d+\) [a-z]", line_has="\x1b[31m")
    frames = pieces(m, r"^at Context\.<anonymous> \(test/[\w.]+\.spec\.js:\d+:\d+\)$")
    f["STOREFRONT_MOCHA_NEEDLES"] = titles + sorted(set(frames), key=frames.index) + [
        middle(pieces(m, r'^Error: expected 404 "Not Found", got 500 "Internal Server Error"$')),
        middle(pieces(m, r"^TypeError: Cannot read properties of undefined \(reading 'amountCents'\)$")),
        re.search(r"storefront/lib/cart\.js:\d+:\d+", middle(pieces(m, r"^at applyCoupon \("))).group(0),
        middle(pieces(m, r"^RangeError: qty must be a whole number, got \S+ for \S+$")),
        re.search(r"storefront/lib/cart\.js:\d+:\d+", middle(pieces(m, r"^at lineTotal \("))).group(0),
        middle(pieces(m, r"^AssertionError: expected \d+ to equal \d+$")),
        middle(pieces(m, r"^AssertionError: expected null to be a number$")),
        middle(pieces(m, r"^\d+ failing$")),
    ]
    m = "mocha-storefront-full-trace"
    f["MOCHA_FULL_NEEDLES"] = [
        middle(pieces(m, r"^at Context\.<anonymous> \(\S+/test/import\.spec\.js:\d+:\d+\)$")),
        middle(pieces(m, r'^Error: expected 200 "OK", got 500 "Internal Server Error"$')),
        middle(pieces(m, r"^RangeError: qty must be a whole number, got \S+ for \S+$")),
        middle(pieces(m, r"^at lineTotal \(\S+/lib/cart\.js:\d+:\d+\)$")),
    ]
    # node --test through a pipe reports TAP: each failing subtest, where it is, its error
    # and the frame in the project's code.
    m = "node-test-storefront"
    f["NODE_TEST_NEEDLES"] = pieces(m, r"^not ok \d+ - \S.*[a-z]$") + pieces(m, r"^location: '\S+/node-tests/cart\.test\.js:\d+:\d+'$") + [
        middle(pieces(m, r"^error: \"Cannot read properties of undefined \(reading 'amountCents'\)\"$")),
        middle(pieces(m, r"^\+   tax: NaN,$")),
        middle(pieces(m, r"^applyCoupon \(\S+/lib/cart\.js:\d+:\d+\)$")),
        middle(pieces(m, r"^# fail \d+$")),
    ]

    # ---------------------------------------------------------------- repository map
    rmap = output("aider-repo-map-tokio").split("\n\n")
    files = [b for b in rmap if re.match(r"^[\w./-]+:\n", b) and "\n│" in b]
    block = middle(files)
    f["tokio_map_file"] = block.split("\n", 1)[0].rstrip(":")
    f["TOKIO_MAP_NEEDLES"] = [block.split("\n", 1)[0], next(l for l in block.splitlines() if re.match(r"^│\s*(pub |impl|fn |struct |enum |trait )", l))]
    return f


SCENARIOS = [
    # ----------------------------------------------------------------- large
    Scenario(
        "rg-unsafe-audit", "large",
        "We're auditing unsafe code in the vendored tokio. Which lines of {rg_unsafe_file} use unsafe?",
        [
            Turn([bash("cd tokio && rg -n unsafe", "rg-n-tokio-unsafe", "RG_UNSAFE_NEEDLES")], say="Searching the sources for unsafe."),
            Turn([bash("cargo tree --depth 1", "cargo-tree-depth1-workspace", "CARGO_TREE_D1_NEEDLES")],
                 user="And which version of {d1_crate} does {d1_member} depend on directly?"),
        ],
    ),
    Scenario(
        "rg-context-spawn-blocking", "large",
        "How is spawn_blocking used across tokio? Show me the call sites with some context; what is at {ctx_sb_loc}?",
        [
            Turn([bash("cd tokio && rg -n -C 2 spawn_blocking", "rg-context-tokio-spawn-blocking", "RG_CTX_SB_NEEDLES")]),
            Turn([bash("grep -rn 'ErrorCode::' 'vendor libs/serde_json/src'", "grep-rn-spaced-path-serde-json", "GREP_SPACED_NEEDLES")],
                 user="Different thing: in the vendored serde_json under `vendor libs/`, where is ErrorCode::{error_code} raised?"),
        ],
    ),
    Scenario(
        "python-deps-listing", "large",
        "Which version of {freeze_pkg} is pinned in the sdk venv? Give me the freeze line.",
        [
            Turn([bash("sdk/bin/pip freeze", "pip-freeze-sdk", "FREEZE_NEEDLES")]),
            Turn([bash("sdk/bin/pip list", "pip-list-sdk", "PIP_LIST_NEEDLES")],
                 user="And what does pip list say for {list_pkg}?"),
            Turn([bash("sdk/bin/pip list --format=json", "pip-list-json-sdk", "PIP_JSON_NEEDLES")],
                 user="Give me the JSON form for the tracker; I need the entry for {json_pkg}."),
            Turn([bash("req/bin/pip inspect", "pip-inspect-requests", "PIP_INSPECT_NEEDLES")],
                 user="In the small req venv: what does {inspect_pkg} require of {inspect_dep}, and where is {inspect_dep} installed?"),
            Turn([bash("cd storefront && npm ls --depth=0", "npm-ls-depth0-storefront", "NPM_D0_NEEDLES")],
                 user="Last one: which {npm_d0_pkg} does the storefront have at the top level?"),
        ],
    ),
    Scenario(
        "lodash-min-read", "large",
        "Which lodash version is in storefront's node_modules, and does that build have sumBy? Read the minified file itself.",
        [
            Turn([bash("cd storefront && cat node_modules/lodash/lodash.min.js", "cat-lodash-min", "LODASH_NEEDLES")]),
            Turn([bash("sdk/bin/pip index versions boto3", "pip-index-versions-boto3", "BOTO_NEEDLES")],
                 user="Unrelated: which boto3 releases can pip see, and is {boto_ver} one of them?"),
        ],
    ),
    Scenario(
        "mocha-storefront", "large",
        "The storefront tests are red. Run mocha and tell me every failure: the test, its assertion, and the line in our code.",
        [
            Turn([bash("cd storefront && npx mocha --color", "mocha-storefront", "STOREFRONT_MOCHA_NEEDLES", error=True)]),
            Turn([bash("cd storefront && node --test node-tests/", "node-test-storefront", "NODE_TEST_NEEDLES", error=True)],
                 user="And the node:test suite in node-tests/?"),
            Turn([bash("cd regex && cat CHANGELOG.md", "cat-changelog-regex", "REGEX_CL_NEEDLES")],
                 user="Separately, we're bumping the regex crate: what did {regex_cl_ver} fix?"),
        ],
    ),
    # Held out: captured and measured, never tuned on.
    Scenario(
        "rg-pub-fn-heading", "large",
        "List tokio's public functions. Where is `pub fn {pub_fn}` defined?",
        [
            Turn([bash("cd tokio && rg 'pub fn' | sort", "rg-tokio-pub-fn-sorted", "RG_PUBFN_NEEDLES")]),
            Turn([bash("cd tokio && rg --heading -n Waker", "rg-heading-tokio-waker", "RG_HEADING_NEEDLES")],
                 user="Now which files mention Waker, grouped by file? What does {heading_file} do with it?"),
        ],
        held_out=True,
    ),
    Scenario(
        "aider-map-tokio", "large",
        "Give me aider's map of the tokio checkout and tell me what {tokio_map_file} defines.",
        [
            Turn([bash("aider --show-repo-map --map-tokens 8192 --model gpt-4o", "aider-repo-map-tokio", "TOKIO_MAP_NEEDLES")]),
            Turn([bash("npm view @types/node versions --json", "npm-view-types-node-versions-json", "TYPES_NODE_NEEDLES")],
                 user="Unrelated: is @types/node {types_node_ver} on the registry?"),
        ],
        held_out=True,
    ),
    Scenario(
        "cargo-metadata-workspace", "large",
        "From cargo metadata: which version of {meta_ws_dep} does {meta_ws_pkg} ask for, and with which features?",
        [
            Turn([bash("cargo metadata --format-version 1 --no-deps", "cargo-metadata-workspace-nodeps", "META_WS_NEEDLES")]),
            Turn([bash("cargo tree --depth 1", "cargo-tree-depth1-workspace", "CARGO_TREE_D1_NEEDLES")],
                 user="And which {d1_crate} did {d1_member} resolve to?"),
            Turn([bash("cd storefront && npx mocha --full-trace", "mocha-storefront-full-trace", "MOCHA_FULL_NEEDLES", error=True)],
                 user="Different thing: run the storefront tests with full traces; which import test fails and where?"),
            Turn([bash("sdk/bin/pip index versions boto3", "pip-index-versions-boto3", "BOTO_NEEDLES")],
                 user="And is boto3 {boto_ver} still on PyPI? Our lock file pins it."),
        ],
        held_out=True,
    ),
    # ----------------------------------------------------------------- huge
    Scenario(
        "rg-context-unsafe-changelog", "huge",
        "Review tokio's unsafe code with some context around each use. What is around {ctx_unsafe_loc}?",
        [
            Turn([bash("cd tokio && rg -n -C 2 unsafe", "rg-context-tokio-unsafe", "RG_CTX_UNSAFE_NEEDLES")]),
            Turn([bash("cd tokio && cat CHANGELOG.md", "cat-changelog-tokio", "TOKIO_CL_NEEDLES")],
                 user="When was tokio {tokio_cl_ver} released and what did it change?"),
            Turn([bash("cd tokio && rg --heading -n Waker", "rg-heading-tokio-waker", "RG_HEADING_NEEDLES")],
                 user="Which files mention Waker? Group them by file."),
        ],
    ),
    Scenario(
        "minified-bundles", "huge",
        "Which React build is in storefront's node_modules, and does it export unstable_batchedUpdates? Read the bundle itself.",
        [
            Turn([bash("cd storefront && cat node_modules/react-dom/umd/react-dom.production.min.js", "cat-react-dom-min", "REACT_MIN_NEEDLES")]),
            Turn([bash("cd storefront && cat node_modules/bootstrap/dist/css/bootstrap.min.css", "cat-bootstrap-min-css", "CSS_NEEDLES")],
                 user="And what does bootstrap's {css_class} rule say? Also the primary colour."),
            Turn([bash("cd storefront && cat node_modules/lodash/lodash.min.js", "cat-lodash-min", "LODASH_NEEDLES")],
                 user="Which lodash version is bundled, and does it have sumBy?"),
            Turn([bash("npm view react-dom versions --json", "npm-view-react-dom-versions-json", "REACT_DOM_VERSIONS_NEEDLES")],
                 user="Which react-dom releases exist? Is {react_dom_stable} one?"),
        ],
    ),
    Scenario(
        "cargo-metadata-jq", "huge",
        "Which aws- crates are in our build, at which versions, and what does {jq_pkg} require of {jq_dep}?",
        [
            Turn([bash("cargo metadata --format-version 1 --filter-platform x86_64-unknown-linux-gnu | jq '[.packages[] | select(.name | startswith(\"aws-\"))]'",
                       "cargo-metadata-aws-jq", "JQ_NEEDLES")]),
            Turn([bash("cargo metadata --format-version 1 --no-deps | python3 -m json.tool", "cargo-metadata-workspace-pretty", "META_PRETTY_NEEDLES")],
                 user="Now our own packages: where is {meta_pretty_pkg}'s manifest, and which file is its {meta_pretty_target} target?"),
            Turn([bash("cargo metadata --format-version 1 --no-deps", "cargo-metadata-workspace-nodeps", "META_WS_NEEDLES")],
                 user="And in compact form: what does {meta_ws_pkg} ask for of {meta_ws_dep}?"),
            Turn([bash("req/bin/pip inspect", "pip-inspect-requests", "PIP_INSPECT_NEEDLES")],
                 user="Same question for Python: what does {inspect_pkg} require of {inspect_dep} in the req venv?"),
            Turn([bash("cd regex && cat CHANGELOG.md", "cat-changelog-regex", "REGEX_CL_NEEDLES")],
                 user="Back to crates: we pin regex. What did {regex_cl_ver} fix?"),
        ],
        held_out=True,
    ),
]
