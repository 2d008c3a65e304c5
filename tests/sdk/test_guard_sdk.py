"""The secrets guard through the official openai and anthropic packages: a tool result
holding secrets (a `.env` the agent read) reaches the provider with placeholders in their
place, and the answer comes back to the SDK with the real values, whole or streamed, in
Chat Completions, Responses and Anthropic Messages, as sent and translated.

The mock quotes a tool result back ("tool result: …"), so its answer holds the
placeholders the gateway sent; with `x-mock-split-chars` it streams that text one
character per event, so each placeholder arrives cut across many events, and with
`x-mock-drip-ms` every body in 16-byte pieces; with `x-mock-use-secrets` it calls the tool
with a command that writes the placeholders to a file, so the call's arguments carry them.

A gateway key with `guard = "block"` gets a 400 in each SDK's error type, naming the kind
and where the secret was, never its value; nothing reaches the provider.
"""

import json
import os
import re
import sqlite3
import tempfile
import time
import uuid

import anthropic
import openai
import pytest

from conftest import ANTHROPIC_KEY, OPENAI_KEY, Ledger, _start, ledger_config

# Fakes in the real formats, from tests/fixtures/secrets/labels.toml: values the detector
# is known to find. None is or was a live credential.
GITHUB_TOKEN = "ghp_wEQemSgxGkIAkdt6jqhZLfAFxYWeKDj9YC86"
DB_PASSWORD = "3zgUc2-N4Desicqr"
VALUES = (GITHUB_TOKEN, DB_PASSWORD)
# What `cat .env` printed: short enough that the mock's quote (its first 200 characters)
# holds both placeholders whole.
ENV_FILE = (f"# app settings\nGITHUB_TOKEN={GITHUB_TOKEN}\n"
            f"DATABASE_URL=postgres://app:{DB_PASSWORD}@db:5432/app\n")
KINDS = {"github_token": 1, "db_password": 1}
# The grammar of a placeholder (gateway-core/src/guard/placeholder.rs).
PLACEHOLDER = re.compile(r"TRIMGATE_SECRET_(?:[A-Z]+_)+[0-9a-f]{12}")

AGENT_KEY = "tg-guard-sdk-agent"
STRICT_KEY = "tg-guard-sdk-strict"

# The mock streams the quoted text a character per event; DRIP also sends each body in
# 16-byte pieces, so events arrive cut too (slow with Responses' large events: Chat's and
# Messages' streams only).
SPLIT = {"x-mock-split-chars": "1"}
DRIP = {**SPLIT, "x-mock-drip-ms": "1"}
USE_SECRETS = {"x-mock-use-secrets": "1", "x-mock-secrets-file": "/tmp/never-written.txt"}

SHELL = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
CHAT_TOOL = {"type": "function", "function": {"name": "shell", "description": "Run a command", "parameters": SHELL}}
RESPONSES_TOOL = {"type": "function", "name": "shell", "description": "Run a command", "parameters": SHELL}
MESSAGES_TOOL = {"name": "shell", "description": "Run a command", "input_schema": SHELL}


@pytest.fixture(scope="module")
def guarded(mock_url):
    """A gateway in front of the session's mock, the guard in its default mode (redact),
    with two gateway keys: `agent` (the default mode) and `strict` (`guard = "block"`).
    Yields (its URL, its ledger file)."""
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "ledger.sqlite")
        path = os.path.join(d, "config.toml")
        with open(path, "w") as f:
            f.write(ledger_config(db) + f"""
[[gateway_keys]]
name = "agent"
key = {{ env = "GUARD_SDK_AGENT_KEY" }}

[[gateway_keys]]
name = "strict"
key = {{ env = "GUARD_SDK_STRICT_KEY" }}
guard = "block"

[providers.mock-openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_OPENAI_KEY" }}
models = ["gpt-5"]

[providers.mock-anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_ANTHROPIC_KEY" }}
models = ["claude-sonnet-5-5"]

[[routes]]
match = "claude-on-chat-*"
provider = "mock-openai"

[[routes]]
match = "gpt-on-messages-*"
provider = "mock-anthropic"
""")
        proc, url = _start(
            ["serve", "--config", path, "--listen", "127.0.0.1:0"], "Trimgate listening on ",
            env={"SDK_TEST_OPENAI_KEY": OPENAI_KEY, "SDK_TEST_ANTHROPIC_KEY": ANTHROPIC_KEY,
                 "GUARD_SDK_AGENT_KEY": AGENT_KEY, "GUARD_SDK_STRICT_KEY": STRICT_KEY,
                 "TRIMGATE_LOG": "warn"})
        yield url, db
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture()
def ledger(guarded, request):
    """This module's gateway's ledger; every model call a passing test made is held to its row."""
    view = Ledger(guarded[1], request.node.name)
    yield view
    if getattr(request.node, "report_call", None) and request.node.report_call.passed:
        assert view.checked == len(view.calls), f"{len(view.calls) - view.checked} model calls left unchecked"


def _openai(guarded, ledger, key=AGENT_KEY):
    return openai.OpenAI(base_url=f"{guarded[0]}/v1", api_key=key, max_retries=0,
                         http_client=ledger.http_client(openai))


def _anthropic(guarded, ledger, key=AGENT_KEY):
    return anthropic.Anthropic(base_url=guarded[0], api_key=key, max_retries=0,
                               http_client=ledger.http_client(anthropic))


@pytest.fixture()
def oa(guarded, ledger):
    return _openai(guarded, ledger)


@pytest.fixture()
def an(guarded, ledger):
    return _anthropic(guarded, ledger)


def guard_columns(db, request_id):
    """The row's `status`, `error` and `secrets` (the SDK tests' COLUMNS leave them out)."""
    deadline = time.monotonic() + 10
    while True:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            row = con.execute("SELECT status, error, secrets FROM requests WHERE request_id = ? "
                              "ORDER BY attempt DESC", [request_id]).fetchone()
        finally:
            con.close()
        if row or time.monotonic() > deadline:
            assert row, f"no ledger row for {request_id}"
            return {"status": row[0], "error": row[1], "secrets": row[2]}
        time.sleep(0.05)


def kinds(column):
    """`github_token:1,db_password:1` as a dict."""
    return {k: int(n) for k, n in (part.split(":") for part in (column or "").split(",") if part)}


def check_rows(guarded, ledger, expected=KINDS):
    """Every call since the last check answered whole, each row naming the kinds replaced."""
    rows = ledger.check()
    for row in rows:
        assert kinds(guard_columns(guarded[1], row["request_id"])["secrets"]) == expected, row
    return rows


def provider_saw_placeholders_only(mock):
    """No body the mock received holds a value; each holds the placeholders instead."""
    bodies = [r["body"] for r in mock.requests() if r["method"] == "POST"]
    assert bodies, "nothing reached the provider"
    for body in bodies:
        for value in VALUES:
            assert value not in body, f"the provider saw {value[:6]}…: {body}"
        found = {m.split("_SECRET_")[1].rsplit("_", 1)[0] for m in PLACEHOLDER.findall(body)}
        assert {"GITHUB_TOKEN", "DB_PASSWORD"} <= found, body
    return bodies


def restored(text):
    """The answer holds both values back, and no placeholder."""
    for value in VALUES:
        assert value in text, f"{value[:6]}… not restored: {text!r}"
    assert "TRIMGATE_SECRET_" not in text, f"a placeholder reached the client: {text!r}"


# Conversations whose last item is the tool's result: the `.env` it printed.

def chat_messages(env=ENV_FILE):
    return [
        {"role": "user", "content": "Read .env"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd":"cat .env"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": env},
    ]


def responses_input(env=ENV_FILE):
    return [
        {"role": "user", "content": "Read .env"},
        {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":"cat .env"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": env},
    ]


def anthropic_messages(env=ENV_FILE):
    return [
        {"role": "user", "content": "Read .env"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"cmd": "cat .env"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": env}]},
    ]


def written_values(command):
    """The words the mock's `printf '%s\\n' 'A' 'B' > FILE` writes."""
    assert command.startswith("printf '%s\\n' "), command
    return re.findall(r"'([^']*)'", command.split(" > ")[0])[1:]


# Chat Completions.

def test_chat_answer_gets_the_values_back_and_the_provider_only_placeholders(oa, guarded, mock, ledger):
    r = oa.chat.completions.create(model="gpt-5", messages=chat_messages(), tools=[CHAT_TOOL])
    text = r.choices[0].message.content
    assert text.startswith("tool result: "), text
    restored(text)
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


def test_chat_stream_restores_placeholders_cut_across_events(oa, guarded, mock, ledger):
    stream = oa.chat.completions.create(model="gpt-5", messages=chat_messages(), tools=[CHAT_TOOL], stream=True,
                                        stream_options={"include_usage": True}, extra_headers=DRIP)
    deltas = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    # The mock sent a character per event: the gateway held back what could be a
    # placeholder's start until it knew, then sent the value.
    assert len(deltas) > 20, deltas
    restored("".join(deltas))
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tool_call_arguments_get_the_values_back(oa, guarded, mock, ledger, stream):
    """The model (told by `x-mock-use-secrets`) calls the tool with the placeholders it
    read; the call the SDK gets holds the values, also when the arguments come in
    fragments that cut the placeholders."""
    r = oa.chat.completions.create(model="gpt-5", messages=chat_messages(), tools=[CHAT_TOOL], stream=stream,
                                   extra_headers=USE_SECRETS)
    if stream:
        arguments = "".join(c.choices[0].delta.tool_calls[0].function.arguments or ""
                            for c in r if c.choices and c.choices[0].delta.tool_calls)
    else:
        assert r.choices[0].finish_reason == "tool_calls"
        arguments = r.choices[0].message.tool_calls[0].function.arguments
    command = json.loads(arguments)["cmd"]
    assert written_values(command) == [GITHUB_TOKEN, DB_PASSWORD], command
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


def test_chat_the_call_sent_back_on_the_next_turn_goes_as_placeholders(oa, guarded, mock, ledger):
    """The call with the values back in it goes into the conversation the client sends on
    its next turn: the gateway gave those values out, so they go back as placeholders,
    also the password, which outside its URL has nothing that marks it a secret."""
    messages = chat_messages()
    first = oa.chat.completions.create(model="gpt-5", messages=messages, tools=[CHAT_TOOL], extra_headers=USE_SECRETS)
    call = first.choices[0].message.tool_calls[0]
    assert written_values(json.loads(call.function.arguments)["cmd"]) == [GITHUB_TOKEN, DB_PASSWORD]
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": ""}]
    mock.clear()
    second = oa.chat.completions.create(model="gpt-5", messages=messages, tools=[CHAT_TOOL], extra_headers=USE_SECRETS)
    assert second.choices[0].message.content == "tool result: "
    [body] = provider_saw_placeholders_only(mock)
    # The command went back with a placeholder for each value.
    command = json.loads(json.loads(body)["messages"][3]["tool_calls"][0]["function"]["arguments"])["cmd"]
    assert all(PLACEHOLDER.fullmatch(v) for v in written_values(command)), command
    rows = ledger.check()
    assert kinds(guard_columns(guarded[1], rows[0]["request_id"])["secrets"]) == KINDS
    assert set(kinds(guard_columns(guarded[1], rows[1]["request_id"])["secrets"])) == set(KINDS)


# Responses.

@pytest.mark.parametrize("stream", [False, True])
def test_responses_answer_gets_the_values_back(oa, guarded, mock, ledger, stream):
    if stream:
        with oa.responses.stream(model="gpt-5", input=responses_input(), tools=[RESPONSES_TOOL],
                                 extra_headers=SPLIT) as s:
            deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
            final = s.get_final_response()
        assert len(deltas) > 20, deltas
        restored("".join(deltas))
    else:
        final = oa.responses.create(model="gpt-5", input=responses_input(), tools=[RESPONSES_TOOL])
    # The whole text the last event (or the body) carries, too.
    assert final.output_text.startswith("tool result: ")
    restored(final.output_text)
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


def test_responses_function_call_arguments_get_the_values_back(oa, guarded, mock, ledger):
    with oa.responses.stream(model="gpt-5", input=responses_input(), tools=[RESPONSES_TOOL],
                             extra_headers=USE_SECRETS) as s:
        deltas = "".join(e.delta for e in s if e.type == "response.function_call_arguments.delta")
        final = s.get_final_response()
    [call] = [item for item in final.output if item.type == "function_call"]
    for arguments in (deltas, call.arguments):
        assert written_values(json.loads(arguments)["cmd"]) == [GITHUB_TOKEN, DB_PASSWORD], arguments
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


# Anthropic Messages.

def test_messages_answer_gets_the_values_back(an, guarded, mock, ledger):
    m = an.messages.create(model="claude-sonnet-5-5", max_tokens=200, messages=anthropic_messages(),
                           tools=[MESSAGES_TOOL])
    assert m.stop_reason == "end_turn"
    restored(m.content[0].text)
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


def test_messages_stream_restores_placeholders_cut_across_events(an, guarded, mock, ledger):
    with an.messages.stream(model="claude-sonnet-5-5", max_tokens=200, messages=anthropic_messages(),
                            tools=[MESSAGES_TOOL], extra_headers=DRIP) as s:
        deltas = list(s.text_stream)
        final = s.get_final_message()
    assert len(deltas) > 20, deltas
    restored("".join(deltas))
    restored(final.content[0].text)
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


def test_messages_stream_tool_use_input_gets_the_values_back(an, guarded, mock, ledger):
    with an.messages.stream(model="claude-sonnet-5-5", max_tokens=200, messages=anthropic_messages(),
                            tools=[MESSAGES_TOOL], extra_headers=USE_SECRETS) as s:
        final = s.get_final_message()
    assert final.stop_reason == "tool_use"
    [use] = [b for b in final.content if b.type == "tool_use"]
    assert written_values(use.input["cmd"]) == [GITHUB_TOKEN, DB_PASSWORD], use.input
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


# Translated: each SDK to a provider of the other dialect.

def test_anthropic_sdk_to_a_chat_provider_gets_the_values_back_streamed(an, guarded, mock, ledger):
    with an.messages.stream(model="claude-on-chat-1", max_tokens=200, messages=anthropic_messages(),
                            tools=[MESSAGES_TOOL], extra_headers=SPLIT) as s:
        text = "".join(s.text_stream)
    restored(text)
    assert {r["path"] for r in mock.requests()} == {"/v1/chat/completions"}
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_sdk_to_an_anthropic_provider_gets_the_values_back(oa, guarded, mock, ledger, stream):
    if stream:
        chunks = oa.chat.completions.create(model="gpt-on-messages-1", messages=chat_messages(), tools=[CHAT_TOOL],
                                            stream=True, extra_headers=SPLIT)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        r = oa.chat.completions.create(model="gpt-on-messages-1", messages=chat_messages(), tools=[CHAT_TOOL])
        text = r.choices[0].message.content
    restored(text)
    assert {r["path"] for r in mock.requests()} == {"/v1/messages"}
    provider_saw_placeholders_only(mock)
    check_rows(guarded, ledger)


# What is not the guard's to touch.

@pytest.mark.parametrize("stream", [False, True])
def test_a_look_alike_the_gateway_never_issued_stays_as_typed(oa, guarded, mock, ledger, stream):
    typed = f"TRIMGATE_SECRET_GITHUB_TOKEN_{uuid.uuid4().hex[:12]}"
    messages = [{"role": "user", "content": f"What is {typed}?"}]
    if stream:
        chunks = oa.chat.completions.create(model="gpt-5", messages=messages, stream=True, extra_headers=SPLIT)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        text = oa.chat.completions.create(model="gpt-5", messages=messages).choices[0].message.content
    # The mock echoes the user's words: the look-alike comes back as typed.
    assert f"You said: What is {typed}?" in text, text
    assert typed in mock.requests()[-1]["body"]
    [row] = ledger.check()
    assert guard_columns(guarded[1], row["request_id"])["secrets"] is None


# Block mode: the `strict` key's requests with a secret are refused.

def _blocked(error, location):
    message = str(error)
    assert "github_token" in message and location in message, message
    for value in VALUES:
        assert value not in message and value not in json.dumps(error.body), message


def _refused_rows(guarded, ledger):
    rows = ledger.check()
    for row in rows:
        columns = guard_columns(guarded[1], row["request_id"])
        assert (columns["status"], columns["error"]) == (400, "secret_blocked"), columns
        assert kinds(columns["secrets"]) == KINDS, columns


@pytest.mark.parametrize("stream", [False, True])
def test_block_refuses_chat_in_openais_error_type_naming_kind_and_place(guarded, mock, ledger, stream):
    client = _openai(guarded, ledger, STRICT_KEY)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="gpt-5", messages=chat_messages(), tools=[CHAT_TOOL], stream=stream)
    assert e.value.status_code == 400
    assert e.value.code == "secret_blocked", e.value.body
    _blocked(e.value, "messages[2].content, line 2")
    assert not mock.requests(), "a blocked request reached the provider"
    _refused_rows(guarded, ledger)


def test_block_refuses_responses_in_openais_error_type(guarded, mock, ledger):
    client = _openai(guarded, ledger, STRICT_KEY)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="gpt-5", input=responses_input(), tools=[RESPONSES_TOOL])
    _blocked(e.value, "input[2].output, line 2")
    assert not mock.requests()
    _refused_rows(guarded, ledger)


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-on-chat-1"])
def test_block_refuses_messages_in_anthropics_error_type(guarded, mock, ledger, model):
    client = _anthropic(guarded, ledger, STRICT_KEY)
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model=model, max_tokens=100, messages=anthropic_messages(), tools=[MESSAGES_TOOL])
    assert e.value.status_code == 400
    assert e.value.body["error"]["type"] == "invalid_request_error", e.value.body
    _blocked(e.value, "messages[2].content[0].content, line 2")
    assert not mock.requests()
    _refused_rows(guarded, ledger)


def test_block_lets_a_request_without_secrets_through(guarded, mock, ledger):
    client = _openai(guarded, ledger, STRICT_KEY)
    r = client.chat.completions.create(model="gpt-5", messages=chat_messages("nothing secret here\n"),
                                       tools=[CHAT_TOOL])
    assert r.choices[0].message.content == "tool result: nothing secret here\n"
    assert mock.requests()
    [row] = ledger.check()
    assert guard_columns(guarded[1], row["request_id"])["secrets"] is None
