"""scripts/homebrew.py: the formula and the cask rendered from packaging/homebrew/ with a
release's SHA256SUMS, checked as Ruby with `ruby -c` where Ruby is installed."""

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "homebrew.py"
VERSION = "0.2.0"
FILES = [
    "trimgate-0.2.0-aarch64-apple-darwin.tar.gz",
    "trimgate-0.2.0-x86_64-apple-darwin.tar.gz",
    "trimgate-0.2.0-aarch64-unknown-linux-gnu.tar.gz",
    "trimgate-0.2.0-x86_64-unknown-linux-gnu.tar.gz",
    "Trimgate_0.2.0_aarch64.dmg",
    "Trimgate_0.2.0_x64.dmg",
]


def digest(name):
    return hashlib.sha256(name.encode()).hexdigest()


def sums_file(tmp_path, names=FILES):
    path = tmp_path / "SHA256SUMS"
    # One entry in binary mode (`*name`), as `sha256sum -b` writes it.
    lines = [f"{digest(n)}  {n}" for n in names[1:]] + [f"{digest(names[0])} *{names[0]}"] if names else []
    path.write_text("\n".join(lines + [f"{digest('install.sh')}  install.sh"]) + "\n")
    return path


def render(tmp_path, sums, *extra):
    return subprocess.run([sys.executable, str(SCRIPT), "--version", f"v{VERSION}", "--sums", str(sums),
                           "--out", str(tmp_path / "tap"), "--repo", "example/trimgate", *extra],
                          capture_output=True, text=True)


def test_formula_and_cask_carry_the_version_urls_and_checksums(tmp_path):
    result = render(tmp_path, sums_file(tmp_path))
    assert result.returncode == 0, result.stderr
    formula = (tmp_path / "tap" / "Formula" / "trimgate.rb").read_text()
    cask = (tmp_path / "tap" / "Casks" / "trimgate-app.rb").read_text()
    for text in (formula, cask):
        assert "{{" not in text and "#:" not in text
        assert 'homepage "https://github.com/example/trimgate"' in text
        assert f'version "{VERSION}"' in text
    for name in FILES[:4]:
        url = f'url "https://github.com/example/trimgate/releases/download/v{VERSION}/{name}"'
        assert re.search(re.escape(url) + r'\n\s+sha256 "' + digest(name) + '"', formula), name
    assert f'arm:   "{digest("Trimgate_0.2.0_aarch64.dmg")}"' in cask
    assert f'intel: "{digest("Trimgate_0.2.0_x64.dmg")}"' in cask
    assert 'app "Trimgate.app"' in cask
    assert '"~/Library/Application Support/dev.trimgate.trimgate"' in cask


def test_a_file_missing_from_sha256sums_is_named_and_nothing_is_written(tmp_path):
    result = render(tmp_path, sums_file(tmp_path, [n for n in FILES if not n.endswith("_x64.dmg")]))
    assert result.returncode == 1
    assert result.stderr == "error: trimgate-app.rb: SHA256SUMS has no entry for Trimgate_0.2.0_x64.dmg\n"
    assert not (tmp_path / "tap").exists()


def test_an_unknown_placeholder_is_refused(tmp_path):
    templates = tmp_path / "templates"
    shutil.copytree(ROOT / "packaging" / "homebrew", templates)
    formula = templates / "trimgate.rb"
    formula.write_text(formula.read_text().replace('license "Apache-2.0"', 'license "{{licence}}"'))
    result = render(tmp_path, sums_file(tmp_path), "--templates", str(templates))
    assert result.returncode == 1
    assert "error: trimgate.rb: an unknown placeholder {{licence}}" in result.stderr


@pytest.mark.skipif(not shutil.which("ruby"), reason="ruby is not installed (apt-get install ruby)")
def test_templates_and_rendered_files_are_valid_ruby(tmp_path):
    assert render(tmp_path, sums_file(tmp_path)).returncode == 0
    for path in [*sorted((ROOT / "packaging" / "homebrew").glob("*.rb")), *sorted((tmp_path / "tap").rglob("*.rb"))]:
        result = subprocess.run(["ruby", "-c", str(path)], capture_output=True, text=True)
        assert result.returncode == 0 and result.stdout.strip() == "Syntax OK", f"{path}: {result.stderr}"
