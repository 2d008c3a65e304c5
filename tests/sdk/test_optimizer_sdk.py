"""The optimizer seen through the official SDKs: a real `cargo test` log (captured on this
machine, bench/corpus/outputs) goes back to the model as a tool result; the provider gets
it compacted with every failure kept, and the client sees what happened in the headers."""

import json
import os
import re

import pytest

HERE = os.path.dirname(__file__)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
with open(os.path.join(HERE, "..", "..", "bench", "corpus", "outputs", "cargo-test-failures.txt")) as f:
    LOG = f.read()
# What the agent needs next: each failing test, where it panicked, and the summaries.
FACTS = [
    ANSI.sub("", line).strip()
    for line in LOG.splitlines()
    if line.startswith("---- ") or "panicked at" in line or "test result:" in line
]
TOOL = {"name": "run", "description": "Run a shell command",
        "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}
FUNCTION = {"type": "function", "function": {"name": "run", "description": "Run a shell command", "parameters": TOOL["input_schema"]}}


def _tool_text(sent):
    """The tool result's text in whatever dialect the provider was sent."""
    body = json.loads(sent["body"])
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            c = m["content"]
            return c if isinstance(c, str) else c[0]["text"]
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b["content"]
                    return c if isinstance(c, str) else c[0]["text"]
    for item in body.get("input", []):
        if item.get("type") == "function_call_output":
            return item["output"]
    raise AssertionError("no tool result in what the provider got")


def _check(headers, mock, ledger):
    assert headers["x-trimgate-applied"] == "tool_output=auto"
    assert int(headers["x-trimgate-saved-tokens"]) > 200
    assert int(headers["x-trimgate-saved-bytes"]) > 1000
    text = _tool_text(mock.requests()[-1])
    assert len(text) < len(LOG) * 0.8
    for fact in FACTS:
        assert fact in text, f"{fact!r} lost"
    # The row keeps what the header told the client.
    [row] = ledger.check()
    assert row["saved_tokens"] == int(headers["x-trimgate-saved-tokens"])


def test_facts_present():
    assert len(FACTS) >= 6, FACTS


def test_openai_chat_tool_result_is_compacted(openai_client, mock, ledger):
    messages = [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "run", "arguments": "{\"cmd\": \"cargo test\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": LOG},
    ]
    raw = openai_client.chat.completions.with_raw_response.create(model="gpt-5", messages=messages, tools=[FUNCTION])
    assert raw.parse().choices[0].finish_reason == "stop"
    _check(raw.headers, mock, ledger)


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-on-chat-1"])
def test_anthropic_streamed_tool_result_is_compacted_natively_and_translated(anthropic_client, mock, ledger, model):
    messages = [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "run", "input": {"cmd": "cargo test"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": LOG}]}]},
    ]
    with anthropic_client.messages.with_streaming_response.create(
        model=model, max_tokens=200, messages=messages, tools=[TOOL], stream=True
    ) as response:
        events = [line for line in response.iter_lines() if line.startswith("event: ")]
        assert "event: message_stop" in events
    _check(response.headers, mock, ledger)


def test_responses_function_output_is_compacted(openai_client, mock, ledger):
    raw = openai_client.responses.with_raw_response.create(
        model="gpt-5",
        input=[
            {"role": "user", "content": "run the tests"},
            {"type": "function_call", "call_id": "call_1", "name": "run", "arguments": "{\"cmd\": \"cargo test\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": LOG},
        ],
        tools=[{"type": "function", "name": "run", "parameters": TOOL["input_schema"]}],
    )
    assert raw.parse().status == "completed"
    _check(raw.headers, mock, ledger)


def test_the_header_turns_it_off(openai_client, mock, ledger):
    messages = [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": LOG},
    ]
    raw = openai_client.chat.completions.with_raw_response.create(
        model="gpt-5", messages=messages, extra_headers={"x-trimgate-optimize": "off"})
    assert raw.headers["x-trimgate-applied"] == ""
    assert _tool_text(mock.requests()[-1]) == LOG
    [row] = ledger.check()
    assert row["saved_tokens"] == 0
