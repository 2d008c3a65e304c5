"""The response cache seen through the official SDKs: a deterministic request asked twice
reaches the provider once, and the second answer — whole or streamed, native or translated
— parses in the SDK exactly like the first."""

import uuid

import pytest


def _text_of_chat_stream(stream):
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def _text_of_messages_stream(stream):
    return "".join(e.delta.text for e in stream if e.type == "content_block_delta" and e.delta.type == "text_delta")


def _check_misses_then_hits(ledger):
    """Calls made by `_twice`: each hit saved what its miss cost (nothing known for a model
    without prices)."""
    rows = ledger.check()
    assert [row["cache"] for row in rows] == ["miss", "hit"] * (len(rows) // 2), rows
    for miss, hit in zip(rows[::2], rows[1::2]):
        assert hit["saved_usd"] == pytest.approx(miss["cost_usd"]), (miss, hit)


def _twice(create, read):
    """Calls `create` twice, reading the first answer whole before the second call (an
    answer is stored once it is complete); returns what `read` made of each."""
    first = create()
    a = read(first.parse())
    second = create()
    assert first.headers.get("x-trimgate-cache") == "miss"
    assert second.headers.get("x-trimgate-cache") == "hit"
    return a, read(second.parse())


def test_openai_chat_whole_and_streamed(openai_client, mock, ledger):
    messages = [{"role": "user", "content": f"cached question {uuid.uuid4()}"}]
    a, b = _twice(lambda: openai_client.chat.completions.with_raw_response.create(
        model="gpt-5", messages=messages, temperature=0), lambda r: r)
    assert (b.id, b.choices[0].message.content, b.usage.prompt_tokens) == (a.id, a.choices[0].message.content, a.usage.prompt_tokens)
    assert len(mock.requests()) == 1

    mock.clear()
    text, again = _twice(lambda: openai_client.chat.completions.with_raw_response.create(
        model="gpt-5", messages=messages, temperature=0, stream=True), _text_of_chat_stream)
    assert text and again == text
    assert len(mock.requests()) == 1
    _check_misses_then_hits(ledger)


def test_openai_responses(openai_client, mock, ledger):
    prompt = f"cached responses question {uuid.uuid4()}"
    a, b = _twice(lambda: openai_client.responses.with_raw_response.create(
        model="gpt-5", input=prompt, temperature=0), lambda r: r.output_text)
    assert b == a != ""
    assert len(mock.requests()) == 1
    _check_misses_then_hits(ledger)


# Current Anthropic models take no temperature: the gateway's config caches every request
# to its side-call models (`*haiku*`, exact = "always").
@pytest.mark.parametrize("model", ["claude-haiku-4-5", "claude-on-chat-haiku"])
def test_anthropic_whole_and_streamed_native_and_translated(anthropic_client, mock, ledger, model):
    messages = [{"role": "user", "content": f"cached question {uuid.uuid4()}"}]
    a, b = _twice(lambda: anthropic_client.messages.with_raw_response.create(
        model=model, max_tokens=64, messages=messages), lambda r: r)
    assert (b.id, b.content[0].text, b.usage.output_tokens) == (a.id, a.content[0].text, a.usage.output_tokens)
    assert len(mock.requests()) == 1

    mock.clear()
    text, again = _twice(lambda: anthropic_client.messages.with_raw_response.create(
        model=model, max_tokens=64, messages=messages, stream=True), _text_of_messages_stream)
    assert text and again == text
    assert len(mock.requests()) == 1
    _check_misses_then_hits(ledger)


def test_no_cache_goes_to_the_provider(anthropic_client, mock, ledger):
    messages = [{"role": "user", "content": f"fresh question {uuid.uuid4()}"}]
    for expected in ["miss", "miss"]:
        raw = anthropic_client.messages.with_raw_response.create(
            model="claude-haiku-4-5", max_tokens=64, messages=messages,
            extra_headers={"cache-control": "no-cache"})
        assert raw.headers.get("x-trimgate-cache") == expected
    assert len(mock.requests()) == 2
    assert [row["cache"] for row in ledger.check()] == ["miss", "miss"]
