"""The ledger seen from the official SDKs: every request they make — streamed and not,
OpenAI and Anthropic — becomes one row with the usage the provider reported (the same
numbers the SDK saw), `/metrics` counts them, and `trimgate stats` sums them."""

import json
import os
import sqlite3
import subprocess
import tempfile
import urllib.request

import pytest

from conftest import ANTHROPIC_KEY, BIN, OPENAI_KEY, PLACEHOLDER, _start


@pytest.fixture(scope="module")
def ledgered(mock_url):
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "ledger.sqlite")
        path = os.path.join(d, "config.toml")
        with open(path, "w") as f:
            f.write(f"""
[ledger]
url = "sqlite://{db}"

[providers.mock-openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_OPENAI_KEY" }}

[providers.mock-anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "SDK_TEST_ANTHROPIC_KEY" }}
""")
        proc, url = _start(
            ["serve", "--config", path, "--listen", "127.0.0.1:0"],
            "Trimgate listening on ",
            env={"SDK_TEST_OPENAI_KEY": OPENAI_KEY, "SDK_TEST_ANTHROPIC_KEY": ANTHROPIC_KEY, "TRIMGATE_LOG": "warn"},
        )
        yield proc, url, db, path


def test_every_sdk_request_is_a_row_with_the_providers_usage(ledgered):
    import anthropic
    import openai

    proc, url, db, config = ledgered
    oa = openai.OpenAI(base_url=f"{url}/v1", api_key=PLACEHOLDER, max_retries=0)
    an = anthropic.Anthropic(base_url=url, api_key=PLACEHOLDER, max_retries=0)
    seen = []  # (streamed, input, output) as the SDK reported them

    r = oa.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "ledger one"}])
    seen.append((0, r.usage.prompt_tokens, r.usage.completion_tokens))
    stream = oa.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "ledger two"}],
                                        stream=True, stream_options={"include_usage": True})
    usage = [c.usage for c in stream if c.usage][-1]
    seen.append((1, usage.prompt_tokens, usage.completion_tokens))
    m = an.messages.create(model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "ledger three"}])
    seen.append((0, m.usage.input_tokens, m.usage.output_tokens))
    with an.messages.stream(model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "ledger four"}]) as s:
        final = s.get_final_message()
    seen.append((1, final.usage.input_tokens, final.usage.output_tokens))

    metrics = urllib.request.urlopen(f"{url}/metrics").read().decode()
    counted = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                  if line.startswith("trimgate_requests_total") and 'status="200"' in line)
    assert counted == 4

    proc.terminate()  # graceful: the ledger is flushed before exit
    assert proc.wait(timeout=15) == 0

    rows = sqlite3.connect(db).execute(
        "SELECT streamed, input_tokens, output_tokens, status, outcome, dialect FROM requests ORDER BY ts_ms").fetchall()
    assert [(s, i, o) for s, i, o, *_ in rows] == seen
    assert all(status == 200 and outcome == "completed" for *_, status, outcome, _ in rows[:4])
    assert [d for *_, d in rows] == ["openai_chat", "openai_chat", "anthropic_messages", "anthropic_messages"]
    # The provider's own counts, none estimated, and a cost: gpt-5 and Sonnet are priced.
    priced = sqlite3.connect(db).execute("SELECT kind, tokens_estimated, cost_usd > 0 FROM requests").fetchall()
    assert priced == [("generation", None, 1)] * 4, priced

    out = subprocess.run([BIN, "stats", "--config", config, "--since", "1h", "--by", "provider", "--json"],
                         capture_output=True, text=True, check=True, env={**os.environ, "TRIMGATE_LOG": "warn"})
    totals = {t["key"]: t for t in json.loads(out.stdout)}
    assert totals["mock-openai"]["requests"] == 2
    assert totals["mock-anthropic"]["requests"] == 2
    assert totals["mock-openai"]["input_tokens"] == seen[0][1] + seen[1][1]
    assert totals["mock-anthropic"]["output_tokens"] == seen[2][2] + seen[3][2]
    # Sonnet is in the bundled price table: the Anthropic rows have a cost.
    assert totals["mock-anthropic"]["cost_usd"] > 0
