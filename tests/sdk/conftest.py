"""Starts the project's mock provider and the real trimgate binary for the SDK tests.

The official `openai`, `anthropic` and `google-genai` packages then talk to the gateway
exactly as they would talk to the providers.
"""

import dataclasses
import fnmatch
import json
import os
import sqlite3
import subprocess
import tempfile
import time
import urllib.request
import uuid

import pytest

BIN = os.environ.get("TRIMGATE_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "target", "debug", "trimgate"))
OPENAI_KEY = "sk-mock-openai"
ANTHROPIC_KEY = "sk-ant-mock"
# The key the mock's Gemini side takes unless told otherwise.
GEMINI_KEY = "AIza-mock-gemini"
PLACEHOLDER = "sk-placeholder-from-the-client"


DATA_HOME = tempfile.mkdtemp(prefix="trimgate-sdk-data-")
# The session gateway's ledger, which the tests read their requests' rows from.
LEDGER_DB = os.path.join(DATA_HOME, "ledger.sqlite")


def ledger_config(db):
    """The `[ledger]` table of a gateway whose rows a test reads."""
    return f'[ledger]\nurl = "sqlite://{db}"\n'


def _start(args, prefix, env=None):
    proc = subprocess.Popen(
        [BIN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        # The default ledger lives in the platform data dir: keep it out of the user's.
        env={**os.environ, "XDG_DATA_HOME": DATA_HOME, **(env or {})},
    )
    for line in proc.stdout:
        if line.startswith(prefix):
            return proc, line[len(prefix):].strip()
    raise RuntimeError(f"{args[0]} exited before listening")


@pytest.fixture(scope="session")
def mock_url():
    proc, url = _start(["mock", "--listen", "127.0.0.1:0"], "mock provider listening on ")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def gateway_url(mock_url):
    config = ledger_config(LEDGER_DB) + f"""
[providers.mock-openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_OPENAI_KEY" }}
models = ["gpt-5", "gpt-5-mini"]

[providers.mock-anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_ANTHROPIC_KEY" }}
models = ["claude-sonnet-5-5"]

# Crossed routes: an Anthropic-named model served by the OpenAI Chat side, and the reverse,
# so the SDKs exercise translation between dialects.
[[routes]]
match = "claude-on-chat-*"
provider = "mock-openai"

[[routes]]
match = "gpt-on-messages-*"
provider = "mock-anthropic"

# Gemini's API, and Gemini-named models served by the OpenAI Chat and Anthropic sides.
[providers.mock-gemini]
kind = "gemini"
base_url = "{mock_url}/v1beta"
api_key = {{ env = "SDK_TEST_GEMINI_KEY" }}
models = ["gemini-2.5-pro", "gemini-2.5-flash"]

[[routes]]
match = "gemini-on-chat-*"
provider = "mock-openai"

[[routes]]
match = "gemini-on-messages-*"
provider = "mock-anthropic"

[providers.chat-only]
kind = "openai_compatible"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_OPENAI_KEY" }}

[providers.responses-only]
kind = "openai_compatible"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_OPENAI_KEY" }}
dialects = ["responses"]

# Models used for side calls (titles, summaries): every request is answered from the
# response cache when it can be, whatever its temperature.
[[cache.models]]
match = "*haiku*"
exact = "always"

[[routes]]
match = "chat-only-*"
provider = "chat-only"

[[routes]]
match = "responses-only-*"
provider = "responses-only"
"""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "config.toml")
        with open(path, "w") as f:
            f.write(config)
        proc, url = _start(
            ["serve", "--config", path, "--listen", "127.0.0.1:0"],
            "Trimgate listening on ",
            env={"SDK_TEST_OPENAI_KEY": OPENAI_KEY, "SDK_TEST_ANTHROPIC_KEY": ANTHROPIC_KEY,
                 "SDK_TEST_GEMINI_KEY": GEMINI_KEY, "TRIMGATE_LOG": "warn"},
        )
        yield url
        proc.terminate()
        proc.wait(timeout=10)


class MockInspector:
    """Reads what the mock provider received, to check what the gateway forwarded."""

    def __init__(self, url):
        self.url = url

    def clear(self):
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/_mock/requests", method="DELETE")).read()

    def requests(self):
        return json.loads(urllib.request.urlopen(f"{self.url}/_mock/requests").read())


@pytest.fixture()
def mock(mock_url):
    inspector = MockInspector(mock_url)
    inspector.clear()
    return inspector


@pytest.fixture()
def openai_client(gateway_url, ledger):
    import openai

    return openai.OpenAI(base_url=f"{gateway_url}/v1", api_key=PLACEHOLDER, max_retries=0,
                         http_client=ledger.http_client(openai))


@pytest.fixture()
def anthropic_client(gateway_url, ledger):
    import anthropic

    return anthropic.Anthropic(base_url=gateway_url, api_key=PLACEHOLDER, max_retries=0,
                               http_client=ledger.http_client(anthropic))


@pytest.fixture()
def gemini_client(gateway_url, ledger):
    """google-genai at the gateway: its default API version (`v1`) and no retries."""
    from google import genai

    return genai.Client(api_key=PLACEHOLDER, http_options=ledger.genai_options(gateway_url))


# Served models the bundled price table (gateway-core/pricing.toml) has prices for: their
# rows carry a cost. The routes' own names (claude-on-chat-1, gpt-on-messages-1,
# chat-only-1, responses-only-1, gemini-on-chat-1, …) are in no table: their rows carry none.
PRICED = ("gpt-5", "gpt-5-mini", "claude-sonnet-5-5", "claude-sonnet-4-*", "claude-haiku-4-*",
          "gemini-2.5-pro", "gemini-2.5-flash")
COLUMNS = ("request_id, ts_ms, dialect, provider, model_requested, model_served, streamed, status, outcome, "
           "input_tokens, output_tokens, cache_read_tokens, cost_usd, saved_tokens, saved_usd, cache, attempt, "
           "kind, tokens_estimated")


def priced(model):
    return any(fnmatch.fnmatchcase(model or "", p) for p in PRICED)


@dataclasses.dataclass
class Call:
    """A model call a client made: its request id and path, and the status it got (None when
    no response came)."""

    id: str
    path: str
    status: int | None = None

    @property
    def counts_tokens(self):
        return self.path.endswith(("/count_tokens", ":countTokens"))


class Ledger:
    """A test's view of a gateway's ledger. Clients given `hooks` send each model call with
    an `x-request-id` of its own, which the gateway keeps as the row's request_id, so each
    call's row is found exactly, whatever else the gateway handled meanwhile."""

    def __init__(self, db, name="sdk"):
        self.db = db
        self.prefix = f"{name[:80]}-{uuid.uuid4().hex[:8]}"
        self.calls = []
        self.checked = 0
        self.hooks = {"request": [self._sent], "response": [self._answered]}

    def _sent(self, request):
        # Listing and getting models makes no row: the model calls are the POSTs.
        if request.method != "POST":
            return
        rid = request.headers.get("x-request-id") or f"{self.prefix}-{len(self.calls) + 1}"
        request.headers["x-request-id"] = rid
        self.calls.append(Call(rid, request.url.path))

    def _answered(self, response):
        for call in self.calls:
            if call.id == response.request.headers.get("x-request-id"):
                call.status = response.status_code

    def http_client(self, sdk):
        """The httpx client for an `openai` or `anthropic` client, its calls tagged."""
        return sdk.DefaultHttpxClient(event_hooks=self.hooks)

    def genai_options(self, base_url, **options):
        from google.genai import types

        return types.HttpOptions(base_url=base_url, client_args={"event_hooks": self.hooks}, **options)

    def _select(self, where, args):
        db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        db.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in db.execute(f"SELECT {COLUMNS} FROM requests WHERE {where} ORDER BY ts_ms", args)]
        finally:
            db.close()

    def _poll(self, read, done, timeout=10):
        # Rows are written in batches, a little after each answer: wait for them.
        deadline = time.monotonic() + timeout
        while not done(found := read()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return found

    def rows(self, ids):
        """The rows of requests `ids`, by id."""
        def read():
            found = {}
            for row in self._select(f"request_id IN ({', '.join('?' * len(ids))})", list(ids)):
                found.setdefault(row["request_id"], []).append(row)
            return found
        return self._poll(read, lambda found: set(ids) <= found.keys())

    def rows_since(self, ts_ms, count):
        """The rows of requests made since `ts_ms`, once there are `count`: for clients this
        process does not hold (an agent run by `trimgate wrap`)."""
        return self._poll(lambda: self._select("ts_ms >= ?", [ts_ms]), lambda rows: len(rows) >= count)

    def check(self):
        """The model calls made since the last check: each answered one is one row as
        `check_row` requires, each refused one rows as `check_refused` does. Returns each
        call's last row, in call order."""
        calls, self.checked = self.calls[self.checked:], len(self.calls)
        assert calls, "no model call to check"
        found = self.rows([c.id for c in calls])
        last = []
        for call in calls:
            rows = sorted(found.get(call.id, []), key=lambda r: r["attempt"])
            if call.status == 200:
                assert len(rows) == 1, f"{call}: {rows}"
                check_row(rows[0], kind="count_tokens" if call.counts_tokens else "generation")
            else:
                check_refused(rows, call)
            last.append(rows[-1])
        return last

    def row(self):
        """The row of the one call made since the last check, for a test to judge itself (a
        client that left has a row no `check_row` describes)."""
        calls, self.checked = self.calls[self.checked:], len(self.calls)
        assert len(calls) == 1, calls
        rows = self.rows([calls[0].id]).get(calls[0].id, [])
        assert len(rows) == 1, f"{calls[0]}: {rows}"
        return rows[0]


def check_row(row, kind="generation"):
    """A request answered whole: the provider's token counts (none the gateway's estimate),
    a cost when the served model is priced, the optimizer's savings recorded. An answer
    the response cache replayed used no tokens: it cost nothing, and saved what it would
    have cost. A token count (`count_tokens`) is no model call: no tokens, no cost."""
    assert (row["status"], row["outcome"], row["kind"]) == (200, "completed", kind), row
    assert row["tokens_estimated"] is None and row["saved_tokens"] is not None, row
    if kind == "count_tokens":
        assert row["cost_usd"] is None, row
    elif row["cache"] == "hit":
        assert (row["input_tokens"], row["output_tokens"]) == (None, None), row
        if priced(row["model_served"]):
            assert row["cost_usd"] == 0 and row["saved_usd"] > 0, row
        else:
            assert row["cost_usd"] is None, row
    else:
        assert row["input_tokens"] > 0 and row["output_tokens"] > 0, row
        assert (row["cost_usd"] or 0) > 0 if priced(row["model_served"]) else row["cost_usd"] is None, row


def check_broken(row, outcome):
    """A stream that ended in the provider's error event (`completed`: the answer, error and
    all, reached the client) or broke off (`upstream_failed`): charged for what it used,
    by the provider's counts or else the gateway's, never free."""
    assert (row["status"], row["outcome"]) == (200, outcome), row
    assert row["input_tokens"] > 0, row
    assert (row["cost_usd"] or 0) > 0 if priced(row["model_served"]) else row["cost_usd"] is None, row


def check_refused(rows, call):
    """A call answered with an error: the status the client got is its last row's; the
    attempts before it (the gateway retries a provider's 429) are `retried`. No tokens were
    used, so there is no cost."""
    assert rows and rows[-1]["status"] == call.status, f"{call}: {rows}"
    assert all(r["outcome"] == "retried" for r in rows[:-1]), rows
    assert all(r["cost_usd"] is None and r["tokens_estimated"] is None for r in rows), rows


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture()
def ledger(request, gateway_url):
    view = Ledger(LEDGER_DB, request.node.name)
    yield view
    # Every model call a passing test made is held to its row.
    if getattr(request.node, "report_call", None) and request.node.report_call.passed:
        assert view.checked == len(view.calls), f"{len(view.calls) - view.checked} model calls left unchecked"
