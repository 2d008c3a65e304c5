#!/usr/bin/env python3
"""Writes the desktop updater's manifest, `latest.json`, for one release: every updater
bundle in a folder of release artifacts, each with its signature, under the platform keys
tauri-plugin-updater looks up.

    python3 scripts/latest_json.py 0.2.0 https://github.com/OWNER/REPO/releases/download/v0.2.0 dist/ > latest.json

An updater bundle is one of the files `tauri build` makes with `createUpdaterArtifacts`:

| file                          | keys                                                   |
|-------------------------------|--------------------------------------------------------|
| `*.app.tar.gz` (macOS)        | `darwin-<arch>-app`, and `darwin-<arch>`               |
| `*-setup.exe` (NSIS)          | `windows-<arch>-nsis`, and `windows-<arch>`            |
| `*.msi`                       | `windows-<arch>-msi`                                   |
| `*.AppImage`                  | `linux-<arch>-appimage`, and `linux-<arch>`            |
| `*.deb`                       | `linux-<arch>-deb`                                     |
| `*.rpm`                       | `linux-<arch>-rpm`                                     |

The app asks for `<os>-<arch>-<installer>` first (an app installed from the .deb gets a
.deb), then `<os>-<arch>`: that plain key names the bundle that can update any install, the
per-user NSIS installer on Windows, the AppImage on Linux. `<arch>` is `x86_64` or
`aarch64`, read from the file name (`amd64`, `x64`, `arm64` as the bundlers write them).
Each bundle needs `<bundle>.sig` beside it; its text is the manifest's `signature`. The
folder is searched recursively (one sub-folder per build job is fine); other files (the
CLI tarballs, the .dmg, SHA256SUMS) are not updater bundles and are passed over.

Refused, every problem listed, exit 1: a bundle without its signature, a signature
without its bundle, a bundle whose name lacks the version or an architecture, two bundles
for one key, and no bundle at all. With `--pubkey` (the updater's public key, as
`tauri.conf.json` carries it, or that file itself), also a signature made by another key:
apps trust only the key built into them, so a release signed by any other would be refused
by every installed app.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import datetime as dt
import json
import re
import sys
import urllib.parse
from pathlib import Path

# (suffix, os, installer, also the plain `<os>-<arch>` key)
BUNDLE_KINDS = (
    (".app.tar.gz", "darwin", "app", True),
    ("-setup.exe", "windows", "nsis", True),
    (".msi", "windows", "msi", False),
    (".AppImage", "linux", "appimage", True),
    (".deb", "linux", "deb", False),
    (".rpm", "linux", "rpm", False),
)

SIGNATURE_SUFFIX = ".sig"

# The bundlers' names for an architecture, as a word of the file name.
ARCH_WORDS = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "x64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}
ARCH_PATTERN = re.compile(
    r"(?<![A-Za-z0-9])(" + "|".join(sorted(map(re.escape, ARCH_WORDS), key=len, reverse=True)) + r")(?![A-Za-z0-9])"
)


def bundle_kind(name: str):
    """The bundle kind of a file name, or None when it is no updater bundle."""
    for suffix, os_name, installer, plain in BUNDLE_KINDS:
        if name.endswith(suffix):
            return os_name, installer, plain
    return None


def arch_of(name: str) -> str | None:
    """The architecture a bundle's file name names, or None when it names none or two."""
    found = {ARCH_WORDS[m.group(1)] for m in ARCH_PATTERN.finditer(name)}
    return found.pop() if len(found) == 1 else None


def key_id(minisign_text_b64: str) -> bytes | None:
    """The 8-byte key id in a Tauri updater public key or signature: base64 of a minisign
    file whose second line is base64 of the algorithm (2 bytes), the key id, then the key or
    the signature. None when it is not that shape."""
    try:
        text = base64.b64decode(minisign_text_b64.strip(), validate=True).decode("utf-8")
        lines = text.splitlines()
        raw = base64.b64decode(lines[1].strip(), validate=True)
    except (binascii.Error, UnicodeDecodeError, IndexError, ValueError):
        return None
    return raw[2:10] if len(raw) >= 10 else None


def pubkey_from(arg: str) -> str:
    """The public key `--pubkey` names: a tauri.conf.json's `plugins.updater.pubkey`, or the
    key's text itself."""
    path = Path(arg)
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))["plugins"]["updater"]["pubkey"]
    return arg


def manifest(version: str, base_url: str, folder: Path, notes: str, pub_date: str,
             trusted: bytes | None = None):
    """The manifest as a dict, and the problems found (the manifest is None if any)."""
    problems: list[str] = []
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    names = {p.name for p in files}
    platforms: dict[str, dict[str, str]] = {}
    owner: dict[str, str] = {}
    for path in files:
        name = path.name
        if name.endswith(SIGNATURE_SUFFIX):
            bundle = name[: -len(SIGNATURE_SUFFIX)]
            if bundle_kind(bundle) and bundle not in names:
                problems.append(f"{name}: a signature without its bundle {bundle}")
            continue
        kind = bundle_kind(name)
        if kind is None:
            continue
        os_name, installer, plain = kind
        if version not in name:
            problems.append(f"{name}: the file name does not carry the version {version} (a bundle of another build?)")
            continue
        arch = arch_of(name)
        if arch is None:
            problems.append(f"{name}: no single architecture (x86_64, amd64, x64, aarch64, arm64) in the file name")
            continue
        signature_path = path.with_name(name + SIGNATURE_SUFFIX)
        if not signature_path.is_file():
            problems.append(f"{name}: no signature {signature_path.name} beside it (built without TAURI_SIGNING_PRIVATE_KEY?)")
            continue
        signature = signature_path.read_text(encoding="utf-8").strip()
        if not signature:
            problems.append(f"{signature_path.name}: empty")
            continue
        if trusted is not None and key_id(signature) != trusted:
            problems.append(f"{signature_path.name}: not made by the key the app trusts (plugins.updater.pubkey)")
            continue
        entry = {"url": f"{base_url.rstrip('/')}/{urllib.parse.quote(name)}", "signature": signature}
        keys = [f"{os_name}-{arch}-{installer}"] + ([f"{os_name}-{arch}"] if plain else [])
        for key in keys:
            if key in platforms:
                problems.append(f"{key}: both {owner[key]} and {name}")
                continue
            platforms[key] = entry
            owner[key] = name
    if not platforms and not problems:
        problems.append(f"no updater bundle (.app.tar.gz, -setup.exe, .msi, .AppImage, .deb, .rpm) under {folder}")
    if problems:
        return None, problems
    return {
        "version": version,
        "notes": notes,
        "pub_date": pub_date,
        "platforms": dict(sorted(platforms.items())),
    }, []


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Write latest.json for tauri-plugin-updater from a folder of release artifacts.")
    parser.add_argument("version", help="the release's version, without a leading v (0.2.0)")
    parser.add_argument("base_url", help="where the release's files are downloaded from (…/releases/download/v0.2.0)")
    parser.add_argument("folder", type=Path, help="the folder holding the bundles and their .sig files")
    parser.add_argument("--notes", default="", help="the release notes the app shows")
    parser.add_argument("--pub-date", help="RFC 3339 time of the release (default: now)")
    parser.add_argument("-o", "--out", type=Path, help="write here instead of stdout")
    parser.add_argument("--pubkey", help="the updater's public key, or a tauri.conf.json carrying it: "
                                         "every signature must be by that key")
    args = parser.parse_args(argv)
    version = args.version.removeprefix("v")
    if not args.folder.is_dir():
        print(f"error: {args.folder} is not a folder", file=sys.stderr)
        return 1
    pub_date = args.pub_date or dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    trusted = None
    if args.pubkey:
        trusted = key_id(pubkey_from(args.pubkey))
        if trusted is None:
            print(f"error: --pubkey {args.pubkey}: not an updater public key", file=sys.stderr)
            return 1
    result, problems = manifest(version, args.base_url, args.folder, args.notes, pub_date, trusted)
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    text = json.dumps(result, indent=2) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
