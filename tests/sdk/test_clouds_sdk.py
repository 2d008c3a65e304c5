"""The official SDKs through the gateway to the three clouds models are bought through:
Azure OpenAI (classic deployment paths and the v1 API, an api-key or an Entra ID token),
Amazon Bedrock (InvokeModel for Claude, Converse for other models, SigV4 from the AWS
credential chain) and Google Vertex AI (Claude by rawPredict, Gemini by generateContent,
a service account's token), each in its own dialect and translated from another.

The mock plays the clouds. What the gateway does for each is checked with the clouds'
own libraries where they have one: botocore recomputes the SigV4 signature and reads the
event-stream frames, google-auth verifies the service account's JWT, and the openai
package's own `AzureOpenAI` client shows what Azure is sent.
"""

import contextlib
import dataclasses
import json
import os
import tempfile
import time
import urllib.request

import anthropic
import openai
import pytest

from clouds import (
    AWS_KEY_ID, AWS_REGION, AWS_SECRET, AZURE_API_VERSION, AZURE_KEY, AZURE_SCOPE, BEDROCK_CLAUDE,
    BEDROCK_NOVA, CLOUD_PLATFORM, DEPLOYMENT, ENTRA_CLIENT, ENTRA_SECRET, ENTRA_TENANT, LOCATION,
    PROJECT, VERTEX_CLAUDE, VERTEX_GEMINI, Captured, authorization_parts, aws_keys, botocore_authorization,
    form, gateway_process, get_json, isolated_env, mock_process, service_account, signed_request,
)
from conftest import PLACEHOLDER, Ledger, check_broken, ledger_config

# A Bedrock model id naming an inference profile by ARN: `:` and `/` in one path segment.
BEDROCK_ARN = f"arn:aws:bedrock:{AWS_REGION}:123456789012:inference-profile/us.{BEDROCK_CLAUDE}"
CLAUDE_ANSWER_NAME = "claude-sonnet-4-5-20250929"
TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
FUNCTION = {"type": "function", "function": {"name": TOOL["name"], "description": TOOL["description"], "parameters": TOOL["input_schema"]}}
# What Bedrock's fault tests ask of the mock. The gateway is to send Bedrock none of a
# client's headers (every header sent is signed, and none of an SDK's means anything to
# AWS), so each fault is a provider of its own whose configured `headers` ask for it.
BEDROCK_FAULTS = {
    "br-bad-crc": {"x-mock-bad-crc-after": "2"},
    "br-truncated": {"x-mock-truncate-after": "2"},
    "br-expired": {"x-mock-error-status": "403", "x-mock-aws-error-type": "ExpiredTokenException"},
    "br-skewed": {
        "x-mock-error-status": "403",
        "x-mock-aws-error-type": "InvalidSignatureException",
        "x-mock-aws-error-message": "Signature expired: 20261207T101010Z is now earlier than 20261207T101512Z (20261207T102012Z - 5 min.)",
    },
}


def toml_table(headers):
    return "{ " + ", ".join(f'"{k}" = {json.dumps(v)}' for k, v in headers.items()) + " }"


def cloud_config(mock, db, sa_file):
    """Every cloud provider kind, against the mock, with routes that name what each is asked."""
    faults = "".join(f"""
[providers.{name}]
kind = "bedrock"
region = "{AWS_REGION}"
base_url = "{mock}"
headers = {toml_table(headers)}

[[routes]]
match = "claude-{name}"
provider = "{name}"
model = "{BEDROCK_CLAUDE}"

[[routes]]
match = "nova-{name}"
provider = "{name}"
model = "{BEDROCK_NOVA}"
""" for name, headers in BEDROCK_FAULTS.items())
    return ledger_config(db) + f"""
# The fault providers fail on purpose: none is taken out of rotation for it.
[retry]
cooldown_failures = 1000
backoff_initial_secs = 0.01
backoff_max_secs = 0.05

[providers.az]
kind = "azure_openai"
base_url = "{mock}"
api_version = "{AZURE_API_VERSION}"
api_key = {{ env = "CLOUD_TEST_AZURE_KEY" }}

[providers.az-v1]
kind = "azure_openai"
base_url = "{mock}"
api_key = {{ env = "CLOUD_TEST_AZURE_KEY" }}

[providers.az-entra]
kind = "azure_openai"
base_url = "{mock}"
api_version = "{AZURE_API_VERSION}"
entra = {{ tenant_id = "{ENTRA_TENANT}", client_id = "{ENTRA_CLIENT}", client_secret = {{ env = "CLOUD_TEST_ENTRA_SECRET" }}, authority = "{mock}" }}

[providers.az-entra-v1]
kind = "azure_openai"
base_url = "{mock}"
entra = {{ tenant_id = "{ENTRA_TENANT}", client_id = "{ENTRA_CLIENT}", client_secret = {{ env = "CLOUD_TEST_ENTRA_SECRET" }}, authority = "{mock}" }}

[providers.br]
kind = "bedrock"
region = "{AWS_REGION}"
base_url = "{mock}"
bedrock_api = "auto"

[providers.vx]
kind = "vertex"
project = "{PROJECT}"
location = "{LOCATION}"
base_url = "{mock}/v1/projects/{PROJECT}/locations/{LOCATION}"
credentials_file = "{sa_file}"

[[routes]]
match = "gpt-az"
provider = "az"
model = "{DEPLOYMENT}"

[[routes]]
match = "gpt-az-v1"
provider = "az-v1"
model = "{DEPLOYMENT}"

[[routes]]
match = "gpt-az-entra"
provider = "az-entra"
model = "{DEPLOYMENT}"

[[routes]]
match = "gpt-az-entra-v1"
provider = "az-entra-v1"
model = "{DEPLOYMENT}"

[[routes]]
match = "claude-br"
provider = "br"
model = "{BEDROCK_CLAUDE}"

[[routes]]
match = "claude-br-arn"
provider = "br"
model = "{BEDROCK_ARN}"

[[routes]]
match = "nova-br"
provider = "br"
model = "{BEDROCK_NOVA}"

# Not a model id Bedrock knows in any region.
[[routes]]
match = "unknown-br"
provider = "br"
model = "claude-sonnet-4-5"

[[routes]]
match = "claude-vx"
provider = "vx"
model = "{VERTEX_CLAUDE}"

[[routes]]
match = "gemini-vx"
provider = "vx"
model = "{VERTEX_GEMINI}"
""" + faults


@dataclasses.dataclass
class Cloud:
    """The mock playing the clouds, a gateway with a provider of each kind (and one per
    Bedrock fault), its ledger, and what the gateway logged."""

    mock: str
    gateway: str
    db: str
    captured: Captured
    stderr: object


@pytest.fixture(scope="module")
def cloud():
    with mock_process() as mock, tempfile.TemporaryDirectory(prefix="trimgate-clouds-") as d:
        sa_file, _, _ = service_account(d, f"{mock.url}/token")
        db = os.path.join(d, "ledger.sqlite")
        env = isolated_env(aws_keys(), {"CLOUD_TEST_AZURE_KEY": AZURE_KEY, "CLOUD_TEST_ENTRA_SECRET": ENTRA_SECRET})
        with gateway_process(cloud_config(mock.url, db, sa_file), env) as gateway:
            yield Cloud(mock.url, gateway.url, db, Captured(mock.url), gateway.stderr)


@pytest.fixture()
def captured(cloud):
    cloud.captured.clear()
    return cloud.captured


@contextlib.contextmanager
def held_to_rows(view, request):
    yield view
    # Every model call a passing test made is held to its row.
    if getattr(request.node, "report_call", None) and request.node.report_call.passed:
        assert view.checked == len(view.calls), f"{len(view.calls) - view.checked} model calls left unchecked"


@pytest.fixture()
def ledger(request, cloud):
    with held_to_rows(Ledger(cloud.db, request.node.name), request) as view:
        yield view
    # A failing test shows what the gateway logged (warnings and errors).
    if getattr(request.node, "report_call", None) and request.node.report_call.failed:
        print(cloud.stderr()[-4000:])


@pytest.fixture()
def oai(cloud, ledger):
    return openai.OpenAI(base_url=f"{cloud.gateway}/v1", api_key=PLACEHOLDER, max_retries=0,
                         http_client=ledger.http_client(openai))


@pytest.fixture()
def claude(cloud, ledger):
    return anthropic.Anthropic(base_url=cloud.gateway, api_key=PLACEHOLDER, max_retries=0,
                               http_client=ledger.http_client(anthropic))


@pytest.fixture()
def genai_client(cloud, ledger):
    from google import genai

    return genai.Client(api_key=PLACEHOLDER, http_options=ledger.genai_options(cloud.gateway))


def user(text):
    return [{"role": "user", "content": text}]


def chat(client, model, text, stream, **extra):
    """A Chat Completion, streamed or not: its text, finish reason, usage and model."""
    if not stream:
        r = client.chat.completions.create(model=model, messages=user(text), **extra)
        return r.choices[0].message.content, r.choices[0].finish_reason, r.usage, r.model
    chunks = list(client.chat.completions.create(model=model, messages=user(text), stream=True,
                                                 stream_options={"include_usage": True}, **extra))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    usage = [c.usage for c in chunks if c.usage]
    assert len(usage) == 1, chunks
    return text, finish[-1], usage[0], chunks[0].model


def message(client, model, text, stream, **extra):
    """A Messages answer, streamed or not (the SDK's final message)."""
    if not stream:
        return client.messages.create(model=model, max_tokens=200, messages=user(text), **extra)
    with client.messages.stream(model=model, max_tokens=200, messages=user(text), **extra) as s:
        streamed = "".join(s.text_stream)
        final = s.get_final_message()
    assert streamed == "".join(b.text for b in final.content if b.type == "text")
    return final


def text_of(msg):
    return "".join(b.text for b in msg.content if b.type == "text")


def check_tokens(row, input_tokens, output_tokens, provider, streamed):
    """The row of an answered call: the provider, whether it streamed, and the provider's
    token counts as the client saw them."""
    assert row["provider"] == provider, row
    assert bool(row["streamed"]) == streamed, row
    assert (row["input_tokens"], row["output_tokens"]) == (input_tokens, output_tokens), row


# ---------------------------------------------------------------------------------------
# Azure OpenAI

AZURE = {
    # route: (provider, the path the mock is sent Chat at, with its query)
    "gpt-az": ("az", f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={AZURE_API_VERSION}"),
    "gpt-az-v1": ("az-v1", "/openai/v1/chat/completions"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", list(AZURE))
def test_openai_chat_reaches_an_azure_deployment_with_its_api_key(oai, captured, ledger, route, stream):
    """Chat to Azure: the classic deployment path with `api-version`, or the v1 path with
    the deployment in the body; the resource key in `api-key`, never the client's key."""
    provider, path = AZURE[route]
    text, finish, usage, shown = chat(oai, route, "hello azure", stream, extra_headers={"x-mock-reply": "azure says hi"})
    assert (text, finish) == ("azure says hi", "stop")
    # The client is shown the model it asked for, not the deployment the answer named.
    assert shown == route
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    sent = captured.one("/openai/")
    assert sent["path_and_query"] == path
    assert sent["headers"]["api-key"] == AZURE_KEY
    assert "authorization" not in sent["headers"], sent["headers"]
    assert PLACEHOLDER not in json.dumps(sent["headers"])
    body = json.loads(sent["body"])
    assert body["model"] == DEPLOYMENT and body["messages"] == user("hello azure")
    [row] = ledger.check()
    check_tokens(row, usage.prompt_tokens, usage.completion_tokens, provider, stream)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route,provider,path", [
    ("gpt-az", "az", f"/openai/responses?api-version={AZURE_API_VERSION}"),
    ("gpt-az-v1", "az-v1", "/openai/v1/responses"),
])
def test_openai_responses_reach_azure(oai, captured, ledger, route, provider, path, stream):
    """Responses to Azure: classic `/openai/responses?api-version=…` or v1's, the
    deployment in the body either way."""
    headers = {"x-mock-reply": "responses from azure"}
    if stream:
        events = list(oai.responses.create(model=route, input="hi there", stream=True, extra_headers=headers))
        assert events[-1].type == "response.completed", [e.type for e in events]
        r = events[-1].response
    else:
        r = oai.responses.create(model=route, input="hi there", extra_headers=headers)
    assert r.status == "completed" and r.output_text == "responses from azure"
    assert r.model == route
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
    sent = captured.one("/openai/")
    assert sent["path_and_query"] == path
    assert sent["headers"]["api-key"] == AZURE_KEY and "authorization" not in sent["headers"]
    assert json.loads(sent["body"])["model"] == DEPLOYMENT
    [row] = ledger.check()
    check_tokens(row, r.usage.input_tokens, r.usage.output_tokens, provider, stream)


@pytest.mark.parametrize("route,provider,path", [
    ("gpt-az-entra", "az-entra", f"/openai/deployments/{DEPLOYMENT}/chat/completions"),
    ("gpt-az-entra-v1", "az-entra-v1", "/openai/v1/chat/completions"),
])
def test_an_entra_id_app_token_calls_azure(cloud, oai, captured, ledger, route, provider, path):
    """The client-credentials flow: the app's secret goes to the tenant's token endpoint for
    Azure OpenAI's scope, and the token it issues, not an api-key, calls Azure; it is kept
    for the next request rather than asked for again."""
    for _ in range(2):
        text, _, _, _ = chat(oai, route, "entra please", False, extra_headers={"x-mock-reply": "signed in"})
        assert text == "signed in"
    calls = captured.to("/openai/")
    assert [c["path"] for c in calls] == [path, path]
    for sent in calls:
        assert "api-key" not in sent["headers"], sent["headers"]
        assert sent["headers"]["authorization"].startswith("Bearer entra-mock-"), sent["headers"]
    assert calls[0]["headers"]["authorization"] == calls[1]["headers"]["authorization"]
    # Asked for once (no other test uses these providers), by the client-credentials grant.
    [token] = captured.to(f"/{ENTRA_TENANT}/oauth2/v2.0/token")
    assert form(token["body"]) == {"grant_type": "client_credentials", "client_id": ENTRA_CLIENT,
                                   "client_secret": ENTRA_SECRET, "scope": AZURE_SCOPE}, token
    for row in ledger.check():
        assert row["provider"] == provider, row


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_sdk_reaches_azure_translated_to_chat(claude, captured, ledger, stream):
    """Messages from the anthropic package, to an Azure deployment as Chat, and back."""
    m = message(claude, "gpt-az", "hello from claude's sdk", stream, extra_headers={"x-mock-reply": "chat answered"})
    assert text_of(m) == "chat answered" and m.stop_reason == "end_turn"
    assert m.usage.input_tokens > 0 and m.usage.output_tokens > 0
    sent = captured.one("/openai/")
    assert sent["path_and_query"] == AZURE["gpt-az"][1]
    assert sent["headers"]["api-key"] == AZURE_KEY and "x-api-key" not in sent["headers"]
    body = json.loads(sent["body"])
    assert body["model"] == DEPLOYMENT and body["messages"][-1]["role"] == "user"
    [row] = ledger.check()
    check_tokens(row, m.usage.input_tokens, m.usage.output_tokens, "az", stream)


def _same_request(direct, through, ignore=()):
    """What differs between two captured requests to Azure: method, path and query, the key,
    the content type, and the JSON body (less the `ignore`d keys)."""
    differs = {}
    for name, get in [
        ("method", lambda r: r["method"]),
        ("path_and_query", lambda r: r["path_and_query"]),
        ("api-key", lambda r: r["headers"].get("api-key")),
        ("authorization", lambda r: r["headers"].get("authorization")),
        ("content-type", lambda r: r["headers"].get("content-type", "").split(";")[0]),
        ("body", lambda r: {k: v for k, v in json.loads(r["body"]).items() if k not in ignore}),
    ]:
        if get(direct) != get(through):
            differs[name] = (get(direct), get(through))
    return differs


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["classic", "v1"])
def test_azure_is_sent_what_the_official_azure_client_sends(cloud, oai, captured, ledger, api, stream):
    """The same Chat request made by the openai package's own Azure client (`AzureOpenAI`
    for the classic paths, `OpenAI` at `…/openai/v1/` for v1) straight to the mock, and by a
    plain client through the gateway: Azure gets the same method, path, query, key and body
    (its model the deployment either way). Streamed, the gateway asks for the usage chunk
    (`stream_options.include_usage`) whether the client did or not: that is the one key a
    client that did not ask finds added."""
    route = "gpt-az" if api == "classic" else "gpt-az-v1"
    messages = user("compare me") + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}]
    extra = {"temperature": 0.5, "max_completion_tokens": 50}
    if stream:
        extra |= {"stream": True, "stream_options": {"include_usage": True}}
    if api == "classic":
        direct = openai.AzureOpenAI(azure_endpoint=cloud.mock, api_version=AZURE_API_VERSION, api_key=AZURE_KEY, max_retries=0)
    else:
        # Azure's v1 API takes the key in `api-key` (or an Entra token as the bearer).
        direct = openai.OpenAI(base_url=f"{cloud.mock}/openai/v1/", api_key=AZURE_KEY, max_retries=0,
                               default_headers={"api-key": AZURE_KEY})
    for answer in (direct.chat.completions.create(model=DEPLOYMENT, messages=messages, **extra),
                   oai.chat.completions.create(model=route, messages=messages, **extra)):
        if stream:
            list(answer)
    [a, b] = captured.to("/openai/")
    differs = _same_request(a, b)
    if api == "v1":
        # The direct v1 client also sends the key as its bearer (the SDK always does); the
        # gateway sends only `api-key`, which Azure's v1 API takes alike.
        assert differs.pop("authorization") == (f"Bearer {AZURE_KEY}", None)
    assert differs == {}, differs
    if stream:
        # A client that asks for no usage chunk: Azure is asked for it all the same.
        del extra["stream_options"]
        list(oai.chat.completions.create(model=route, messages=messages, **extra))
        third = captured.to("/openai/")[-1]
        assert json.loads(third["body"])["stream_options"] == {"include_usage": True}, third["body"]
        differs = _same_request(a, third)
        differs.pop("authorization", None)
        assert differs == {}, differs
    ledger.check()


def test_the_official_v1_client_with_only_its_bearer_key_is_taken_by_azure(cloud, captured):
    """Microsoft documents the v1 API with a plain `OpenAI(base_url=…/openai/v1/,
    api_key=<the resource key>)`, which sends the key as `Authorization: Bearer` only: the
    mock, playing Azure, must take it as Azure does."""
    direct = openai.OpenAI(base_url=f"{cloud.mock}/openai/v1/", api_key=AZURE_KEY, max_retries=0)
    r = direct.chat.completions.create(model=DEPLOYMENT, messages=user("bearer key"))
    assert r.choices[0].message.content


# ---------------------------------------------------------------------------------------
# Bedrock

def bedrock_path(model, action):
    return f"/model/{model.replace(':', '%3A').replace('/', '%2F')}/{action}"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_sdk_reaches_claude_on_bedrock_through_invoke_model(claude, captured, ledger, stream):
    """Claude on Bedrock is InvokeModel with Anthropic's own body: the model in the path
    (its `:` escaped), `anthropic_version` Bedrock's, no `model` or `stream`; a streamed
    answer is Bedrock's event stream, which reaches the client as Anthropic's SSE."""
    m = message(claude, "claude-br", "hello bedrock", stream)
    assert text_of(m) == "Hello from the mock. You said: hello bedrock"
    assert m.stop_reason == "end_turn" and m.model == CLAUDE_ANSWER_NAME
    assert m.usage.input_tokens > 0 and m.usage.output_tokens > 0
    sent = captured.one("/model/")
    assert sent["path"] == bedrock_path(BEDROCK_CLAUDE, "invoke-with-response-stream" if stream else "invoke")
    assert sent["headers"]["accept"] == ("application/vnd.amazon.eventstream" if stream else "application/json")
    assert sent["aws_region"] == AWS_REGION
    body = json.loads(sent["body"])
    assert body["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in body and "stream" not in body and body["messages"] == user("hello bedrock")
    # Bedrock is sent only what AWS reads (every header sent is signed): none of the SDK's.
    assert not [h for h in sent["headers"] if h.startswith(("x-stainless", "anthropic-", "x-api-key"))], sent["headers"]
    [row] = ledger.check()
    check_tokens(row, m.usage.input_tokens, m.usage.output_tokens, "br", stream)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_sdk_reaches_claude_on_bedrock_translated(oai, captured, ledger, stream):
    """Chat from the openai package, translated to Messages, sent to Bedrock's InvokeModel."""
    text, finish, usage, model = chat(oai, "claude-br", "chat to bedrock", stream)
    assert text == "Hello from the mock. You said: chat to bedrock" and finish == "stop"
    sent = captured.one("/model/")
    assert sent["path"] == bedrock_path(BEDROCK_CLAUDE, "invoke-with-response-stream" if stream else "invoke")
    assert json.loads(sent["body"])["anthropic_version"] == "bedrock-2023-05-31"
    [row] = ledger.check()
    check_tokens(row, usage.prompt_tokens, usage.completion_tokens, "br", stream)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_model_not_anthropics_is_asked_through_converse(claude, captured, ledger, stream):
    """Amazon Nova is asked through Converse (`bedrock_api = "auto"`): the Messages request
    becomes Converse's shape, and its answer (events, when streamed) Anthropic's."""
    m = message(claude, "nova-br", "hello nova", stream, system="be brief")
    assert text_of(m) == "Hello from the mock. You said: hello nova"
    assert m.stop_reason == "end_turn"
    assert m.usage.input_tokens > 0 and m.usage.output_tokens > 0
    sent = captured.one("/model/")
    assert sent["path"] == bedrock_path(BEDROCK_NOVA, "converse-stream" if stream else "converse")
    body = json.loads(sent["body"])
    assert body["messages"] == [{"role": "user", "content": [{"text": "hello nova"}]}], body
    assert body["system"] == [{"text": "be brief"}], body
    assert body["inferenceConfig"]["maxTokens"] == 200, body
    [row] = ledger.check()
    check_tokens(row, m.usage.input_tokens, m.usage.output_tokens, "br", stream)


def test_openai_sdk_reaches_nova_through_converse_streamed(oai, captured, ledger):
    text, finish, usage, _ = chat(oai, "nova-br", "chat to nova", True)
    assert text == "Hello from the mock. You said: chat to nova" and finish == "stop"
    assert captured.one("/model/")["path"] == bedrock_path(BEDROCK_NOVA, "converse-stream")
    [row] = ledger.check()
    check_tokens(row, usage.prompt_tokens, usage.completion_tokens, "br", True)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("route", ["claude-br", "nova-br"])
def test_a_tool_round_trip_through_bedrock(claude, captured, ledger, route, stream):
    """A tool called and its result sent back, on InvokeModel (Claude) and on Converse
    (Nova, where tools become `toolConfig` and the blocks `toolUse`/`toolResult`)."""
    messages = user("weather in Oslo?")
    if stream:
        with claude.messages.stream(model=route, max_tokens=100, messages=messages, tools=[TOOL]) as s:
            first = s.get_final_message()
    else:
        first = claude.messages.create(model=route, max_tokens=100, messages=messages, tools=[TOOL])
    assert first.stop_reason == "tool_use"
    use = [b for b in first.content if b.type == "tool_use"][0]
    assert use.name == "get_weather" and use.input == {"city": "mock"}
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "snow, -3C"}]},
    ]
    second = claude.messages.create(model=route, max_tokens=100, messages=messages, tools=[TOOL])
    assert text_of(second) == "tool result: snow, -3C" and second.stop_reason == "end_turn"
    if route == "nova-br":
        body = json.loads(captured.to("/model/")[-1]["body"])
        assert body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "get_weather", body
        blocks = [b for m in body["messages"] for b in m["content"]]
        assert any("toolUse" in b for b in blocks) and any("toolResult" in b for b in blocks), body
    rows = ledger.check()
    assert [r["provider"] for r in rows] == ["br", "br"]


def test_openai_sdk_tool_round_trip_through_bedrock_claude(oai, ledger):
    messages = user("weather in Oslo?")
    first = oai.chat.completions.create(model="claude-br", messages=messages, tools=[FUNCTION])
    assert first.choices[0].finish_reason == "tool_calls"
    call = first.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "mock"}
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "snow, -3C"}]
    second = oai.chat.completions.create(model="claude-br", messages=messages, tools=[FUNCTION])
    assert second.choices[0].message.content == "tool result: snow, -3C"
    ledger.check()


# --- SigV4, recomputed by botocore

@pytest.mark.parametrize("route,model", [("claude-br", BEDROCK_CLAUDE), ("claude-br-arn", BEDROCK_ARN), ("nova-br", BEDROCK_NOVA)])
def test_the_sigv4_signature_is_the_one_botocore_computes(cloud, claude, captured, ledger, route, model):
    """The gateway's request to Bedrock, signed again by botocore from the same method,
    URL, body, signed headers and time with the same keys: the `Authorization` header is
    the same, byte for byte. The model ids hold `:` (and the ARN `/`), escaped in the path
    and escaped again in the canonical request, as every AWS SDK does."""
    claude.messages.create(model=route, max_tokens=50, messages=user("sign me"))
    sent = captured.one("/model/")
    assert sent["path"] == bedrock_path(model, "converse" if model == BEDROCK_NOVA else "invoke")
    auth = sent["headers"]["authorization"]
    parts = authorization_parts(auth)
    assert parts["Credential"] == f"{AWS_KEY_ID}/{sent['headers']['x-amz-date'][:8]}/{AWS_REGION}/bedrock/aws4_request"
    signed = parts["SignedHeaders"].split(";")
    assert {"host", "x-amz-date", "content-type"} <= set(signed), signed
    assert "x-amz-security-token" not in sent["headers"]
    assert auth == botocore_authorization(sent, cloud.mock, AWS_KEY_ID, AWS_SECRET)
    # Signed with another secret, it would differ: the comparison means something.
    assert auth != botocore_authorization(sent, cloud.mock, AWS_KEY_ID, AWS_SECRET + "x")
    ledger.check()


def test_a_session_token_is_sent_and_signed(request):
    """Temporary credentials (`AWS_SESSION_TOKEN`): the token goes in `x-amz-security-token`,
    among the signed headers, and botocore computes the same signature with it."""
    token = "IQoJb3JpZ2luX2VjEXAMPLE//session+token=="
    with mock_process() as mock:
        sent = _one_bedrock_call(request, mock, f"""
[providers.br]
kind = "bedrock"
region = "eu-west-3"
base_url = "{mock.url}"
""", isolated_env(aws_keys(session_token=token)), "temporary")
        assert sent["headers"]["x-amz-security-token"] == token
        assert sent["aws_region"] == "eu-west-3"
        assert "x-amz-security-token" in authorization_parts(sent["headers"]["authorization"])["SignedHeaders"].split(";")
        assert sent["headers"]["authorization"] == botocore_authorization(sent, mock.url, AWS_KEY_ID, AWS_SECRET, token, "eu-west-3")


# --- Bedrock's event stream, read by boto3 and botocore from the mock directly

def bedrock_runtime(mock_url):
    import boto3
    from botocore.config import Config

    return boto3.client("bedrock-runtime", endpoint_url=mock_url, region_name=AWS_REGION,
                        aws_access_key_id=AWS_KEY_ID, aws_secret_access_key=AWS_SECRET,
                        config=Config(retries={"max_attempts": 1, "mode": "standard"}))


INVOKE_BODY = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100,
                          "messages": [{"role": "user", "content": "frames please"}]})


def test_boto3_reads_the_mocks_invoke_model_stream(cloud, captured):
    """boto3 signs `invoke_model_with_response_stream` and reads its frames with botocore's
    parser: each `chunk` holds one of Anthropic's events, the last with Bedrock's metrics."""
    r = bedrock_runtime(cloud.mock).invoke_model_with_response_stream(modelId=BEDROCK_CLAUDE, body=INVOKE_BODY)
    events = [json.loads(e["chunk"]["bytes"]) for e in r["body"]]
    types = [e["type"] for e in events]
    assert types[0] == "message_start" and types[-1] == "message_stop", types
    assert {"content_block_start", "content_block_delta", "content_block_stop", "message_delta"} <= set(types)
    text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    assert text == "Hello from the mock. You said: frames please"
    metrics = events[-1]["amazon-bedrock-invocationMetrics"]
    assert metrics["inputTokenCount"] > 0 and metrics["outputTokenCount"] > 0
    assert captured.one("/model/")["path"] == bedrock_path(BEDROCK_CLAUDE, "invoke-with-response-stream")


def test_boto3_reads_the_mocks_converse_stream(cloud):
    r = bedrock_runtime(cloud.mock).converse_stream(
        modelId=BEDROCK_NOVA, messages=[{"role": "user", "content": [{"text": "converse frames"}]}],
        inferenceConfig={"maxTokens": 100},
    )
    events = list(r["stream"])
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-1] == "metadata", kinds
    assert "contentBlockDelta" in kinds and "messageStop" in kinds
    text = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e)
    assert text == "Hello from the mock. You said: converse frames"
    assert [e["messageStop"]["stopReason"] for e in events if "messageStop" in e] == ["end_turn"]
    usage = events[-1]["metadata"]["usage"]
    assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"]


def test_boto3_reads_the_mocks_whole_answers(cloud):
    client = bedrock_runtime(cloud.mock)
    invoked = json.loads(client.invoke_model(modelId=BEDROCK_CLAUDE, body=INVOKE_BODY)["body"].read())
    assert invoked["type"] == "message" and invoked["content"][0]["text"] == "Hello from the mock. You said: frames please"
    conversed = client.converse(modelId=BEDROCK_NOVA, messages=[{"role": "user", "content": [{"text": "whole"}]}])
    assert conversed["output"]["message"]["content"] == [{"text": "Hello from the mock. You said: whole"}]
    assert conversed["stopReason"] == "end_turn" and conversed["usage"]["inputTokens"] > 0


def test_the_mocks_raw_frames_parse_with_botocores_event_stream_buffer(cloud):
    """The bytes themselves, through botocore's frame parser (which checks both CRCs):
    each frame an `event` of type `chunk`, JSON with the base64 event and Bedrock's padding."""
    import base64

    from botocore.eventstream import EventStreamBuffer

    url = f"{cloud.mock}{bedrock_path(BEDROCK_CLAUDE, 'invoke-with-response-stream')}"
    response = urllib.request.urlopen(signed_request(url, INVOKE_BODY.encode(), accept="application/vnd.amazon.eventstream"))
    assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
    buffer = EventStreamBuffer()
    buffer.add_data(response.read())
    frames = list(buffer)
    assert len(frames) >= 5
    for frame in frames:
        assert frame.headers[":message-type"] == "event"
        assert frame.headers[":event-type"] == "chunk"
        assert frame.headers[":content-type"] == "application/json"
        payload = json.loads(frame.payload)
        assert set(payload) == {"bytes", "p"}, payload
        json.loads(base64.b64decode(payload["bytes"]))


# ---------------------------------------------------------------------------------------
# Vertex AI

VERTEX_BASE = f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers"


def check_google_token(sent):
    assert sent["headers"]["authorization"].startswith("Bearer ya29.mock-"), sent["headers"]
    assert "x-api-key" not in sent["headers"] and "x-goog-api-key" not in sent["headers"]
    assert PLACEHOLDER not in json.dumps(sent["headers"])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_sdk_reaches_claude_on_vertex(claude, captured, ledger, stream):
    """Claude on Vertex: `rawPredict` or `streamRawPredict` under the project's location,
    `anthropic_version` Vertex's and no `model` in the body, the service account's token."""
    m = message(claude, "claude-vx", "hello vertex", stream, extra_headers={"x-mock-reply": "vertex claude here"})
    assert text_of(m) == "vertex claude here" and m.stop_reason == "end_turn"
    assert m.usage.input_tokens > 0 and m.usage.output_tokens > 0
    sent = captured.one(VERTEX_BASE)
    action = "streamRawPredict" if stream else "rawPredict"
    assert sent["path"] == f"{VERTEX_BASE}/anthropic/models/{VERTEX_CLAUDE}:{action}"
    check_google_token(sent)
    body = json.loads(sent["body"])
    assert body["anthropic_version"] == "vertex-2023-10-16" and "model" not in body
    assert body.get("stream", False) == stream
    [row] = ledger.check()
    check_tokens(row, m.usage.input_tokens, m.usage.output_tokens, "vx", stream)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_sdk_reaches_claude_on_vertex_translated(oai, captured, ledger, stream):
    text, finish, usage, _ = chat(oai, "claude-vx", "chat to vertex", stream, extra_headers={"x-mock-reply": "from vertex"})
    assert (text, finish) == ("from vertex", "stop")
    sent = captured.one(VERTEX_BASE)
    assert sent["path"] == f"{VERTEX_BASE}/anthropic/models/{VERTEX_CLAUDE}:{'streamRawPredict' if stream else 'rawPredict'}"
    check_google_token(sent)
    [row] = ledger.check()
    check_tokens(row, usage.prompt_tokens, usage.completion_tokens, "vx", stream)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_google_genai_reaches_gemini_on_vertex(genai_client, captured, ledger, stream):
    """Gemini on Vertex: `generateContent` or `streamGenerateContent?alt=sse` under the
    google publisher, the service account's token instead of an API key."""
    from google.genai import types

    config = types.GenerateContentConfig(http_options=types.HttpOptions(headers={"x-mock-reply": "gemini on vertex"}))
    if stream:
        chunks = list(genai_client.models.generate_content_stream(model="gemini-vx", contents="hello gemini", config=config))
        text = "".join(c.text or "" for c in chunks)
        usage = chunks[-1].usage_metadata
    else:
        r = genai_client.models.generate_content(model="gemini-vx", contents="hello gemini", config=config)
        text, usage = r.text, r.usage_metadata
    assert text == "gemini on vertex"
    assert usage.prompt_token_count > 0 and usage.candidates_token_count > 0
    sent = captured.one(VERTEX_BASE)
    expected = f"{VERTEX_BASE}/google/models/{VERTEX_GEMINI}:" + ("streamGenerateContent?alt=sse" if stream else "generateContent")
    assert sent["path_and_query"] == expected
    check_google_token(sent)
    assert json.loads(sent["body"])["contents"][0]["parts"] == [{"text": "hello gemini"}]
    [row] = ledger.check()
    # The ledger's output counts the thoughts too.
    check_tokens(row, usage.prompt_token_count, usage.candidates_token_count + (usage.thoughts_token_count or 0), "vx", stream)


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_other_sdks_reach_gemini_on_vertex_through_generate_content(oai, claude, captured, ledger, sdk):
    """A Gemini model on Vertex asked in another dialect is translated to Gemini's and sent
    to the google publisher: Vertex serves Gemini only there, never by rawPredict."""
    if sdk == "openai":
        text, _, _, _ = chat(oai, "gemini-vx", "chat to gemini", False, extra_headers={"x-mock-reply": "gemini answered"})
    else:
        text = text_of(message(claude, "gemini-vx", "messages to gemini", False, extra_headers={"x-mock-reply": "gemini answered"}))
    sent = captured.to(VERTEX_BASE)
    assert [s["path"] for s in sent] == [f"{VERTEX_BASE}/google/models/{VERTEX_GEMINI}:generateContent"]
    assert text == "gemini answered"
    ledger.check()


def test_google_genai_reaches_claude_on_vertex_through_raw_predict(genai_client, captured, ledger):
    """The reverse: Claude on Vertex asked in Gemini's dialect is translated to Messages and
    sent to the anthropic publisher, never to the google one."""
    from google.genai import types

    config = types.GenerateContentConfig(http_options=types.HttpOptions(headers={"x-mock-reply": "claude answered"}))
    r = genai_client.models.generate_content(model="claude-vx", contents="gemini sdk to claude", config=config)
    assert [s["path"] for s in captured.to(VERTEX_BASE)] == [f"{VERTEX_BASE}/anthropic/models/{VERTEX_CLAUDE}:rawPredict"]
    assert r.text == "claude answered"
    ledger.check()


def test_the_vertex_token_comes_from_a_jwt_signed_with_the_service_accounts_key(request):
    """The gateway signs in as the service account: the JWT it posts to the key file's
    `token_uri` verifies against the account's public key (google-auth), is for that URI,
    from the account, for Cloud Platform, and names the key it was signed with; the token
    issued for it is what calls Vertex (the mock answers only tokens it issued, alive)."""
    from google.auth import jwt

    with mock_process() as mock, tempfile.TemporaryDirectory() as d:
        sa_file, sa, public_pem = service_account(d, f"{mock.url}/token")
        toml = f"""
[providers.vx]
kind = "vertex"
project = "{PROJECT}"
location = "{LOCATION}"
base_url = "{mock.url}/v1/projects/{PROJECT}/locations/{LOCATION}"
credentials_file = "{sa_file}"

[[routes]]
match = "claude-vx"
provider = "vx"
model = "{VERTEX_CLAUDE}"
"""
        with own_gateway(request, toml, isolated_env()) as (_, ledger, client):
            for _ in range(2):
                assert text_of(client.messages.create(model="claude-vx", max_tokens=20, messages=user("token please")))
            captured = Captured(mock.url)
            [posted] = captured.to("/token")
            [first, second] = captured.to(VERTEX_BASE)
            ledger.check()
    assert posted["headers"]["content-type"].startswith("application/x-www-form-urlencoded")
    grant = form(posted["body"])
    assert grant["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", grant
    header = jwt.decode_header(grant["assertion"])
    assert header["alg"] == "RS256", header
    # Google's own libraries name the key (`kid`); Google's token endpoint does not need it.
    assert header.get("kid") in (None, sa["private_key_id"]), header
    claims = jwt.decode(grant["assertion"], certs={sa["private_key_id"]: public_pem}, audience=sa["token_uri"])
    assert claims["iss"] == sa["client_email"]
    assert CLOUD_PLATFORM in claims["scope"].split()
    assert 0 < claims["exp"] - claims["iat"] <= 3600
    assert abs(claims["iat"] - time.time()) < 600
    # A key that is not the account's does not verify it: the check means something.
    with tempfile.TemporaryDirectory() as d:
        _, _, other_public = service_account(d, sa["token_uri"])
    with pytest.raises(ValueError):
        jwt.decode(grant["assertion"], certs={sa["private_key_id"]: other_public}, audience=sa["token_uri"])
    # One token, asked for once, carried by both requests.
    assert first["headers"]["authorization"] == second["headers"]["authorization"]
    check_google_token(first)


# ---------------------------------------------------------------------------------------
# Credentials missing or refused, broken streams, unknown models

@pytest.fixture(scope="module")
def unsigned():
    """A gateway with no AWS credentials anywhere its chain looks, and a Vertex provider
    whose key file does not exist."""
    with mock_process() as mock, tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "ledger.sqlite")
        config = ledger_config(db) + f"""
[providers.br]
kind = "bedrock"
region = "{AWS_REGION}"
base_url = "{mock.url}"

[providers.vx]
kind = "vertex"
project = "{PROJECT}"
location = "{LOCATION}"
base_url = "{mock.url}/v1/projects/{PROJECT}/locations/{LOCATION}"
credentials_file = "{d}/no-such-key.json"

[[routes]]
match = "claude-br"
provider = "br"
model = "{BEDROCK_CLAUDE}"

[[routes]]
match = "claude-vx"
provider = "vx"
model = "{VERTEX_CLAUDE}"
"""
        with gateway_process(config, isolated_env()) as gw:
            yield gw.url, db, Captured(mock.url)


@pytest.mark.parametrize("route,says", [
    ("claude-br", "no AWS credentials"),
    ("claude-vx", "no-such-key.json"),
])
@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_missing_cloud_credentials_are_a_401_naming_the_provider(request, unsigned, sdk, route, says):
    """No AWS credentials in the environment, the shared files or instance metadata; a
    Vertex key file that is not there: the client gets a 401 in its own dialect that names
    the provider and what is missing, and the cloud is never called."""
    url, db, mock = unsigned
    mock.clear()
    with held_to_rows(Ledger(db, request.node.name), request) as ledger:
        if sdk == "anthropic":
            client = anthropic.Anthropic(base_url=url, api_key=PLACEHOLDER, max_retries=0, http_client=ledger.http_client(anthropic))
            with pytest.raises(anthropic.AuthenticationError) as e:
                client.messages.create(model=route, max_tokens=10, messages=user("x"))
            error = e.value.body["error"]
            assert error["type"] == "authentication_error"
        else:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key=PLACEHOLDER, max_retries=0, http_client=ledger.http_client(openai))
            with pytest.raises(openai.AuthenticationError) as e:
                client.chat.completions.create(model=route, messages=user("x"))
            error = e.value.body
        assert e.value.status_code == 401
        provider = route.split("-")[1]
        assert f'"{provider}"' in error["message"] and says in error["message"], error
        assert "PRIVATE KEY" not in error["message"] and PLACEHOLDER not in error["message"]
        assert mock.to("/model/") == [] and mock.to("/v1/projects/") == []
        [row] = ledger.check()
        assert (row["provider"], row["status"], row["outcome"]) == (provider, 401, "gateway_error"), row


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_credentials_the_cloud_refuses_are_a_401_in_the_clients_shape(claude, oai, ledger, sdk):
    """AWS says the session token expired (`ExpiredTokenException`, a 403): the client is
    told it is a credentials problem (401), naming the provider and AWS's words."""
    if sdk == "anthropic":
        with pytest.raises(anthropic.AuthenticationError) as e:
            claude.messages.create(model="claude-br-expired", max_tokens=10, messages=user("x"))
        error = e.value.body["error"]
        assert error["type"] == "authentication_error"
    else:
        with pytest.raises(openai.AuthenticationError) as e:
            oai.chat.completions.create(model="claude-br-expired", messages=user("x"))
        error = e.value.body
    assert e.value.status_code == 401
    assert "br-expired" in error["message"] and "ExpiredTokenException" in error["message"], error
    assert "security token included in the request is expired" in error["message"], error
    [row] = ledger.check()
    assert (row["provider"], row["status"]) == ("br-expired", 401), row


def test_a_clock_off_by_more_than_five_minutes_is_said_to_be_the_clock(claude, ledger):
    with pytest.raises(anthropic.AuthenticationError) as e:
        claude.messages.create(model="claude-br-skewed", max_tokens=10, messages=user("x"))
    message = e.value.body["error"]["message"]
    assert "clock" in message and "Signature expired" in message, message
    ledger.check()


@pytest.mark.parametrize("fault", ["br-bad-crc", "br-truncated"])
@pytest.mark.parametrize("api", ["claude", "nova"])
def test_a_broken_event_stream_ends_in_the_anthropic_clients_error_event(claude, ledger, api, fault):
    """A frame whose CRC is wrong, or a body cut inside a frame: the client's stream ends
    with an error event (which the SDK raises), and the row says the provider failed."""
    with pytest.raises(anthropic.APIStatusError) as e:
        with claude.messages.stream(model=f"{api}-{fault}", max_tokens=100, messages=user("a b c d e f g h")) as s:
            for _ in s:
                pass
    assert fault in str(e.value), e.value
    check_broken(ledger.row(), "upstream_failed")


@pytest.mark.parametrize("fault", ["br-bad-crc", "br-truncated"])
def test_a_broken_event_stream_ends_in_the_openai_clients_error(oai, ledger, fault):
    with pytest.raises(openai.APIError) as e:
        for _ in oai.chat.completions.create(model=f"claude-{fault}", messages=user("a b c d e f g h"), stream=True):
            pass
    assert fault in str(e.value), e.value
    check_broken(ledger.row(), "upstream_failed")


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_a_model_id_bedrock_does_not_know_relays_its_validation_message(claude, oai, captured, ledger, sdk):
    if sdk == "anthropic":
        with pytest.raises(anthropic.BadRequestError) as e:
            claude.messages.create(model="unknown-br", max_tokens=10, messages=user("x"))
        error = e.value.body["error"]
        assert error["type"] == "invalid_request_error"
    else:
        with pytest.raises(openai.BadRequestError) as e:
            oai.chat.completions.create(model="unknown-br", messages=user("x"))
        error = e.value.body
    assert e.value.status_code == 400
    assert "ValidationException" in error["message"], error
    assert "The provided model identifier is invalid." in error["message"], error
    assert captured.one("/model/")["path"].startswith("/model/claude-sonnet-4-5/")
    [row] = ledger.check()
    assert (row["provider"], row["status"]) == ("br", 400), row


# ---------------------------------------------------------------------------------------
# Fallbacks and cooldown

def test_a_throttled_region_falls_back_to_another_then_to_anthropic_while_it_cools(request):
    """Bedrock in us-east-1 throttles every request (a mock started `--fail-status 429`): a
    route falls back to the same model in us-west-2 (the signature's scope says which), and
    the throttled region cools down; a second route, whose fallback is Anthropic's own API,
    skips the cooling region and is answered there."""
    with mock_process("--fail-status", "429", "--fail-every", "1") as east, mock_process() as west:
        toml = f"""
[retry]
cooldown_failures = 1
cooldown_secs = 600
attempts_per_step = 1
backoff_initial_secs = 0.01
backoff_max_secs = 0.05

[providers.br-east]
kind = "bedrock"
region = "us-east-1"
base_url = "{east.url}"

[providers.br-west]
kind = "bedrock"
region = "us-west-2"
base_url = "{west.url}"

[providers.direct]
kind = "anthropic"
base_url = "{west.url}/v1"
api_key = {{ env = "CLOUD_TEST_ANTHROPIC_KEY" }}

[[routes]]
match = "claude-regions"
provider = "br-east"
model = "{BEDROCK_CLAUDE}"
fallbacks = ["br-west/{BEDROCK_CLAUDE}"]

[[routes]]
match = "claude-direct"
provider = "br-east"
model = "{BEDROCK_CLAUDE}"
fallbacks = ["direct/claude-sonnet-4-5"]
"""
        env = isolated_env(aws_keys(), {"CLOUD_TEST_ANTHROPIC_KEY": "sk-ant-mock"})
        with own_gateway(request, toml, env) as (gw, ledger, client):
            m = client.messages.create(model="claude-regions", max_tokens=50, messages=user("fall back"))
            assert text_of(m) == "Hello from the mock. You said: fall back"
            [throttled] = Captured(east.url).to("/model/")
            [answered] = Captured(west.url).to("/model/")
            assert (throttled["aws_region"], answered["aws_region"]) == ("us-east-1", "us-west-2")
            east_faults = get_json(f"{east.url}/_mock/faults")
            assert east_faults["statuses"] == {"429": 1}, east_faults

            status = get_json(f"{gw.url}/status")
            health = {p["provider"]: p for p in status["providers"]}
            assert health["br-east"]["state"] == "cooling_down", status
            assert health["br-west"]["state"] == "up" and health["direct"]["state"] == "up", status

            with client.messages.stream(model="claude-direct", max_tokens=50, messages=user("go direct")) as s:
                assert "".join(s.text_stream) == "Hello from the mock. You said: go direct"
            assert len(Captured(east.url).to("/model/")) == 1, "nothing more reached the cooling region"
            direct = Captured(west.url).to("/v1/messages")
            assert len(direct) == 1 and direct[0]["headers"]["x-api-key"] == "sk-ant-mock"
            assert json.loads(direct[0]["body"])["model"] == "claude-sonnet-4-5"

            first, second = attempts(ledger)
            assert [(r["provider"], r["status"], r["outcome"]) for r in first] == [
                ("br-east", 429, "retried"), ("br-west", 200, "completed")], first
            assert second[-1]["provider"] == "direct" and second[-1]["status"] == 200, second
            assert second[-1]["outcome"] == "completed" and second[-1]["streamed"], second
            assert all(r["provider"] != "br-east" or r["outcome"] == "retried" for r in second), second


def test_an_entra_token_is_asked_for_again_before_it_expires():
    """A token that lasts 10 seconds is kept for half of that (less than twice the five
    minutes the gateway renews ahead of expiry), then asked for again while it still works:
    no request is ever sent with an expired one."""
    with mock_process("--token-lifetime-secs", "10") as mock, tempfile.TemporaryDirectory() as d:
        config = ledger_config(os.path.join(d, "ledger.sqlite")) + f"""
[providers.az-entra]
kind = "azure_openai"
base_url = "{mock.url}"
entra = {{ tenant_id = "{ENTRA_TENANT}", client_id = "{ENTRA_CLIENT}", client_secret = {{ env = "CLOUD_TEST_ENTRA_SECRET" }}, authority = "{mock.url}" }}

[[routes]]
match = "gpt-az-entra"
provider = "az-entra"
model = "{DEPLOYMENT}"
"""
        env = isolated_env(None, {"CLOUD_TEST_ENTRA_SECRET": ENTRA_SECRET})
        with gateway_process(config, env) as gateway:
            oai = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=PLACEHOLDER, max_retries=0)
            captured = Captured(mock.url)
            for wait in (0, 0.5, 6):
                time.sleep(wait)
                text, _, _, _ = chat(oai, "gpt-az-entra", "still signed in?", False,
                                     extra_headers={"x-mock-reply": "yes"})
                assert text == "yes"
            tokens = captured.to(f"/{ENTRA_TENANT}/oauth2/v2.0/token")
            assert len(tokens) == 2, [t["path"] for t in tokens]
            bearers = [c["headers"]["authorization"] for c in captured.to("/openai/")]
            assert bearers[0] == bearers[1] != bearers[2], bearers


@contextlib.contextmanager
def own_gateway(request, toml, env):
    """A gateway of one test's own: `toml` (providers and routes) after a ledger in a
    temporary folder; yields the gateway, the test's view of its ledger (every call held
    to its row) and an anthropic client whose calls that view records."""
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "ledger.sqlite")
        with gateway_process(ledger_config(db) + toml, env) as gw, \
                held_to_rows(Ledger(db, request.node.name), request) as ledger:
            client = anthropic.Anthropic(base_url=gw.url, api_key=PLACEHOLDER, max_retries=0,
                                         http_client=ledger.http_client(anthropic))
            yield gw, ledger, client


def attempts(ledger):
    """The rows of each call made since the last check, by attempt."""
    calls = ledger.calls[ledger.checked:]
    ledger.checked = len(ledger.calls)
    found = ledger.rows([c.id for c in calls])
    return [sorted(found[c.id], key=lambda r: r["attempt"]) for c in calls]


def _one_bedrock_call(request, mock, provider_toml, env, expect_text):
    """A gateway with one Bedrock provider (`provider_toml`, routed as `claude-br`), one
    streamed Messages call through it; the request the mock got."""
    toml = provider_toml + f"""
[[routes]]
match = "claude-br"
provider = "br"
model = "{BEDROCK_CLAUDE}"
"""
    with own_gateway(request, toml, env) as (_, ledger, client):
        with client.messages.stream(model="claude-br", max_tokens=50, messages=user(expect_text)) as s:
            assert expect_text in "".join(s.text_stream)
        [row] = ledger.check()
        assert row["provider"] == "br"
        return Captured(mock.url).one("/model/")


def test_a_named_aws_profile_is_read_from_the_shared_files(request):
    """`aws_profile`: the AWS chain reads that profile's keys from the shared credentials
    file (no key in the environment), and the request is signed with them."""
    with mock_process() as mock, tempfile.TemporaryDirectory() as d:
        config_file, credentials_file = os.path.join(d, "config"), os.path.join(d, "credentials")
        with open(config_file, "w") as f:
            f.write("[profile work]\nregion = eu-central-1\n")
        with open(credentials_file, "w") as f:
            f.write("[default]\naws_access_key_id = AKIADEFAULTNOTTHISONE\naws_secret_access_key = nope\n"
                    "[work]\naws_access_key_id = AKIAWORKPROFILE00001\naws_secret_access_key = work-secret\n")
        env = isolated_env(None, {"AWS_CONFIG_FILE": config_file, "AWS_SHARED_CREDENTIALS_FILE": credentials_file})
        sent = _one_bedrock_call(request, mock, f"""
[providers.br]
kind = "bedrock"
region = "eu-central-1"
aws_profile = "work"
base_url = "{mock.url}"
""", env, "from the profile")
        parts = authorization_parts(sent["headers"]["authorization"])
        assert parts["Credential"].startswith("AKIAWORKPROFILE00001/"), parts
        assert sent["aws_region"] == "eu-central-1"
        assert sent["headers"]["authorization"] == botocore_authorization(
            sent, mock.url, "AKIAWORKPROFILE00001", "work-secret", None, "eu-central-1")


def test_a_bedrock_api_key_is_sent_as_a_bearer_token_unsigned(request):
    """A Bedrock API key (`api_key`) is the credential: `Authorization: Bearer <key>`, no
    SigV4 signature and no AWS credential looked for."""
    with mock_process() as mock:
        sent = _one_bedrock_call(request, mock, f"""
[providers.br]
kind = "bedrock"
region = "us-east-1"
base_url = "{mock.url}"
api_key = {{ env = "CLOUD_TEST_BEDROCK_KEY" }}
""", isolated_env(None, {"CLOUD_TEST_BEDROCK_KEY": "ABSKbedrock-api-key-example"}), "bearer please")
        assert sent["headers"]["authorization"] == "Bearer ABSKbedrock-api-key-example"
        assert "x-amz-date" not in sent["headers"], sent["headers"]


def test_application_default_credentials_are_used_without_a_key_file(request):
    """No `credentials_file`: Application Default Credentials, here the key file
    `GOOGLE_APPLICATION_CREDENTIALS` names, sign the gateway in."""
    with mock_process() as mock, tempfile.TemporaryDirectory() as d:
        sa_file, _, _ = service_account(d, f"{mock.url}/token")
        toml = f"""
[providers.vx]
kind = "vertex"
project = "{PROJECT}"
location = "{LOCATION}"
base_url = "{mock.url}/v1/projects/{PROJECT}/locations/{LOCATION}"

[[routes]]
match = "claude-vx"
provider = "vx"
model = "{VERTEX_CLAUDE}"
"""
        env = isolated_env(None, {"GOOGLE_APPLICATION_CREDENTIALS": sa_file, "HOME": d})
        with own_gateway(request, toml, env) as (_, ledger, client):
            m = client.messages.create(model="claude-vx", max_tokens=50, messages=user("adc please"))
            assert "adc please" in m.content[0].text
            ledger.check()
            captured = Captured(mock.url)
            [token] = captured.to("/token")
            assert form(token["body"])["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
            assert captured.one("/v1/projects/")["headers"]["authorization"].startswith("Bearer ya29.mock-")


def test_claude_on_bedrock_and_vertex_gets_cache_breakpoints_nova_none(claude, captured, ledger):
    """The gateway's prompt-cache breakpoints go to Claude wherever it is served (Bedrock's
    InvokeModel, Vertex's rawPredict, which take `cache_control`), not to a Converse model."""
    system = "You are a careful assistant. " * 400
    for route, path in (("claude-br", "/model/"), ("claude-vx", "/v1/projects/"), ("nova-br", "/model/")):
        claude.messages.create(model=route, max_tokens=50, system=system,
                               messages=user("cache this"))
        body = captured.one(path)["body"]
        if route == "nova-br":
            assert "cachePoint" not in body and "cache_control" not in body, body[:300]
        else:
            assert '"cache_control"' in body, (route, body[:300])
        captured.clear()
    ledger.check()


def test_a_pool_of_azure_keys_spreads_sessions_over_them(request):
    """`api_keys` on a cloud provider is a pool as on any other: each session sticks to one
    key, and sessions are spread over all of them."""
    with mock_process("--any-key") as mock, tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "ledger.sqlite")
        config = ledger_config(db) + f"""
[providers.az]
kind = "azure_openai"
base_url = "{mock.url}"
api_version = "{AZURE_API_VERSION}"
api_keys = [{{ env = "CLOUD_TEST_AZ_1", name = "first" }}, {{ env = "CLOUD_TEST_AZ_2", name = "second" }}]

[[routes]]
match = "gpt-az"
provider = "az"
model = "{DEPLOYMENT}"
"""
        env = isolated_env(None, {"CLOUD_TEST_AZ_1": "az-key-one", "CLOUD_TEST_AZ_2": "az-key-two"})
        with gateway_process(config, env) as gw, \
                held_to_rows(Ledger(db, request.node.name), request) as ledger:
            oai = openai.OpenAI(base_url=f"{gw.url}/v1", api_key=PLACEHOLDER, max_retries=0,
                                http_client=ledger.http_client(openai))
            for i in range(8):
                for _ in range(2):
                    chat(oai, "gpt-az", f"session number {i}", False)
            sent = [c["headers"]["api-key"] for c in Captured(mock.url).to("/openai/")]
            assert set(sent) == {"az-key-one", "az-key-two"}, sent
            # Both turns of a session went with one key.
            assert all(sent[2 * i] == sent[2 * i + 1] for i in range(8)), sent
            ledger.check()
            import sqlite3
            with contextlib.closing(sqlite3.connect(db)) as conn:
                named = {k for (k,) in conn.execute("SELECT DISTINCT api_key FROM requests")}
            assert named == {"first", "second"}, named


def test_betas_a_clouds_claude_does_not_offer_are_left_out_and_said(claude, captured, ledger):
    """Claude Code names betas on every request that Bedrock and Vertex refuse ("invalid
    beta flag"): those are left out, the ones the cloud offers go (Bedrock's in the body,
    Vertex's in the header, `advanced-tool-use` by its cloud name), and the client is told
    which were left out."""
    betas = "claude-code-20250219,context-1m-2025-08-07,advanced-tool-use-2025-11-20"
    for route in ("claude-br", "claude-vx"):
        raw = claude.messages.with_raw_response.create(
            model=route, max_tokens=50, messages=user("betas"),
            extra_headers={"anthropic-beta": betas})
        assert raw.headers["x-trimgate-dropped"] == "anthropic-beta=claude-code-20250219", raw.headers
        sent = captured.one("/model/" if route == "claude-br" else "/v1/projects/")
        if route == "claude-br":
            assert json.loads(sent["body"])["anthropic_beta"] == [
                "context-1m-2025-08-07", "tool-search-tool-2025-10-19"]
            assert "anthropic-beta" not in sent["headers"]
        else:
            assert sent["headers"]["anthropic-beta"] == "context-1m-2025-08-07,tool-search-tool-2025-10-19"
        captured.clear()
    ledger.check()


def test_betas_a_throttled_cloud_left_out_are_not_said_for_the_api_that_answers(request):
    """Falling back from Bedrock (which leaves Claude Code's own betas out) to Anthropic's API
    (which takes them): the answer does not say they were left out, and Anthropic got them."""
    with mock_process("--fail-status", "429", "--fail-every", "1") as east, mock_process() as direct:
        toml = f"""
[retry]
attempts_per_step = 1

[providers.br-east]
kind = "bedrock"
region = "us-east-1"
base_url = "{east.url}"

[providers.direct]
kind = "anthropic"
base_url = "{direct.url}/v1"
api_key = {{ env = "CLOUD_TEST_ANTHROPIC_KEY" }}

[[routes]]
match = "claude-direct"
provider = "br-east"
model = "{BEDROCK_CLAUDE}"
fallbacks = ["direct/claude-sonnet-4-5"]
"""
        env = isolated_env(aws_keys(), {"CLOUD_TEST_ANTHROPIC_KEY": "sk-ant-mock"})
        with own_gateway(request, toml, env) as (_, ledger, client):
            raw = client.messages.with_raw_response.create(
                model="claude-direct", max_tokens=50, messages=user("betas kept"),
                extra_headers={"anthropic-beta": "claude-code-20250219"})
            assert "x-trimgate-dropped" not in raw.headers, raw.headers
            [throttled] = Captured(east.url).to("/model/")
            assert "anthropic_beta" not in json.loads(throttled["body"])
            [answered] = Captured(direct.url).to("/v1/messages")
            assert answered["headers"]["anthropic-beta"] == "claude-code-20250219"
            [rows] = attempts(ledger)
            assert [(r["provider"], r["status"]) for r in rows] == [("br-east", 429), ("direct", 200)], rows
