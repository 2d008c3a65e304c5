"""The real coding agents, driven headless and offline: Claude Code (`claude -p`), Codex
CLI (`codex exec --json`) and Gemini CLI (`gemini -p … --output-format json`), installed
from npm at the versions pinned in package.json.

Each run gets a scratch HOME, telemetry and update checks off, and `x-mock-*` headers
that tell the mock provider behind the gateway what to answer (plain text, or a call to
the agent's shell tool). Used by the tests (test_agents.py) and by capture.py, which
refreshes the request fixtures when a new version ships.
"""

import base64
import json
import os
import re
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.path.join(HERE, "node_modules", ".bin")
# What the agents are given as their own key: the gateway replaces it with the provider's.
PLACEHOLDER_KEY = "sk-placeholder-from-the-agent"
# The ChatGPT workspace a signed-in Codex names in `chatgpt-account-id`.
CHATGPT_ACCOUNT = "acct-mock-workspace"


# Each agent's npm package.
PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli"}


def installed_version(package):
    with open(os.path.join(HERE, "node_modules", *package.split("/"), "package.json")) as f:
        return json.load(f)["version"]


def _clean_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "CLAUDE_", "CODEX_", "GEMINI_", "GOOGLE_",
                                "TRIMGATE_"))}
    env.update({"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                "XDG_CACHE_HOME": os.path.join(home, ".cache"), "NO_COLOR": "1"})
    return env


def run_claude(gateway_url, model, prompt, headers=None, oauth_token=None, timeout=120, wrap=None,
               work=None):
    """`claude -p PROMPT --output-format json` in `work` (a fresh directory by default);
    returns (exit code, parsed result or None, stderr). With `wrap` (a `trimgate wrap …`
    argv), the agent is started by it, which sets its gateway variables."""
    home = tempfile.mkdtemp(prefix="trimgate-claude-home-")
    env = _clean_env(home)
    env.update({
        "ANTHROPIC_BASE_URL": gateway_url,
        "ANTHROPIC_MODEL": model,
        # Side calls (titles, summaries) go to the same route.
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
        "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
        "CLAUDE_CODE_SUBAGENT_MODEL": model,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    })
    if oauth_token:
        # A subscription login: Claude Code sends it as a bearer token with its OAuth beta.
        env["CLAUDE_CODE_OAUTH_TOKEN"] = oauth_token
    else:
        env["ANTHROPIC_API_KEY"] = PLACEHOLDER_KEY
    if headers:
        env["ANTHROPIC_CUSTOM_HEADERS"] = "\n".join(f"{k}: {v}" for k, v in headers.items())
    work = work or tempfile.mkdtemp(prefix="trimgate-claude-work-")
    argv = [os.path.join(BIN_DIR, "claude"), "-p", prompt, "--output-format", "json",
            "--allowedTools", "Bash", "--max-turns", "4"]
    if wrap:
        argv = [*wrap, argv[0], "--", *argv[1:]]
    out = subprocess.run(
        argv,
        capture_output=True, text=True, env=env, cwd=work, timeout=timeout, stdin=subprocess.DEVNULL)
    result = None
    for line in reversed(out.stdout.strip().splitlines()):
        try:
            result = json.loads(line)
            break
        except ValueError:
            continue
    return out.returncode, result, out.stderr + out.stdout[-2000:]


def _chatgpt_login(codex_home, access_token, account_id):
    """What `codex login` leaves after signing in with ChatGPT: tokens in auth.json (the
    id token is only read for its claims, so an unsigned one stands in)."""
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"exp": now + 86400, "iat": now, "email": "dev@example.com",
              "https://api.openai.com/auth": {"chatgpt_account_id": account_id, "chatgpt_plan_type": "plus"}}
    id_token = part({"alg": "none", "typ": "JWT"}) + "." + part(claims) + ".c2ln"
    with open(os.path.join(codex_home, "auth.json"), "w") as f:
        json.dump({"auth_mode": "chatgpt", "OPENAI_API_KEY": None,
                   "tokens": {"id_token": id_token, "access_token": access_token,
                              "refresh_token": "rt-unused", "account_id": account_id},
                   "last_refresh": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(now))}, f)


def run_codex(gateway_url, model, prompt, headers=None, chatgpt_token=None, work=None, timeout=120,
              wrap=None):
    """`codex exec --json PROMPT` with a custom Responses provider; returns (exit code,
    the events, stderr). With `chatgpt_token`, Codex is signed in with ChatGPT and the
    provider entry asks for that login (`requires_openai_auth`). With `wrap` (a `trimgate
    wrap …` argv), the agent is started by it and its key is the OPENAI_API_KEY wrap sets."""
    home = tempfile.mkdtemp(prefix="trimgate-codex-home-")
    codex_home = os.path.join(home, ".codex")
    os.makedirs(codex_home)
    if chatgpt_token:
        _chatgpt_login(codex_home, chatgpt_token, CHATGPT_ACCOUNT)
        auth = "requires_openai_auth = true"
    elif wrap:
        auth = 'env_key = "OPENAI_API_KEY"'
    else:
        auth = 'env_key = "TRIMGATE_AGENT_KEY"'

    header_lines = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in (headers or {}).items())
    with open(os.path.join(codex_home, "config.toml"), "w") as f:
        f.write(f"""
model = {json.dumps(model)}
model_provider = "trimgate"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.trimgate]
name = "Trimgate"
base_url = "{gateway_url}/v1"
{auth}
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
http_headers = {{ {header_lines} }}
""")
    env = _clean_env(home)
    env.update({"CODEX_HOME": codex_home, "TRIMGATE_AGENT_KEY": PLACEHOLDER_KEY})
    work = work or tempfile.mkdtemp(prefix="trimgate-codex-work-")
    argv = [os.path.join(BIN_DIR, "codex"), "exec", "--json", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", prompt]
    if wrap:
        argv = [*wrap, argv[0], "--", *argv[1:]]
    out = subprocess.run(
        argv,
        capture_output=True, text=True, env=env, cwd=work, timeout=timeout, stdin=subprocess.DEVNULL)
    events = []
    for line in out.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return out.returncode, events, out.stderr + out.stdout[-2000:]


def codex_messages(events):
    """The agent's messages to the user, in order."""
    return [e["item"]["text"] for e in events
            if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "agent_message"]


# Gemini CLI's user settings for a headless run that needs nothing but the gateway: the API
# key from the environment (with GOOGLE_GEMINI_BASE_URL set and no type chosen, the CLI
# picks a "gateway" auth type that -p refuses), no trusted-folder check (-p exits 55 in
# an untrusted folder), no usage statistics (they resolve play.googleapis.com and add an
# installation id header to every request), no telemetry, update checks or IDE, and one
# attempt per request (it retries a 429 ten times with backoff, minutes in all, and a
# stream without a finish reason four times).
GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False, "maxAttempts": 1},
    "ide": {"enabled": False},
}
# GEMINI_CLI_CUSTOM_HEADERS is `name: value, name: value`, split at a comma followed by a
# `name:`; a value with such a comma would be cut in two.
_HEADER_SPLIT = re.compile(r",(?=\s*[^,:]+:)")


def gemini_custom_headers(headers):
    for name, value in headers.items():
        if _HEADER_SPLIT.search(value):
            raise ValueError(f"{name}: {value!r} would be split by GEMINI_CLI_CUSTOM_HEADERS")
    return ", ".join(f"{k}: {v}" for k, v in headers.items())


def run_gemini(gateway_url, model, prompt, headers=None, work=None, timeout=120, wrap=None):
    """`gemini -p PROMPT --output-format json --approval-mode yolo -m MODEL` with the Gemini
    API at the gateway (the CLI adds `/v1beta` itself); returns (exit code, parsed result or
    None, stderr). The result is `{"response", "stats"}`, with `error` when the turn failed:
    a stream that ends without a finish reason still exits 0 and says so only there. With
    `wrap` (a `trimgate wrap …` argv), the agent is started by it, which sets its gateway
    variables."""
    home = tempfile.mkdtemp(prefix="trimgate-gemini-home-")
    os.makedirs(os.path.join(home, ".gemini"))
    os.makedirs(os.path.join(home, "tmp"))
    with open(os.path.join(home, ".gemini", "settings.json"), "w") as f:
        json.dump(GEMINI_SETTINGS, f)
    env = _clean_env(home)
    env.update({
        "GOOGLE_GEMINI_BASE_URL": gateway_url,
        "GEMINI_API_KEY": PLACEHOLDER_KEY,
        # One process: the CLI otherwise starts itself again with a bigger heap (0.7 s).
        "GEMINI_CLI_NO_RELAUNCH": "true",
        # Its error reports (gemini-client-error-*.json) go to the scratch home.
        "TMPDIR": os.path.join(home, "tmp"),
    })
    if headers:
        env["GEMINI_CLI_CUSTOM_HEADERS"] = gemini_custom_headers(headers)
    work = work or tempfile.mkdtemp(prefix="trimgate-gemini-work-")
    argv = [os.path.join(BIN_DIR, "gemini"), "-p", prompt, "--output-format", "json",
            "--approval-mode", "yolo", "-m", model]
    if wrap:
        argv = [*wrap, argv[0], "--", *argv[1:]]
    out = subprocess.run(
        argv,
        capture_output=True, text=True, env=env, cwd=work, timeout=timeout, stdin=subprocess.DEVNULL)
    result = _gemini_result(out.stdout) or _gemini_result(out.stderr)
    return out.returncode, result, out.stderr[-4000:] + out.stdout[-2000:]


def _gemini_result(text):
    """The JSON object Gemini CLI prints, indented, on a line of its own: on stdout, or on
    stderr (after its log lines) when the run failed."""
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"^\{$", text, re.MULTILINE)]
    for start in reversed(starts):
        try:
            result, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(result, dict) and "session_id" in result:
            return result
    return None


# What the mock is told, so each agent's shell tool is called with a command whose output
# the final answer must quote.
SHELL_TOOL = {"claude": "Bash", "codex": "exec_command", "gemini": "run_shell_command"}


def shell_arguments(agent, command, description="Print a marker"):
    return {"claude": {"command": command, "description": description},
            "codex": {"cmd": command},
            # One key: GEMINI_CLI_CUSTOM_HEADERS cannot carry a JSON object's commas.
            "gemini": {"command": command}}[agent]


def shell_call_headers(agent, marker):
    arguments = shell_arguments(agent, f"echo {marker}")
    return {"x-mock-tool": SHELL_TOOL[agent], "x-mock-tool-arguments": json.dumps(arguments)}


def apply_patch_headers(path, line):
    """The mock calls Codex's freeform `apply_patch` tool with a patch that adds a file."""
    patch = f"*** Begin Patch\n*** Add File: {path}\n+{line}\n*** End Patch\n"
    return {"x-mock-tool": "apply_patch", "x-mock-tool-arguments": json.dumps({"input": patch})}


def plain_headers(reply):
    return {"x-mock-tool": "none", "x-mock-reply": reply}


# A 1×1 PNG, base64: an image Gemini CLI inlines when the prompt names it (`@pixel.png`).
PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def work_dir_with_pixel():
    """A scratch working directory holding `pixel.png`."""
    work = tempfile.mkdtemp(prefix="trimgate-gemini-work-")
    with open(os.path.join(work, "pixel.png"), "wb") as f:
        f.write(base64.b64decode(PIXEL_PNG))
    return work
