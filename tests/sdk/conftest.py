"""Starts the project's mock provider and the real trimgate binary for the SDK tests.

The official `openai`, `anthropic` and `google-genai` packages then talk to the gateway
exactly as they would talk to the providers.
"""

import json
import os
import subprocess
import tempfile
import urllib.request

import pytest

BIN = os.environ.get("TRIMGATE_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "target", "debug", "trimgate"))
OPENAI_KEY = "sk-mock-openai"
ANTHROPIC_KEY = "sk-ant-mock"
# The key the mock's Gemini side takes unless told otherwise.
GEMINI_KEY = "AIza-mock-gemini"
PLACEHOLDER = "sk-placeholder-from-the-client"


DATA_HOME = tempfile.mkdtemp(prefix="trimgate-sdk-data-")


def _start(args, prefix, env=None):
    proc = subprocess.Popen(
        [BIN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        # The default ledger lives in the platform data dir: keep it out of the user's.
        env={**os.environ, "XDG_DATA_HOME": DATA_HOME, **(env or {})},
    )
    for line in proc.stdout:
        if line.startswith(prefix):
            return proc, line[len(prefix):].strip()
    raise RuntimeError(f"{args[0]} exited before listening")


@pytest.fixture(scope="session")
def mock_url():
    proc, url = _start(["mock", "--listen", "127.0.0.1:0"], "mock provider listening on ")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def gateway_url(mock_url):
    config = f"""
[providers.mock-openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_OPENAI_KEY" }}
models = ["gpt-5", "gpt-5-mini"]

[providers.mock-anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_ANTHROPIC_KEY" }}
models = ["claude-sonnet-5-5"]

# Crossed routes: an Anthropic-named model served by the OpenAI Chat side, and the reverse,
# so the SDKs exercise translation between dialects.
[[routes]]
match = "claude-on-chat-*"
provider = "mock-openai"

[[routes]]
match = "gpt-on-messages-*"
provider = "mock-anthropic"

# Gemini's API, and Gemini-named models served by the OpenAI Chat and Anthropic sides.
[providers.mock-gemini]
kind = "gemini"
base_url = "{mock_url}/v1beta"
api_key = {{ env = "SDK_TEST_GEMINI_KEY" }}
models = ["gemini-2.5-pro", "gemini-2.5-flash"]

[[routes]]
match = "gemini-on-chat-*"
provider = "mock-openai"

[[routes]]
match = "gemini-on-messages-*"
provider = "mock-anthropic"

[providers.chat-only]
kind = "openai_compatible"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_OPENAI_KEY" }}

[providers.responses-only]
kind = "openai_compatible"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_OPENAI_KEY" }}
dialects = ["responses"]

# Models used for side calls (titles, summaries): every request is answered from the
# response cache when it can be, whatever its temperature.
[[cache.models]]
match = "*haiku*"
exact = "always"

[[routes]]
match = "chat-only-*"
provider = "chat-only"

[[routes]]
match = "responses-only-*"
provider = "responses-only"
"""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "config.toml")
        with open(path, "w") as f:
            f.write(config)
        proc, url = _start(
            ["serve", "--config", path, "--listen", "127.0.0.1:0"],
            "Trimgate listening on ",
            env={"SDK_TEST_OPENAI_KEY": OPENAI_KEY, "SDK_TEST_ANTHROPIC_KEY": ANTHROPIC_KEY,
                 "SDK_TEST_GEMINI_KEY": GEMINI_KEY, "TRIMGATE_LOG": "warn"},
        )
        yield url
        proc.terminate()
        proc.wait(timeout=10)


class MockInspector:
    """Reads what the mock provider received, to check what the gateway forwarded."""

    def __init__(self, url):
        self.url = url

    def clear(self):
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/_mock/requests", method="DELETE")).read()

    def requests(self):
        return json.loads(urllib.request.urlopen(f"{self.url}/_mock/requests").read())


@pytest.fixture()
def mock(mock_url):
    inspector = MockInspector(mock_url)
    inspector.clear()
    return inspector


@pytest.fixture()
def openai_client(gateway_url):
    import openai

    return openai.OpenAI(base_url=f"{gateway_url}/v1", api_key=PLACEHOLDER, max_retries=0)


@pytest.fixture()
def anthropic_client(gateway_url):
    import anthropic

    return anthropic.Anthropic(base_url=gateway_url, api_key=PLACEHOLDER, max_retries=0)


@pytest.fixture()
def gemini_client(gateway_url):
    """google-genai at the gateway: its default API version (`v1`) and no retries."""
    from google import genai
    from google.genai import types

    return genai.Client(api_key=PLACEHOLDER, http_options=types.HttpOptions(base_url=gateway_url))
