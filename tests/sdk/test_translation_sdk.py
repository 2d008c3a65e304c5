"""The official SDKs across dialects, streaming and not: the anthropic package to an
OpenAI Chat provider, the openai package to an Anthropic one."""

import json

import anthropic
import openai
import pytest

TOOL = {
    "name": "run",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
}
FUNCTION = {"type": "function", "function": {"name": TOOL["name"], "description": TOOL["description"], "parameters": TOOL["input_schema"]}}


def test_anthropic_sdk_to_a_chat_provider_tool_round_trip(anthropic_client, mock):
    messages = [{"role": "user", "content": "list files"}]
    first = anthropic_client.messages.create(model="claude-on-chat-1", max_tokens=100, system="be brief", messages=messages, tools=[TOOL])
    assert first.stop_reason == "tool_use"
    use = [b for b in first.content if b.type == "tool_use"][0]
    assert use.name == "run" and use.input == {"cmd": "mock"}
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    assert mock.requests()[-1]["path"] == "/v1/chat/completions"

    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "a.txt b.txt"}]},
    ]
    second = anthropic_client.messages.create(model="claude-on-chat-1", max_tokens=100, messages=messages, tools=[TOOL])
    assert second.stop_reason == "end_turn"
    assert "a.txt b.txt" in second.content[0].text


def test_openai_sdk_to_an_anthropic_provider_tool_round_trip(openai_client, mock):
    messages = [{"role": "user", "content": "list files"}]
    first = openai_client.chat.completions.create(model="gpt-on-messages-1", messages=messages, tools=[FUNCTION])
    assert first.choices[0].finish_reason == "tool_calls"
    call = first.choices[0].message.tool_calls[0]
    assert call.function.name == "run" and json.loads(call.function.arguments) == {"cmd": "mock"}
    assert first.usage.prompt_tokens > 0
    assert mock.requests()[-1]["path"] == "/v1/messages"

    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "a.txt b.txt"},
    ]
    second = openai_client.chat.completions.create(model="gpt-on-messages-1", messages=messages, tools=[FUNCTION])
    assert second.choices[0].finish_reason == "stop"
    assert "a.txt b.txt" in second.choices[0].message.content


def test_errors_cross_in_the_clients_own_types(openai_client, anthropic_client):
    with pytest.raises(anthropic.RateLimitError):
        anthropic_client.messages.create(
            model="claude-on-chat-1", max_tokens=5, messages=[{"role": "user", "content": "x"}],
            extra_headers={"x-mock-error-status": "429"},
        )
    with pytest.raises(openai.BadRequestError) as e:
        openai_client.responses.create(model="claude-sonnet-5-5", input="x")
    assert "not available yet" in str(e.value)


def test_anthropic_sdk_streams_from_a_chat_provider_with_a_tool_round_trip(anthropic_client):
    messages = [{"role": "user", "content": "list files"}]
    with anthropic_client.messages.stream(model="claude-on-chat-1", max_tokens=100, messages=messages, tools=[TOOL]) as s:
        first = s.get_final_message()
    assert first.stop_reason == "tool_use"
    use = [b for b in first.content if b.type == "tool_use"][0]
    assert use.input == {"cmd": "mock"}
    assert first.usage.output_tokens > 0
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "x.py"}]},
    ]
    with anthropic_client.messages.stream(model="claude-on-chat-1", max_tokens=100, messages=messages, tools=[TOOL]) as s:
        text = "".join(s.text_stream)
    assert "x.py" in text


def test_openai_sdk_streams_from_an_anthropic_provider_with_a_tool_round_trip(openai_client):
    messages = [{"role": "user", "content": "list files"}]
    calls, finish, usage = {}, None, None
    for chunk in openai_client.chat.completions.create(
        model="gpt-on-messages-1", messages=messages, tools=[FUNCTION], stream=True, stream_options={"include_usage": True}
    ):
        usage = chunk.usage or usage
        if not chunk.choices:
            continue
        finish = chunk.choices[0].finish_reason or finish
        for tc in chunk.choices[0].delta.tool_calls or []:
            entry = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
            entry["id"] = tc.id or entry["id"]
            entry["name"] = (tc.function.name if tc.function else None) or entry["name"]
            entry["arguments"] += (tc.function.arguments if tc.function else None) or ""
    assert finish == "tool_calls" and usage is not None and usage.completion_tokens > 0
    call = calls[0]
    assert call["name"] == "run" and json.loads(call["arguments"]) == {"cmd": "mock"}
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call["id"], "type": "function", "function": {"name": "run", "arguments": call["arguments"]}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": "x.py"},
    ]
    text = "".join(
        c.choices[0].delta.content or ""
        for c in openai_client.chat.completions.create(model="gpt-on-messages-1", messages=messages, tools=[FUNCTION], stream=True)
        if c.choices
    )
    assert "x.py" in text
