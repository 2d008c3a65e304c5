"""The secrets guard with the real agents: Claude Code, Codex CLI and Gemini CLI read a
`.env` of fake keys in their working directory, and the model (the mock, told by
`x-mock-use-secrets`) has them write the secrets it was shown into a file with their shell
tool: `printf '%s\\n' 'TRIMGATE_SECRET_…' … > FILE`. Each runs to a provider of its own
dialect and, translated, to one of another.

With the guard in its default mode (redact), the file holds the real values (the gateway
put them back into the tool call before the agent ran it), no request the provider got
holds any value (only placeholders, in the tool result and, on the next turn, in the
call's arguments the agent sent back), and the ledger's rows name the kinds replaced.

With `[guard] mode = "block"`, the request that carries the `.env` back is refused: the
agent reports the error, the provider never sees a value, and the ledger's row is a 400
with `error = secret_blocked`.
"""

import json
import os
import re
import tempfile
import uuid

import pytest

import agents
import ledger
from test_agents import (BIN, GEMINI_MODEL, GEMINI_STREAM, LEDGERS, PROVIDER_KEY, Mock, _model_calls,
                         _posted, _run, _serving)

# Fakes in the real formats (tests/fixtures/secrets/labels.toml has them as found by the
# detector); none is or was a live credential. Kind → value.
SECRETS = {
    "github_token": "ghp_wEQemSgxGkIAkdt6jqhZLfAFxYWeKDj9YC86",
    "openai_key": ("sk-proj-M81o5NgpGSbNXyVv5U0DfkGUm48-yF9q6RqkMShUWJnr_l8NFhzQwwDZ5VgxkmeDiInIqqhmK2T3B"
                   "lbkFJmZQfB7ev_6zVdzQ5JaCkTQfzl37yLGmfyzII276dhuOfhuEJk0v4btWQFXjAoi4PS8DcFPATHY"),
    "aws_access_key": "AKIATKYPFZEMBTWHUC56",
    "aws_secret_key": "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",
    "db_password": "3zgUc2-N4Desicqr",
}
ENV_FILE = f"""# local settings
NODE_ENV=development
GITHUB_TOKEN={SECRETS["github_token"]}
OPENAI_API_KEY={SECRETS["openai_key"]}
AWS_ACCESS_KEY_ID={SECRETS["aws_access_key"]}
AWS_SECRET_ACCESS_KEY={SECRETS["aws_secret_key"]}
DATABASE_URL=postgres://app:{SECRETS["db_password"]}@db:5432/app
"""
# The grammar of a placeholder (gateway-core/src/guard/placeholder.rs), the kind captured.
PLACEHOLDER = re.compile(r"TRIMGATE_SECRET_((?:[A-Z]+_)+)[0-9a-f]{12}")

# agent → routing → (the model it asks for, the provider path the mock must see).
ROUTINGS = {
    "claude": {"native": ("claude-sonnet-4-6", "/v1/messages"),
               "translated": ("claude-sonnet-4-6-via-openai", "/v1/chat/completions")},
    "codex": {"native": ("gpt-5.5", "/v1/responses"),
              "translated": ("gpt-5.5-via-anthropic", "/v1/messages")},
    "gemini": {"native": (GEMINI_MODEL, GEMINI_STREAM),
               "translated": (f"{GEMINI_MODEL}-via-anthropic", "/v1/messages")},
}
CASES = [(agent, routing) for agent, routings in ROUTINGS.items() for routing in routings]
PROMPT = "Read .env, then save its secrets to a file."


@pytest.fixture(scope="module")
def guard_mock_url():
    yield from _serving(["mock", "--listen", "127.0.0.1:0", "--openai-key", PROVIDER_KEY,
                         "--anthropic-key", PROVIDER_KEY, "--gemini-key", PROVIDER_KEY],
                        "mock provider listening on ")


def _gateway(mock_url, guard):
    """A gateway in front of the mock, with `guard` (its `[guard]` section) and a ledger of
    its own; yields its URL."""
    d = tempfile.mkdtemp(prefix="trimgate-agents-guard-")
    path = os.path.join(d, "config.toml")
    section, ledger_path = ledger.ledger_config(d)
    with open(path, "w") as f:
        f.write(section + guard + f"""
[providers.openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[providers.gemini]
kind = "gemini"
base_url = "{mock_url}/v1beta"
api_key = {{ env = "AGENT_TEST_PROVIDER_KEY" }}

[[routes]]
match = "*-via-openai"
provider = "openai"
model = "gpt-5.5"

[[routes]]
match = "*-via-anthropic"
provider = "anthropic"
model = "claude-sonnet-4-6"
""")
    serving = _serving(
        ["serve", "--config", path, "--listen", "127.0.0.1:0"], "Trimgate listening on ",
        env={"AGENT_TEST_PROVIDER_KEY": PROVIDER_KEY, "ANTHROPIC_API_KEY": "", "GEMINI_API_KEY": "",
             "TRIMGATE_LOG": "warn", "XDG_DATA_HOME": d})
    url = next(serving)
    LEDGERS[url] = ledger_path
    yield url
    next(serving, None)


@pytest.fixture(scope="module")
def redacting(guard_mock_url):
    """The guard as it ships: `redact`, the default, with no `[guard]` section at all."""
    yield from _gateway(guard_mock_url, "")


@pytest.fixture(scope="module")
def blocking(guard_mock_url):
    yield from _gateway(guard_mock_url, '\n[guard]\nmode = "block"\n')


@pytest.fixture()
def mock(guard_mock_url):
    m = Mock(guard_mock_url)
    m.clear()
    return m


def _work_dir():
    """A scratch working directory holding the `.env`."""
    work = tempfile.mkdtemp(prefix="trimgate-guard-work-")
    with open(os.path.join(work, ".env"), "w") as f:
        f.write(ENV_FILE)
    return work


def _headers(agent, secrets_file):
    """The mock has the agent `cat .env` with its shell tool, then (seeing placeholders in
    what that printed) write them to `secrets_file` with it, then answers in text."""
    return {"x-mock-tool": agents.SHELL_TOOL[agent],
            "x-mock-tool-arguments": json.dumps(agents.shell_arguments(agent, "cat .env", "Read .env")),
            "x-mock-use-secrets": "1", "x-mock-secrets-file": secrets_file}


def _leaks(body):
    """The values a body the provider got holds, as sent or once its JSON is decoded (an
    agent may escape `/`)."""
    try:
        decoded = json.dumps(json.loads(body), ensure_ascii=False)
    except ValueError:
        decoded = ""
    return [kind for kind, value in SECRETS.items() if value in body or value in decoded]


def _kinds(column):
    """A ledger row's `secrets` (`github_token:1,db_password:2`) as a dict."""
    return {k: int(n) for k, n in (part.split(":") for part in (column or "").split(",") if part)}


@pytest.mark.parametrize("agent,routing", CASES)
def test_the_agent_writes_the_real_values_the_provider_saw_only_placeholders(agent, routing, redacting, mock):
    model, path = ROUTINGS[agent][routing]
    work = _work_dir()
    secrets_file = os.path.join(work, f"secrets-{uuid.uuid4().hex[:8]}.txt")
    since = ledger.now_ms()
    ok, text, log = _run(agent, redacting, model, PROMPT, _headers(agent, secrets_file), work=work)
    rows = ledger.wait(LEDGERS[redacting], since, _model_calls(mock))
    ledger.record((agent, routing, "guard"), rows, _model_calls(mock))
    assert ok, log

    # (1) The agent ran the command with the values back in place of the placeholders.
    assert os.path.exists(secrets_file), f"the agent wrote no file: {text}\n{log}"
    with open(secrets_file) as f:
        written = f.read().split()
    assert sorted(written) == sorted(SECRETS.values()), written

    # (2) The ledger: every model call answered, and the requests that carried the secrets
    # name their kinds, never a value.
    ledger.check(rows, _model_calls(mock))
    flagged = [_kinds(r["secrets"]) for r in rows if r.get("secrets")]
    assert flagged and all(set(k) <= set(SECRETS) for k in flagged), [ledger.show(r) for r in rows]
    assert any(set(k) == set(SECRETS) for k in flagged), flagged
    assert not any(v in json.dumps(rows) for v in SECRETS.values())

    # (3) The provider never saw a value (checked last, so that a leak does not hide the
    # rest): the `.env` went as placeholders, one per kind, and so did the command with
    # them that the agent sent back on the next turn.
    sent = _posted(mock)
    assert {r["path"] for r in sent} == {path}, [r["path"] for r in sent]
    leaked = [(r["path"], _leaks(r["body"])) for r in sent if _leaks(r["body"])]
    assert not leaked, f"the provider saw values: {leaked}"
    shown = [{m.rstrip("_").lower() for m in PLACEHOLDER.findall(r["body"])} for r in sent]
    assert any(set(SECRETS) <= kinds for kinds in shown), shown
    assert "printf" in sent[-1]["body"] and set(SECRETS) <= shown[-1], \
        "the last request does not carry the command back, redacted"


@pytest.mark.parametrize("agent", list(ROUTINGS))
def test_in_block_mode_the_request_carrying_the_env_is_refused(agent, blocking, mock):
    model, path = ROUTINGS[agent]["native"]
    work = _work_dir()
    secrets_file = os.path.join(work, "secrets.txt")
    since = ledger.now_ms()
    ok, text, log = _run(agent, blocking, model, PROMPT, _headers(agent, secrets_file), work=work)
    rows = ledger.wait(LEDGERS[blocking], since, _model_calls(mock))
    ledger.record((agent, "block", "guard"), rows, _model_calls(mock))

    # The agent read the file (the first request had nothing secret), then its next
    # request was refused and it says so, with the gateway's words: the kind and where.
    assert not ok, f"the agent finished despite the block: {text}"
    assert re.search(r"holds a secret \(github_token\) in \S+, line \d+", text + log), log
    assert not os.path.exists(secrets_file)
    # The provider got the first request only, and never a value.
    sent = _posted(mock)
    assert sent and {r["path"] for r in sent} == {path}, [r["path"] for r in sent]
    assert not any(_leaks(r["body"]) for r in sent)
    assert not any("TRIMGATE_SECRET_" in r["body"] for r in sent)

    refused = [r for r in rows if r["status"] == 400]
    assert refused, [ledger.show(r) for r in rows]
    for r in refused:
        assert r["error"] == "secret_blocked", ledger.show(r)
        assert set(_kinds(r["secrets"])) == set(SECRETS), r["secrets"]
    # What the provider answered is recorded as usual.
    assert len([r for r in rows if r["status"] == 200]) == _model_calls(mock), [ledger.show(r) for r in rows]
