#!/usr/bin/env python3
"""Prints a crate's module graph, read from its own `crate::` paths, and its circles.

    python3 scripts/modules.py [SRC_DIR] [--allow-circles]

The nodes are the crate's top-level modules (`src/<name>.rs` or `src/<name>/`) and the
modules `src/lib.rs` re-exports from other crates of ours (`pub use trimgate_wire::{dialect, …}`),
shown with the crate they live in; an arrow `a -> b` means code in `a` names `crate::b`
(or names `b` through its own crate, `trimgate_wire::b`). A path into such a crate that is
no re-exported module (`trimgate_wire::WireError`) is an arrow to the crate itself. Test
code is left out: files named `tests.rs` and everything from a trailing `#[cfg(test)]` module on. Exits 1 when the
graph has a circle (a strongly connected set of two or more modules), unless
--allow-circles is given.

It holds the graph to the layers written in ARCHITECTURE.md: every module has a layer
(LAYERS below), and an arrow may point only into its own layer or a lower one; within a
layer, a few pairs never meet (NEVER). A module with no layer is an error too: a new room
says where it stands.

It also holds gateway-core's manifest to two rules, and the optimizer's to a third: the window's files (`trimgate-ui`) are
no dependency of it, so a UI rebuild recompiles no gateway code; and the mock provider
(`trimgate-mock`) is one only behind the `test-util` feature, so what ships carries no
test support. The optimizer crate (`trimgate-optimize`) depends on the wire and on
libraries that only compute (OPTIMIZER_DEPS), so its rule, pure decisions with no I/O, is a
fact of its manifest.
"""

import os
import re
import sys
from collections import defaultdict

CRATE_PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
TEST_MODULE = re.compile(r"^#\[cfg\(test\)\]\s*\n\s*(?:pub(?:\(crate\))?\s+)?mod\s+\w+\s*\{", re.M)
LINE_COMMENT = re.compile(r"//[^\n]*")
# `pub use other_crate::{a, b};` or `pub use other_crate::a;` in lib.rs, outside a comment.
REEXPORT = re.compile(r"^pub use ([a-z_][a-z0-9_]*)::(?:\{([^}]*)\}|([a-z_][a-z0-9_]*));", re.M)
# `pub use other_crate as name;`: a whole crate of ours standing where a module of this one was.
REEXPORT_CRATE = re.compile(r"^pub use (trimgate_[a-z0-9_]*) as ([a-z_][a-z0-9_]*);", re.M)

# Bottom to top. The wire (dialects, scanning, translation) is crate `trimgate-wire`, which
# gateway-core re-exports; it is listed so that an arrow into it reads as downward.
LAYERS = [
    ("wire", {"trimgate_wire", "dialect", "scan", "sniff", "usage", "sse", "translate", "tokenizer", "answer_text"}),
    # The optimizer is crate `trimgate-optimize` (re-exported as `optimize`): above the wire only.
    ("optimizer", {"trimgate_optimize", "optimize"}),
    ("base", {"clock", "files", "running", "workers", "idle", "db", "headers", "error"}),
    ("policy", {"routing", "pricing", "retry", "health", "keys", "sessions", "estimate", "guard"}),
    ("record", {"record"}),
    ("stores", {"secrets", "local_key", "cache", "ledger", "telemetry", "logs", "bodies", "virtual_keys"}),
    ("config", {"config", "import"}),
    ("provider", {"upstream", "models", "hooks"}),
    ("pipeline", {"state", "auth", "pending", "feed", "ingress", "relay", "proxy", "endpoints"}),
    ("edges", {"server", "admin", "launch"}),
]

# Pairs in one layer that never import each other, with the reason.
NEVER = [
    ("cache", "ledger", "stores never reach into each other"),
    ("ledger", "cache", "stores never reach into each other"),
    ("ledger", "telemetry", "stores never reach into each other"),
    ("cache", "telemetry", "stores never reach into each other"),
    ("proxy", "admin", "handlers do not import each other's rooms"),
    ("admin", "proxy", "handlers do not import each other's rooms"),
    ("admin", "endpoints", "handlers do not import each other's rooms"),
    *[("server", h, "the server never imports a handler: launch.rs is the one composition root")
      for h in ("admin", "endpoints", "proxy")],
    *[(s, h, "the shared state imports no handler")
      for s in ("state", "auth", "feed") for h in ("endpoints", "proxy")],
]


def layer_of(name):
    for i, (_, members) in enumerate(LAYERS):
        if name in members:
            return i
    return None


def layering_problems(mods, edges):
    found = []
    for name in sorted(mods):
        if layer_of(name) is None:
            found.append(f"{name}: in no layer (add it to LAYERS in scripts/modules.py and to ARCHITECTURE.md)")
    for a in sorted(edges):
        for b in sorted(edges[a]):
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and lb > la:
                found.append(f"{a} ({LAYERS[la][0]}) -> {b} ({LAYERS[lb][0]}): an arrow up the layers")
            for x, y, why in NEVER:
                if (a, b) == (x, y):
                    found.append(f"{a} -> {b}: {why}")
    return found


def production_text(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    cut = TEST_MODULE.search(text)
    if cut:
        text = text[: cut.start()]
    # Doc comments name modules in links; they are not imports.
    return LINE_COMMENT.sub("", text)


def modules(src):
    """{module: [files]} for the crate's top-level modules."""
    found = {}
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry)
        if entry in ("lib.rs", "main.rs"):
            continue
        if os.path.isdir(path):
            files = []
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in names if n.endswith(".rs") and n != "tests.rs"]
            found[entry] = sorted(files)
        elif entry.endswith(".rs") and entry != "tests.rs":
            found.setdefault(entry[:-3], []).insert(0, path)
    return found


def reexports(src):
    """{module: crate} for the modules lib.rs re-exports from another crate."""
    path = os.path.join(src, "lib.rs")
    if not os.path.exists(path):
        return {}
    found = {}
    text = production_text(path)
    for m in REEXPORT_CRATE.finditer(text):
        # One behind a feature (the mock, for tests) is no part of the crate's graph.
        if not text[: m.start()].rstrip().endswith(")]"):
            found[m.group(2)] = m.group(1)
    for crate, group, single in REEXPORT.findall(text):
        if crate in ("crate", "self", "super", "std"):
            continue
        for name in (group.split(",") if group else [single]):
            name = name.strip()
            if re.fullmatch(r"[a-z_][a-z0-9_]*", name):
                found[name] = crate
    return found


def graph(src):
    mods = modules(src)
    outside = reexports(src)
    crates = set(outside.values())
    nodes = set(mods) | set(outside) | crates
    edges = defaultdict(set)
    for name, files in mods.items():
        for path in files:
            text = production_text(path)
            targets = set(CRATE_PATH.findall(text))
            for crate in crates:
                for target in re.findall(r"\b" + crate + r"::([A-Za-z_][A-Za-z0-9_]*)", text):
                    targets.add(target if outside.get(target) == crate else crate)
            for target in targets:
                if target in nodes and target != name:
                    edges[name].add(target)
    return mods, outside, edges


def circles(nodes, edges):
    """Strongly connected sets of two or more modules (Tarjan)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


# What the optimizer crate may depend on: the wire and libraries that compute, no I/O.
# A new one is a decision: add it here with the reason in crates/optimize/Cargo.toml.
OPTIMIZER_DEPS = {"trimgate-wire", "serde", "serde_json", "memchr", "globset", "blake3", "metrics"}


def manifest_problems(src):
    """Breaches of the two manifest rules, read from gateway-core's Cargo.toml."""
    import tomllib

    path = os.path.join(src, "..", "Cargo.toml")
    with open(path, "rb") as f:
        manifest = tomllib.load(f)
    deps = manifest.get("dependencies", {})
    found = []
    if "trimgate-ui" in deps:
        found.append("gateway-core depends on trimgate-ui: a UI rebuild would recompile the gateway")
    optimizer = os.path.join(src, "..", "..", "crates", "optimize", "Cargo.toml")
    if os.path.exists(optimizer):
        with open(optimizer, "rb") as f:
            for dep in sorted(tomllib.load(f).get("dependencies", {})):
                if dep not in OPTIMIZER_DEPS:
                    found.append(
                        f"trimgate-optimize depends on {dep}: the optimizer takes the wire and pure "
                        f"libraries only ({', '.join(sorted(OPTIMIZER_DEPS))}), nothing that does I/O"
                    )
    mock = deps.get("trimgate-mock")
    if mock is not None and not (isinstance(mock, dict) and mock.get("optional")):
        found.append("gateway-core depends on trimgate-mock unconditionally: test support would ship")
    return found


def main(argv):
    allow = "--allow-circles" in argv
    args = [a for a in argv if not a.startswith("--")]
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "gateway-core", "src")
    mods, outside, edges = graph(src)
    for name in sorted(mods):
        targets = sorted(edges.get(name, ()))
        print(f"{name} -> {', '.join(targets) if targets else '(nothing)'}")
    for name in sorted(outside):
        whole = outside[name] == f"trimgate_{name}"
        print(f"{name} = {outside[name]}{'' if whole else '::' + name} (re-exported)")
    core = os.path.basename(os.path.dirname(os.path.abspath(src))) == "gateway-core"
    broken = manifest_problems(src) if core else []
    for problem in broken:
        print(f"manifest: {problem}")
    if core:
        layering = layering_problems(sorted(set(mods) | set(outside)), edges)
        for problem in layering:
            print(f"layers: {problem}")
        broken += layering
    found = circles(mods, edges)
    if not found:
        print(
            f"\n{len(mods)} modules, {len(outside)} re-exported, "
            f"{sum(len(t) for t in edges.values())} arrows, no circle"
        )
        return 1 if broken else 0
    print(f"\n{len(found)} circle(s):")
    for group in found:
        inside = [f"{a} -> {b}" for a in group for b in sorted(edges.get(a, ())) if b in group]
        print(f"  {{{', '.join(group)}}}: {'; '.join(inside)}")
    return 0 if allow and not broken else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
