"""scripts/latest_json.py on a folder laid out as the release job downloads it (one
sub-folder per build leg), with fake bundles and signatures named as `tauri build` and the
release workflow name them."""

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "latest_json.py"
VERSION = "0.2.0"
BASE = f"https://github.com/trimgate/trimgate/releases/download/v{VERSION}"

# Per build leg: the updater bundles (signed) and the other files the leg uploads.
LEGS = {
    "bundles-macos-aarch64": (["Trimgate_0.2.0_aarch64.app.tar.gz"],
                              ["Trimgate_0.2.0_aarch64.dmg", "trimgate-0.2.0-aarch64-apple-darwin.tar.gz"]),
    "bundles-macos-x86_64": (["Trimgate_0.2.0_x64.app.tar.gz"],
                             ["Trimgate_0.2.0_x64.dmg", "trimgate-0.2.0-x86_64-apple-darwin.tar.gz"]),
    "bundles-windows-x86_64": (["Trimgate_0.2.0_x64-setup.exe", "Trimgate_0.2.0_x64_en-US.msi"],
                               ["trimgate-0.2.0-x86_64-pc-windows-msvc.zip"]),
    "bundles-linux-x86_64": (["Trimgate_0.2.0_amd64.deb", "Trimgate-0.2.0-1.x86_64.rpm", "Trimgate_0.2.0_amd64.AppImage"],
                             ["trimgate-0.2.0-x86_64-unknown-linux-gnu.tar.gz"]),
    "bundles-linux-aarch64": (["Trimgate_0.2.0_arm64.deb", "Trimgate-0.2.0-1.aarch64.rpm",
                               "Trimgate_0.2.0_aarch64.AppImage"],
                              ["trimgate-0.2.0-aarch64-unknown-linux-gnu.tar.gz"]),
}


def signature_of(name):
    return f"dW50cnVzdGVkIGNvbW1lbnQ6{name.encode().hex()}"


def lay_out(folder: Path):
    for leg, (bundles, others) in LEGS.items():
        (folder / leg).mkdir(parents=True)
        for name in bundles:
            (folder / leg / name).write_bytes(b"bundle")
            (folder / leg / f"{name}.sig").write_text(signature_of(name) + "\n")
        for name in others:
            (folder / leg / name).write_bytes(b"other")


def run(folder, *extra):
    return subprocess.run([sys.executable, str(SCRIPT), VERSION, BASE, str(folder), *extra],
                          capture_output=True, text=True)


def test_every_platform_gets_its_bundle_url_and_signature(tmp_path):
    lay_out(tmp_path)
    result = run(tmp_path, "--notes", "Faster startup.")
    assert result.returncode == 0, result.stderr
    manifest = json.loads(result.stdout)
    assert manifest["version"] == VERSION
    assert manifest["notes"] == "Faster startup."
    dt.datetime.fromisoformat(manifest["pub_date"].replace("Z", "+00:00"))
    expected = {
        "darwin-aarch64": "Trimgate_0.2.0_aarch64.app.tar.gz",
        "darwin-aarch64-app": "Trimgate_0.2.0_aarch64.app.tar.gz",
        "darwin-x86_64": "Trimgate_0.2.0_x64.app.tar.gz",
        "darwin-x86_64-app": "Trimgate_0.2.0_x64.app.tar.gz",
        # The plain Windows key is the per-user NSIS installer: it updates without admin rights.
        "windows-x86_64": "Trimgate_0.2.0_x64-setup.exe",
        "windows-x86_64-nsis": "Trimgate_0.2.0_x64-setup.exe",
        "windows-x86_64-msi": "Trimgate_0.2.0_x64_en-US.msi",
        # The plain Linux key is the AppImage, which replaces itself wherever it is.
        "linux-x86_64": "Trimgate_0.2.0_amd64.AppImage",
        "linux-x86_64-appimage": "Trimgate_0.2.0_amd64.AppImage",
        "linux-x86_64-deb": "Trimgate_0.2.0_amd64.deb",
        "linux-x86_64-rpm": "Trimgate-0.2.0-1.x86_64.rpm",
        "linux-aarch64": "Trimgate_0.2.0_aarch64.AppImage",
        "linux-aarch64-appimage": "Trimgate_0.2.0_aarch64.AppImage",
        "linux-aarch64-deb": "Trimgate_0.2.0_arm64.deb",
        "linux-aarch64-rpm": "Trimgate-0.2.0-1.aarch64.rpm",
    }
    assert manifest["platforms"] == {
        key: {"url": f"{BASE}/{name}", "signature": signature_of(name)} for key, name in expected.items()
    }


def test_output_file_and_pub_date_can_be_given(tmp_path):
    lay_out(tmp_path / "artifacts")
    out = tmp_path / "latest.json"
    result = run(tmp_path / "artifacts", "--pub-date", "2026-12-01T00:00:00Z", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert json.loads(out.read_text())["pub_date"] == "2026-12-01T00:00:00Z"


def test_a_bundle_without_its_signature_is_refused(tmp_path):
    lay_out(tmp_path)
    (tmp_path / "bundles-linux-x86_64" / "Trimgate_0.2.0_amd64.deb.sig").unlink()
    result = run(tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "error: Trimgate_0.2.0_amd64.deb: no signature Trimgate_0.2.0_amd64.deb.sig beside it" in result.stderr


def test_every_problem_is_listed_at_once(tmp_path):
    """A stale bundle of another version, an orphan signature, a name without an
    architecture and a second bundle for one key: all four named, nothing written."""
    lay_out(tmp_path)
    leg = tmp_path / "bundles-linux-x86_64"
    (leg / "Trimgate_0.1.9_amd64.deb").write_bytes(b"old")
    (leg / "Trimgate_0.2.0_amd64.deb").unlink()
    (tmp_path / "bundles-windows-x86_64" / "Trimgate_0.2.0-setup.exe").write_bytes(b"x")
    (tmp_path / "bundles-windows-x86_64" / "Trimgate_0.2.0-setup.exe.sig").write_text("sig")
    extra = tmp_path / "bundles-extra"
    extra.mkdir()
    (extra / "Trimgate_0.2.0_x86_64.AppImage").write_bytes(b"y")
    (extra / "Trimgate_0.2.0_x86_64.AppImage.sig").write_text("sig")
    result = run(tmp_path)
    assert result.returncode == 1
    errors = result.stderr.splitlines()
    assert any("Trimgate_0.1.9_amd64.deb: the file name does not carry the version 0.2.0" in e for e in errors)
    assert any("Trimgate_0.2.0_amd64.deb.sig: a signature without its bundle" in e for e in errors)
    assert any("Trimgate_0.2.0-setup.exe: no single architecture" in e for e in errors)
    assert any(e.startswith("error: linux-x86_64-appimage: both ") for e in errors)
    assert len(errors) == 5, errors  # the duplicate AppImage clashes on two keys


def test_a_folder_without_bundles_is_refused(tmp_path):
    (tmp_path / "trimgate-0.2.0-x86_64-unknown-linux-gnu.tar.gz").write_bytes(b"cli")
    result = run(tmp_path)
    assert result.returncode == 1
    assert "error: no updater bundle" in result.stderr


def minisign(kind: bytes, key: bytes, payload_len: int) -> str:
    """A Tauri updater key or signature in minisign's layout (base64 of the text file whose
    second line is base64 of the algorithm, the 8-byte key id and the key or signature)."""
    line = __import__("base64").b64encode(kind + key + bytes(payload_len)).decode()
    text = f"untrusted comment: test\n{line}\n"
    if kind == b"ED":
        text += "trusted comment: timestamp:0\tfile:x\n" + __import__("base64").b64encode(bytes(64)).decode() + "\n"
    return __import__("base64").b64encode(text.encode()).decode()


def test_with_the_public_key_a_signature_by_another_key_is_refused(tmp_path):
    ours, theirs = b"\x01" * 8, b"\x02" * 8
    lay_out(tmp_path)
    for sig in tmp_path.rglob("*.sig"):
        sig.write_text(minisign(b"ED", ours, 64) + "\n")
    conf = tmp_path.parent / "tauri.conf.json"
    conf.write_text(json.dumps({"plugins": {"updater": {"pubkey": minisign(b"Ed", ours, 32)}}}))
    assert run(tmp_path, "--pubkey", str(conf)).returncode == 0
    # One bundle signed by another key: the release would be refused by every installed app.
    (tmp_path / "bundles-linux-x86_64" / "Trimgate_0.2.0_amd64.deb.sig").write_text(minisign(b"ED", theirs, 64))
    result = run(tmp_path, "--pubkey", minisign(b"Ed", ours, 32))
    assert result.returncode == 1
    assert "Trimgate_0.2.0_amd64.deb.sig: not made by the key the app trusts" in result.stderr
    assert run(tmp_path, "--pubkey", "not a key").returncode == 1
