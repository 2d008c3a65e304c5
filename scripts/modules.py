#!/usr/bin/env python3
"""Prints a crate's module graph, read from its own `crate::` paths, and its circles.

    python3 scripts/modules.py [SRC_DIR] [--allow-circles]

The nodes are the crate's top-level modules (`src/<name>.rs` or `src/<name>/`); an arrow
`a -> b` means code in `a` names `crate::b`. Test code is left out: files named
`tests.rs` and everything from a trailing `#[cfg(test)]` module on. Exits 1 when the
graph has a circle (a strongly connected set of two or more modules), unless
--allow-circles is given, or an arrow that a layering rule below forbids.
"""

import os
import re
import sys
from collections import defaultdict

CRATE_PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
TEST_MODULE = re.compile(r"^#\[cfg\(test\)\]\s*\n\s*(?:pub(?:\(crate\))?\s+)?mod\s+\w+\s*\{", re.M)
LINE_COMMENT = re.compile(r"//[^\n]*")

# gateway-core's layering rules (ARCHITECTURE.md): the arrows each forbids, and why.
HANDLERS = ("admin", "endpoints", "proxy")
SHARED = ("state", "auth", "feed")
RULES = [
    ("handlers never import the server: launch.rs hands it the finished router",
     [(h, "server") for h in HANDLERS]),
    ("the server never imports a handler: launch.rs is the one composition root",
     [("server", h) for h in HANDLERS]),
    ("the shared state imports no handler and no server",
     [(s, t) for s in SHARED for t in HANDLERS + ("server", "launch")]),
]


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


def graph(src):
    mods = modules(src)
    edges = defaultdict(set)
    for name, files in mods.items():
        for path in files:
            for target in CRATE_PATH.findall(production_text(path)):
                if target in mods and target != name:
                    edges[name].add(target)
    return mods, edges


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


def main(argv):
    allow = "--allow-circles" in argv
    args = [a for a in argv if not a.startswith("--")]
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "gateway-core", "src")
    mods, edges = graph(src)
    for name in sorted(mods):
        targets = sorted(edges.get(name, ()))
        print(f"{name} -> {', '.join(targets) if targets else '(nothing)'}")
    broken = [(a, b, why) for why, arrows in RULES for a, b in arrows if b in edges.get(a, ())]
    for a, b, why in broken:
        print(f"\nforbidden: {a} -> {b} ({why})")
    found = circles(mods, edges)
    if not found:
        print(f"\n{len(mods)} modules, {sum(len(t) for t in edges.values())} arrows, no circle")
        return 1 if broken else 0
    print(f"\n{len(found)} circle(s):")
    for group in found:
        inside = [f"{a} -> {b}" for a in group for b in sorted(edges.get(a, ())) if b in group]
        print(f"  {{{', '.join(group)}}}: {'; '.join(inside)}")
    return 0 if allow and not broken else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
