"""The official google-genai package through the gateway: generate_content and its stream,
to a Gemini provider as sent and translated to OpenAI Chat and Anthropic providers; a
function-calling round trip done by hand; count_tokens; the model list; and errors as the
SDK's own exceptions, with Google's codes and statuses."""

import json

import pytest
from google import genai
from google.genai import errors, types

from conftest import GEMINI_KEY, PLACEHOLDER, check_broken

# The model the client asks for → the path the mock's side is sent it at, unstreamed.
ROUTES = {
    "gemini-2.5-pro": "/v1beta/models/gemini-2.5-pro:generateContent",
    "gemini-on-chat-1": "/v1/chat/completions",
    "gemini-on-messages-1": "/v1/messages",
}
MODELS = list(ROUTES)
NATIVE = "gemini-2.5-pro"

# The same function declared both ways the SDK offers: a JSON Schema (which it sends as
# `parameters_json_schema`, in snake case, as Google's proto JSON also accepts) and
# Gemini's OpenAPI subset (`parameters`, types in capitals).
TOOLS = {
    "json-schema": types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather",
        description="Weather for a city",
        parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )]),
    "openapi-schema": types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather",
        description="Weather for a city",
        parameters=types.Schema(type="OBJECT", properties={"city": types.Schema(type="STRING")}, required=["city"]),
    )]),
}
# The call is the test's to answer: the SDK would otherwise run a Python function itself.
MANUAL = types.AutomaticFunctionCallingConfig(disable=True)


def _counts(usage):
    """A ledger row's input and output for the SDK's usage: output counts the thoughts too."""
    return usage.prompt_token_count, usage.candidates_token_count + (usage.thoughts_token_count or 0)


def _check_sent(sent, model, streamed=False):
    """The request reached the route's side in its dialect, with the provider's key for the
    client's placeholder."""
    path = ROUTES[model]
    if model == NATIVE:
        if streamed:
            path = path.replace(":generateContent", ":streamGenerateContent")
        assert sent["path"] == path, sent["path"]
        assert ("alt=sse" in sent["path_and_query"]) is streamed, sent["path_and_query"]
        assert sent["headers"]["x-goog-api-key"] == GEMINI_KEY
    else:
        assert sent["path"] == path, sent["path"]
        assert json.loads(sent["body"]).get("stream", False) is streamed
    assert PLACEHOLDER not in json.dumps(sent["headers"]) + sent["path_and_query"]


@pytest.mark.parametrize("model", MODELS)
def test_generate_content_returns_text_and_usage(gemini_client, mock, ledger, model):
    r = gemini_client.models.generate_content(model=model, contents="hello gemini")
    assert "hello gemini" in r.text
    assert r.candidates[0].finish_reason == types.FinishReason.STOP
    assert r.usage_metadata.prompt_token_count > 0 and r.usage_metadata.candidates_token_count > 0
    _check_sent(mock.requests()[-1], model)
    [row] = ledger.check()
    assert (row["input_tokens"], row["output_tokens"]) == _counts(r.usage_metadata)


@pytest.mark.parametrize("api_version", ["v1", "v1beta"])
def test_both_api_versions_reach_the_gemini_provider(gateway_url, mock, ledger, api_version):
    """google-genai calls `/v1/…` by default; Gemini CLI and older SDKs call `/v1beta/…`."""
    client = genai.Client(api_key=PLACEHOLDER, http_options=ledger.genai_options(gateway_url, api_version=api_version))
    r = client.models.generate_content(model=NATIVE, contents="which version")
    assert "which version" in r.text
    _check_sent(mock.requests()[-1], NATIVE)
    ledger.check()


@pytest.mark.parametrize("model", MODELS)
def test_stream_text_and_usage(gemini_client, mock, ledger, model):
    chunks = list(gemini_client.models.generate_content_stream(model=model, contents="stream to me please"))
    assert len(chunks) > 1, "the answer came in one piece"
    text = "".join(c.text or "" for c in chunks)
    assert "stream to me please" in text
    last = chunks[-1]
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata.prompt_token_count > 0 and last.usage_metadata.candidates_token_count > 0
    _check_sent(mock.requests()[-1], model, streamed=True)
    [row] = ledger.check()
    assert (row["input_tokens"], row["output_tokens"]) == _counts(last.usage_metadata)


@pytest.mark.parametrize("declared", list(TOOLS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("model", MODELS)
def test_function_calling_round_trip(gemini_client, mock, ledger, model, stream, declared):
    """The model calls the declared function; its result goes back as a functionResponse
    part (named, as Google's examples write it, without the call's id) and the answer
    quotes it."""
    config = types.GenerateContentConfig(tools=[TOOLS[declared]], automatic_function_calling=MANUAL)
    contents = [types.Content(role="user", parts=[types.Part(text="weather in Oslo?")])]
    if stream:
        chunks = list(gemini_client.models.generate_content_stream(model=model, contents=contents, config=config))
        parts = [p for c in chunks if c.candidates and c.candidates[0].content
                 for p in c.candidates[0].content.parts or []]
        turn = types.Content(role="model", parts=parts)
    else:
        first = gemini_client.models.generate_content(model=model, contents=contents, config=config)
        turn = first.candidates[0].content
    calls = [p.function_call for p in turn.parts if p.function_call]
    assert len(calls) == 1, turn
    assert calls[0].name == "get_weather" and calls[0].args == {"city": "mock"}
    _check_sent(mock.requests()[-1], model, streamed=stream)

    contents += [turn, types.Content(role="user", parts=[
        types.Part.from_function_response(name="get_weather", response={"result": "snow, -3C"})])]
    second = gemini_client.models.generate_content(model=model, contents=contents, config=config)
    assert "snow, -3C" in second.text
    assert not second.function_calls
    assert second.candidates[0].finish_reason == types.FinishReason.STOP
    _check_sent(mock.requests()[-1], model)
    ledger.check()


@pytest.mark.parametrize("model", MODELS)
def test_system_instruction_and_generation_config_reach_the_provider(gemini_client, mock, ledger, model):
    """The SDK writes `thinkingConfig.thinking_budget` in snake case inside camel-case
    `generationConfig`; the instruction, the output limit and "no thinking" all arrive."""
    config = types.GenerateContentConfig(system_instruction="be brief, please", max_output_tokens=100,
                                         thinking_config=types.ThinkingConfig(thinking_budget=0))
    r = gemini_client.models.generate_content(model=model, contents="hello with a config", config=config)
    assert "hello with a config" in r.text
    sent = mock.requests()[-1]
    _check_sent(sent, model)
    body = json.loads(sent["body"])
    assert "be brief, please" in json.dumps(body)
    if model == NATIVE:
        assert body["generationConfig"]["maxOutputTokens"] == 100
    elif ROUTES[model] == "/v1/chat/completions":
        assert body.get("max_completion_tokens", body.get("max_tokens")) == 100, body
        assert "reasoning_effort" not in body or body["reasoning_effort"] in ("none", "minimal"), body
    else:
        assert body["max_tokens"] == 100, body
        assert body.get("thinking", {"type": "disabled"})["type"] == "disabled", body
    ledger.check()


@pytest.mark.parametrize("model", MODELS)
def test_count_tokens(gemini_client, mock, ledger, model):
    """Counted by a Gemini provider; for a provider of another dialect, by the gateway."""
    r = gemini_client.models.count_tokens(model=model, contents="count me, please")
    assert r.total_tokens > 0
    if model == NATIVE:
        sent = mock.requests()[-1]
        assert sent["path"] == "/v1beta/models/gemini-2.5-pro:countTokens"
        assert sent["headers"]["x-goog-api-key"] == GEMINI_KEY
    ledger.check()


@pytest.mark.parametrize("api_version", ["v1", "v1beta"])
def test_models_list_and_get(gateway_url, api_version):
    client = genai.Client(api_key=PLACEHOLDER,
                          http_options=types.HttpOptions(base_url=gateway_url, api_version=api_version))
    models = {m.name: m for m in client.models.list()}
    assert "models/gemini-2.5-pro" in models and "models/gemini-2.5-flash" in models, list(models)
    assert "generateContent" in models["models/gemini-2.5-pro"].supported_actions
    one = client.models.get(model="gemini-2.5-pro")
    assert one.name == "models/gemini-2.5-pro"


def test_an_unknown_model_is_a_client_error_404(gemini_client, mock, ledger):
    with pytest.raises(errors.ClientError) as e:
        gemini_client.models.generate_content(model="no-such-model", contents="x")
    assert e.value.code == 404 and e.value.status == "NOT_FOUND", e.value
    assert "no-such-model" in e.value.message
    assert not mock.requests(), "an unknown model reached a provider"
    ledger.check()


@pytest.mark.parametrize("model", MODELS)
def test_a_providers_429_is_a_client_error_with_googles_status(gemini_client, ledger, model):
    """The provider's rate limit, in its own dialect, comes back as Google's
    RESOURCE_EXHAUSTED, whole or streamed."""
    config = types.GenerateContentConfig(http_options=types.HttpOptions(headers={"x-mock-error-status": "429"}))
    with pytest.raises(errors.ClientError) as e:
        gemini_client.models.generate_content(model=model, contents="x", config=config)
    assert e.value.code == 429 and e.value.status == "RESOURCE_EXHAUSTED", e.value
    with pytest.raises(errors.ClientError) as e:
        list(gemini_client.models.generate_content_stream(model=model, contents="x", config=config))
    assert e.value.code == 429 and e.value.status == "RESOURCE_EXHAUSTED", e.value
    ledger.check()


@pytest.mark.parametrize("model", MODELS)
def test_an_error_mid_stream_raises_after_the_text_before_it(gemini_client, ledger, model):
    """The provider's stream breaks off with an error event after its first text: the SDK
    yields what came before, then raises a server error. (Anthropic's stream opens with
    three frames of no text: message_start, content_block_start, ping.)"""
    after = "4" if model == "gemini-on-messages-1" else "3"
    config = types.GenerateContentConfig(http_options=types.HttpOptions(headers={"x-mock-stream-error-after": after}))
    received = []
    with pytest.raises(errors.ServerError) as e:
        for chunk in gemini_client.models.generate_content_stream(
                model=model, contents="a b c d e f g h i j", config=config):
            received.append(chunk)
    assert received, "nothing came before the error"
    assert e.value.code >= 500, e.value
    check_broken(ledger.row(), "completed")
