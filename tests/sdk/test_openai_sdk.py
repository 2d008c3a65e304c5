"""The official openai package through the gateway: Chat Completions and Responses,
streaming and not, with a tool-call round trip each."""

import json

import openai
import pytest

from conftest import OPENAI_KEY, PLACEHOLDER, check_broken

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
        },
    },
}
RESPONSES_TOOL = {"type": "function", "name": "get_weather", **{k: v for k, v in WEATHER_TOOL["function"].items() if k != "name"}}


def test_chat_completion_returns_content_and_usage(openai_client, mock, ledger):
    r = openai_client.chat.completions.create(
        model="gpt-5", messages=[{"role": "user", "content": "hello gateway"}]
    )
    assert r.choices[0].message.content.startswith("Hello from the mock.")
    assert "hello gateway" in r.choices[0].message.content
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    sent = mock.requests()[-1]
    assert sent["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
    assert PLACEHOLDER not in json.dumps(sent["headers"])
    [row] = ledger.check()
    assert (row["input_tokens"], row["output_tokens"]) == (r.usage.prompt_tokens, r.usage.completion_tokens)


def test_chat_stream_with_usage(openai_client, ledger):
    stream = openai_client.chat.completions.create(
        model="gpt-5",
        messages=[{"role": "user", "content": "stream me please"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, usage = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    assert "stream me please" in text
    assert usage is not None and usage.completion_tokens > 0
    [row] = ledger.check()
    assert (row["input_tokens"], row["output_tokens"]) == (usage.prompt_tokens, usage.completion_tokens)


def test_chat_stream_without_usage_request_has_no_usage_chunk(openai_client, ledger):
    chunks = list(
        openai_client.chat.completions.create(
            model="gpt-5", messages=[{"role": "user", "content": "x"}], stream=True
        )
    )
    assert chunks and all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)
    # The client asked for no usage; the row has the provider's all the same.
    ledger.check()


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tool_call_round_trip(openai_client, ledger, stream):
    messages = [{"role": "user", "content": "weather in Paris?"}]
    if stream:
        calls = {}
        finish = None
        for chunk in openai_client.chat.completions.create(model="gpt-5", messages=messages, tools=[WEATHER_TOOL], stream=True):
            choice = chunk.choices[0]
            finish = choice.finish_reason or finish
            for tc in choice.delta.tool_calls or []:
                entry = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                entry["id"] = tc.id or entry["id"]
                if tc.function.name:
                    entry["name"] = tc.function.name
                entry["arguments"] += tc.function.arguments or ""
        assert finish == "tool_calls"
        call = calls[0]
        call_id, name, arguments = call["id"], call["name"], call["arguments"]
    else:
        r = openai_client.chat.completions.create(model="gpt-5", messages=messages, tools=[WEATHER_TOOL])
        assert r.choices[0].finish_reason == "tool_calls"
        tc = r.choices[0].message.tool_calls[0]
        call_id, name, arguments = tc.id, tc.function.name, tc.function.arguments
    assert name == "get_weather"
    assert json.loads(arguments) == {"city": "mock", "days": 1}
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "sunny, 21C"},
    ]
    r = openai_client.chat.completions.create(model="gpt-5", messages=messages, tools=[WEATHER_TOOL])
    assert r.choices[0].finish_reason == "stop"
    assert "sunny, 21C" in r.choices[0].message.content
    ledger.check()


def test_responses_create_and_stream(openai_client, ledger):
    r = openai_client.responses.create(model="gpt-5", input="hello responses")
    assert "hello responses" in r.output_text
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0

    deltas, final = [], None
    with openai_client.responses.stream(model="gpt-5", input="streaming responses") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    assert "streaming responses" in "".join(deltas)
    assert final.usage.output_tokens > 0
    rows = ledger.check()
    assert [row["output_tokens"] for row in rows] == [r.usage.output_tokens, final.usage.output_tokens]


@pytest.mark.parametrize("stream", [False, True])
def test_responses_tool_call_round_trip(openai_client, ledger, stream):
    if stream:
        with openai_client.responses.stream(model="gpt-5", input="weather?", tools=[RESPONSES_TOOL]) as s:
            for _ in s:
                pass
            first = s.get_final_response()
    else:
        first = openai_client.responses.create(model="gpt-5", input="weather?", tools=[RESPONSES_TOOL])
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == {"city": "mock", "days": 1}
    second = openai_client.responses.create(
        model="gpt-5",
        tools=[RESPONSES_TOOL],
        input=[
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": calls[0].call_id, "name": "get_weather", "arguments": calls[0].arguments},
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "rain all week"},
        ],
    )
    assert "rain all week" in second.output_text
    ledger.check()


def test_errors_arrive_as_the_sdks_typed_exceptions(openai_client, ledger):
    with pytest.raises(openai.NotFoundError) as e:
        openai_client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "x"}])
    assert "no-such-model" in str(e.value)
    with pytest.raises(openai.RateLimitError):
        openai_client.chat.completions.create(
            model="gpt-5", messages=[{"role": "user", "content": "x"}], extra_headers={"x-mock-error-status": "429"}
        )
    # The provider's own 400, relayed with its status and body.
    with pytest.raises(openai.BadRequestError):
        openai_client.chat.completions.create(model="gpt-5", messages="not a list")
    ledger.check()


def test_models_list(openai_client):
    ids = [m.id for m in openai_client.models.list()]
    assert "gpt-5" in ids and "claude-sonnet-5-5" in ids


@pytest.mark.parametrize("model", ["gpt-5", "claude-sonnet-5-5"])
def test_a_responses_stream_cut_mid_way_ends_with_error_then_response_failed(openai_client, ledger, model):
    # The provider resets the connection after three frames: relayed as it comes (gpt-5)
    # or translated from Anthropic's stream (claude-sonnet-5-5).
    stream = openai_client.responses.create(
        model=model, input="a b c d e f g h", stream=True, extra_headers={"x-mock-reset-after": "3"}
    )
    events = list(stream)
    types = [e.type for e in events]
    assert types[0] == "response.created", types
    assert types[-2:] == ["error", "response.failed"], types
    assert [e.sequence_number for e in events] == list(range(len(events)))
    failed = events[-1].response
    assert failed.status == "failed"
    assert failed.id == events[0].response.id
    assert failed.error.code == events[-2].code == "upstream_broken"
    check_broken(ledger.row(), "upstream_failed")
