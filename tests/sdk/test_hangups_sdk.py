"""SDK clients that hang up, and the row each leaves in the ledger. The `openai` package
closes its connection as soon as it has a Chat stream's `data: [DONE]`, and a Responses
client may close once it has `response.completed`: that is a completed request with the
provider's usage, even while the provider's body is still open. A client that leaves midway
is `client_cancelled`, charged for its input and the output relayed so far; one that gives
up before the first byte, for its input alone. The row names the counts that are the
gateway's own rather than the provider's."""

import time

import anthropic
import openai
import pytest

from conftest import priced

# The provider holds each stream's body open this long after its last event, so the SDK's
# close comes before the provider's end (what was taken for a hang-up).
LINGER = {"x-mock-linger-ms": "3000"}
# Ten words a frame at a time, 400 ms apart: room to leave after the first.
WORDS = "one two three four five six seven eight nine ten"
SLOW = {"x-mock-frame-interval-ms": "400", "x-mock-reply": WORDS}
# Response headers held back 3 s, from clients that give up after half a second.
LATE = {"x-mock-delay-ms": "3000"}
# Served by the OpenAI provider as asked, and by the Anthropic one through translation.
MODELS = ["gpt-5", "claude-sonnet-5-5"]


def _check_charged(row, estimated):
    """A request the client left: cancelled, charged for what it used (its input, and any
    output relayed), the counts not the provider's named."""
    assert (row["outcome"], row["tokens_estimated"]) == ("client_cancelled", estimated), row
    assert row["input_tokens"] > 0, row
    # Left before the first byte, no model was served: the one asked for is priced.
    assert priced(row["model_served"] or row["model_requested"]) and row["cost_usd"] > 0, row


@pytest.mark.parametrize("model", MODELS)
def test_a_chat_stream_read_to_its_end_is_completed(openai_client, ledger, model):
    started = time.monotonic()
    stream = openai_client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "read me to the end"}], stream=True,
        stream_options={"include_usage": True}, extra_headers=LINGER)
    usage = [c.usage for c in stream if c.usage][-1]
    # The SDK left at [DONE], well before the provider's body ended.
    assert time.monotonic() - started < 2.5
    [row] = ledger.check()
    assert (row["input_tokens"], row["output_tokens"]) == (usage.prompt_tokens, usage.completion_tokens)


@pytest.mark.parametrize("model", MODELS)
def test_a_responses_stream_closed_at_response_completed_is_completed(openai_client, ledger, model):
    stream = openai_client.responses.create(model=model, input="close me when done", stream=True, extra_headers=LINGER)
    usage = None
    for event in stream:
        if event.type == "response.completed":
            usage = event.response.usage
            break
    stream.close()
    assert usage is not None, "no response.completed"
    [row] = ledger.check()
    assert (row["input_tokens"], row["output_tokens"]) == (usage.input_tokens, usage.output_tokens)


# An OpenAI provider reports usage only at a stream's end, so both counts are the gateway's;
# Anthropic's reports the input at the start (message_start), so only the output is.
@pytest.mark.parametrize("model, estimated", [("gpt-5", "input,output"), ("claude-sonnet-5-5", "output")])
def test_a_chat_stream_left_midway_is_cancelled_and_charged(openai_client, ledger, model, estimated):
    stream = openai_client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "leave midway"}], stream=True, extra_headers=SLOW)
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    stream.close()
    row = ledger.row()
    _check_charged(row, estimated)
    # Some of the answer was relayed, not all ten words of it.
    assert 0 < row["output_tokens"] < len(WORDS.split()), row


def test_a_messages_stream_left_midway_keeps_the_providers_input(anthropic_client, ledger):
    stream = anthropic_client.messages.create(
        model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": "leave midway"}],
        stream=True, extra_headers=SLOW)
    for event in stream:
        if event.type == "message_start":
            input_tokens = event.message.usage.input_tokens
        if event.type == "content_block_delta":
            break
    stream.close()
    row = ledger.row()
    _check_charged(row, "output")
    assert row["input_tokens"] == input_tokens
    assert 0 < row["output_tokens"] < len(WORDS.split()), row


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_a_request_given_up_before_the_first_byte_is_charged_its_input(openai_client, anthropic_client, ledger, sdk):
    messages = [{"role": "user", "content": "too slow for me"}]
    if sdk == "openai":
        with pytest.raises(openai.APITimeoutError):
            openai_client.chat.completions.create(model="gpt-5", messages=messages, stream=True,
                                                  timeout=0.5, extra_headers=LATE)
    else:
        with pytest.raises(anthropic.APITimeoutError):
            anthropic_client.messages.create(model="claude-sonnet-5-5", max_tokens=64, messages=messages, stream=True,
                                             timeout=0.5, extra_headers=LATE)
    row = ledger.row()
    _check_charged(row, "input")
    assert row["output_tokens"] == 0, row
