"""The official anthropic package through the gateway: Messages, streaming and not,
a tool-use round trip, count_tokens, both auth styles, and typed errors."""

import json

import anthropic
import pytest

from conftest import ANTHROPIC_KEY, PLACEHOLDER, check_broken

TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_message_returns_content_and_usage(anthropic_client, mock, ledger):
    m = anthropic_client.messages.create(
        model="claude-sonnet-5-5", max_tokens=100, messages=[{"role": "user", "content": "hello claude"}]
    )
    assert m.content[0].type == "text" and "hello claude" in m.content[0].text
    assert m.stop_reason == "end_turn"
    assert m.usage.input_tokens > 0 and m.usage.output_tokens > 0
    sent = mock.requests()[-1]
    assert sent["headers"]["x-api-key"] == ANTHROPIC_KEY
    assert PLACEHOLDER not in json.dumps(sent["headers"])
    [row] = ledger.check()
    assert (row["input_tokens"], row["output_tokens"]) == (m.usage.input_tokens, m.usage.output_tokens)


def test_bearer_auth_token_clients_work_too(gateway_url, mock, ledger):
    client = anthropic.Anthropic(base_url=gateway_url, auth_token=PLACEHOLDER, max_retries=0,
                                 http_client=ledger.http_client(anthropic))
    m = client.messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert m.content
    headers = mock.requests()[-1]["headers"]
    assert headers["x-api-key"] == ANTHROPIC_KEY and "authorization" not in headers
    ledger.check()


def test_stream_text_and_usage(anthropic_client, ledger):
    with anthropic_client.messages.stream(
        model="claude-sonnet-5-5", max_tokens=100, messages=[{"role": "user", "content": "stream to me"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert "stream to me" in text
    assert final.usage.output_tokens > 0 and final.usage.input_tokens > 0
    [row] = ledger.check()
    assert (row["input_tokens"], row["output_tokens"]) == (final.usage.input_tokens, final.usage.output_tokens)


@pytest.mark.parametrize("stream", [False, True])
def test_tool_use_round_trip(anthropic_client, ledger, stream):
    messages = [{"role": "user", "content": "weather in Oslo?"}]
    if stream:
        with anthropic_client.messages.stream(model="claude-sonnet-5-5", max_tokens=100, messages=messages, tools=[TOOL]) as s:
            first = s.get_final_message()
    else:
        first = anthropic_client.messages.create(model="claude-sonnet-5-5", max_tokens=100, messages=messages, tools=[TOOL])
    assert first.stop_reason == "tool_use"
    use = [b for b in first.content if b.type == "tool_use"][0]
    assert use.name == "get_weather" and use.input == {"city": "mock"}
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": [{"type": "text", "text": "snow, -3C"}]}]},
    ]
    second = anthropic_client.messages.create(model="claude-sonnet-5-5", max_tokens=100, messages=messages, tools=[TOOL])
    assert "snow, -3C" in second.content[0].text
    ledger.check()


def test_count_tokens(anthropic_client, ledger):
    r = anthropic_client.messages.count_tokens(model="claude-sonnet-5-5", messages=[{"role": "user", "content": "count me"}])
    assert r.input_tokens > 0
    ledger.check()


def test_beta_messages_with_query_string(anthropic_client, mock, ledger):
    # Claude Code posts to /v1/messages?beta=true; the query must reach the provider.
    m = anthropic_client.beta.messages.create(
        model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "x"}],
        betas=["interleaved-thinking-2025-05-14"], extra_query={"beta": "true"},
    )
    assert m.content
    sent = mock.requests()[-1]
    assert sent["path_and_query"] == "/v1/messages?beta=true"
    assert sent["headers"]["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    ledger.check()


def test_errors_arrive_as_the_sdks_typed_exceptions(anthropic_client, ledger):
    with pytest.raises(anthropic.NotFoundError) as e:
        anthropic_client.messages.create(model="no-such-model", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert "no-such-model" in str(e.value)
    with pytest.raises(anthropic.RateLimitError):
        anthropic_client.messages.create(
            model="claude-sonnet-5-5", max_tokens=5, messages=[{"role": "user", "content": "x"}],
            extra_headers={"x-mock-error-status": "429"},
        )
    ledger.check()


def test_an_error_mid_stream_raises(anthropic_client, ledger):
    with pytest.raises(anthropic.APIStatusError) as e:
        with anthropic_client.messages.stream(
            model="claude-sonnet-5-5", max_tokens=100, messages=[{"role": "user", "content": "a b c d e f"}],
            extra_headers={"x-mock-stream-error-after": "3"},
        ) as s:
            for _ in s:
                pass
    assert "Overloaded" in str(e.value)
    check_broken(ledger.row(), "completed")
