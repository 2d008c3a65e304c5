"""What the cloud providers' SDK tests (test_clouds_sdk.py) share: starting a mock and a
gateway of their own, the credentials each cloud takes (AWS keys in a credential chain
cut off from this machine's, an Entra app secret, a Google service-account key made
here), what the mock captured, and the checks done with the clouds' own libraries
(botocore's SigV4 signer, google-auth's JWT verifier).

Nothing here fakes the gateway's side: it signs, fetches tokens and reads event streams
with its own code, and these helpers only look at what arrived.
"""

import contextlib
import datetime
import json
import os
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request
from unittest import mock as patching

from conftest import BIN, DATA_HOME

# AWS: the keys the gateway's credential chain finds (in its environment) and the region.
AWS_KEY_ID = "AKIATRIMGATETEST0001"
AWS_SECRET = "trimgate/test+Secret/Key0000000000000000"
AWS_REGION = "us-east-1"
# Azure: the mock's default api-key (MOCK_AZURE_KEY), and an Entra app's secret.
AZURE_KEY = "mock-azure-openai-key"
ENTRA_SECRET = "entra-client-secret-for-tests"
ENTRA_TENANT = "tenant-1"
ENTRA_CLIENT = "client-1"
AZURE_API_VERSION = "2024-10-21"
AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
DEPLOYMENT = "my-deployment"
# Vertex.
PROJECT = "proj"
LOCATION = "us-east5"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"

# Model ids as each cloud names them.
BEDROCK_CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_NOVA = "amazon.nova-pro-v1:0"
VERTEX_CLAUDE = "claude-sonnet-4-5@20250929"
VERTEX_GEMINI = "gemini-2.5-pro"

# The environment variables through which this machine's own cloud credentials could reach
# a gateway under test: none may.
_CLOUD_ENV_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCLOUD", "CLOUDSDK_")


def isolated_env(aws=None, extra=None):
    """An environment for a trimgate process: this one's, less every cloud credential
    variable, with an AWS credential chain that finds only `aws` (`AWS_*` variables):
    empty shared config and credentials files, no instance metadata."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_CLOUD_ENV_PREFIXES)}
    empty = os.path.join(DATA_HOME, "aws-empty")
    for name in ("config", "credentials"):
        path = os.path.join(empty, name)
        os.makedirs(empty, exist_ok=True)
        open(path, "a").close()
    env.update({
        "AWS_CONFIG_FILE": os.path.join(empty, "config"),
        "AWS_SHARED_CREDENTIALS_FILE": os.path.join(empty, "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "XDG_DATA_HOME": DATA_HOME,
        "TRIMGATE_LOG": "warn",
    })
    env.update(aws or {})
    env.update(extra or {})
    return env


def aws_keys(session_token=None):
    """The AWS credential chain's environment variables for the test keys."""
    keys = {"AWS_ACCESS_KEY_ID": AWS_KEY_ID, "AWS_SECRET_ACCESS_KEY": AWS_SECRET}
    if session_token:
        keys["AWS_SESSION_TOKEN"] = session_token
    return keys


class Process:
    """A trimgate process started with `args`, stopped on `stop()`; its stderr in a file
    that a failing test prints."""

    def __init__(self, args, prefix, env):
        self.dir = tempfile.mkdtemp(prefix="trimgate-clouds-")
        self.stderr_path = os.path.join(self.dir, "stderr.log")
        with open(self.stderr_path, "w") as stderr:
            self.proc = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        for line in self.proc.stdout:
            if line.startswith(prefix):
                self.url = line[len(prefix):].strip()
                return
        raise RuntimeError(f"{args[0]} exited before listening:\n{self.stderr()}")

    def stderr(self):
        with open(self.stderr_path) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def mock_process(*flags):
    """`trimgate mock` on an ephemeral port, with `flags` (`--fail-status 429`)."""
    proc = Process(["mock", "--listen", "127.0.0.1:0", *flags], "mock provider listening on ", isolated_env())
    try:
        yield proc
    finally:
        proc.stop()


@contextlib.contextmanager
def gateway_process(config, env):
    """`trimgate serve` with `config` (TOML text) and `env` (see `isolated_env`)."""
    with tempfile.TemporaryDirectory(prefix="trimgate-clouds-config-") as d:
        path = os.path.join(d, "config.toml")
        with open(path, "w") as f:
            f.write(config)
        proc = Process(["serve", "--config", path, "--listen", "127.0.0.1:0"], "Trimgate listening on ", env)
        try:
            yield proc
        finally:
            proc.stop()


def get_json(url):
    return json.loads(urllib.request.urlopen(url, timeout=10).read())


class Captured:
    """What the mock received, read from `/_mock/requests`."""

    def __init__(self, url):
        self.url = url

    def clear(self):
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/_mock/requests", method="DELETE")).read()

    def all(self):
        return get_json(f"{self.url}/_mock/requests")

    def to(self, path_start):
        """The captured requests whose path starts with `path_start`."""
        return [r for r in self.all() if r["path"].startswith(path_start)]

    def one(self, path_start):
        found = self.to(path_start)
        assert len(found) == 1, f"{path_start}: {[r['path'] for r in self.all()]}"
        return found[0]


def form(body):
    """A form-encoded body's fields."""
    return dict(urllib.parse.parse_qsl(body, keep_blank_values=True))


# ---------------------------------------------------------------------------------------
# SigV4, recomputed with botocore

def authorization_parts(value):
    """`AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…` as a dict."""
    algorithm, _, rest = value.partition(" ")
    assert algorithm == "AWS4-HMAC-SHA256", value
    return dict(part.strip().split("=", 1) for part in rest.split(","))


def botocore_authorization(captured, mock_url, key_id, secret, token=None, region=AWS_REGION):
    """The `Authorization` header botocore's SigV4 signer computes for the request the mock
    captured: its method, URL (the path as sent, escapes and all), body, the headers the
    gateway's signature lists, and its `x-amz-date` as the signing time."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    headers = captured["headers"]
    signed = authorization_parts(headers["authorization"])["SignedHeaders"].split(";")
    request = AWSRequest(
        method=captured["method"],
        url=f"{mock_url}{captured['path_and_query']}",
        data=captured["body"].encode(),
        headers={name: headers[name] for name in signed if name in headers},
    )
    signed_at = datetime.datetime.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ")
    signer = SigV4Auth(Credentials(key_id, secret, token), "bedrock", region)
    # botocore takes the signing time from its clock: the recorded one instead.
    with patching.patch("botocore.auth.get_current_datetime", return_value=signed_at):
        signer.add_auth(request)
    return request.headers["Authorization"]


def signed_request(url, body, key_id=AWS_KEY_ID, secret=AWS_SECRET, region=AWS_REGION, accept=None):
    """A POST to the mock's Bedrock endpoint signed by botocore, as a urllib request."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    headers = {"content-type": "application/json"}
    if accept:
        headers["accept"] = accept
    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    SigV4Auth(Credentials(key_id, secret), "bedrock", region).add_auth(request)
    return urllib.request.Request(url, data=body, headers=dict(request.headers.items()), method="POST")


# ---------------------------------------------------------------------------------------
# Google service accounts

def service_account(dir, token_uri):
    """A new RSA key and a service-account key file naming `token_uri`; returns the file's
    path, its JSON, and the public key in PEM."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    info = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "0123456789abcdef0123456789abcdef01234567",
        "private_key": private_pem,
        "client_email": f"trimgate-test@{PROJECT}.iam.gserviceaccount.com",
        "client_id": "100000000000000000001",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    }
    path = os.path.join(dir, "service-account.json")
    with open(path, "w") as f:
        json.dump(info, f)
    return path, info, public_pem
