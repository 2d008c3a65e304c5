"""The Kubernetes manifests under deploy/kubernetes: each resource valid against the
Kubernetes schemas (kubernetes-validate, strict), the kustomization naming each of them, the
pods non-root on a read-only root with the gateway's probes, and the ConfigMap's variables a
config the gateway itself accepts."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
TRIMGATE_BIN = os.environ.get("TRIMGATE_BIN", str(ROOT / "target" / "debug" / "trimgate"))


def resources():
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    return [MANIFESTS / name for name in kustomization["resources"]]


def validate(*paths):
    tool = shutil.which("kubernetes-validate") or str(Path(os.sys.executable).parent / "kubernetes-validate")
    return subprocess.run([tool, "--strict", *map(str, paths)], capture_output=True, text=True)


def test_every_resource_is_valid_against_the_schemas():
    files = resources()
    on_disk = sorted(p.name for p in MANIFESTS.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(p.name for p in files) == on_disk, "the kustomization names every manifest"
    out = validate(*files)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_validation_catches_a_wrong_field(tmp_path):
    # The check can fail: a misspelt field in a copy of the Deployment is refused.
    broken = tmp_path / "deployment.yaml"
    broken.write_text((MANIFESTS / "deployment.yaml").read_text().replace("readinessProbe:", "readynessProbe:"))
    out = validate(broken)
    assert out.returncode != 0, out.stdout


def load(name):
    return yaml.safe_load((MANIFESTS / name).read_text())


def test_pods_run_non_root_read_only_with_the_gateways_probes():
    spec = load("deployment.yaml")["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 65532
    (container,) = spec["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["limits"]["memory"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/data", "/run/secrets"} <= mounts
    assert load("pdb.yaml")["spec"]["minAvailable"] >= 1
    assert load("hpa.yaml")["spec"]["scaleTargetRef"]["name"] == "trimgate"


def test_the_configmap_is_a_config_the_gateway_accepts(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIMGATE")}
    env.update(load("configmap.yaml")["data"])
    env["TRIMGATE__LEDGER__URL"] = "postgres://trimgate:pw-4f9c@127.0.0.1:5432/trimgate"
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["HOME"] = str(tmp_path)
    out = subprocess.run([TRIMGATE_BIN, "check"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "config is valid" in out.stdout
    assert "pw-4f9c" not in out.stdout + out.stderr, "the ledger password is never printed"
    assert env["TRIMGATE_LOG_DIR"] == "off", "pods log to their output, not to a file"


SYSTEMD_UNIT = ROOT / "deploy" / "systemd" / "trimgate.service"


def verify_unit(tmp_path, text):
    """`systemd-analyze verify` on the unit, its ExecStart pointed at the binary under test
    (verify wants the program to exist)."""
    unit = tmp_path / "trimgate.service"
    unit.write_text(text.replace("/usr/local/bin/trimgate", TRIMGATE_BIN))
    return subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)


def test_the_systemd_unit_verifies_without_a_warning(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze is missing (scripts/deps.sh test installs systemd)")
    text = SYSTEMD_UNIT.read_text()
    out = verify_unit(tmp_path, text)
    assert out.returncode == 0 and "trimgate.service" not in out.stderr, out.stderr
    # The check can fail: an unknown directive is reported.
    out = verify_unit(tmp_path, text.replace("NoNewPrivileges=yes", "NoNewPrivilege=yes"))
    assert "Unknown key" in out.stderr, out.stderr
    # The service's command is one the binary takes, and no key is written in the unit.
    assert "ExecStart=/usr/local/bin/trimgate serve --config /etc/trimgate/config.toml" in text
    assert "sk-" not in text and "LoadCredential=" in text
