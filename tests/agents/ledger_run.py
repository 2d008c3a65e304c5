"""One run of the real clients through a gateway binary, and the ledger rows it kept, per
client and routing: what a user reads in `trimgate stats` and the window after a session.

The provider (the mock) keeps each stream's body open for a while after its last event
(`x-mock-linger-ms`), as real providers may; clients that leave as soon as they have the
last event (Codex CLI after `response.completed`, the `openai` SDK after `[DONE]`) then
leave before the provider's body ends. Run it with two binaries to compare them:

    TRIMGATE_BIN=path/to/trimgate MOCK_BIN=path/to/trimgate .venv/bin/python tests/agents/ledger_run.py

MOCK_BIN (default: TRIMGATE_BIN) is the binary whose `trimgate mock` plays the provider: an
older gateway can be run against the current mock, which knows `x-mock-linger-ms`.
"""

import os
import sqlite3
import subprocess
import sys
import tempfile
import time

import agents

KEY = "sk-mock-provider"
LINGER = {"x-mock-linger-ms": "2000", **agents.plain_headers("one two three four five")}
# routing → the model each client asks for (the gateway's config routes them).
ROUTES = {
    "native": {"codex": "gpt-5", "claude": "claude-sonnet-4-5", "openai-sdk": "gpt-5",
               "anthropic-sdk": "claude-sonnet-4-5"},
    "to-anthropic": {"codex": "gpt-5-via-anthropic", "openai-sdk": "gpt-5-via-anthropic"},
    "to-chat-server": {"codex": "gpt-5-via-chat", "claude": "claude-via-chat",
                       "anthropic-sdk": "claude-via-chat"},
    "to-openai": {"claude": "claude-via-openai"},
}


def serve(argv, prefix, env=None):
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, **(env or {})})
    for line in proc.stdout:
        if line.startswith(prefix):
            return proc, line[len(prefix):].strip()
    raise RuntimeError(f"{argv[1]} exited before listening")


def config(mock, db):
    return f"""
[ledger]
url = "sqlite://{db}"

[providers.openai]
kind = "openai"
base_url = "{mock}/v1"
api_key = {{ env = "RUN_KEY" }}

[providers.anthropic]
kind = "anthropic"
base_url = "{mock}/v1"
api_key = {{ env = "RUN_KEY" }}

[providers.chat-server]
kind = "openai_compatible"
base_url = "{mock}/v1"
api_key = {{ env = "RUN_KEY" }}

[[routes]]
match = "*-via-anthropic"
provider = "anthropic"
model = "claude-sonnet-4-5"

[[routes]]
match = "*-via-chat"
provider = "chat-server"
model = "qwen3-coder"

[[routes]]
match = "*-via-openai"
provider = "openai"
model = "gpt-5"

[[routes]]
match = "claude-*"
provider = "anthropic"

[[routes]]
match = "gpt-*"
provider = "openai"
"""


def run_client(client, url, model):
    if client == "codex":
        agents.run_codex(url, model, "Say hello.", headers=LINGER)
    elif client == "claude":
        agents.run_claude(url, model, "Say hello.", headers=LINGER)
    elif client == "openai-sdk":
        import openai
        oa = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-placeholder", max_retries=0,
                           default_headers=LINGER)
        for _ in oa.chat.completions.create(model=model, stream=True,
                                            messages=[{"role": "user", "content": "Say hello."}]):
            pass
    elif client == "anthropic-sdk":
        import anthropic
        an = anthropic.Anthropic(base_url=url, api_key="sk-placeholder", max_retries=0,
                                 default_headers=LINGER)
        with an.messages.stream(model=model, max_tokens=64,
                                messages=[{"role": "user", "content": "Say hello."}]) as s:
            s.get_final_message()


def main():
    gateway_bin = os.environ["TRIMGATE_BIN"]
    mock_bin = os.environ.get("MOCK_BIN", gateway_bin)
    tmp = tempfile.mkdtemp(prefix="trimgate-ledger-run-")
    db = os.path.join(tmp, "ledger.sqlite")
    mock, mock_url = serve([mock_bin, "mock", "--listen", "127.0.0.1:0", "--openai-key", KEY,
                                "--anthropic-key", KEY], "mock provider listening on ")
    path = os.path.join(tmp, "config.toml")
    with open(path, "w") as f:
        f.write(config(mock_url, db))
    gw, url = serve([gateway_bin, "serve", "--config", path, "--listen", "127.0.0.1:0"],
                    "Trimgate listening on ",
                    env={"RUN_KEY": KEY, "XDG_DATA_HOME": tmp, "XDG_STATE_HOME": tmp, "TRIMGATE_LOG": "warn"})
    spans = []
    for routing, clients in ROUTES.items():
        for client, model in clients.items():
            start = int(time.time() * 1000)
            run_client(client, url, model)
            # Rows are stamped with their request's start: the next client's start ends this one's.
            time.sleep(2.5)
            spans.append((client, routing, start, int(time.time() * 1000)))
    gw.terminate()
    gw.wait(timeout=15)
    mock.terminate()
    rows = sqlite3.connect(db).execute(
        "SELECT ts_ms, outcome, input_tokens, output_tokens, cost_usd FROM requests "
        "WHERE outcome <> 'retried' AND dialect IS NOT NULL ORDER BY ts_ms").fetchall()
    print("| client | routing | rows | completed | cancelled | with input and output tokens | with a cost |")
    print("|---|---|---|---|---|---|---|")
    for client, routing, start, end in spans:
        mine = [r for r in rows if start <= r[0] < end]
        print(f"| {client} | {routing} | {len(mine)} | {sum(r[1] == 'completed' for r in mine)} | "
              f"{sum(r[1] == 'client_cancelled' for r in mine)} | "
              f"{sum((r[2] or 0) > 0 and (r[3] or 0) > 0 for r in mine)} | {sum(r[4] is not None for r in mine)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
