"""scripts/install.sh as a user runs it, against a release served from this machine: a
folder laid out like a GitHub release (the CLI tarball named for this machine's target
triple, SHA256SUMS, latest.json) behind `python -m http.server` on 127.0.0.1, the script
run by `sh` (dash on Debian: POSIX only) with TRIMGATE_RELEASE_URL and
TRIMGATE_INSTALL_DIR pointing into temporary folders.

The tarball carries the real binary: TRIMGATE_BIN, else the debug build in
$CARGO_TARGET_DIR (or ~/.cache/trimgate-target, where .ci/run builds)."""

import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL_SH = ROOT / "scripts" / "install.sh"
VERSION = "0.1.0"
OLD_VERSION = "0.0.9"
ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def trimgate_bin() -> Path:
    if os.environ.get("TRIMGATE_BIN"):
        return Path(os.environ["TRIMGATE_BIN"])
    for target in (os.environ.get("CARGO_TARGET_DIR"), str(Path.home() / ".cache" / "trimgate-target"),
                   str(ROOT / "target")):
        if target and (Path(target) / "debug" / "trimgate").is_file():
            return Path(target) / "debug" / "trimgate"
    pytest.fail("no trimgate binary: build it (cargo build -p trimgate) or set TRIMGATE_BIN")


def machine_triple() -> str:
    arch = ARCHES.get(platform.machine())
    if sys.platform != "linux" or arch is None:
        pytest.skip(f"the installer test plays a Linux release; this is {sys.platform} {platform.machine()}")
    return f"{arch}-unknown-linux-gnu"


def tarball(path: Path, files: dict, top: str):
    """A .tar.gz holding `files` ({name: (bytes, mode)}) under the folder `top`."""
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, (data, mode) in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def release(folder: Path, version: str, files: dict, top=".", sums_for=None, extra_sums=()):
    """A release folder: the CLI tarball (its files under `top`: `.` as scripts/release.sh
    packs it), SHA256SUMS (for `sums_for`, default the tarball) and latest.json. Returns the
    tarball's name."""
    folder.mkdir(parents=True)
    triple = machine_triple()
    name = f"trimgate-{version}-{triple}.tar.gz"
    tarball(folder / name, files, top)
    (folder / "latest.json").write_text(json.dumps({"version": version, "notes": "", "platforms": {}}, indent=2))
    listed = [name] if sums_for is None else sums_for
    lines = [f"{sha256(folder / n)}  {n}" for n in listed] + list(extra_sums)
    (folder / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return name


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Every test's releases, under one folder served on an ephemeral loopback port."""
    root = tmp_path_factory.mktemp("releases")
    binary = trimgate_bin().read_bytes()
    fake_old = f"#!/bin/sh\necho 'trimgate {OLD_VERSION}'\n".encode()

    release(root / "good", VERSION, {"trimgate": (binary, 0o755)})
    release(root / "nested", VERSION, {"trimgate": (binary, 0o755)}, top=f"trimgate-{VERSION}-{machine_triple()}")
    release(root / "old", OLD_VERSION, {"trimgate": (fake_old, 0o755)})
    # The tarball changed after SHA256SUMS was written.
    name = release(root / "tampered", VERSION, {"trimgate": (binary, 0o755)})
    with open(root / "tampered" / name, "ab") as f:
        f.write(b"\0")
    # SHA256SUMS lists another file only.
    release(root / "unlisted", VERSION, {"trimgate": (binary, 0o755)}, sums_for=[],
            extra_sums=[f"{'0' * 64}  trimgate-{VERSION}-sparc64-unknown-linux-gnu.tar.gz"])
    # A binary for another machine: the checksum matches, the program does not run here.
    release(root / "broken", VERSION, {"trimgate": (b"\x7fELF not really\n", 0o755)})

    proc = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    match = re.search(r"port (\d+)", line)
    assert match, f"http.server said: {line!r}"
    yield {"url": f"http://127.0.0.1:{match.group(1)}", "root": root}
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def user(tmp_path):
    """A user's home with a config file in its XDG config dir, and an install dir not on PATH."""
    home = tmp_path / "home"
    config = home / ".config" / "trimgate" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[server]\nlisten = "127.0.0.1:8788"\n')
    return {"home": home, "bin": tmp_path / "bin", "config": config}


def install(server, user, which="good", *args, **env):
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(user["home"]),
        "XDG_CONFIG_HOME": str(user["home"] / ".config"),
        "TRIMGATE_RELEASE_URL": f"{server['url']}/{which}",
        "TRIMGATE_INSTALL_DIR": str(user["bin"]),
    }
    environ.update(env)
    return subprocess.run(["sh", str(INSTALL_SH), *args], env=environ, capture_output=True, text=True, timeout=120)


def installed_version(user) -> str:
    out = subprocess.run([str(user["bin"] / "trimgate"), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_a_fresh_install_puts_a_working_trimgate_in_the_install_dir(server, user):
    """No trimgate yet, the install dir missing: it is made, and the installed binary runs."""
    result = install(server, user)
    assert result.returncode == 0, result.stderr
    assert installed_version(user) == f"trimgate {VERSION}"
    assert f"installed trimgate {VERSION}" in result.stdout
    assert "is not on your PATH" in result.stdout, "the install dir is not on PATH: the script says so"
    assert not list(user["bin"].glob(".trimgate.new.*")), "no staging file is left behind"


def test_the_version_comes_from_latest_json_unless_trimgate_version_names_one(server, user):
    """TRIMGATE_VERSION picks the tarball's name; a version the release lacks is refused."""
    result = install(server, user, "good", TRIMGATE_VERSION=f"v{VERSION}")
    assert result.returncode == 0, result.stderr
    result = install(server, user, "good", TRIMGATE_VERSION="9.9.9")
    assert result.returncode != 0
    assert "SHA256SUMS has no entry for trimgate-9.9.9-" in result.stderr


def test_a_tarball_with_the_binary_in_a_folder_installs_too(server, user):
    result = install(server, user, "nested")
    assert result.returncode == 0, result.stderr
    assert installed_version(user) == f"trimgate {VERSION}"


def test_running_it_again_upgrades_and_leaves_the_config_alone(server, user):
    """An older trimgate installed, then the new release twice: the binary is replaced each
    time, the config in the XDG config dir keeps its bytes and its mtime."""
    assert install(server, user, "old").returncode == 0
    assert installed_version(user) == f"trimgate {OLD_VERSION}"
    config_before = (user["config"].read_bytes(), user["config"].stat().st_mtime_ns)

    for _ in range(2):
        result = install(server, user, "good")
        assert result.returncode == 0, result.stderr
        assert installed_version(user) == f"trimgate {VERSION}"
    assert (user["config"].read_bytes(), user["config"].stat().st_mtime_ns) == config_before
    assert sorted(p.name for p in user["bin"].iterdir()) == ["trimgate"]


def test_a_tampered_tarball_is_refused_and_the_installed_trimgate_stays(server, user):
    assert install(server, user, "old").returncode == 0
    before = sha256(user["bin"] / "trimgate")
    result = install(server, user, "tampered")
    assert result.returncode != 0
    assert re.search(r"^error: checksum mismatch for trimgate-.*\.tar\.gz .*refusing to install it$",
                     result.stderr, re.M), result.stderr
    assert sha256(user["bin"] / "trimgate") == before
    assert installed_version(user) == f"trimgate {OLD_VERSION}"


def test_a_tarball_missing_from_sha256sums_is_refused(server, user):
    result = install(server, user, "unlisted")
    assert result.returncode != 0
    assert f"error: SHA256SUMS has no entry for trimgate-{VERSION}-{machine_triple()}.tar.gz: refusing to install it" \
        in result.stderr
    assert not (user["bin"] / "trimgate").exists()


def test_a_binary_that_does_not_run_here_is_not_installed(server, user):
    assert install(server, user, "old").returncode == 0
    result = install(server, user, "broken")
    assert result.returncode != 0
    assert "does not run on this machine" in result.stderr
    assert installed_version(user) == f"trimgate {OLD_VERSION}"


@pytest.mark.parametrize("os_name, machine, message", [
    ("Linux", "sparc64", "error: unsupported architecture: sparc64 (Trimgate ships x86_64 and aarch64 builds)"),
    ("FreeBSD", "x86_64", "error: unsupported OS: FreeBSD"),
])
def test_an_unknown_os_or_architecture_is_refused(server, user, os_name, machine, message):
    result = install(server, user, "good", TRIMGATE_TEST_UNAME_S=os_name, TRIMGATE_TEST_UNAME_M=machine)
    assert result.returncode != 0
    assert result.stderr.startswith(message), result.stderr
    assert not user["bin"].exists(), "nothing is written before the platform is known"


def test_app_without_an_app_in_the_release_says_so_and_installs_nothing(server, user):
    result = install(server, user, "good", "--app")
    assert result.returncode != 0
    assert re.search(r"^error: this release has no desktop app for linux \w+ \(Trimgate.+ is not in it\): "
                     r"run without --app for the trimgate command alone$", result.stderr, re.M), result.stderr
    assert not (user["bin"] / "trimgate").exists()


def test_help_and_unknown_options(server, user):
    result = install(server, user, "good", "--help")
    assert result.returncode == 0
    assert "usage: install.sh [--app] [--help]" in result.stdout
    assert "TRIMGATE_INSTALL_DIR" in result.stdout
    result = install(server, user, "good", "--frobnicate")
    assert result.returncode != 0
    assert result.stderr == "error: unknown option: --frobnicate (see --help)\n"


def test_an_unreachable_release_is_one_clear_line(server, user):
    result = install(server, user, "missing")
    assert result.returncode != 0
    assert result.stderr == f"error: cannot download {server['url']}/missing/latest.json\n"


@pytest.mark.skipif(not shutil.which("wget"), reason="wget is not installed")
def test_wget_serves_when_curl_is_missing(server, user, tmp_path):
    """A PATH with every tool the script uses but curl."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("sh", "uname", "mktemp", "rm", "mkdir", "cp", "mv", "chmod", "tar", "gzip", "awk", "sed", "head",
                 "cut", "sha256sum", "ldd", "grep", "wget", "id", "cat"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    result = install(server, user, "good", PATH=str(tools))
    assert result.returncode == 0, result.stderr
    assert installed_version(user) == f"trimgate {VERSION}"
