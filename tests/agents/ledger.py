"""The gateway's ledger, as the agent tests read it: the rows of the requests a test caused,
what each model call's row must show, and a per-test summary of them.

Each gateway the tests start writes its own SQLite ledger (a `[ledger] url` in its config).
Rows are written in batches off the request path, so a reader polls until they are there.
A row's `ts_ms` is when its request started, so the rows a test caused are those of its
gateway from the moment before its agent ran: an earlier test's row written late still
started before that.
"""

import fnmatch
import itertools
import json
import os
import re
import sqlite3
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
PRICE_TABLE = os.path.join(HERE, "..", "..", "gateway-core", "pricing.toml")

# How long rows can take to appear (the writer gathers them for ~200 ms), and how long to
# wait once they are there for any row that should not be.
TIMEOUT = 10.0
SETTLE = 0.5


def now_ms():
    return int(time.time() * 1000)


def ledger_config(directory):
    """A `[ledger]` section writing to a fresh SQLite file in `directory`: (the section, its path)."""
    path = os.path.join(directory, "ledger.sqlite")
    return f'\n[ledger]\nurl = "sqlite://{path}"\n', path


def _expand(pattern):
    """The plain globs a price-table `match` stands for: `{a,b}` is a or b. An empty
    alternative matches nothing in the gateway's glob syntax, so it is left out here too."""
    parts = re.split(r"(\{[^}]*\})", pattern)
    choices = [[a for a in p[1:-1].split(",") if a] if p.startswith("{") else [p] for p in parts]
    return ["".join(c) for c in itertools.product(*choices)]


def _price_globs():
    with open(PRICE_TABLE, "rb") as f:
        table = tomllib.load(f)
    return [g for entry in table["model"] for g in _expand(entry["match"])]


PRICE_GLOBS = _price_globs()


def priced(row):
    """Whether the bundled price table knows the model this row is priced by: the gateway
    prices a row by the model served, else the one asked for, and a `provider/model` name by
    its model. (The test configs add no `[[pricing]]` entries.) Read from the table rather
    than from name prefixes: `gpt-5.5`, `deepseek-chat` and `qwen3-coder` are not in it, so
    their rows carry no cost."""
    model = row["model_served"] or row["model_requested"]
    if not model:
        return False
    model = model.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(model, g) for g in PRICE_GLOBS)


def rows(path, since_ms, until_ms=None):
    """The ledger's rows of requests started at `since_ms` or later (before `until_ms`),
    oldest first, as dicts. None when the ledger cannot be read yet."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.OperationalError:
        return None
    try:
        db.row_factory = sqlite3.Row
        query = "SELECT * FROM requests WHERE ts_ms >= ?"
        args = [since_ms]
        if until_ms is not None:
            query += " AND ts_ms < ?"
            args.append(until_ms)
        # rowid: the order rows were written in, for rows that started in the same ms.
        return [dict(r) for r in db.execute(query + " ORDER BY ts_ms, rowid", args)]
    except sqlite3.OperationalError:
        return None
    finally:
        db.close()


def kind(row):
    # A ledger written before the `kind` column has generation rows only.
    return row.get("kind", "generation")


def answered(rows):
    """The model calls the client made: one row each, whatever attempt answered it."""
    return [r for r in rows if kind(r) == "generation" and r["outcome"] != "retried"]


def wait(path, since_ms, calls=None, until_ms=None):
    """The rows of requests started at `since_ms` or later, once `calls` model calls are
    recorded (once any row is, when the number is not known), or after TIMEOUT; then after
    SETTLE more, so a row beyond those shows too."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found = rows(path, since_ms, until_ms) or []
        if (len(answered(found)) >= calls) if calls is not None else found:
            break
        time.sleep(0.1)
    time.sleep(SETTLE)
    return rows(path, since_ms, until_ms) or []


def summarize(rows, calls=None):
    """What the summary shows of a test's rows."""
    generation = answered(rows)
    estimated = [r for r in generation if r.get("tokens_estimated")]
    return {
        "generation": len(generation),
        "completed": sum(r["outcome"] == "completed" for r in generation),
        "with_tokens": sum((r["input_tokens"] or 0) > 0 and (r["output_tokens"] or 0) > 0 for r in generation),
        "with_cost": sum((r["cost_usd"] or 0) > 0 for r in generation),
        "client_cancelled": sum(r["outcome"] == "client_cancelled" for r in generation),
        # None: a ledger without the column.
        "estimated": len(estimated) if all("tokens_estimated" in r for r in rows) else None,
        "retried": sum(r["outcome"] == "retried" for r in rows),
        "count_tokens": sum(kind(r) == "count_tokens" for r in rows),
        "mock_calls": calls,
    }


SUMMARY = {}


def record(key, rows, calls=None):
    """Adds a test's rows to the summary, printed, and written to $AGENT_LEDGER_SUMMARY
    when it is set; done before any assertion, so a failing run still leaves it."""
    counts = summarize(rows, calls)
    SUMMARY["|".join(key)] = counts
    print(f"\nledger {' '.join(key)}: {json.dumps(counts)}")
    out = os.environ.get("AGENT_LEDGER_SUMMARY")
    if out:
        with open(out, "w") as f:
            json.dump(SUMMARY, f, indent=1)
            f.write("\n")


def table():
    """The summary as a text table, one line per (agent, routing, test)."""
    columns = ["generation", "completed", "with_tokens", "with_cost", "client_cancelled",
               "estimated", "retried", "count_tokens", "mock_calls"]
    head = f"{'agent|routing|test':<40}" + "".join(f"{c:>17}" for c in columns)
    lines = [f"{k:<40}" + "".join(f"{str(v[c]):>17}" for c in columns) for k, v in SUMMARY.items()]
    return "\n".join([head, *lines])


SHOWN = ["request_id", "ts_ms", "kind", "provider", "model_requested", "model_served", "streamed",
         "status", "outcome", "error", "input_tokens", "output_tokens", "tokens_estimated",
         "cost_usd", "saved_tokens", "saved_usd", "attempt"]


def show(row):
    return {c: row.get(c) for c in SHOWN}


def faults(row):
    """What is wrong with the row of a model call the agent made and got its answer to: the
    mock always reports usage, so every count is the provider's and nothing is estimated."""
    wrong = []
    if row["outcome"] != "completed":
        wrong.append(f"outcome {row['outcome']}")
    if row["status"] != 200:
        wrong.append(f"status {row['status']}")
    if not (row["input_tokens"] or 0) > 0:
        wrong.append(f"input_tokens {row['input_tokens']}")
    if not (row["output_tokens"] or 0) > 0:
        wrong.append(f"output_tokens {row['output_tokens']}")
    if row.get("tokens_estimated", "no column") is not None:
        wrong.append(f"tokens_estimated {row.get('tokens_estimated', 'no column')}")
    if row["saved_tokens"] is None:
        wrong.append("saved_tokens NULL")
    if priced(row):
        if not (row["cost_usd"] or 0) > 0:
            wrong.append(f"priced model, cost_usd {row['cost_usd']}")
        if row["saved_usd"] is None:
            wrong.append("priced model, saved_usd NULL")
    elif row["cost_usd"] is not None:
        # A model the table does not know is recorded without a cost, not at a guessed one.
        wrong.append(f"unpriced model, cost_usd {row['cost_usd']}")
    return wrong


def check(rows, calls=None, count_tokens=0, provider=None):
    """Every model call of `rows` was recorded as one completed row with the provider's
    token counts and its cost: `calls` of them (the model calls the provider got) when
    known, each answered by `provider` (the gateway's name for it) when given; and
    `count_tokens` token counts, each in a row of its own kind."""
    generation = answered(rows)
    bad = [(show(r), f) for r in generation if (f := faults(r))]
    if provider is not None:
        bad += [(show(r), [f"provider {r['provider']}"]) for r in generation if r["provider"] != provider]
    assert not bad, "model calls recorded wrong:\n" + "\n".join(f"{f}: {r}" for r, f in bad)
    if calls is not None:
        assert len(generation) == calls, (
            f"{len(generation)} model calls recorded, the provider got {calls}: "
            f"{[show(r) for r in rows]}")
    counted = [r for r in rows if kind(r) == "count_tokens"]
    assert len(counted) == count_tokens, [show(r) for r in rows]
    assert all(r["outcome"] == "completed" and r["status"] == 200 for r in counted), \
        [show(r) for r in counted]
    # Nothing else: no row of another kind.
    assert len(generation) + len(counted) + sum(r["outcome"] == "retried" for r in rows) == len(rows), \
        [show(r) for r in rows]
