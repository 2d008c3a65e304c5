"""Prompt-cache breakpoints seen through the official SDKs: a multi-turn session from the
`anthropic` package, and one from the `openai` package routed to an Anthropic provider,
carry no `cache_control` of their own. The gateway marks them; the mock plays Anthropic's
prompt cache (a marked prefix is written once and read on later turns), and the usage the
SDK reads back shows the cache reads the marks earned."""

import json
import os
import tempfile

import pytest

from conftest import ANTHROPIC_KEY, PLACEHOLDER, Ledger, MockInspector, _start, ledger_config

# Long enough to pass Anthropic's minimum cacheable prompt (1,024 tokens for Sonnet).
SYSTEM = "Follow the repository's conventions, keep answers short, cite file:line. " * 120
TOOL = {"name": "read_file", "description": "Read a file of the repository.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
FUNCTION = {"type": "function", "function": {"name": TOOL["name"], "description": TOOL["description"],
                                             "parameters": TOOL["input_schema"]}}
QUESTIONS = ["What does main.rs do?", "And lib.rs?", "Which of them starts the listener?", "Thanks. Anything else?"]


@pytest.fixture(scope="module")
def cached():
    """A mock with its prompt cache on and a gateway in front of it."""
    mock_proc, mock_url = _start(["mock", "--listen", "127.0.0.1:0", "--prompt-cache"], "mock provider listening on ")
    config = f"""
[providers.anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_ANTHROPIC_KEY" }}
models = ["claude-sonnet-5-5"]

[[routes]]
match = "gpt-on-messages-*"
provider = "anthropic"
"""
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "ledger.sqlite")
        path = os.path.join(d, "config.toml")
        with open(path, "w") as f:
            f.write(ledger_config(db) + config)
        gw_proc, gw_url = _start(["serve", "--config", path, "--listen", "127.0.0.1:0"], "Trimgate listening on ",
                                 env={"SDK_TEST_ANTHROPIC_KEY": ANTHROPIC_KEY, "TRIMGATE_LOG": "warn"})
        inspector = MockInspector(mock_url)
        inspector.clear()
        yield gw_url, inspector, db
        gw_proc.terminate()
        gw_proc.wait(timeout=10)
    mock_proc.terminate()
    mock_proc.wait(timeout=10)


@pytest.fixture()
def ledger(cached, request):
    """This module's gateway's ledger (the session gateway's is conftest's `ledger`)."""
    return Ledger(cached[2], request.node.name)


def _marks(value):
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(_marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(_marks(v) for v in value)
    return 0


def _check_forwarded(mock, turns, system_text=SYSTEM):
    sent = [json.loads(r["body"]) for r in mock.requests()]
    assert len(sent) == turns
    for body in sent:
        assert 1 <= _marks(body) <= 4, body
        # The system prompt is marked; its text is what the client sent.
        system = body["system"]
        assert isinstance(system, list) and system[-1]["cache_control"] == {"type": "ephemeral"}
        assert "".join(b["text"] for b in system) == system_text


def test_anthropic_sdk_session_reads_the_cache_the_marks_earned(cached, ledger):
    import anthropic

    url, mock, _ = cached
    mock.clear()
    client = anthropic.Anthropic(base_url=url, api_key=PLACEHOLDER, max_retries=0, http_client=ledger.http_client(anthropic))
    messages, reads, writes = [], [], []
    for q in QUESTIONS:
        messages.append({"role": "user", "content": q})
        reply = client.messages.create(model="claude-sonnet-5-5", max_tokens=64, system=SYSTEM,
                                       tools=[TOOL], messages=messages)
        reads.append(reply.usage.cache_read_input_tokens or 0)
        writes.append(reply.usage.cache_creation_input_tokens or 0)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
    _check_forwarded(mock, len(QUESTIONS))
    assert reads[0] == 0 and writes[0] > 1000, (reads, writes)
    # Every later turn reads at least the system prompt and tools from the cache.
    assert all(r >= writes[0] for r in reads[1:]), (reads, writes)
    assert [row["cache_read_tokens"] or 0 for row in ledger.check()] == reads


def test_openai_sdk_routed_to_anthropic_reads_the_cache_too(cached, ledger):
    import openai

    url, mock, _ = cached
    mock.clear()
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=PLACEHOLDER, max_retries=0, http_client=ledger.http_client(openai))
    # Its own system prompt, so nothing the other sessions cached can be read.
    system = "Answer as the chat client's assistant. " + SYSTEM
    messages, cached_tokens = [{"role": "system", "content": system}], []
    for q in QUESTIONS:
        messages.append({"role": "user", "content": q})
        reply = client.chat.completions.create(model="gpt-on-messages-1", max_tokens=64, messages=messages,
                                               tools=[FUNCTION])
        details = reply.usage.prompt_tokens_details
        cached_tokens.append(details.cached_tokens if details else 0)
        messages.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
    _check_forwarded(mock, len(QUESTIONS), system)
    assert cached_tokens[0] == 0, cached_tokens
    assert all(c > 1000 for c in cached_tokens[1:]), cached_tokens
    assert [row["cache_read_tokens"] or 0 for row in ledger.check()] == cached_tokens


def test_a_session_with_its_own_marks_is_forwarded_as_sent(cached, ledger):
    import anthropic

    url, mock, _ = cached
    mock.clear()
    client = anthropic.Anthropic(base_url=url, api_key=PLACEHOLDER, max_retries=0, http_client=ledger.http_client(anthropic))
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    client.messages.create(model="claude-sonnet-5-5", max_tokens=64, system=system, tools=[TOOL],
                           messages=[{"role": "user", "content": QUESTIONS[0]}])
    body = json.loads(mock.requests()[-1]["body"])
    assert _marks(body) == 1
    assert body["system"] == system
    ledger.check()
