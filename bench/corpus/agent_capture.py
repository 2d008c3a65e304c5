#!/usr/bin/env python3
"""Prints a tool result exactly as a real coding-agent CLI sends it to its provider.

Usage: agent_capture.py codex|claude CLI DIR COMMAND

Starts a stand-in provider on 127.0.0.1 (an ephemeral port) that answers the CLI's first
request with one shell tool call running COMMAND in DIR, and its second with a short
final answer. The CLI runs the command itself, with its own tool, and wraps the output
the way it does for a real provider; the text of the tool result in its second request
is printed to stdout byte for byte (no newline added), and nothing else is. The CLI's
own home and config live in a temporary directory, so nothing of the user's is read.

- codex: OpenAI Responses. The tool is whatever the CLI offers (`exec_command` in
  current releases, `shell` in older ones), asked for without an output cap so the
  CLI's own truncation stays out of the way where a release lets it.
- claude: Anthropic Messages; the `Bash` tool.

Standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CALL_ID = "call_capture_1"
TOOL_USE_ID = "toolu_01Capture000000000000001"
# Asked of exec_command so that the CLI does not cut the output for the model.
NO_CAP_TOKENS = 1_000_000


def responses_events(item, n):
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    rid = f"resp_capture_{n}"
    return [
        ("response.created", {"type": "response.created", "response": {"id": rid}}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": {"id": rid, "usage": usage}}),
    ]


def messages_events(block, stop_reason, n):
    message = {"id": f"msg_capture_{n}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 1}}
    start = dict(block)
    delta = None
    if block["type"] == "tool_use":
        start["input"] = {}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start["text"] = ""
        delta = {"type": "text_delta", "text": block["text"]}
    return [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]


class Provider:
    """The stand-in provider's state: the command to ask for and what came back."""

    def __init__(self, agent, command, workdir):
        self.agent = agent
        self.command = command
        self.workdir = workdir
        self.result = None
        self.requests = 0
        self.lock = threading.Lock()

    def answer(self, body):
        """(SSE events, JSON reply) for one request body."""
        with self.lock:
            self.requests += 1
            n = self.requests
        if self.agent == "codex":
            return self.answer_responses(body, n)
        return self.answer_messages(body, n)

    def answer_responses(self, body, n):
        for item in body.get("input", []):
            if isinstance(item, dict) and item.get("type") == "function_call_output" and item.get("call_id") == CALL_ID:
                self.result = item["output"] if isinstance(item["output"], str) else json.dumps(item["output"])
                text = {"type": "message", "role": "assistant", "id": "msg_capture",
                        "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
                return responses_events(text, n)
        tools = [t.get("name") for t in body.get("tools", []) if isinstance(t, dict)]
        if "exec_command" in tools:
            name, args = "exec_command", {"cmd": self.command, "workdir": self.workdir, "max_output_tokens": NO_CAP_TOKENS}
        elif "shell" in tools:
            name, args = "shell", {"command": ["bash", "-lc", self.command], "workdir": self.workdir}
        elif "shell_command" in tools:
            name, args = "shell_command", {"command": self.command, "workdir": self.workdir}
        else:
            raise SystemExit(f"no shell tool offered: {tools}")
        call = {"type": "function_call", "id": "fc_capture", "call_id": CALL_ID, "name": name,
                "arguments": json.dumps(args)}
        return responses_events(call, n)

    def answer_messages(self, body, n):
        tools = [t.get("name") for t in body.get("tools", []) if isinstance(t, dict)]
        for message in body.get("messages", []):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") == TOOL_USE_ID:
                    inner = block.get("content")
                    if isinstance(inner, list):
                        inner = "\n".join(b.get("text", "") for b in inner if isinstance(b, dict))
                    self.result = inner
                    return messages_events({"type": "text", "text": "Done."}, "end_turn", n)
        if "Bash" not in tools:
            # A side request (a title, a summary): answer it plainly.
            return messages_events({"type": "text", "text": "Capture"}, "end_turn", n)
        use = {"type": "tool_use", "id": TOOL_USE_ID, "name": "Bash",
               "input": {"command": f"cd {self.workdir} && {self.command}", "description": "Run the command"}}
        return messages_events(use, "tool_use", n)


def serve(provider):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(404)
            self.end_headers()

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            try:
                body = json.loads(raw)
            except ValueError:
                self.send_response(400)
                self.end_headers()
                return
            events = provider.answer(body)
            if body.get("stream") is False and provider.agent == "claude":
                # A non-streaming Messages request: the final message as one object.
                message = events[0][1]["message"]
                block = events[1][1]["content_block"]
                delta = events[2][1]["delta"]
                if block["type"] == "tool_use":
                    block = dict(block, input=json.loads(delta["partial_json"]))
                else:
                    block = dict(block, text=delta["text"])
                data = json.dumps(dict(message, content=[block], stop_reason=events[4][1]["delta"]["stop_reason"])).encode()
                ctype = "application/json"
            else:
                data = b"".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n".encode() for name, ev in events)
                ctype = "text/event-stream"
            self.send_response(200)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_codex(cli, workdir, port, home):
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f"""model = "gpt-5"
model_provider = "capture"
tool_output_token_limit = {NO_CAP_TOKENS}

[model_providers.capture]
name = "capture"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "CAPTURE_API_KEY"
wire_api = "responses"
""")
    env = dict(os.environ, CODEX_HOME=home, CAPTURE_API_KEY="capture")
    argv = [cli, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "Run the command."]
    return subprocess.run(argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)


def run_claude(cli, workdir, port, home):
    env = dict(os.environ, HOME=home, CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"),
               ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}", ANTHROPIC_API_KEY="capture",
               DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1")
    argv = [cli, "-p", "Run the command.", "--allowedTools", "Bash", "--model", "claude-sonnet-4-5"]
    return subprocess.run(argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=600)


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("codex", "claude"):
        raise SystemExit(__doc__.split("\n\n")[1])
    agent, cli, workdir, command = sys.argv[1:]
    workdir = os.path.abspath(workdir)
    provider = Provider(agent, command, workdir)
    server = serve(provider)
    port = server.server_address[1]
    with tempfile.TemporaryDirectory(prefix="agent-capture-") as home:
        run = run_codex if agent == "codex" else run_claude
        done = run(os.path.abspath(cli), workdir, port, home)
    server.shutdown()
    if provider.result is None:
        sys.stderr.write(done.stdout.decode(errors="replace")[-2000:] + done.stderr.decode(errors="replace")[-2000:])
        raise SystemExit(f"{agent} sent no tool result (exit {done.returncode})")
    sys.stdout.write(provider.result)


if __name__ == "__main__":
    main()
