#!/usr/bin/env python3
"""Checks every relative link in the repository's Markdown files.

    python3 scripts/links.py [FILE.md ...]
    python3 scripts/links.py --self-test

The files are every Markdown file git knows of (tracked, or new and not ignored) outside
node_modules/ and target/: README.md, ARCHITECTURE.md, BENCHMARKS.md, SECURITY.md,
RELIABILITY.md, docs/**/*.md and the rest. Without git, every *.md under the repository.

A link is `[text](target)`, `![alt](target)`, a reference definition `[id]: target`, or an
HTML `href="…"` / `src="…"`, outside code blocks, code spans and HTML comments. For each
relative one:

- the file or folder it names must exist (relative to the Markdown file; a leading `/` is
  the repository root), and must not be ignored by git, since a clone would not have it;
- a `#anchor` into a Markdown file (or `#anchor` alone, into the same file) must be made
  by one of its headings, by GitHub's rules: the heading's text lowercased, everything but
  letters, digits, spaces, `-` and `_` removed, each space made a `-`; a repeated heading
  gets `-1`, `-2`, … on its second, third, … occurrence. `<a name="…">` and `id="…"` count
  too. Anchors into other kinds of files (`#L10` in source) are not checked.

Links with a scheme (http, https, mailto, …) are not fetched. Exits 1 listing each dead
link as file:line, else 0 with a one-line count.
"""

import os
import re
import subprocess
import sys
import unicodedata
from urllib.parse import unquote

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SKIP_DIRS = {"node_modules", "target", ".git", ".venv"}

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
COMMENT = re.compile(r"<!--.*?-->", re.S)
# `](target)` or `](target "title")`; the target may be in <…> or hold one level of (…).
INLINE = re.compile(r"\]\(\s*(<[^>\n]*>|(?:[^()\s]|\([^()\s]*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
HTML_ATTR = re.compile(r"<[a-zA-Z][^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.S)
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
HTML_ID = re.compile(r"<[a-zA-Z][^>]*?\bid\s*=\s*[\"']([^\"']+)[\"']")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def blank(text, start, end):
    """`text` with [start, end) replaced by spaces, newlines kept (so line numbers hold)."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def strip_code(text):
    """The text with fenced code blocks, code spans and HTML comments blanked out."""
    lines = text.split("\n")
    out, fence = [], None
    for line in lines:
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            out.append(" " * len(line))
        elif m:
            fence = m.group(1)
            out.append(" " * len(line))
        else:
            out.append(line)
    text = "\n".join(out)
    text = COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    # Code spans: a run of N backticks up to the next run of exactly N, within a paragraph.
    i = 0
    while True:
        m = re.compile(r"`+").search(text, i)
        if not m:
            break
        ticks = m.group(0)
        para_end = text.find("\n\n", m.end())
        para_end = len(text) if para_end < 0 else para_end
        close = re.compile(r"(?<!`)" + ticks + r"(?!`)").search(text, m.end(), para_end)
        if not close:
            i = m.end()
            continue
        text = blank(text, m.start(), close.end())
        i = close.end()
    return text


def heading_text(raw):
    """A heading's text as GitHub renders it: code, emphasis, links and tags reduced to text."""
    s = re.sub(r"`+([^`]*)`+", r"\1", raw)
    s = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", s)
    s = re.sub(r"<[^>]+>", "", s)
    s = re.sub(r"(\*+|~~)", "", s)
    return s.strip()


def slug(text):
    """GitHub's anchor for a heading's text (before the -1, -2 of repeats)."""
    out = []
    for ch in heading_text(text).lower():
        if ch in " -_" or unicodedata.category(ch)[0] in "LMN":
            out.append(ch)
    return "".join(out).replace(" ", "-")


def headings(text):
    """The raw text of each heading, in order (ATX and setext), outside code."""
    found = []
    fence = None
    prev = ""
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            prev = ""
            continue
        if m:
            fence = m.group(1)
            prev = ""
            continue
        a = ATX.match(line)
        if a:
            found.append(a.group(2) or "")
            prev = ""
            continue
        s = SETEXT.match(line)
        if s and prev.strip() and not re.match(r"^\s*([|>#]|[-*+]\s|\d+[.)]\s)", prev) \
                and not line.strip().startswith("|"):
            found.append(prev.strip())
            prev = ""
            continue
        prev = line
    return found


def anchors(text):
    """Every anchor a Markdown file makes: its headings' slugs with repeats numbered, and
    the names and ids of its HTML anchors."""
    seen, out = {}, set()
    for h in headings(text):
        base = slug(h)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    code_free = strip_code(text)
    out.update(HTML_ANCHOR.findall(code_free))
    out.update(HTML_ID.findall(code_free))
    return out


def links(text):
    """(line, target) for each link in the text, outside code."""
    text = strip_code(text)
    found = []
    for pattern in (INLINE, REFDEF, HTML_ATTR):
        for m in pattern.finditer(text):
            target = m.group(1).strip()
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1].strip()
            found.append((text.count("\n", 0, m.start(1)) + 1, target))
    return sorted(found)


def markdown_files():
    """The Markdown files to check, relative to ROOT."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md"],
            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        listed = []
        for d, dirs, files in os.walk(ROOT):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
            listed += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(".md")]
    return sorted({f for f in listed
                   if f and not SKIP_DIRS.intersection(f.split("/")) and os.path.isfile(os.path.join(ROOT, f))})


def git_ignored(paths):
    """Those of `paths` (relative to ROOT) git ignores; none without git."""
    if not paths:
        return set()
    try:
        r = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=ROOT,
                           input="\0".join(paths).encode(), capture_output=True)
    except OSError:
        return set()
    return set(p for p in r.stdout.decode().split("\0") if p)


def check(files):
    """(dead, relative, external): the dead links as (file, line, target, why)."""
    cache = {}

    def anchors_of(path):
        if path not in cache:
            with open(path, encoding="utf-8") as f:
                cache[path] = anchors(f.read())
        return cache[path]

    dead, pending, relative, external = [], [], 0, 0
    for rel in files:
        path = os.path.join(ROOT, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for line, target in links(text):
            if not target or SCHEME.match(target) or target.startswith("//"):
                external += 1
                continue
            relative += 1
            file_part, _, anchor = target.partition("#")
            file_part = unquote(file_part.split("?", 1)[0])
            anchor = unquote(anchor)
            if not file_part:
                dest = path
            elif file_part.startswith("/"):
                dest = os.path.normpath(os.path.join(ROOT, file_part.lstrip("/")))
            else:
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            where = (rel, line, target)
            if os.path.relpath(dest, ROOT).startswith(".."):
                dead.append((*where, "outside the repository"))
                continue
            if not os.path.exists(dest):
                dead.append((*where, "no such file"))
                continue
            pending.append((where, os.path.relpath(dest, ROOT)))
            if anchor and dest.endswith(".md") and os.path.isfile(dest) \
                    and anchor not in anchors_of(dest):
                dead.append((*where, f"no heading makes #{anchor} in {os.path.relpath(dest, ROOT)}"))
    ignored = git_ignored(sorted({d for _, d in pending if d != "."}))
    for where, d in pending:
        if d in ignored:
            dead.append((*where, "ignored by git: a clone has no such file"))
    return sorted(dead), relative, external


def self_test():
    cases = {
        "Agents × providers": "agents--providers",
        "`trimgate` commands": "trimgate-commands",
        "Method of `bench/run.sh`": "method-of-benchrunsh",
        "(b′) Capacity sweep, closed loop (wrk, ~1 KiB chat, non-stream)":
            "b-capacity-sweep-closed-loop-wrk-1-kib-chat-non-stream",
        "What a translated request keeps, drops or refuses": "what-a-translated-request-keeps-drops-or-refuses",
        "Results: run `20261202T032551Z` (2026-12-02, commit `a2883a8`)":
            "results-run-20261202t032551z-2026-12-02-commit-a2883a8",
        "1. The fault table": "1-the-fault-table",
        "snake_case and [a link](x.md)": "snake_case-and-a-link",
        "**Bold** heading": "bold-heading",
    }
    bad = [(h, slug(h), want) for h, want in cases.items() if slug(h) != want]
    doc = "# A\n\n## A\n\n```\n# not a heading\n```\n\nB\n---\n\n## A\n"
    got = anchors(doc)
    if got != {"a", "a-1", "a-2", "b"}:
        bad.append(("repeats", sorted(got), ["a", "a-1", "a-2", "b"]))
    text = "see [x](a.md#b) and `[y](c.md)`\n\n```\n[z](d.md)\n```\n[r]: e.md\n<a href=\"f.md\">f</a> <!-- [g](g.md) -->\n"
    want = [(1, "a.md#b"), (6, "e.md"), (7, "f.md")]
    if links(text) != want:
        bad.append(("links", links(text), want))
    for b in bad:
        print("self-test failed:", b, file=sys.stderr)
    print("links.py self-test:", "failed" if bad else "ok")
    return 1 if bad else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    files = [os.path.relpath(os.path.abspath(f), ROOT) for f in argv[1:]] or markdown_files()
    dead, relative, external = check(files)
    for rel, line, target, why in dead:
        print(f"{rel}:{line}: {target} — {why}")
    if dead:
        print(f"links: {len(dead)} dead of {relative} relative links in {len(files)} Markdown files")
        return 1
    print(f"links: {relative} relative links in {len(files)} Markdown files resolve "
          f"({external} external not fetched)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
