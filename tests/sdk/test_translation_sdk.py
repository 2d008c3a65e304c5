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


def test_anthropic_sdk_to_a_chat_provider_tool_round_trip(anthropic_client, mock, ledger):
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
    ledger.check()


def test_openai_sdk_to_an_anthropic_provider_tool_round_trip(openai_client, mock, ledger):
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
    ledger.check()


def test_errors_cross_in_the_clients_own_types(openai_client, anthropic_client, ledger):
    with pytest.raises(anthropic.RateLimitError):
        anthropic_client.messages.create(
            model="claude-on-chat-1", max_tokens=5, messages=[{"role": "user", "content": "x"}],
            extra_headers={"x-mock-error-status": "429"},
        )
    with pytest.raises(openai.BadRequestError) as e:
        openai_client.responses.create(model="claude-sonnet-5-5", input="x", previous_response_id="resp_1")
    assert "previous_response_id" in str(e.value)
    ledger.check()


def test_anthropic_sdk_streams_from_a_chat_provider_with_a_tool_round_trip(anthropic_client, ledger):
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
    rows = ledger.check()
    assert rows[0]["output_tokens"] == first.usage.output_tokens


def test_openai_sdk_streams_from_an_anthropic_provider_with_a_tool_round_trip(openai_client, ledger):
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
    rows = ledger.check()
    assert (rows[0]["input_tokens"], rows[0]["output_tokens"]) == (usage.prompt_tokens, usage.completion_tokens)


RESPONSES_TOOL = {"type": "function", "name": TOOL["name"], "description": TOOL["description"], "parameters": TOOL["input_schema"]}


@pytest.mark.parametrize("model", ["gpt-on-messages-1", "chat-only-1"])
@pytest.mark.parametrize("stream", [False, True])
def test_responses_clients_reach_other_dialects_with_a_tool_round_trip(openai_client, mock, ledger, model, stream):
    def ask(**kwargs):
        if stream:
            with openai_client.responses.stream(model=model, tools=[RESPONSES_TOOL], **kwargs) as s:
                deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
                final = s.get_final_response()
            assert "".join(deltas) == final.output_text
            return final
        return openai_client.responses.create(model=model, tools=[RESPONSES_TOOL], **kwargs)

    first = ask(input="list files", instructions="be brief")
    calls = [i for i in first.output if i.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "run"
    assert json.loads(calls[0].arguments) == {"cmd": "mock"}
    assert first.usage.input_tokens > 0 and first.usage.output_tokens > 0
    expected_path = "/v1/messages" if "messages" in model else "/v1/chat/completions"
    assert mock.requests()[-1]["path"] == expected_path

    second = ask(input=[
        {"role": "user", "content": "list files"},
        {"type": "function_call", "call_id": calls[0].call_id, "name": "run", "arguments": calls[0].arguments},
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "a.txt"},
    ])
    assert "a.txt" in second.output_text
    ledger.check()


@pytest.mark.parametrize("stream", [False, True])
def test_chat_and_anthropic_clients_reach_a_responses_only_provider(openai_client, anthropic_client, ledger, stream):
    if stream:
        text = "".join(
            c.choices[0].delta.content or ""
            for c in openai_client.chat.completions.create(model="responses-only-1", messages=[{"role": "user", "content": "via responses"}], stream=True)
            if c.choices
        )
        with anthropic_client.messages.stream(model="responses-only-1", max_tokens=50, messages=[{"role": "user", "content": "via responses"}]) as s:
            atext = "".join(s.text_stream)
    else:
        text = openai_client.chat.completions.create(model="responses-only-1", messages=[{"role": "user", "content": "via responses"}]).choices[0].message.content
        atext = anthropic_client.messages.create(model="responses-only-1", max_tokens=50, messages=[{"role": "user", "content": "via responses"}]).content[0].text
    assert "via responses" in text and "via responses" in atext
    ledger.check()


def test_reasoning_crosses_to_anthropic_clients_as_thinking(anthropic_client, ledger):
    """DeepSeek-style reasoning_content from a Chat provider reaches an Anthropic client as
    a thinking block ahead of the text, streamed and not."""
    kwargs = dict(model="claude-on-chat-1", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024},
                  messages=[{"role": "user", "content": "why is the sky blue"}])
    whole = anthropic_client.messages.create(**kwargs)
    with anthropic_client.messages.stream(**kwargs) as s:
        streamed = s.get_final_message()
    for m in (whole, streamed):
        assert [b.type for b in m.content] == ["thinking", "text"]
        assert m.content[0].thinking.startswith("Thinking about: why is the sky blue")
        assert "why is the sky blue" in m.content[1].text
    ledger.check()


def test_reasoning_crosses_to_chat_clients_as_reasoning_content(openai_client, ledger):
    r = openai_client.chat.completions.create(model="gpt-on-messages-1", reasoning_effort="low",
                                              messages=[{"role": "user", "content": "plan the fix"}])
    extra = r.choices[0].message.model_dump()
    assert extra.get("reasoning_content", "").startswith("Thinking about: plan the fix")
    chunks = openai_client.chat.completions.create(model="gpt-on-messages-1", reasoning_effort="low", stream=True,
                                                   messages=[{"role": "user", "content": "plan the fix"}])
    reasoning = "".join((c.choices[0].delta.model_dump().get("reasoning_content") or "") for c in chunks if c.choices)
    assert reasoning.startswith("Thinking about: plan the fix")
    ledger.check()


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_signatures_survive_a_responses_client_round_trip(openai_client, ledger, stream):
    """A Responses client talking to Claude gets thinking as a reasoning item carrying the
    signature; sending its items back, the provider sees the signature intact (the mock
    refuses a thinking block whose signature it did not issue)."""
    kwargs = dict(model="gpt-on-messages-1", reasoning={"effort": "low"}, tools=[RESPONSES_TOOL])
    if stream:
        with openai_client.responses.stream(input="list files", **kwargs) as s:
            first = s.get_final_response()
    else:
        first = openai_client.responses.create(input="list files", **kwargs)
    kinds = [i.type for i in first.output]
    assert kinds[0] == "reasoning" and "function_call" in kinds
    reasoning = first.output[0]
    assert reasoning.encrypted_content, "the signature rides in encrypted_content"
    call = [i for i in first.output if i.type == "function_call"][0]
    second = openai_client.responses.create(input=[
        {"role": "user", "content": "list files"},
        reasoning.model_dump(exclude_none=True),
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "a.txt"},
    ], **kwargs)
    assert "a.txt" in second.output_text
    # And a tampered signature is refused by the provider, in the client's error type.
    bad = reasoning.model_dump(exclude_none=True)
    bad["encrypted_content"] = "tampered"
    with pytest.raises(openai.BadRequestError):
        openai_client.responses.create(input=[{"role": "user", "content": "list files"}, bad, {"role": "user", "content": "go on"}], **kwargs)
    ledger.check()
