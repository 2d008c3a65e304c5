"""The server image, as users build it: `deploy/image.sh` builds deploy/Containerfile with
buildah; its config is read back (user, entrypoint, healthcheck, port, volume, labels), its
size measured, and its root filesystem unpacked with umoci and run the way a runtime would:
in new mount and PID namespaces, chrooted, as uid 65532, the root read-only, /data a
writable volume and /run/secrets the secret files. Configured by environment variables
only. The official SDKs then talk to it, and the mock provider answers.

Needs root (mounts) plus buildah and umoci (scripts/deps.sh image)."""

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import anthropic
import openai
import pytest

ROOT = Path(__file__).resolve().parents[2]
TRIMGATE_BIN = os.environ.get("TRIMGATE_BIN", str(ROOT / "target" / "debug" / "trimgate"))
GATEWAY_KEY = "tg-ci-" + "5" * 40
OPENAI_KEY = "sk-mock-openai"
ANTHROPIC_KEY = "sk-ant-mock"
MAX_IMAGE_BYTES = 40 * 1000 * 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("the image test runs the unpacked image with mount namespaces: run it as root")
    for tool in ("buildah", "umoci", "unshare", "chroot"):
        assert shutil.which(tool), f"{tool} is missing (scripts/deps.sh image)"
    work = tmp_path_factory.mktemp("image")
    name = subprocess.run([str(ROOT / "deploy" / "image.sh")], check=True, capture_output=True,
                          text=True, cwd=ROOT).stdout.strip().splitlines()[-1]
    inspected = json.loads(subprocess.run(["buildah", "inspect", "--type", "image", name], check=True,
                                          capture_output=True, text=True).stdout)
    layout = work / "oci"
    subprocess.run(["buildah", "push", "--quiet", name, f"oci:{layout}:latest"], check=True)
    bundle = work / "bundle"
    subprocess.run(["umoci", "unpack", "--image", f"{layout}:latest", str(bundle)], check=True,
                   capture_output=True)
    return {"name": name, "inspected": inspected, "layout": layout, "bundle": bundle, "work": work}


def docker_config(image):
    return image["inspected"]["Docker"]["config"]


def test_the_image_config_says_how_it_runs(image):
    config = docker_config(image)
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["/usr/local/bin/trimgate"]
    assert config["Cmd"] == ["serve", "--log-json"]
    assert list(config["ExposedPorts"]) == ["8788/tcp"]
    assert list(config["Volumes"]) == ["/data"]
    health = config["Healthcheck"]
    assert health["Test"] == ["CMD", "/usr/local/bin/trimgate", "healthcheck"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    version = next(line.split('"')[1] for line in (ROOT / "Cargo.toml").read_text().splitlines()
                   if line.startswith("version = "))
    assert labels["org.opencontainers.image.version"] == version
    env = dict(e.split("=", 1) for e in config["Env"])
    assert env["TRIMGATE__SERVER__LISTEN"] == "0.0.0.0:8788"
    assert env["TRIMGATE__LEDGER__URL"].startswith("sqlite:///data/")
    assert env["TRIMGATE_LOG_DIR"] == "off", "a container logs to its output, not to a file"


def tree_bytes(root):
    return sum(p.lstat().st_size for p in Path(root).rglob("*") if p.is_file() and not p.is_symlink())


def test_the_image_is_small_and_holds_only_what_serving_needs(image):
    rootfs = image["bundle"] / "rootfs"
    size = tree_bytes(rootfs)
    layers = sum(p.stat().st_size for p in (image["layout"] / "blobs").rglob("*") if p.is_file())
    print(f"\nimage: {size / 1e6:.1f} MB unpacked, {layers / 1e6:.1f} MB as stored (compressed layers)")
    assert size <= MAX_IMAGE_BYTES, f"{size} bytes unpacked"
    files = sorted(str(p.relative_to(rootfs)) for p in rootfs.rglob("*") if p.is_file())
    # No shell, no package manager, no keychain or D-Bus library: the binary, the C
    # runtime it links, the CA bundle and the user's entries.
    assert not any(f.endswith(("/sh", "/bash")) for f in files), files
    assert not any("dbus" in f or "secret" in f for f in files), files
    assert "usr/local/bin/trimgate" in files
    assert "etc/ssl/certs/ca-certificates.crt" in files
    assert len(files) <= 12, files
    data = rootfs / "data"
    assert data.is_dir() and data.stat().st_uid == 65532


class Container:
    """The unpacked image run as a runtime would: its entrypoint, user and environment
    from the bundle's config.json, a read-only root, /data and /run/secrets mounted."""

    def __init__(self, image, env, args=None):
        self.bundle = image["bundle"]
        spec = json.loads((self.bundle / "config.json").read_text())
        process = spec["process"]
        self.user = f"{process['user']['uid']}:{process['user']['gid']}"
        self.args = args or process["args"]
        self.env = dict(e.split("=", 1) for e in process["env"])
        self.env.update(env)
        self.rootfs = self.bundle / "rootfs"
        self.data = image["work"] / f"data-{time.monotonic_ns()}"
        self.data.mkdir()
        os.chown(self.data, 65532, 65532)
        self.secrets = image["work"] / f"secrets-{time.monotonic_ns()}"
        self.secrets.mkdir()
        self.proc = None
        self.log = self.data.parent / f"{self.data.name}.log"

    def secret(self, name, value):
        path = self.secrets / name
        path.write_text(value)
        os.chown(path, 65532, 65532)
        path.chmod(0o400)

    def command(self, args):
        r, d, s = self.rootfs, self.data, self.secrets
        inner = (
            f"mount --bind {r} {r} && mount -o remount,bind,ro {r} && "
            f"mount --bind {d} {r}/data && mount --bind -o ro {s} {r}/run/secrets && "
            f"mount -t proc proc {r}/proc && "
            f'exec chroot --userspec={self.user} --groups= {r} "$@"'
        )
        return ["unshare", "--mount", "--pid", "--fork", "--kill-child", "sh", "-c", inner, "sh", *args]

    def start(self):
        self.proc = subprocess.Popen(self.command(self.args), env=self.env, stdout=subprocess.PIPE,
                                     stderr=open(self.log, "w"), text=True)
        return self

    def run(self, args, timeout=30):
        return subprocess.run(self.command(args), env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def stderr(self):
        return self.log.read_text() if self.log.exists() else ""

    def wait_listening(self, port):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the container exited {self.proc.returncode}:\n{self.stderr()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        pytest.fail(f"nothing listens on {port}:\n{self.stderr()}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            # `unshare --fork` waits for its child and does not pass signals on: the
            # entrypoint (its child, after the execs) gets the SIGTERM a runtime would send.
            kids = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True,
                                  text=True).stdout.split()
            for pid in kids:
                os.kill(int(pid), signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def mock():
    proc = subprocess.Popen([TRIMGATE_BIN, "mock", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    url = line.strip().rsplit(" ", 1)[-1]
    assert url.startswith("http://127.0.0.1:"), line
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def server_env(port, mock_url):
    return {
        "TRIMGATE__SERVER__LISTEN": f"0.0.0.0:{port}",
        "TRIMGATE__GATEWAY_KEYS__0__NAME": "ci",
        "TRIMGATE__GATEWAY_KEYS__0__KEY": '{ file = "/run/secrets/gateway_key" }',
        "TRIMGATE__PROVIDERS__MOCK_OPENAI__KIND": "openai",
        "TRIMGATE__PROVIDERS__MOCK_OPENAI__BASE_URL": f"{mock_url}/v1",
        "TRIMGATE__PROVIDERS__MOCK_OPENAI__API_KEY": '{ file = "/run/secrets/openai_key" }',
        "TRIMGATE__PROVIDERS__MOCK_OPENAI__MODELS": '["gpt-5"]',
        "TRIMGATE__PROVIDERS__MOCK_ANTHROPIC__KIND": "anthropic",
        "TRIMGATE__PROVIDERS__MOCK_ANTHROPIC__BASE_URL": f"{mock_url}/v1",
        "TRIMGATE__PROVIDERS__MOCK_ANTHROPIC__API_KEY": '{ env = "ANTHROPIC_API_KEY" }',
        "TRIMGATE__PROVIDERS__MOCK_ANTHROPIC__MODELS": '["claude-sonnet-5-5"]',
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    }


def test_the_unpacked_image_serves_sdk_traffic_with_its_state_on_the_volume(image, mock):
    port = free_port()
    box = Container(image, server_env(port, mock))
    box.secret("gateway_key", GATEWAY_KEY)
    box.secret("openai_key", OPENAI_KEY)
    box.start()
    try:
        box.wait_listening(port)
        base = f"http://127.0.0.1:{port}"
        chat = openai.OpenAI(base_url=f"{base}/v1", api_key=GATEWAY_KEY, max_retries=0)
        r = chat.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "from the image"}])
        assert "from the image" in r.choices[0].message.content
        claude = anthropic.Anthropic(base_url=base, api_key=GATEWAY_KEY, max_retries=0)
        m = claude.messages.create(model="claude-sonnet-5-5", max_tokens=64,
                                   messages=[{"role": "user", "content": "and through messages"}])
        assert "and through messages" in m.content[0].text
        # Without the gateway key: refused, in the client's shape.
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{base}/v1", api_key="wrong", max_retries=0).chat.completions.create(
                model="gpt-5", messages=[{"role": "user", "content": "x"}])

        healthy = box.run(["/usr/local/bin/trimgate", "healthcheck"])
        assert healthy.returncode == 0, healthy.stderr
    finally:
        box.stop()
    assert box.proc.returncode == 0, box.stderr()
    ledger = box.data / "ledger.sqlite"
    assert ledger.exists(), sorted(p.name for p in box.data.iterdir())
    assert ledger.stat().st_uid == 65532
    db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    rows = db.execute("SELECT model_requested, status, gateway_key FROM requests ORDER BY rowid").fetchall()
    db.close()
    assert rows[:2] == [("gpt-5", 200, "ci"), ("claude-sonnet-5-5", 200, "ci")], rows
    # Keys never reach the log.
    log = box.stderr()
    for secret in (GATEWAY_KEY, OPENAI_KEY, ANTHROPIC_KEY):
        assert secret not in log

    down = box.run(["/usr/local/bin/trimgate", "healthcheck"])
    assert down.returncode == 1, down.stdout
    assert "no gateway answers" in down.stderr


def test_the_image_refuses_to_serve_open_or_misconfigured(image, mock):
    env = server_env(free_port(), mock)
    open_relay = {k: v for k, v in env.items() if "GATEWAY_KEYS" not in k}
    box = Container(image, open_relay)
    out = box.run(box.args)
    assert out.returncode != 0
    assert "without gateway keys" in out.stderr, out.stderr

    bad = Container(image, {**env, "TRIMGATE__SERVER__MAX_IN_FLIGHT": "lots"})
    out = bad.run(bad.args)
    assert out.returncode != 0
    assert "TRIMGATE__SERVER__MAX_IN_FLIGHT" in out.stderr, out.stderr
