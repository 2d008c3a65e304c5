"""Claude Code, Codex CLI and Gemini CLI, as they ship (versions pinned in package.json),
through `trimgate serve` with the mock provider behind it, in every routing: to a provider
of the agent's own dialect (bytes as sent), and translated to OpenAI, Anthropic, a Chat-only
OpenAI-compatible server, DeepSeek and Gemini (Gemini CLI also to OpenAI's Responses), and
through the clouds models are bought on: Azure OpenAI, Amazon Bedrock (SigV4, its binary
event stream) and Vertex AI (a service account's token from the mock's token endpoint). Each
routing runs a plain streamed turn and a shell-tool round trip whose final answer must quote
the command's output. The same round trip also runs through a fallback chain whose first
provider answers 529s and drops connections.

Each gateway writes its own ledger, and every test reads back the rows of the requests its
agent made (ledger.py): each model call the provider got is one completed row with the
provider's token counts, none estimated, and its cost when the bundled price table knows
the model. A summary of those rows per agent, routing and test is printed and, when
AGENT_LEDGER_SUMMARY names a file, written there as JSON.

Every outcome is written to results.md; matrix.py renders README's agent × provider
table from it, and the last test checks that README shows what this run found.
"""

import json
import os
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import uuid

import pytest

import agents
import ledger
import matrix

ROOT = os.path.abspath(os.path.join(agents.HERE, "..", ".."))
BIN = os.environ.get("TRIMGATE_BIN", os.path.join(ROOT, "target", "debug", "trimgate"))
# One key for all of the mock's sides: DeepSeek's key goes to its Chat and Messages APIs.
PROVIDER_KEY = "sk-mock-provider"
OAUTH_TOKEN = "sk-ant-oat01-mock-login"
# A ChatGPT sign-in's access token, which only the stand-in ChatGPT backend accepts.
CHATGPT_TOKEN = "chatgpt-access-mock"

# The model `*-via-gemini` is sent as, and the path a Gemini provider is asked for its stream at.
GEMINI_MODEL = "gemini-2.5-pro"
GEMINI_STREAM = f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent"

# The clouds, as the gateway below reaches them on the mock.
# The deployment an Azure route names, and the api-version of Azure's classic paths (one
# that has Responses as well as Chat). Chat names the deployment in the path; Responses,
# not under a deployment, in the body.
AZURE_DEPLOYMENT = "trimgate-gpt"
AZURE_API_VERSION = "2025-04-01-preview"
AZURE_CHAT = f"/openai/deployments/{AZURE_DEPLOYMENT}/chat/completions"
AZURE_RESPONSES = "/openai/responses"
# Bedrock's model ids, percent-encoded in its paths: Claude through InvokeModel (Messages),
# OpenAI's open-weight model through Converse.
BEDROCK_REGION = "us-east-1"
BEDROCK_CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_GPT_OSS = "openai.gpt-oss-120b-1:0"
BEDROCK_INVOKE = f"/model/{urllib.parse.quote(BEDROCK_CLAUDE, safe='')}/invoke-with-response-stream"
BEDROCK_CONVERSE = f"/model/{urllib.parse.quote(BEDROCK_GPT_OSS, safe='')}/converse-stream"
# Vertex AI: a project and location in the base URL, the publisher and model below it.
VERTEX_PROJECT = "proj"
VERTEX_LOCATION = "us-east5"
VERTEX_BASE = f"/v1/projects/{VERTEX_PROJECT}/locations/{VERTEX_LOCATION}"
VERTEX_CLAUDE = "claude-sonnet-4-5@20250929"
VERTEX_RAW_PREDICT = f"{VERTEX_BASE}/publishers/anthropic/models/{VERTEX_CLAUDE}:streamRawPredict"
VERTEX_GEMINI = f"{VERTEX_BASE}/publishers/google/models/{GEMINI_MODEL}:streamGenerateContent"

# routing → (model name the agent asks for, the provider path the mock must see)
ROUTINGS = {
    "claude": {
        "openai": ("claude-sonnet-4-6-via-openai", "/v1/chat/completions"),
        "anthropic": ("claude-sonnet-4-6", "/v1/messages"),
        "chat-only": ("claude-sonnet-4-6-via-chat", "/v1/chat/completions"),
        "deepseek": ("claude-sonnet-4-6-via-deepseek", "/v1/messages"),
        "gemini": ("claude-sonnet-4-6-via-gemini", GEMINI_STREAM),
        # Azure serves GPT models: Chat is the first of its dialects.
        "azure": ("claude-sonnet-4-6-via-azure", AZURE_CHAT),
        "bedrock": ("claude-sonnet-4-6-via-bedrock", BEDROCK_INVOKE),
        "vertex": ("claude-sonnet-4-6-via-vertex", VERTEX_RAW_PREDICT),
    },
    "codex": {
        "openai": ("gpt-5.5", "/v1/responses"),
        "anthropic": ("gpt-5.5-via-anthropic", "/v1/messages"),
        "chat-only": ("gpt-5.5-via-chat", "/v1/chat/completions"),
        "deepseek": ("gpt-5.5-via-deepseek", "/v1/chat/completions"),
        "gemini": ("gpt-5.5-via-gemini", GEMINI_STREAM),
        "azure": ("gpt-5.5-via-azure", AZURE_RESPONSES),
        # gpt-oss, which Bedrock serves through Converse.
        "bedrock": ("gpt-5.5-via-bedrock", BEDROCK_CONVERSE),
        # Claude on Vertex: Messages is the first of its dialects.
        "vertex": ("gpt-5.5-via-vertex", VERTEX_RAW_PREDICT),
    },
    "gemini": {
        # A provider that speaks Chat and Responses is sent the first: Chat.
        "openai": (f"{GEMINI_MODEL}-via-openai", "/v1/chat/completions"),
        "anthropic": (f"{GEMINI_MODEL}-via-anthropic", "/v1/messages"),
        "chat-only": (f"{GEMINI_MODEL}-via-chat", "/v1/chat/completions"),
        "deepseek": (f"{GEMINI_MODEL}-via-deepseek", "/v1/chat/completions"),
        "gemini": (GEMINI_MODEL, GEMINI_STREAM),
        # OpenAI's Responses, through a provider that speaks nothing else.
        "responses": (f"{GEMINI_MODEL}-via-responses", "/v1/responses"),
        "azure": (f"{GEMINI_MODEL}-via-azure", AZURE_CHAT),
        "bedrock": (f"{GEMINI_MODEL}-via-bedrock", BEDROCK_INVOKE),
        # Gemini on Vertex, in its own dialect.
        "vertex": (f"{GEMINI_MODEL}-via-vertex", VERTEX_GEMINI),
    },
}
# The gateway's provider each routing's model calls must be answered by.
PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "chat-only": "chat-only",
             "deepseek": "deepseek", "gemini": "gemini", "responses": "responses-only",
             "azure": "azure", "bedrock": "bedrock", "vertex": "vertex"}
# Every (agent, routing) the plain turn and the tool round trip run in.
CASES = [(agent, routing) for agent, routings in ROUTINGS.items() for routing in routings]

RESULTS = {}
# Each gateway's URL → its ledger file.
LEDGERS = {}


def _serving(args, prefix, env=None):
    """Runs `trimgate ARGS` until the test session ends; yields the URL it prints."""
    proc = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, **(env or {})})
    for line in proc.stdout:
        if line.startswith(prefix):
            break
    else:
        raise RuntimeError(f"{args[0]} exited before listening")
    yield line[len(prefix):].strip()
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def mock_url():
    yield from _serving(["mock", "--listen", "127.0.0.1:0", "--anthropic-oauth-token", OAUTH_TOKEN,
                         "--openai-key", PROVIDER_KEY, "--anthropic-key", PROVIDER_KEY,
                         "--gemini-key", PROVIDER_KEY, "--azure-key", PROVIDER_KEY],
                        "mock provider listening on ")


@pytest.fixture(scope="session")
def chatgpt_url():
    """A second mock standing in for ChatGPT's Codex backend: it takes only the login."""
    yield from _serving(["mock", "--listen", "127.0.0.1:0", "--openai-key", CHATGPT_TOKEN],
                        "mock provider listening on ")


def _service_account(directory, token_uri):
    """A Google service-account key file for Vertex (a fresh RSA key; the token endpoint
    at `token_uri` takes the JWT it signs): its path."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    path = os.path.join(directory, "service-account.json")
    with open(path, "w") as f:
        json.dump({"type": "service_account", "project_id": VERTEX_PROJECT,
                   "private_key_id": uuid.uuid4().hex, "private_key": pem,
                   "client_email": f"trimgate-agents@{VERTEX_PROJECT}.iam.gserviceaccount.com",
                   "client_id": "100000000000000000001", "token_uri": token_uri}, f)
    return path


def _aws_env(directory):
    """The AWS credential chain's environment for Bedrock: fake keys, and nothing else it
    could read instead (no shared config or credentials of the machine, no EC2 metadata)."""
    return {"AWS_ACCESS_KEY_ID": "AKIAMOCKTRIMGATE0001", "AWS_SECRET_ACCESS_KEY": "mock-aws-secret-key",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": os.path.join(directory, "aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": os.path.join(directory, "aws-credentials")}


@pytest.fixture(scope="session")
def gateway(mock_url, chatgpt_url):
    d = tempfile.mkdtemp(prefix="trimgate-agents-")
    service_account = _service_account(d, f"{mock_url}/token")
    config = f"""
[providers.openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

# An OpenAI-compatible server that speaks Chat only (Ollama, vLLM, OpenRouter).
[providers.chat-only]
kind = "openai_compatible"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

# DeepSeek: Chat at base_url, Messages at anthropic_base_url.
[providers.deepseek]
kind = "deepseek"
base_url = "{mock_url}/v1"
anthropic_base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

# Google's Gemini API: base_url ends in its version, the gateway adds `/models/{{model}}:…`.
[providers.gemini]
kind = "gemini"
base_url = "{mock_url}/v1beta"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

# OpenAI's Responses API alone (a kind "openai" provider is sent Chat by a client of
# neither of its dialects).
[providers.responses-only]
kind = "openai_compatible"
base_url = "{mock_url}/v1"
dialects = ["responses"]
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

# A Claude subscription: no key here; the agent's own login is forwarded.
[providers.claude-login]
kind = "anthropic"
base_url = "{mock_url}/v1"

# Codex signed in with ChatGPT: its backend, reached with the agent's own login.
[providers.chatgpt]
kind = "openai_compatible"
base_url = "{chatgpt_url}/v1"
dialects = ["responses"]
client_auth = "forward"

# Azure OpenAI, its classic paths (an api-version; a route's model is a deployment).
[providers.azure]
kind = "azure_openai"
base_url = "{mock_url}"
api_version = "{AZURE_API_VERSION}"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

# Amazon Bedrock, signed (SigV4) with the AWS credential chain's keys from the environment.
[providers.bedrock]
kind = "bedrock"
region = "{BEDROCK_REGION}"
base_url = "{mock_url}"

# Vertex AI, with a service account's token from the mock's Google token endpoint.
[providers.vertex]
kind = "vertex"
project = "{VERTEX_PROJECT}"
location = "{VERTEX_LOCATION}"
base_url = "{mock_url}{VERTEX_BASE}"
credentials_file = "{service_account}"

[[routes]]
match = "*-chatgpt"
provider = "chatgpt"
model = "gpt-5.5"

[[routes]]
match = "*-via-azure"
provider = "azure"
model = "{AZURE_DEPLOYMENT}"

[[routes]]
match = "gpt-*-via-bedrock"
provider = "bedrock"
model = "{BEDROCK_GPT_OSS}"

[[routes]]
match = "*-via-bedrock"
provider = "bedrock"
model = "{BEDROCK_CLAUDE}"

[[routes]]
match = "gemini-*-via-vertex"
provider = "vertex"
model = "{GEMINI_MODEL}"

[[routes]]
match = "*-via-vertex"
provider = "vertex"
model = "{VERTEX_CLAUDE}"

[[routes]]
match = "*-via-openai"
provider = "openai"
model = "gpt-5.5"

[[routes]]
match = "*-via-chat"
provider = "chat-only"
model = "qwen3-coder"

[[routes]]
match = "*-via-deepseek"
provider = "deepseek"
model = "deepseek-chat"

[[routes]]
match = "*-via-anthropic"
provider = "anthropic"
model = "claude-sonnet-4-6"

[[routes]]
match = "*-via-gemini"
provider = "gemini"
model = "{GEMINI_MODEL}"

[[routes]]
match = "*-via-gemini-3"
provider = "gemini"
model = "gemini-3-pro-preview"

[[routes]]
match = "*-via-responses"
provider = "responses-only"
model = "gpt-5.5"

[[routes]]
match = "*-login"
provider = "claude-login"
model = "claude-sonnet-4-6"
"""
    path = os.path.join(d, "config.toml")
    section, ledger_path = ledger.ledger_config(d)
    with open(path, "w") as f:
        f.write(config + section)
    serving = _serving(
        ["serve", "--config", path, "--listen", "127.0.0.1:0"], "Trimgate listening on ",
        env={"AGENT_TEST_PROVIDER_KEY": PROVIDER_KEY, "ANTHROPIC_API_KEY": "", "GEMINI_API_KEY": "",
             "TRIMGATE_LOG": "warn", "XDG_DATA_HOME": d, **_aws_env(d)})
    url = next(serving)
    LEDGERS[url] = ledger_path
    yield url
    next(serving, None)


class Mock:
    def __init__(self, url):
        self.url = url

    def clear(self):
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/_mock/requests", method="DELETE")).read()

    def requests(self):
        return json.loads(urllib.request.urlopen(f"{self.url}/_mock/requests").read())

    def faults(self):
        return json.loads(urllib.request.urlopen(f"{self.url}/_mock/faults").read())

    def clear_faults(self):
        """Starts the fault counts and the request numbering afresh."""
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/_mock/faults", method="DELETE")).read()


@pytest.fixture()
def mock(mock_url):
    m = Mock(mock_url)
    m.clear()
    return m


def _run(agent, gateway, model, prompt, headers, **kw):
    """Runs the agent; returns (whether it finished without an error, what it answered, its log)."""
    if agent == "claude":
        code, result, log = agents.run_claude(gateway, model, prompt, headers, **kw)
        ok = code == 0 and result is not None and not result.get("is_error")
        return ok, (result or {}).get("result", "") if result else "", log
    if agent == "gemini":
        code, result, log = agents.run_gemini(gateway, model, prompt, headers, **kw)
        # A turn that failed can still exit 0 (a stream without a finish reason): its
        # result then has an `error`.
        ok = code == 0 and result is not None and not result.get("error")
        return ok, (result or {}).get("response") or "", log
    code, events, log = agents.run_codex(gateway, model, prompt, headers, **kw)
    messages = agents.codex_messages(events)
    failed = [e for e in events if e.get("type") in ("turn.failed", "error")]
    return code == 0 and not failed and bool(messages), "\n".join(messages), log


def _token_request(request):
    """Whether `request` went to a cloud's token endpoint (Google's `/token`, Entra's
    `/{tenant}/oauth2/v2.0/token`): the gateway's own sign-in, not the agent's request."""
    return request["path"] == "/token" or request["path"].endswith("/oauth2/v2.0/token")


def _posted(mock):
    """What reached the provider, model listings and token requests left out."""
    return [r for r in mock.requests() if r["method"] == "POST" and not _token_request(r)]


def _streamed(request):
    """Whether a request the provider got asks for a stream: Gemini's (Vertex's too) name it
    in the path and their SSE framing in the query, Bedrock's in the path, Vertex Claude's
    in both its path and body; the others in the body (`stream`, as it is there)."""
    path = request["path"]
    if path.startswith("/v1beta/") or "/publishers/google/" in path:
        return path.endswith(":streamGenerateContent") and "alt=sse" in request["path_and_query"]
    if path.startswith("/model/"):
        # Bedrock's body has no `stream` (InvokeModel refuses one; the mock checks).
        return path.endswith(("/invoke-with-response-stream", "/converse-stream"))
    stream = json.loads(request["body"]).get("stream")
    if "/publishers/anthropic/" in path:
        return path.endswith(":streamRawPredict") and stream is True
    return stream


def _check_upstream(mock, path, streamed=True):
    sent = _posted(mock)
    assert sent, "nothing reached the provider"
    assert {r["path"] for r in sent} == {path}, [r["path"] for r in sent]
    for r in sent:
        assert _streamed(r) is streamed, r["path_and_query"]
        if r["path"].startswith("/model/"):
            # Signed for the provider's region (the mock reads it from the credential scope).
            assert r.get("aws_region") == BEDROCK_REGION, (r.get("aws_region"), r["headers"])
        # The agent's placeholder never leaves the gateway: the provider's key replaces it.
        assert agents.PLACEHOLDER_KEY not in json.dumps(r["headers"]) + r["path_and_query"]
    return sent


# The paths of token counts: calls to a provider, but not model calls.
COUNT_PATHS = (":countTokens", "/count_tokens")


def _model_calls(*mocks):
    """How many model calls reached these mocks (token counts left out)."""
    return sum(not r["path"].endswith(COUNT_PATHS) for m in mocks for r in _posted(m))


def _ledger(gateway, since, key, calls=None, until=None):
    """The ledger rows of the requests `gateway` got from `since` (ms) on, once the `calls`
    model calls the provider got are recorded; added to the summary under `key` (agent,
    routing, test) before anything is asserted on them."""
    rows = ledger.wait(LEDGERS[gateway], since, calls, until)
    ledger.record(key, rows, calls)
    return rows


@pytest.fixture(scope="module", autouse=True)
def ledger_summary():
    """Prints the ledger summary of the whole run at its end (shown with -s)."""
    yield
    if ledger.SUMMARY:
        print("\n\nledger rows per agent, routing and test:\n" + ledger.table())


@pytest.mark.parametrize("agent,routing", CASES)
def test_plain_streamed_turn(agent, routing, gateway, mock):
    model, path = ROUTINGS[agent][routing]
    reply = f"plain-{uuid.uuid4().hex[:12]}"
    RESULTS[(agent, routing, "plain")] = False
    since = ledger.now_ms()
    ok, text, log = _run(agent, gateway, model, "Say hello.", agents.plain_headers(reply))
    rows = _ledger(gateway, since, (agent, routing, "plain"), _model_calls(mock))
    assert ok, log
    assert reply in text, text
    _check_upstream(mock, path)
    # Every model call is in the ledger as answered by the routing's provider, with the
    # provider's counts and its cost.
    ledger.check(rows, _model_calls(mock), provider=PROVIDERS[routing])
    RESULTS[(agent, routing, "plain")] = True


@pytest.mark.parametrize("agent,routing", CASES)
def test_shell_tool_round_trip(agent, routing, gateway, mock):
    """The mock calls the agent's shell tool; the agent runs it and sends the output back;
    the final answer quotes it."""
    model, path = ROUTINGS[agent][routing]
    marker = f"marker-{uuid.uuid4().hex[:12]}"
    RESULTS[(agent, routing, "tool")] = False
    since = ledger.now_ms()
    ok, text, log = _run(agent, gateway, model, "Run the command, then tell me its output.",
                         agents.shell_call_headers(agent, marker))
    rows = _ledger(gateway, since, (agent, routing, "tool"), _model_calls(mock))
    assert ok, log
    # The answer quotes what the command printed, not the command.
    assert "tool result:" in text and marker in text and f"echo {marker}" not in text, text
    sent = _check_upstream(mock, path)
    assert len(sent) >= 2, "the tool result never went back to the provider"
    assert marker in sent[-1]["body"], "the last request does not carry the command's output"
    ledger.check(rows, _model_calls(mock), provider=PROVIDERS[routing])
    RESULTS[(agent, routing, "tool")] = True


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_tool_round_trip_to_gemini_3_sends_the_call_back_signed(agent, gateway, mock):
    """Gemini 3 signs its function calls and refuses (400) a later request whose call comes
    back without a thought signature; the agent's history goes back through the gateway
    with the call signed, so the round trip finishes."""
    model = {"claude": "claude-sonnet-4-6-via-gemini-3", "codex": "gpt-5.5-via-gemini-3"}[agent]
    marker = f"marker-{uuid.uuid4().hex[:12]}"
    since = ledger.now_ms()
    ok, text, log = _run(agent, gateway, model, "Run the command, then tell me its output.",
                         agents.shell_call_headers(agent, marker))
    rows = _ledger(gateway, since, (agent, "gemini-3", "tool"), _model_calls(mock))
    assert ok, log
    assert "tool result:" in text and marker in text, text
    sent = _check_upstream(mock, "/v1beta/models/gemini-3-pro-preview:streamGenerateContent")
    parts = [p for c in json.loads(sent[-1]["body"])["contents"] for p in c.get("parts", [])]
    calls = [p for p in parts if "functionCall" in p]
    assert calls and all(p.get("thoughtSignature") for p in calls), calls
    ledger.check(rows, _model_calls(mock))


def test_gemini_cli_with_its_default_model_asks_a_classifier_then_streams(gateway, mock):
    """Gemini CLI's default model, `auto`, first asks a small model which model should take
    the turn (one `generateContent`, not streamed, wanting JSON), then streams the turn from
    the one picked (the mock answers JSON of the classifier's schema, its first choice):
    both reach the Gemini provider as sent, each to the model in its path."""
    reply = f"auto-{uuid.uuid4().hex[:12]}"
    since = ledger.now_ms()
    ok, text, log = _run("gemini", gateway, "auto", "Say hello.", agents.plain_headers(reply))
    rows = _ledger(gateway, since, ("gemini", "gemini", "auto"), _model_calls(mock))
    assert ok, log
    assert reply in text, text
    sent = _posted(mock)
    paths = [r["path_and_query"] for r in sent]
    assert len(sent) == 2, paths
    classifier, turn = sent
    assert classifier["path_and_query"].startswith("/v1beta/models/gemini-"), paths
    assert classifier["path_and_query"].endswith(":generateContent"), paths
    assert json.loads(classifier["body"])["generationConfig"]["responseMimeType"] == "application/json"
    assert turn["path_and_query"].startswith("/v1beta/models/gemini-"), paths
    assert turn["path_and_query"].endswith(":streamGenerateContent?alt=sse"), paths
    assert agents.PLACEHOLDER_KEY not in json.dumps([r["headers"] for r in sent])
    # The classifier's call (not streamed) and the turn's: two model calls, both answered.
    ledger.check(rows, 2)


@pytest.mark.parametrize("routing", ["gemini", "anthropic", "openai"])
def test_gemini_cli_sends_an_image_and_counts_its_tokens_first(routing, gateway, mock):
    """With an image in the prompt (`@pixel.png`), Gemini CLI counts the prompt's tokens
    (`:countTokens`) before it sends the turn with the image inline. A Gemini provider gets
    both as sent; a provider of another dialect gets the turn with the image translated
    (the gateway answers the count itself)."""
    model, path = ROUTINGS["gemini"][routing]
    reply = f"image-{uuid.uuid4().hex[:12]}"
    since = ledger.now_ms()
    ok, text, log = _run("gemini", gateway, model, "Describe @pixel.png", agents.plain_headers(reply),
                         work=agents.work_dir_with_pixel())
    rows = _ledger(gateway, since, ("gemini", routing, "image"), _model_calls(mock))
    assert ok, log
    assert reply in text, text
    sent = _posted(mock)
    counted = [r for r in sent if r["path"].endswith((":countTokens", "/count_tokens"))]
    turns = [r for r in sent if r not in counted]
    if routing == "gemini":
        assert len(counted) == 1 and agents.PIXEL_PNG in counted[0]["body"], [r["path"] for r in sent]
    assert [r["path"] for r in turns] == [path], [r["path"] for r in sent]
    assert agents.PIXEL_PNG in turns[0]["body"], "the image did not reach the provider"
    # The count is a row of its own kind, whoever answered it (the provider, or the
    # gateway for another dialect); the turn is the one model call.
    ledger.check(rows, 1, count_tokens=1)


# A test run long enough for the gateway to elide its passing tests.
LONG_TEST_RUN = (
    "echo 'running 301 tests'; seq -f 'test store::tests::case_%03g ... ok' 0 299; "
    "echo 'test store::tests::keeps_order ... FAILED'; echo; echo 'failures:'; "
    "echo '    store::tests::keeps_order'; echo; "
    "echo 'test result: FAILED. 300 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.04s'"
)


@pytest.mark.parametrize("agent,routing", [("claude", "anthropic"), ("claude", "openai"),
                                           ("codex", "openai"), ("codex", "anthropic"),
                                           ("claude", "gemini"), ("codex", "gemini"),
                                           ("gemini", "gemini"), ("gemini", "anthropic")])
def test_the_agent_fetches_an_elided_output_back_whole(agent, routing, gateway, mock):
    """The mock has the agent run a long test run; the gateway elides its passing tests and
    says where the whole output is kept; the mock, seeing that marker, has the agent fetch
    it with its shell (`curl -s …/originals/<id>`); the provider then gets all 300 lines.
    Natively and translated to another dialect."""
    model, path = ROUTINGS[agent][routing]
    arguments = agents.shell_arguments(agent, LONG_TEST_RUN, "Run the tests")
    headers = {"x-mock-tool": agents.SHELL_TOOL[agent], "x-mock-tool-arguments": json.dumps(arguments),
               "x-mock-fetch-originals": "1"}
    since = ledger.now_ms()
    ok, text, log = _run(agent, gateway, model, "Run the tests; fetch anything elided.", headers)
    rows = _ledger(gateway, since, (agent, routing, "elided"), _model_calls(mock))
    assert ok, log
    bodies = [json.dumps(json.loads(r["body"]), ensure_ascii=False) for r in _check_upstream(mock, path)]
    marked = [b for b in bodies if "passing tests elided" in b and "/originals/" in b]
    assert marked, "the test run reached the provider elided, with its marker"
    assert marked[0].count("... ok") < 10, "the passing tests were elided"
    last = bodies[-1]
    assert "[… original " in last, "the fetched output went back to the provider"
    assert last.count("... ok") >= 300 and "case_299 ... ok" in last, "all of it"
    ledger.check(rows, _model_calls(mock))


@pytest.mark.parametrize("routing", ["anthropic", "chat-only", "deepseek", "gemini"])
def test_codex_edits_a_file_with_its_freeform_apply_patch_tool(routing, gateway, mock):
    """Codex's `apply_patch` is a freeform tool, which only OpenAI has: the gateway offers
    it to other providers as a function of one string and returns their call to Codex as
    a freeform call, which Codex applies."""
    model, path = ROUTINGS["codex"][routing]
    line = f"patched-{uuid.uuid4().hex[:12]}"
    work = tempfile.mkdtemp(prefix="trimgate-codex-work-")
    RESULTS[("codex", routing, "apply_patch")] = False
    since = ledger.now_ms()
    code, events, log = agents.run_codex(gateway, model, "Add the file.",
                                         agents.apply_patch_headers("hello.txt", line), work=work)
    rows = _ledger(gateway, since, ("codex", routing, "apply_patch"), _model_calls(mock))
    assert code == 0, log
    with open(os.path.join(work, "hello.txt")) as f:
        assert f.read().strip() == line
    sent = _check_upstream(mock, path)
    assert "hello.txt" in sent[-1]["body"], "the patch's result went back to the provider"
    ledger.check(rows, _model_calls(mock))
    RESULTS[("codex", routing, "apply_patch")] = True


def test_claude_code_subscription_login_reaches_its_provider_and_no_other(gateway, mock):
    """Signed in with a Claude subscription (an OAuth token, no API key): the login goes to
    the Anthropic provider that has no key of its own, which the mock checks; routed to any
    other provider, the login is never sent."""
    reply = f"login-{uuid.uuid4().hex[:12]}"
    since = ledger.now_ms()
    ok, text, log = _run("claude", gateway, "claude-sonnet-4-6-login", "Say hello.",
                         agents.plain_headers(reply), oauth_token=OAUTH_TOKEN)
    rows = _ledger(gateway, since, ("claude", "subscription", "plain"), _model_calls(mock))
    assert ok, log
    assert reply in text
    sent = [r for r in mock.requests() if r["path"] == "/v1/messages"]
    assert sent and all(r["headers"].get("authorization") == f"Bearer {OAUTH_TOKEN}" for r in sent)
    assert all("oauth-" in r["headers"].get("anthropic-beta", "") for r in sent)
    ledger.check(rows, _model_calls(mock))
    RESULTS[("claude", "subscription", "plain")] = True

    for routing in ("anthropic", "openai", "chat-only", "deepseek", "gemini"):
        mock.clear()
        model, _ = ROUTINGS["claude"][routing]
        since = ledger.now_ms()
        _run("claude", gateway, model, "Say hello.", agents.plain_headers(reply), oauth_token=OAUTH_TOKEN)
        rows = _ledger(gateway, since, ("claude", routing, "login-elsewhere"), _model_calls(mock))
        seen = json.dumps([r["headers"] for r in mock.requests()])
        assert mock.requests(), routing
        assert OAUTH_TOKEN not in seen, f"the login reached the {routing} provider"
        # Answered with the provider's own key, and recorded as any other call.
        ledger.check(rows, _model_calls(mock))


def test_codex_chatgpt_login_reaches_its_backend_and_no_other(gateway, mock, chatgpt_url):
    """Signed in with ChatGPT, Codex sends its access token and workspace id; a provider
    entry with `client_auth = "forward"` for ChatGPT's backend passes them on, and no
    other provider ever sees them."""
    backend = Mock(chatgpt_url)
    backend.clear()
    reply = f"chatgpt-{uuid.uuid4().hex[:12]}"
    since = ledger.now_ms()
    ok, text, log = _run("codex", gateway, "gpt-5.5-chatgpt", "Say hello.", agents.plain_headers(reply),
                         chatgpt_token=CHATGPT_TOKEN)
    # The model calls went to the backend, none to the other mock.
    calls = _model_calls(backend, mock)
    rows = _ledger(gateway, since, ("codex", "subscription", "plain"), calls)
    assert ok, log
    assert reply in text
    sent = backend.requests()
    assert sent and all(r["headers"].get("authorization") == f"Bearer {CHATGPT_TOKEN}" for r in sent)
    assert all(r["headers"].get("chatgpt-account-id") == agents.CHATGPT_ACCOUNT for r in sent)
    ledger.check(rows, calls)
    RESULTS[("codex", "subscription", "plain")] = True

    for routing in ("openai", "anthropic", "chat-only", "deepseek", "gemini"):
        mock.clear()
        model, _ = ROUTINGS["codex"][routing]
        since = ledger.now_ms()
        ok, _, log = _run("codex", gateway, model, "Say hello.", agents.plain_headers(reply),
                          chatgpt_token=CHATGPT_TOKEN)
        rows = _ledger(gateway, since, ("codex", routing, "chatgpt-elsewhere"), _model_calls(mock))
        assert ok, log
        seen = json.dumps([r["headers"] for r in mock.requests()])
        assert CHATGPT_TOKEN not in seen and agents.CHATGPT_ACCOUNT not in seen, routing
        ledger.check(rows, _model_calls(mock))


@pytest.fixture(scope="module")
def locked_gateway(mock_url):
    """A gateway with `[server] local_key = true`: (its URL, its config path, the key)."""
    d = tempfile.mkdtemp(prefix="trimgate-agents-locked-")
    path = os.path.join(d, "config.toml")
    section, ledger_path = ledger.ledger_config(d)
    with open(path, "w") as f:
        f.write(section + f"""
[server]
local_key = true

[providers.openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.gemini]
kind = "gemini"
base_url = "{mock_url}/v1beta"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}
""")
    serving = _serving(
        ["serve", "--config", path, "--listen", "127.0.0.1:0"], "Trimgate listening on ",
        env={"AGENT_TEST_PROVIDER_KEY": PROVIDER_KEY, "ANTHROPIC_API_KEY": "", "GEMINI_API_KEY": "",
             "TRIMGATE_LOG": "warn", "XDG_DATA_HOME": d})
    url = next(serving)
    LEDGERS[url] = ledger_path
    with open(os.path.join(d, "local-key")) as f:
        key = f.read().strip()
    yield url, path, key
    next(serving, None)


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_with_a_local_key_only_agents_started_by_wrap_get_through(agent, locked_gateway, mock):
    """With the local key on, an agent pointed at the gateway by hand is refused and nothing
    reaches the provider; the same agent started by `trimgate wrap` gets through, and the
    key never reaches the provider."""
    url, config, key = locked_gateway
    model = {"claude": "claude-sonnet-4-6", "codex": "gpt-5.5", "gemini": GEMINI_MODEL}[agent]
    reply = f"locked-{uuid.uuid4().hex[:12]}"
    refused_since = ledger.now_ms()
    try:
        ok, _, _ = _run(agent, url, model, "Say hello.", agents.plain_headers(reply), timeout=20)
    except subprocess.TimeoutExpired:
        ok = False  # Claude Code retries a 401 for minutes before it gives up.
    since = ledger.now_ms()
    # The refused requests' rows, if it keeps any (none reached the provider).
    refused = _ledger(url, refused_since, (agent, "local-key", "refused"), 0, until=since)
    assert not ok, "an agent without the local key got an answer"
    assert not mock.requests(), "a request without the local key reached the provider"

    wrap = [BIN, "wrap", "--config", config, "--gateway", url]
    ok, text, log = _run(agent, url, model, "Say hello.", agents.plain_headers(reply), wrap=wrap)
    rows = _ledger(url, since, (agent, "local-key", "wrap"), _model_calls(mock))
    assert ok, log
    assert reply in text, text
    sent = mock.requests()
    assert sent, "nothing reached the provider"
    assert key not in json.dumps(sent), "the local key reached the provider"
    # A refused request is never recorded as answered; the wrapped agent's calls are.
    assert not [r for r in refused if r["outcome"] == "completed"], [ledger.show(r) for r in refused]
    ledger.check(rows, _model_calls(mock))


# agent → what the fallback speaks → (model the agent asks for, the fallback's provider path).
# Each model's route starts at the failing mock, in the agent's own dialect, and falls back to
# the healthy one: in the same dialect, or in the other, through translation.
CHAINS = {
    "claude": {
        "as-sent": ("claude-sonnet-4-6-chain", "/v1/messages"),
        "translated": ("claude-sonnet-4-6-chain-to-openai", "/v1/chat/completions"),
    },
    "codex": {
        "as-sent": ("gpt-5.5-chain", "/v1/responses"),
        "translated": ("gpt-5.5-chain-to-anthropic", "/v1/messages"),
    },
    "gemini": {
        "as-sent": (f"{GEMINI_MODEL}-chain", GEMINI_STREAM),
        "translated": (f"{GEMINI_MODEL}-chain-to-anthropic", "/v1/messages"),
    },
}
# Each chain's fallback provider in the gateway below.
CHAIN_FALLBACK = {("claude", "as-sent"): "anthropic", ("claude", "translated"): "openai",
                  ("codex", "as-sent"): "openai", ("codex", "translated"): "anthropic",
                  ("gemini", "as-sent"): "gemini", ("gemini", "translated"): "anthropic"}


@pytest.fixture(scope="module")
def overloaded_url():
    """A mock that fails as an overloaded provider does, whatever the request asks: request
    number 2, 4, 6… gets a 529 in its endpoint's dialect, number 3, 6, 9… has its connection
    closed before any status line (the drop wins on 6, 12…)."""
    yield from _serving(["mock", "--listen", "127.0.0.1:0", "--openai-key", PROVIDER_KEY,
                         "--anthropic-key", PROVIDER_KEY, "--gemini-key", PROVIDER_KEY,
                         "--fail-status", "529", "--fail-every", "2", "--drop-every", "3"],
                        "mock provider listening on ")


@pytest.fixture(scope="module")
def chain_gateway(mock_url, overloaded_url):
    """A gateway whose chain routes start at the overloaded mock: (its URL, its admin token)."""
    d = tempfile.mkdtemp(prefix="trimgate-agents-chain-")
    path = os.path.join(d, "config.toml")
    section, ledger_path = ledger.ledger_config(d)
    with open(path, "w") as f:
        f.write(section + f"""
# Two tries of the first provider, then the fallback: with the overloaded mock's numbering
# reset before each run, the agent's first request passes, its second meets a 529 (request 2),
# then a dropped connection (request 3), then goes to the fallback, so both faults and the
# fallback are certain within a two-request task; later requests keep meeting them.
# Backoff is short so the task stays quick. Cooldowns and the retry budget are out of reach
# (1000), so every request starts at the overloaded mock and every failure is retried: the
# test counts the gateway's retries against the mock's faults one for one.
[retry]
max_attempts = 3
attempts_per_step = 2
backoff_initial_secs = 0.05
backoff_max_secs = 0.2
cooldown_failures = 1000
budget_floor = 1000

[providers.overloaded-anthropic]
kind = "anthropic"
base_url = "{overloaded_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.overloaded-openai]
kind = "openai"
base_url = "{overloaded_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.overloaded-gemini]
kind = "gemini"
base_url = "{overloaded_url}/v1beta"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.gemini]
kind = "gemini"
base_url = "{mock_url}/v1beta"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[[routes]]
match = "claude-sonnet-4-6-chain"
provider = "overloaded-anthropic"
model = "claude-sonnet-4-6"
fallbacks = ["anthropic/claude-sonnet-4-6"]

[[routes]]
match = "claude-sonnet-4-6-chain-to-openai"
provider = "overloaded-anthropic"
model = "claude-sonnet-4-6"
fallbacks = ["openai/gpt-5.5"]

[[routes]]
match = "gpt-5.5-chain"
provider = "overloaded-openai"
model = "gpt-5.5"
fallbacks = ["openai/gpt-5.5"]

[[routes]]
match = "gpt-5.5-chain-to-anthropic"
provider = "overloaded-openai"
model = "gpt-5.5"
fallbacks = ["anthropic/claude-sonnet-4-6"]

[[routes]]
match = "{GEMINI_MODEL}-chain"
provider = "overloaded-gemini"
model = "{GEMINI_MODEL}"
fallbacks = ["gemini/{GEMINI_MODEL}"]

[[routes]]
match = "{GEMINI_MODEL}-chain-to-anthropic"
provider = "overloaded-gemini"
model = "{GEMINI_MODEL}"
fallbacks = ["anthropic/claude-sonnet-4-6"]
""")
    serving = _serving(
        ["serve", "--config", path, "--listen", "127.0.0.1:0"], "Trimgate listening on ",
        env={"AGENT_TEST_PROVIDER_KEY": PROVIDER_KEY, "ANTHROPIC_API_KEY": "", "GEMINI_API_KEY": "",
             "TRIMGATE_LOG": "warn", "XDG_DATA_HOME": d})
    url = next(serving)
    LEDGERS[url] = ledger_path
    # stdout is a pipe, so the admin token goes to the data dir (just after the line read).
    token_file = os.path.join(d, "trimgate", "admin-token")
    for _ in range(50):
        if os.path.exists(token_file):
            break
        time.sleep(0.1)
    with open(token_file) as f:
        token = f.read().strip()
    yield url, token
    next(serving, None)


def _feed(url, token, model):
    """The gateway's records of requests for `model` (the window's live feed), oldest first:
    one per failed attempt it retried, one per answer the client got."""
    request = urllib.request.Request(f"{url}/admin/api/requests?limit=200",
                                     headers={"authorization": f"Bearer {token}"})
    rows = json.loads(urllib.request.urlopen(request).read())["requests"]
    return [r for r in reversed(rows) if r["model"] == model]


@pytest.mark.parametrize("fallback", ["as-sent", "translated"])
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_agent_finishes_a_tool_round_trip_while_its_first_provider_is_overloaded(
        agent, fallback, chain_gateway, overloaded_url, mock):
    """The route's first provider answers 529s and drops connections; the gateway retries
    before the first byte and moves on to the fallback (of the agent's dialect, or of another
    through translation), so the agent finishes its shell-tool round trip and never
    sees a failure: every answer the gateway gave it was a 200 (Claude Code retries a 529 by
    itself, so its finishing alone would not show that)."""
    url, token = chain_gateway
    model, fallback_path = CHAINS[agent][fallback]
    overloaded = Mock(overloaded_url)
    overloaded.clear()
    overloaded.clear_faults()
    marker = f"marker-{uuid.uuid4().hex[:12]}"
    RESULTS[(agent, "chain", fallback)] = False
    since = ledger.now_ms()
    ok, text, log = _run(agent, url, model, "Run the command, then tell me its output.",
                         agents.shell_call_headers(agent, marker), timeout=90)
    # One answered row per model call either mock answered (the overloaded one's 200s).
    served = overloaded.faults()["statuses"].get("200", 0) + _model_calls(mock)
    ledger_rows = _ledger(url, since, (agent, "chain", fallback), served)
    assert ok, log
    assert "tool result:" in text and marker in text and f"echo {marker}" not in text, text

    # The first provider really failed, both ways.
    faults = overloaded.faults()
    injected = faults["injected"].get("529", 0)
    dropped = faults["dropped"]
    assert injected >= 1 and dropped >= 1, faults
    # The fallback got the requests the first provider failed twice, in its own dialect.
    rescued = _check_upstream(mock, fallback_path)
    first_served = faults["statuses"].get("200", 0)

    # The gateway retried each fault once, and every answer the agent got was a 200. A
    # streamed answer is recorded once its stream ends, just after the agent has read it.
    for _ in range(50):
        rows = _feed(url, token, model)
        answered = [r for r in rows if r["outcome"] != "retried"]
        if len(answered) >= first_served + len(rescued):
            break
        time.sleep(0.1)
    # A retried attempt is recorded with what the provider answered: its 529, or the 502
    # the gateway gives a connection that closed unanswered.
    retried = [r for r in rows if r["outcome"] == "retried"]
    assert sorted(r["status"] for r in retried) == [502] * dropped + [529] * injected, rows
    assert [(r["status"], r["outcome"]) for r in answered] == [(200, "completed")] * len(answered), rows
    assert len(answered) == first_served + len(rescued), (faults, len(rescued), rows)
    fallback_provider = CHAIN_FALLBACK[(agent, fallback)]
    assert sum(r["provider"] == fallback_provider for r in answered) == len(rescued), rows
    # The task changed provider halfway: the first provider answered the first request (the
    # tool call); the request carrying the command's output met both faults and was answered
    # by the fallback.
    assert first_served >= 1, faults
    assert marker in rescued[-1]["body"], "the command's output did not reach the fallback"

    # The ledger tells the same: a row per failed attempt, then every request answered once,
    # completed with the provider's counts and cost, whichever provider answered it.
    ledger.check(ledger_rows, first_served + len(rescued))
    retried = [r for r in ledger_rows if r["outcome"] == "retried"]
    assert sorted(r["status"] for r in retried) == [502] * dropped + [529] * injected, \
        [ledger.show(r) for r in retried]
    answers = {}
    for r in ledger.answered(ledger_rows):
        answers.setdefault(r["request_id"], []).append(r)
    assert all(len(a) == 1 for a in answers.values()), [ledger.show(r) for r in ledger_rows]
    assert {r["request_id"] for r in retried} <= set(answers), [ledger.show(r) for r in ledger_rows]
    assert sum(a[0]["provider"] == fallback_provider for a in answers.values()) == len(rescued), \
        [ledger.show(r) for r in ledger_rows]
    RESULTS[(agent, "chain", fallback)] = True


def test_readme_shows_this_runs_agent_matrix():
    """README's agent × provider table is the one this run produced."""
    if len(RESULTS) < 2 * len(CASES):
        pytest.skip("the matrix needs the whole module run")
    versions = {agent: agents.installed_version(package) for agent, package in agents.PACKAGES.items()}
    table = matrix.render({f"{a}|{r}|{s}": ok for (a, r, s), ok in RESULTS.items()}, ROUTINGS, versions)
    with open(os.path.join(agents.HERE, "results.md"), "w") as f:
        f.write(table)
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    assert matrix.section(readme) == table.strip(), (
        "README's agent table differs from this run: copy tests/agents/results.md between the "
        "<!-- agent-matrix --> markers")
