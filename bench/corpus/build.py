#!/usr/bin/env python3
"""Builds the savings corpus: agent requests whose tool results are real captured outputs.

Reads bench/corpus/outputs/*.txt (written by capture.sh) and writes
bench/corpus/requests/<id>.json, one file per request, then prints a summary table.
Deterministic: the same outputs always give byte-identical request files.
Standard library only.

Every scenario below is rendered in the three client dialects (OpenAI Chat, OpenAI
Responses, Anthropic Messages). A session has several turns; turn k+1's body is turn k's
body plus the assistant's tool call(s), their results and sometimes a new user message,
so earlier messages stay byte-for-byte identical.

Needles are facts the agent's next step depends on. Each must be a plain substring of a
decoded string of the body; the script asserts it. Where an output carries ANSI colour
codes, needles are taken from spans that have no escape codes inside them (for example
the `src/report.rs:13:5` location rather than the coloured `error[E0308]` header, whose
code and brackets are split by escapes in cargo's output); the per-call comments say so.
"""
import hashlib
import importlib.util
import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUTS = HERE / "outputs"
REQUESTS = HERE / "requests"

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Band limits. `small` is defined by the tool-result text (at most 2 KiB in the final
# turn): every request also carries the ~2 KB system prompt and the tools array, so no
# request of this kind can be under 2 KiB whole. `large` and `huge` are by the whole
# body of the final turn (compact JSON, UTF-8).
BANDS = {
    "small": ("tool_text", 0, 2 * 1024),
    "large": ("body", 80 * 1024, 130 * 1024),
    "huge": ("body", 500 * 1024, 700 * 1024),
}

DIALECTS = {
    "chat": ("/v1/chat/completions", "gpt-4.1"),
    "responses": ("/v1/responses", "gpt-5"),
    "messages": ("/v1/messages", "claude-sonnet-4-5"),
}

SYSTEM_PROMPT = """You are a coding agent working inside a developer's repository through a small set of tools. \
You read code, run commands, and make focused edits until the task the user gave you is done.

Working rules:
- Start by understanding the current state: run the failing command, read the files it points at, \
and search the tree before you change anything. Do not guess at file contents you have not read.
- Prefer the dedicated tools: read_file to read a file (it returns numbered lines), grep to search \
for a pattern, edit_file to change a file by replacing an exact snippet, and bash for everything \
else (builds, tests, git, package managers). Commands run in the workspace root unless you cd.
- Keep edits minimal and in the style of the surrounding code. Do not reformat unrelated lines, \
do not rename things the task does not mention, and never delete tests to make a suite pass.
- When a build or test fails, quote the exact error (code, file, line) you are acting on, fix the \
root cause rather than the symptom, then run the same command again to confirm.
- Long outputs are normal. Read them carefully: the important line is often in the middle \
(a failing test among hundreds of passing ones, one error among many warnings).
- Never run destructive commands (rm -rf outside build directories, git reset --hard, force \
pushes) and never commit unless the user asks you to.
- If something is ambiguous or a fix needs a product decision, stop and ask the user instead of \
picking silently.
- When you answer a question about the code or about command output, be specific: give file paths \
with line numbers, exact versions, commit hashes, and the exact text of messages.

Your final message for a task should say what you changed, why, and how you verified it. \
Keep it short; the user can read the diff."""

TOOLS = [
    {
        "name": "bash",
        "description": "Run a shell command in the workspace and return its combined stdout and stderr. "
        "Use for builds, tests, git, package managers and other CLI tools. Output is not truncated.",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run with bash -c."},
                "timeout_ms": {"type": "integer", "description": "Kill the command after this many milliseconds.", "minimum": 1000, "maximum": 600000},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    },
    {
        "name": "read_file",
        "description": "Read a text file and return it with 1-based line numbers (like cat -n). "
        "Use offset/limit for very long files.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root, or absolute."},
                "offset": {"type": "integer", "description": "First line to return (1-based).", "minimum": 1},
                "limit": {"type": "integer", "description": "Maximum number of lines to return.", "minimum": 1},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
    {
        "name": "edit_file",
        "description": "Replace an exact snippet of a file with new text. old_string must match exactly "
        "once unless replace_all is true. Create a file by passing an empty old_string.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string", "description": "Exact text to replace, including indentation."},
                "new_string": {"type": "string", "description": "Replacement text."},
                "replace_all": {"type": "boolean", "default": False},
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": False,
        },
    },
    {
        "name": "grep",
        "description": "Search file contents recursively with a regular expression and return matching "
        "lines as path:line:text.",
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (grep -E syntax)."},
                "path": {"type": "string", "description": "Directory or file to search; defaults to the workspace root."},
                "glob": {"type": "string", "description": "Only search files whose name matches this glob, e.g. *.rs"},
                "case_insensitive": {"type": "boolean", "default": False},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    },
]


def output(name: str) -> str:
    raw = (OUTPUTS / f"{name}.txt").read_bytes()
    return raw.decode("utf-8", errors="replace")


@dataclass
class Call:
    tool: str            # bash | read_file | grep
    args: dict           # arguments exactly as the model would send them
    out: str             # name of the captured output in outputs/
    needles: list = field(default_factory=list)
    error: bool = False  # the command failed (Anthropic dialect may mark is_error)
    wrap: str = ""       # "codex-json": the output sent as a JSON string, see codex_json()


@dataclass
class Turn:
    calls: list
    say: str = ""        # assistant text before the tool calls (may be empty)
    user: str = ""       # a message the user typed before this turn (sent after the previous turn's results)


@dataclass
class Scenario:
    key: str
    band: str
    user: str            # opening user message
    turns: list          # turns[0].user must be empty: sc.user opens the session
    needles: list = field(default_factory=list)  # needles that hold for the whole session
    held_out: bool = False  # kept out of tuning: the evaluator reports these sessions apart


def bash(cmd, out, needles=(), error=False, wrap=""):
    return Call("bash", {"command": cmd}, out, needles if isinstance(needles, str) else list(needles), error, wrap)


def codex_json(text, metadata):
    """`text` as Codex CLI's `shell` tool sent an output up to its 0.4x releases: a JSON
    string in `{"output":…,"metadata":{…}}`, encoded as serde_json encodes it."""
    return ('{"output":' + json.dumps(text, ensure_ascii=False)
            + ',"metadata":' + json.dumps(metadata, ensure_ascii=False, separators=(",", ":")) + "}")


def tool_text(call):
    """The tool result's text for a call: the captured output, in its agent's wrapper."""
    text = output(call.out)
    if call.wrap == "codex-json":
        return codex_json(text, FACTS["codex_json_metadata"])
    assert not call.wrap, call.wrap
    return text


def read(path, out, needles=()):
    return Call("read_file", {"path": path}, out, needles if isinstance(needles, str) else list(needles))


def grep(pattern, out, needles=(), path=None, glob=None):
    args = {"pattern": pattern}
    if path:
        args["path"] = path
    if glob:
        args["glob"] = glob
    return Call("grep", args, out, needles if isinstance(needles, str) else list(needles))


# ---------------------------------------------------------------------------------------
# Scenarios. The throwaway projects of capture.sh sit side by side in one scratch
# workspace (ledger/, durations/, inventory/, pyapp/, webapp/, widget/, logscan/,
# tokenizer/, billing/); the Trimgate checkout is its own workspace.
# ---------------------------------------------------------------------------------------
SCENARIOS = []

# ----------------------------------- small -------------------------------------------
SCENARIOS += [
    Scenario(
        "git-recent-commits", "small",
        "What were the last few commits in this repo, and which files did the one three commits back touch?",
        [
            Turn([bash("git log --oneline -n 10", "git-log-oneline-10", "ONELINE_NEEDLES")], say="I'll look at the recent history first."),
            Turn([bash("git show --stat HEAD~3", "git-show-stat-head3", "SHOW_STAT_NEEDLES")]),
            Turn([grep("pub fn", "grep-pub-fn-routing", "ROUTING_FN_NEEDLES", path="gateway-core/src/routing.rs")],
                 user="And which public functions does routing.rs expose? Just the names and line numbers."),
        ],
    ),
    Scenario(
        "env-check", "small",
        "Before we start: which Rust, Node and Python versions are on this box, and are ruamel.yaml and left-pad importable?",
        [
            Turn([bash("cargo --version && rustc --version && node --version && python3 --version", "cargo-version", "VERSIONS_NEEDLES")]),
            Turn([bash("cd pyapp && python3 -c 'import ruamel.yaml'", "python-modulenotfound", [
                "ModuleNotFoundError: No module named 'ruamel'",
            ], error=True)]),
            Turn([bash("cd webapp && node -e \"require('left-pad')\"", "node-module-not-found", [
                "Error: Cannot find module 'left-pad'", "code: 'MODULE_NOT_FOUND'",
            ], error=True)]),
        ],
    ),
    Scenario(
        "scripts-tour", "small",
        "What does scripts/test.sh run, in order?",
        [
            Turn([bash("ls -la scripts", "ls-la-scripts", "LS_SCRIPTS_NEEDLES")]),
            Turn([read("scripts/test.sh", "cat-test-sh", [
                "cargo clippy --workspace --all-targets --quiet -- -D warnings",
            ])], say="There are two scripts; reading the test one."),
            Turn([grep("pub fn", "grep-pub-fn-routing", "ROUTING_FN_NEEDLES", path="gateway-core/src/routing.rs")],
                 user="OK. Also list the public functions in gateway-core/src/routing.rs."),
        ],
    ),
    Scenario(
        "node-invoice-crash", "small",
        "`node run-invoices.js o-1001 o-1002` in webapp/ crashes. Explain the stack trace and point me at the line to fix.",
        [
            Turn([bash("cd webapp && node run-invoices.js o-1001 o-1002", "node-uncaught-typeerror", [
                "TypeError: Cannot read properties of undefined (reading 'name')",
                "webapp/lib/invoice.js:5:28",
            ], error=True)]),
            Turn([read("webapp/lib/invoice.js", "cat-n-webapp-invoice-js", [
                "return `${order.customer.name} (#${order.customer.id})`;",
            ])]),
            Turn([grep("customer", "grep-webapp-customer", ["lib/store.js:3:"], path="webapp")],
                 say="Checking which orders carry a customer."),
        ],
    ),
    Scenario(
        "java-billing-crash", "small",
        "The billing service won't start. Here's how I run it: `java -cp out com.example.billing.Main`. What's the root cause?",
        [
            Turn([bash("cd billing && java -cp out com.example.billing.Main", "java-caused-by", [
                "java.lang.IllegalStateException: InvoiceService failed to start",
                "Caused by: java.lang.NumberFormatException: For input string: \"0.09\"",
                "at com.example.billing.RateTable.parseCents(RateTable.java:21)",
            ], error=True)]),
            Turn([read("billing/src/com/example/billing/RateTable.java", "cat-n-billing-ratetable-java", [
                "return Integer.parseInt(raw.trim());",
            ])]),
            Turn([grep("egress", "grep-billing-egress", ['"egress-gb = 0.09"'], path="billing/src")],
                 user="Where does that egress rate come from?"),
        ],
    ),
    Scenario(
        "tsc-errors", "small",
        "`npx tsc --noEmit` fails in webapp. List the errors by file and tell me which one is in users.ts.",
        [
            Turn([bash("cd webapp && npx tsc --noEmit", "tsc-errors-plain", [
                "src/server.ts(12,32): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
                "src/server.ts(8,62): error TS2322",
                "src/server.ts(17,61): error TS2339",
                "src/users.ts(13,20): error TS18048: 'user.displayName' is possibly 'undefined'.",
            ], error=True)]),
            Turn([bash("cd webapp && cat package.json", "cat-webapp-package-json", ['"typescript": "^5.4.5"'])],
                 say="Checking which TypeScript the project asks for."),
            Turn([bash("cd widget && npm install lodash@^5.2.0 --color=always", "npm-install-etarget", [
                "No matching version found for lodash@^5.2.0.",
            ], error=True)], user="Side question: my colleague says lodash 5 is out; can you try installing lodash@^5.2.0 in widget/?"),
        ],
    ),
]

# ----------------------------------- large -------------------------------------------
SCENARIOS += [
    Scenario(
        "trimgate-source-read", "large",
        "I want to understand how the gateway decides where a request goes. Walk me through sniff.rs and routing.rs, "
        "then how config.rs and proxy.rs use them. Don't change anything.",
        [
            Turn([read("gateway-core/src/sniff.rs", "cat-n-sniff-rs"), read("gateway-core/src/routing.rs", "cat-n-routing-rs", "ROUTING_NEEDLES")],
                 say="I'll read the two modules first."),
            Turn([read("gateway-core/src/config.rs", "cat-n-config-rs")]),
            Turn([read("gateway-core/src/proxy.rs", "cat-n-proxy-rs")]),
            # The same file read again: identical tool result text.
            Turn([read("gateway-core/src/sniff.rs", "cat-n-sniff-rs", "SNIFF_NEEDLES")],
                 user="Go back to sniff.rs: what exactly happens when the body is not valid UTF-8?"),
        ],
    ),
    Scenario(
        "trimgate-grep-defn", "large",
        "Where is `route_for` or whatever picks the provider defined, and where do we build the error body for the client?",
        [
            Turn([bash("grep -rn 'fn ' gateway-core/src", "grep-fn-core-src", "GREP_DEFN_NEEDLES")], say="Searching for function definitions."),
            Turn([read("gateway-core/src/routing.rs", "cat-n-routing-rs", "ROUTING_NEEDLES")]),
            Turn([read("gateway-core/src/error.rs", "cat-n-error-rs", "ERROR_BODY_NEEDLES")],
                 user="And the error body we send back to the client: which function builds that JSON? Read the file it is in.")
        ],
    ),
    Scenario(
        "trimgate-git-commit", "large",
        "What changed in commit {commit_short}? Summarise the files it touched and why.",
        [
            Turn([bash("git log --stat", "git-log-stat-full", "GIT_COMMIT_NEEDLES")], say="Reading the log with file stats."),
            Turn([bash("python3 /tmp/gitlog2json.py .", "git-log-json", "GIT_COMMIT_NEEDLES")],
                 user="Give me the same as JSON so I can paste it into the tracker."),
            Turn([bash("git show --stat HEAD~3", "git-show-stat-head3"), bash("git -c color.ui=always show HEAD~3 -- gateway-core/src", "git-show-head3-color")]),
            Turn([read("gateway-core/src/proxy.rs", "cat-n-proxy-rs")], user="And how does proxy.rs look now after all that?"),
        ],
    ),
    Scenario(
        "pytest-fix", "large",
        "The inventory tests are red. Run them, find every failure and tell me the fix for each.",
        [
            Turn([bash("cd inventory && .venv/bin/pip install --no-cache-dir pytest", "pip-install-pytest", ["Successfully installed"])],
                 say="Making sure pytest is installed in the venv."),
            Turn([bash("cd inventory && .venv/bin/python -m pytest -v --color=yes", "pytest-failures", "PYTEST_NEEDLES", error=True)]),
            Turn([read("inventory/inventory/pricing.py", "cat-n-inventory-pricing-py"), read("inventory/inventory/loader.py", "cat-n-inventory-loader-py")]),
            Turn([bash("cd inventory && .venv/bin/python -m pytest -vv --color=yes tests/test_pricing.py", "pytest-vv-pricing", "PYTEST_VV_NEEDLES", error=True)],
                 user="Show the full diffs with -vv for test_pricing.py before you edit anything."),
            Turn([read("inventory/tests/test_pricing.py", "cat-n-inventory-test-pricing-py")]),
            Turn([bash("cd pyapp && python3 tree.py 2>&1 | tail -n 40", "python-recursionerror-tail", [
                "RecursionError: maximum recursion depth exceeded",
                "pyapp/tree.py\", line 18, in depth_of",
            ], error=True), read("pyapp/tree.py", "cat-n-pyapp-tree-py", ['"physics": ["books"],'])],
                 user="Before you edit: pyapp/tree.py also dies with a RecursionError. Is that the same kind of bug?"),
        ],
    ),
    Scenario(
        "npm-which-version-ls", "large",
        "Which version of `qs` did npm actually install in webapp, and who depends on it?",
        [
            Turn([bash("cd webapp && cat package.json", "cat-webapp-package-json")]),
            Turn([bash("cd webapp && npm ls --all --json", "npm-ls-all-json", "NPM_LS_NEEDLES")], say="Listing the whole dependency tree."),
            Turn([bash("cd webapp && npx tsc --noEmit", "tsc-errors-plain", [
                "src/server.ts(12,32): error TS2345",
            ], error=True)], user="Thanks. While you're there, does it type-check?"),
        ],
    ),
]

# ----------------------------------- huge --------------------------------------------
SCENARIOS += [
    Scenario(
        "npm-install-deps", "huge",
        "Install webapp's dependencies and tell me how many packages were added and which version of `{npm_pkg}` ended up in the lockfile.",
        [
            Turn([bash("cd webapp && npm install --loglevel=http --color=always", "npm-install-http", "NPM_INSTALL_NEEDLES")],
                 say="Running npm install with HTTP logging so we can see what is fetched."),
            Turn([bash("cd webapp && npm ls --all --json", "npm-ls-all-json", "NPM_LS_NEEDLES")]),
            Turn([bash("cd webapp && cat package-lock.json", "package-lock-json", "LOCK_NEEDLES")],
                 user="Check the lockfile too: I want the exact version and integrity hash it pinned for {npm_pkg}."),
            Turn([bash("cd webapp && npm view express --json", "npm-view-express-json", "EXPRESS_VIEW_NEEDLES")],
                 user="Is our express the latest 4.x? What does the registry say?"),
            Turn([bash("cd webapp && npx tsc --noEmit --pretty true", "tsc-errors-pretty", [
                # tsc --pretty colours file, line and column separately; the message text after
                # the code is escape-free.
                "Argument of type 'string' is not assignable to parameter of type 'number'.",
                "TS2345",
            ], error=True)]),
        ],
    ),
    Scenario(
        "trimgate-diff-review", "huge",
        "Review everything that changed in gateway-core/src since {diff_base}. Start from the log, then the diff.",
        [
            Turn([bash("git log --stat -n 200", "git-log-stat-200")], say="First the log with stats."),
            Turn([bash("git diff {diff_base}..HEAD -- gateway-core/src", "git-diff-core-src", "DIFF_NEEDLES")]),
            Turn([bash("grep -rn 'fn ' gateway-core/src", "grep-fn-core-src")],
                 user="Which functions exist in gateway-core/src now? I want to see if anything is unused."),
            Turn([read("gateway-core/src/config.rs", "cat-n-config-rs"), read("gateway-core/src/proxy.rs", "cat-n-proxy-rs"),
                  read("gateway-core/src/relay.rs", "cat-n-relay-rs"), read("gateway-core/src/upstream.rs", "cat-n-upstream-rs")],
                 say="Reading the files with the biggest changes."),
            Turn([bash("grep -rn 'error' --include=*.rs --exclude-dir=target --exclude-dir=.git --exclude-dir=node_modules --exclude-dir=.venv .",
                       "grep-error-rs"), read("gateway-core/src/error.rs", "cat-n-error-rs"), read("gateway-core/src/usage.rs", "cat-n-usage-rs")]),
            Turn([bash("cat README.md", "cat-readme")], user="Does the README still describe this correctly?"),
        ],
    ),
    Scenario(
        "trimgate-find-layout", "huge",
        "Give me a map of the repo: what is where, and what is all that stuff under gateway-core/fuzz?",
        [
            Turn([bash("find /work/main -path '*/node_modules' -prune -o -path '*/target' -prune -o -path '*/.git' -prune -o -print | head -n 4000",
                       "find-repo-head", "FIND_NEEDLES")]),
            Turn([bash("ls -laR /work/main/gateway-core | head -n 3000", "ls-laR-core-head", "LSR_NEEDLES")],
                 say="The listing is dominated by fuzz files; looking at sizes."),
            Turn([bash("ls -laR /work/main/gateway-core/src", "ls-laR-core-src", "LS_SRC_NEEDLES")],
                 user="Skip the fuzz corpus. Just the sources, with sizes."),
        ],
    ),
    Scenario(
        "npm-typescript-versions", "huge",
        "When was TypeScript {ts_version} published, and what does the `latest` dist-tag point to? Then check what webapp installed.",
        [
            Turn([bash("cd webapp && npm view typescript --json", "npm-view-typescript-json", "TS_VIEW_NEEDLES")]),
            Turn([bash("cd webapp && npm install --loglevel=http --color=always", "npm-install-http", "NPM_INSTALL_NEEDLES")]),
            Turn([bash("cd webapp && npx tsc --noEmit", "tsc-errors-plain", [
                "src/users.ts(13,20): error TS18048: 'user.displayName' is possibly 'undefined'.",
            ], error=True)], user="Now compile with it."),
        ],
    ),
    Scenario(
        "rust-workspace-triage", "huge",
        "Three Rust crates in this workspace are unhappy: ledger doesn't compile, durations has failing tests, and the "
        "tokenizer binary panics. Triage all three, starting with ledger.",
        [
            Turn([bash("cd ledger && cargo build --color=always", "cargo-build-errors", "CARGO_ERR_NEEDLES", error=True)]),
            Turn([read("ledger/src/report.rs", "cat-n-ledger-report-rs"), read("ledger/src/entry.rs", "cat-n-ledger-entry-rs")]),
            Turn([bash("cd durations && RUST_BACKTRACE=1 cargo test --color=always", "cargo-test-failures", "CARGO_TEST_NEEDLES", error=True)]),
            Turn([bash("cd tokenizer && RUST_BACKTRACE=full ./target/debug/tokenizer", "rust-panic-backtrace-full", "PANIC_NEEDLES", error=True),
                  read("tokenizer/src/lexer.rs", "cat-n-tokenizer-lexer-rs")]),
            Turn([bash("cd logscan && cargo metadata --format-version 1", "cargo-metadata-logscan", "METADATA_NEEDLES")],
                 user="Different thing: logscan's build is slow. Which exact version of {meta_pkg} does logscan resolve to, and from which source?"),
            Turn([bash("cd logscan && CARGO_TARGET_DIR=target/vv cargo build -vv --color=always", "cargo-build-vv-logscan", "VV_NEEDLES")],
                 user="Build it verbosely so we can see which build scripts run."),
        ],
    ),
]


# ---------------------------------------------------------------------------------------
# Agents' wrappers. Codex CLI 0.171 sends a command's output behind its own header
# (`Chunk ID:` ... `Output:`); the codex-exec-* outputs are tool results exactly as it sent
# them. Its 0.4x releases sent the output as a JSON string with metadata; Codex 0.45 cut
# both long outputs to 10 KiB itself (codex-shell-*), so the JSON-wrapped results below are
# the whole outputs in that release's shape and with its metadata, as an agent that keeps
# the shape but not the cut sends them. Both sessions ask for a commit in the middle of a
# `git log --format` listing and a package deep in an `npm ls --all` tree.
# ---------------------------------------------------------------------------------------
SCENARIOS += [
    Scenario(
        "codex-wrapped-history", "large",
        "Which commit was it that said \"{listed_subject}\"? I need its hash.",
        [
            Turn([bash("git log --format='%h %s'", "codex-exec-git-log-format", "LISTED_COMMIT_NEEDLES")],
                 say="Listing the history one commit per line."),
            Turn([bash("git log --stat -n 30", "codex-exec-git-log-stat", "CODEX_STAT_NEEDLES")],
                 user="Thanks. What did the recent commits touch? Give me the files of {stat_short}."),
            Turn([bash("cd webapp && npm ls --all", "codex-exec-npm-ls-all", "TREE_NEEDLES")],
                 user="Different thing: in webapp, which version of {tree_pkg} is installed, and which package pulls it in?"),
        ],
    ),
    Scenario(
        "json-wrapped-history", "large",
        "Which commit was it that said \"{listed_subject}\"? I need its hash.",
        [
            Turn([bash("git log --format='%h %s'", "git-log-format", "LISTED_COMMIT_NEEDLES", wrap="codex-json")]),
            Turn([bash("git log --stat", "git-log-stat-full", "GIT_COMMIT_NEEDLES", wrap="codex-json")],
                 user="And what changed in {commit_short}? Files and why."),
            Turn([bash("cd webapp && npm ls --all", "npm-ls-all", "TREE_NEEDLES", wrap="codex-json")],
                 user="Different thing: in webapp, which version of {tree_pkg} is installed, and which package pulls it in?"),
        ],
    ),
]


# ---------------------------------------------------------------------------------------
# Facts picked from the outputs (from the middle, not the ends) and the needles for them.
# ---------------------------------------------------------------------------------------
def strip_ansi(s):
    return ANSI.sub("", s)


def middle(items):
    return items[len(items) // 2]


def pick_facts():
    f = {}
    # git: a commit from the middle of the full log.
    log = output("git-log-stat-full")
    commits = re.findall(r"^commit ([0-9a-f]{40})\n(?:.*\n)*?\n    (.+)$", log, re.M)
    sha, subject = middle(commits)
    f["commit_short"] = sha[:7]
    f["GIT_COMMIT_NEEDLES"] = [sha, subject]
    # The base of the captured diff (capture.sh picks it two thirds down the history).
    manifest = (OUTPUTS / "MANIFEST.md").read_text()
    m = re.search(r"git -C \S+ diff ([0-9a-f]+)\.\.HEAD", manifest)
    f["diff_base"] = m.group(1)[:7]
    # diff: a hunk header and a changed line from a file in the middle of the diff.
    diff = output("git-diff-core-src")
    files = re.findall(r"^diff --git a/(\S+) b/", diff, re.M)
    # The file nearest the middle of the diff that adds code (some only delete lines).
    order = sorted(range(len(files)), key=lambda i: abs(i - len(files) // 2))
    for i in order:
        mid = files[i]
        section = diff.split(f"diff --git a/{mid} b/{mid}\n", 1)[1].split("\ndiff --git ", 1)[0]
        hunks = re.findall(r"^(@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@.*)$", section, re.M)
        added = [l for l in section.splitlines() if l.startswith("+") and not l.startswith("+++") and len(l.strip()) > 20]
        if hunks and added:
            break
    f["DIFF_NEEDLES"] = [f"diff --git a/{mid} b/{mid}", middle(hunks), middle(added)]
    f["diff_file"] = mid

    # npm: a package from the middle of the lockfile (top-level node_modules entries only).
    lock = json.loads(output("package-lock-json"))
    names = sorted(k[len("node_modules/"):] for k in lock["packages"]
                   if k.startswith("node_modules/") and "/node_modules/" not in k[len("node_modules/"):]
                   and not k[len("node_modules/"):].startswith("@"))
    name = middle(names)
    ver = lock["packages"]["node_modules/" + name]["version"]
    f["npm_pkg"] = name
    integrity = lock["packages"]["node_modules/" + name]["integrity"]
    f["LOCK_NEEDLES"] = [f'"node_modules/{name}": {{', f'"version": "{ver}"', f'"integrity": "{integrity}"']
    install = output("npm-install-http")
    plain = strip_ansi(install)
    added_line = re.search(r"^added \d+ packages.*$", plain, re.M).group(0)
    # The fetch lines are coloured around "npm http fetch"; the URL and status after them are plain.
    tarball = f"https://registry.npmjs.org/{name}/-/{name.split('/')[-1]}-{ver}.tgz"
    assert tarball in install, tarball
    f["NPM_INSTALL_NEEDLES"] = [added_line, tarball]
    f["npm_ver"] = ver
    # npm ls: qs sits deep in the tree (express -> qs, body-parser -> qs).
    ls = output("npm-ls-all-json")
    tree = json.loads(ls)
    qs_ver = tree["dependencies"]["express"]["dependencies"]["qs"]["version"]
    f["NPM_LS_NEEDLES"] = ['"qs": {', f'"version": "{qs_ver}"', f'"version": "{tree["dependencies"]["express"]["version"]}"']
    view = json.loads(output("npm-view-express-json"))
    f["EXPRESS_VIEW_NEEDLES"] = [f'"latest": "{view["dist-tags"]["latest"]}"']
    # typescript: a release from the middle of its stable versions.
    ts = json.loads(output("npm-view-typescript-json"))
    stable = [v for v in ts["versions"] if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    tsv = middle(stable)
    f["ts_version"] = tsv
    f["TS_VIEW_NEEDLES"] = [f'"{tsv}": "{ts["time"][tsv]}"', f'"latest": "{ts["dist-tags"]["latest"]}"']

    # cargo metadata (compact JSON on one line): a crate from the middle of the package list.
    # cargo downloads every platform's crates first (progress on stderr), then prints one JSON line.
    meta_line = next(l for l in output("cargo-metadata-logscan").splitlines() if l.startswith("{"))
    meta = json.loads(meta_line)
    pkgs = sorted((p["name"], p["version"], p["id"]) for p in meta["packages"] if p["source"])
    pname, pver, pid = middle(pkgs)
    f["meta_pkg"] = pname
    f["METADATA_NEEDLES"] = [f'"id":"{pid}"', f'"name":"{pname}","version":"{pver}"']
    vv = output("cargo-build-vv-logscan")
    runs = re.findall(r"Running `(\S*/build-script-build)`", vv)
    f["VV_NEEDLES"] = [middle(runs)] if runs else []
    f["VV_NEEDLES"].append(re.search(r"Finished\S* `dev` profile[^\n]*", vv).group(0).split("Finished", 1)[1].lstrip("\x1b[0m ").split(" in ")[0])

    # find / ls -laR: an entry from the middle.
    find = output("find-repo-head").splitlines()
    f["FIND_NEEDLES"] = [middle(find), find[len(find) // 3]]
    lsr = output("ls-laR-core-head").splitlines()
    dirs = [l for l in lsr if l.endswith(":") and l.startswith("/")]
    f["LSR_NEEDLES"] = [middle(dirs)]

    # Compiler, test runner and stack-trace needles, read from the (colour-stripped)
    # text but kept only where the span has no escape codes in the raw output.
    cb = output("cargo-build-errors")
    needles = []
    for code, loc in re.findall(r"error\[(E\d{4})\]: .*\n\s*--> (\S+)", strip_ansi(cb)):
        # cargo colours "error[E0308]" as one escape-free span in recent releases; fall back
        # to the bare code where it does not.
        needles.append(f"error[{code}]" if f"error[{code}]" in cb else code)
        needles.append(loc)
    f["CARGO_ERR_NEEDLES"] = needles
    ct = output("cargo-test-failures")
    plain = strip_ansi(ct)
    fails = re.findall(r"^test (\S+) \.\.\. FAILED$", plain, re.M)
    needles = []
    for t in fails:
        needles.append(f"---- {t} stdout ----")
        msg = re.search(rf"thread '{t}' \(\d+\) panicked at (\S+):\n(.+)", plain)
        needles += [msg.group(1), msg.group(2)]
    needles += ['  left: "1h 5s"', ' right: "1h 0m 5s"']
    f["CARGO_TEST_NEEDLES"] = needles
    rp = output("rust-panic-backtrace-full")
    m = re.search(r"panicked at (\S+):\n(.+)", rp)
    frames = re.findall(r"at (\./src/\S+|/tmp/\S+/src/\S+)", rp)
    f["PANIC_NEEDLES"] = [m.group(1), m.group(2)] + ([frames[0]] if frames else [])

    pt = output("pytest-failures")
    needles = []
    for line in strip_ansi(pt).splitlines():
        if line.startswith("FAILED "):
            test = line.split()[1]
            needles.append(test)
    # pytest --color=yes wraps file paths ("inventory/loader.py") and every repr inside the
    # assertion diffs in escape codes; the needles below are the escape-free spans: the
    # "E   ..." exception/assertion lines, the ":LINE: Error" tails after the coloured path,
    # and the test ids of the -v progress lines.
    needles += [
        "E       ValueError: could not convert string to float: '12,50'",
        "raw = '12,50'",
        ":12: ValueError",
        "text = 'retries=17; timeout=-5 ;mode=fast'",
        "E       AssertionError: assert {'retries': 1...mode': 'fast'} == {'retries': 1...mode': 'fast'}",
        ":36: AssertionError",
        "E       AssertionError: assert ['AB-1', 'AB-...AB-9', 'CD-2'] == ['AB-1', 'AB-...-100', 'CD-2']",
        ":49: AssertionError",
        "E       AssertionError: assert {'count': 4, ...2, 'misc': 1}} == {'count': 4, ... 'snacks': 0}}",
        ":59: AssertionError",
        "153 passed",  # "4 failed" and "153 passed" are separately coloured
    ]
    f["PYTEST_NEEDLES"] = needles
    f["PYTEST_VV_NEEDLES"] = [
        "tests/test_pricing.py::test_parse_config[case-16]",
        "E       AssertionError: assert {'retries': 17, 'timeout': '-5', 'mode': 'fast'} == {'retries': 17, 'timeout': -5, 'mode': 'fast'}",
        "tests/test_pricing.py::test_sort_skus_numeric_suffixes",
        "E       AssertionError: assert ['AB-1', 'AB-10', 'AB-100', 'AB-9', 'CD-2'] == ['AB-1', 'AB-9', 'AB-10', 'AB-100', 'CD-2']",
        "tests/test_pricing.py::test_summarize_categories",
        "-         'snacks': 0,",
    ]
    # Small outputs: whole lines the user's question is about.
    lines = output("git-log-oneline-10").splitlines()
    f["ONELINE_NEEDLES"] = [middle(lines)]
    show = output("git-show-stat-head3").splitlines()
    f["SHOW_STAT_NEEDLES"] = [show[0].split()[1], show[4].strip()] + [l.rstrip() for l in show if " | " in l][:1] + [show[-1].strip()]
    f["ROUTING_FN_NEEDLES"] = [middle(output("grep-pub-fn-routing").splitlines())]
    f["VERSIONS_NEEDLES"] = output("cargo-version").splitlines()
    f["LS_SCRIPTS_NEEDLES"] = [l for l in output("ls-la-scripts").splitlines() if l.endswith(" test.sh")]
    # Repo reads and greps: the lines that answer the user's questions.
    def first_line(name, *patterns):
        lines = output(name).splitlines()
        for pat in patterns:
            for l in lines:
                if re.search(pat, l):
                    return l
        raise SystemExit(f"{name}: none of {patterns} found")
    f["SNIFF_NEEDLES"] = [first_line("cat-n-sniff-rs", r"from_utf8\(", r"UTF-8")]
    f["ROUTING_NEEDLES"] = [first_line("cat-n-routing-rs", r"pub fn resolve", r"pub fn ")]
    f["GREP_DEFN_NEEDLES"] = [first_line("grep-fn-core-src", r"routing\.rs:\d+:\s+pub fn resolve", r"routing\.rs:\d+:\s+pub fn ")]
    f["GREP_ERROR_NEEDLES"] = [first_line("grep-error-rs", r"^\./gateway-core/src/error\.rs:\d+:.*fn ", r"^\./gateway-core/src/error\.rs:")]
    f["ERROR_BODY_NEEDLES"] = [first_line("cat-n-error-rs", r"pub fn body_json", r"fn .*json")]
    f["LS_SRC_NEEDLES"] = [first_line("ls-laR-core-src", r" sniff\.rs$")]
    f.update(wrapped_facts())
    return f


def codex_output(name):
    """The command's output inside a tool result Codex CLI 0.171 sent (after `Output:`)."""
    return output(name).split("\nOutput:\n", 1)[1]


def wrapped_facts():
    f = {}
    # The metadata Codex 0.45 sent with an output, for the JSON-wrapped results; its
    # encoding, reproduced here, must give back what that release sent byte for byte.
    shell = output("codex-shell-git-log-format")
    sent = json.loads(shell)
    assert codex_json(sent["output"], sent["metadata"]) == shell, "codex_json() does not encode as Codex did"
    f["codex_json_metadata"] = sent["metadata"]
    # A commit from the middle of the one-line listing: its hash and subject. Needles are
    # matched in the decoded tool result, where a JSON-wrapped output is still escaped, so
    # the commit's line has no quote or backslash to escape.
    listing = output("git-log-format")
    assert codex_output("codex-exec-git-log-format") == listing
    plain = [l for l in listing.splitlines() if '"' not in l and "\\" not in l]
    line = middle(plain)
    f["LISTED_COMMIT_NEEDLES"] = [line]
    f["listed_subject"] = line.split(" ", 1)[1]
    # A commit from the middle of `git log --stat -n 30`, with a file it touched and how
    # many lines changed there (the `+++--` bar after the count is drawn, not a fact).
    stat = codex_output("codex-exec-git-log-stat")
    commits = re.findall(r"^commit ([0-9a-f]{40})\n(?:.*\n)*?\n    (.+)\n(?:.*\n)*?\n( \S.* \| +\d+)", stat, re.M)
    sha, subject, touched = middle(commits)
    f["stat_short"] = sha[:7]
    f["CODEX_STAT_NEEDLES"] = [sha, subject, touched]
    # A package deep in the `npm ls --all` tree, listed once (not `deduped` elsewhere), and
    # the package that pulls it in.
    tree = output("npm-ls-all")
    assert codex_output("codex-exec-npm-ls-all") == tree
    rows = tree.splitlines()
    branch = re.compile(r"^((?:│ |  )*)[├└]─[─┬] (\S+)( deduped)?$")
    entries = [(i, branch.match(row)) for i, row in enumerate(rows)]
    entries = [(i, len(m.group(1)), m.group(2), bool(m.group(3))) for i, m in entries if m]
    listed = {}
    for _, _, pkg, _ in entries:
        listed[pkg] = listed.get(pkg, 0) + 1
    deep = [e for e in entries[len(entries) // 3: 2 * len(entries) // 3]
            if e[1] >= 8 and listed[e[2]] == 1 and not e[3]]
    i, depth, pkg, _ = middle(deep)
    parent = next(p for j, d, p, _ in reversed(entries) if j < i and d < depth)
    f["tree_pkg"] = pkg.rsplit("@", 1)[0]
    f["TREE_NEEDLES"] = [rows[i], parent]
    return f


# More scenarios live in files of their own, one per family of formats
# (`scenarios_<family>.py`): each defines `SCENARIOS` and `facts()` (a dict of needle lists
# and values picked from its outputs) with this module's helpers in scope.
EXTRA_FACTS = []
for _path in sorted(HERE.glob("scenarios_*.py")):
    _spec = importlib.util.spec_from_file_location(_path.stem, _path)
    _mod = importlib.util.module_from_spec(_spec)
    _mod.__dict__.update(Scenario=Scenario, Turn=Turn, bash=bash, read=read, grep=grep,
                         output=output, strip_ansi=strip_ansi, middle=middle, OUTPUTS=OUTPUTS)
    _spec.loader.exec_module(_mod)
    SCENARIOS += _mod.SCENARIOS
    EXTRA_FACTS.append(_mod.facts)

FACTS = {}


def resolve_needles(spec):
    if isinstance(spec, str):
        return list(FACTS[spec])
    return list(spec)


def fmt(text):
    return text.format(**{k: v for k, v in FACTS.items() if isinstance(v, str)})


# ---------------------------------------------------------------------------------------
# Rendering in the three dialects
# ---------------------------------------------------------------------------------------
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def call_id(dialect, session, turn, idx):
    digest = hashlib.sha256(f"{session}/{turn}/{idx}".encode()).digest()
    n = int.from_bytes(digest, "big")
    chars = []
    for _ in range(24):
        n, r = divmod(n, 62)
        chars.append(B62[r])
    body = "".join(chars)
    if dialect == "messages":
        return "toolu_01" + body[:22]
    return "call_" + body


def variant(session, salt, n=2):
    """A deterministic small integer per session, used to vary dialect details."""
    return hashlib.sha256(f"{session}#{salt}".encode()).digest()[0] % n


def tools_for(dialect):
    if dialect == "chat":
        return [{"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}} for t in TOOLS]
    if dialect == "responses":
        return [{"type": "function", "name": t["name"], "description": t["description"], "parameters": t["parameters"], "strict": False} for t in TOOLS]
    return [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]} for t in TOOLS]


def render_session(sc, dialect, index):
    """Yields (turn_number, body, needles, tool_call_ids, tool_text_bytes) for each turn."""
    session = f"{sc.key}-{sc.band}-{dialect}"
    path, model = DIALECTS[dialect]
    assert not sc.turns[0].user, session
    stream = variant(session, "stream") == 1
    first_user = fmt(sc.user)

    # Per-session dialect details.
    system_as_blocks = index % 2 == 1                 # messages: list of blocks with cache_control
    result_as_blocks = variant(session, "blocks") == 1   # messages: tool_result content as text blocks
    mark_errors = variant(session, "is_error") == 1      # messages: is_error on failing commands
    chat_parts = variant(session, "parts") == 1          # chat: some tool messages as content parts

    if dialect == "chat":
        body = {"model": model, "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": first_user},
        ], "tools": tools_for(dialect), "tool_choice": "auto", "temperature": 0.2}
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        items = body["messages"]
    elif dialect == "responses":
        body = {"model": model, "instructions": SYSTEM_PROMPT, "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": first_user}]},
        ], "tools": tools_for(dialect), "tool_choice": "auto", "parallel_tool_calls": True,
            "reasoning": {"effort": "medium"}, "store": False}
        if stream:
            body["stream"] = True
        items = body["input"]
    else:
        system = SYSTEM_PROMPT
        if system_as_blocks:
            system = [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
        body = {"model": model, "max_tokens": 16384, "system": system, "messages": [
            {"role": "user", "content": first_user if index % 3 else [{"type": "text", "text": first_user}]},
        ], "tools": tools_for(dialect)}
        if stream:
            body["stream"] = True
        items = body["messages"]

    last_user = first_user
    needles_all = list(sc.needles)
    ids_all = []
    tool_bytes = 0
    for t_no, turn in enumerate(sc.turns, start=1):
        calls = []
        for c_no, c in enumerate(turn.calls):
            cid = call_id(dialect, session, t_no, c_no)
            args = {k: (fmt(v) if isinstance(v, str) else v) for k, v in c.args.items()}
            text = tool_text(c)
            calls.append((cid, c, args, text))
            ids_all.append(cid)
            tool_bytes += len(text.encode())
            for n in resolve_needles(c.needles):
                if n not in needles_all:
                    needles_all.append(n)
        say = fmt(turn.say)
        # Turn.user is the message the user typed before that turn's calls; it is sent at
        # the end of the previous turn's request (after that turn's tool results).
        nxt = sc.turns[t_no] if t_no < len(sc.turns) else None
        new_user = fmt(nxt.user) if nxt is not None and nxt.user else ""

        if dialect == "chat":
            items.append({"role": "assistant", "content": say or None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": c.tool, "arguments": json.dumps(args)}}
                for cid, c, args, _ in calls]})
            for k, (cid, c, args, text) in enumerate(calls):
                content = [{"type": "text", "text": text}] if (chat_parts and (t_no + k) % 2 == 0) else text
                items.append({"role": "tool", "tool_call_id": cid, "content": content})
            if new_user:
                items.append({"role": "user", "content": new_user})
        elif dialect == "responses":
            if say:
                items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": say, "annotations": []}]})
            for cid, c, args, _ in calls:
                items.append({"type": "function_call", "call_id": cid, "name": c.tool, "arguments": json.dumps(args)})
            for cid, c, args, text in calls:
                items.append({"type": "function_call_output", "call_id": cid, "output": text})
            if new_user:
                items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": new_user}]})
        else:
            content = []
            if say:
                content.append({"type": "text", "text": say})
            for cid, c, args, _ in calls:
                content.append({"type": "tool_use", "id": cid, "name": c.tool, "input": args})
            items.append({"role": "assistant", "content": content})
            results = []
            for cid, c, args, text in calls:
                block = {"type": "tool_result", "tool_use_id": cid,
                         "content": [{"type": "text", "text": text}] if result_as_blocks else text}
                if c.error and mark_errors:
                    block["is_error"] = True
                results.append(block)
            if new_user:
                results.append({"type": "text", "text": new_user})
            items.append({"role": "user", "content": results})
        if new_user:
            last_user = new_user

        needles = [last_user] + [n for n in needles_all if n != last_user]
        # Deep copy through JSON so later turns never alias earlier bodies.
        yield t_no, json.loads(json.dumps(body)), needles, list(ids_all), tool_bytes, path, model


def strings_of(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_of(v)


def body_size(body):
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())


def main():
    FACTS.update(pick_facts())
    for extra in EXTRA_FACTS:
        more = extra()
        # One name, one fact: a family that reused another's name would silently change
        # the other family's questions and needles.
        clash = sorted(FACTS.keys() & more.keys())
        if clash:
            raise SystemExit(f"{extra.__module__}: facts named as another family's: {clash}")
        FACTS.update(more)
    if REQUESTS.exists():
        shutil.rmtree(REQUESTS)
    REQUESTS.mkdir()
    stats = {}
    problems = []
    for index, sc in enumerate(SCENARIOS):
        for dialect in DIALECTS:
            session = f"{sc.key}-{sc.band}-{dialect}"
            prev = None
            last = None
            for t_no, body, needles, ids, tool_bytes, path, model in render_session(sc, dialect, index):
                strings = list(strings_of(body))
                for n in needles:
                    if not any(n in s for s in strings):
                        raise SystemExit(f"{session} turn {t_no}: needle not in body: {n!r}")
                    if ANSI.search(n) or "\x1b" in n:
                        raise SystemExit(f"{session}: needle contains an escape code: {n!r}")
                # Prefix property: the previous turn's items are unchanged.
                key = {"chat": "messages", "responses": "input", "messages": "messages"}[dialect]
                if prev is not None:
                    assert body[key][: len(prev[key])] == prev[key], session
                prev = body
                rid = f"{session}-t{t_no}"
                doc = {"id": rid, "session": session, "turn": t_no, "band": sc.band, "dialect": dialect, "held_out": sc.held_out,
                       "path": path, "model": model, "body": body, "needles": needles, "tool_call_ids": ids}
                (REQUESTS / f"{rid}.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
                size = body_size(body)
                st = stats.setdefault((sc.band, dialect), {"sessions": set(), "requests": 0, "min": None, "max": 0, "final": []})
                st["sessions"].add(session)
                st["requests"] += 1
                st["min"] = size if st["min"] is None else min(st["min"], size)
                st["max"] = max(st["max"], size)
                last = (size, tool_bytes)
            measure, lo, hi = BANDS[sc.band]
            value = last[0] if measure == "body" else last[1]
            stats[(sc.band, dialect)]["final"].append(last[0])
            if not lo <= value <= hi:
                problems.append(f"{session}: final turn {measure} {value} bytes outside {lo}..{hi}")
    print(f"{'band':6} {'dialect':10} {'sessions':>8} {'requests':>8} {'min body':>10} {'max body':>10} {'final turns (KiB)':>20}")
    for band in BANDS:
        for dialect in DIALECTS:
            st = stats.get((band, dialect))
            if not st:
                continue
            finals = sorted(st["final"])
            print(f"{band:6} {dialect:10} {len(st['sessions']):>8} {st['requests']:>8} {st['min']:>10} {st['max']:>10} "
                  f"{finals[0] / 1024:>9.1f}..{finals[-1] / 1024:<8.1f}")
    total = sum(st["requests"] for st in stats.values())
    print(f"{total} requests in {REQUESTS.relative_to(HERE.parent.parent)}")
    if problems:
        print("\n".join(["band limits not met:"] + problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
