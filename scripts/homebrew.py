#!/usr/bin/env python3
"""Renders the Homebrew formula (the `trimgate` command) and cask (the desktop app) for one
release from the templates in packaging/homebrew/, into a tap's layout:

    python3 scripts/homebrew.py --version 0.2.0 --sums dist/SHA256SUMS --out dist/homebrew
    # → dist/homebrew/Formula/trimgate.rb, dist/homebrew/Casks/trimgate-app.rb

The templates are valid Ruby as they stand (`ruby -c`); their placeholders sit in strings:
`{{version}}`, `{{repo}}` (OWNER/NAME on GitHub), and `{{sha256 FILE}}`, the checksum of
the release file FILE as SHA256SUMS lists it (FILE may itself hold `{{version}}`). Lines
starting with `#:` are notes about the template and are left out of what is rendered.
Refused, every problem listed, exit 1: a file SHA256SUMS does not list, and a placeholder
left unfilled.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "packaging" / "homebrew"
# Template → where the tap keeps it.
OUTPUTS = {"trimgate.rb": Path("Formula/trimgate.rb"), "trimgate-app.rb": Path("Casks/trimgate-app.rb")}
DEFAULT_REPO = "trimgate/trimgate"
TEMPLATE_NOTE = "#:"

SHA256_PLACEHOLDER = re.compile(r"\{\{sha256 ([^{}\s]+)\}\}")
ANY_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}")
HEX64 = re.compile(r"[0-9a-f]{64}")


def read_sums(text: str) -> dict[str, str]:
    """SHA256SUMS (`<hex>  <name>`, or `<hex> *<name>`) as {name: hex}."""
    sums = {}
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and HEX64.fullmatch(parts[0].lower()):
            sums[parts[1].strip().lstrip("*")] = parts[0].lower()
    return sums


def render(template: str, version: str, repo: str, sums: dict[str, str]) -> tuple[str, list[str]]:
    """The template filled in, and the problems (files without a checksum, leftovers)."""
    problems: list[str] = []
    text = "".join(line for line in template.splitlines(keepends=True) if not line.startswith(TEMPLATE_NOTE))
    text = text.replace("{{version}}", version).replace("{{repo}}", repo)

    def checksum(match: re.Match) -> str:
        name = match.group(1)
        if name not in sums:
            problems.append(f"SHA256SUMS has no entry for {name}")
            return match.group(0)
        return sums[name]

    text = SHA256_PLACEHOLDER.sub(checksum, text)
    if not problems:
        problems += [f"an unknown placeholder {m.group(0)}" for m in ANY_PLACEHOLDER.finditer(text)]
    return text, problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Render the Homebrew formula and cask for a release.")
    parser.add_argument("--version", required=True, help="the release's version (0.2.0; a leading v is dropped)")
    parser.add_argument("--sums", required=True, type=Path, help="the release's SHA256SUMS")
    parser.add_argument("--out", required=True, type=Path, help="the tap folder to write Formula/ and Casks/ into")
    parser.add_argument("--repo", default=DEFAULT_REPO, help=f"the GitHub repository of the release ({DEFAULT_REPO})")
    parser.add_argument("--templates", type=Path, default=TEMPLATES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    version = args.version.removeprefix("v")
    try:
        sums = read_sums(args.sums.read_text(encoding="utf-8"))
    except OSError as e:
        print(f"error: cannot read {args.sums}: {e.strerror}", file=sys.stderr)
        return 1
    rendered, problems = {}, []
    for template, out in OUTPUTS.items():
        text, found = render((args.templates / template).read_text(encoding="utf-8"), version, args.repo, sums)
        problems += [f"{template}: {p}" for p in found]
        rendered[out] = text
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    for out, text in rendered.items():
        path = args.out / out
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
