"""The official SDKs across dialects (whole responses; streams are not translated yet):
the anthropic package to an OpenAI Chat provider, the openai package to an Anthropic one."""

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
        openai_client.chat.completions.create(
            model="gpt-on-messages-1", messages=[{"role": "user", "content": "x"}], stream=True,
        )
    assert "not available yet" in str(e.value)
