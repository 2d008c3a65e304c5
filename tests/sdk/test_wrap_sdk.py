"""`trimgate wrap`: an agent run through it reaches the gateway by the variables its SDK
reads. The agents here are stand-ins named `claude`, `codex` and `gemini` that call the
official `anthropic`, `openai` and `google-genai` packages with no settings of their own, as
the real agents do."""

import os
import stat
import subprocess
import sys
import textwrap
import time

from conftest import BIN, check_row

AGENTS = {
    "claude": """
        import sys, anthropic
        m = anthropic.Anthropic(max_retries=0).messages.create(
            model="claude-sonnet-5-5", max_tokens=32, messages=[{"role": "user", "content": sys.argv[1]}])
        print(m.content[0].text)
    """,
    "codex": """
        import sys, openai
        r = openai.OpenAI(max_retries=0).chat.completions.create(
            model="gpt-5", messages=[{"role": "user", "content": sys.argv[1]}])
        print(r.choices[0].message.content)
    """,
    # google-genai reads GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY; a client no name holds
    # closes its connections before the call.
    "gemini": """
        import sys
        from google import genai
        client = genai.Client()
        print(client.models.generate_content(model="gemini-2.5-pro", contents=sys.argv[1]).text)
    """,
}


def _install(tmp_path, name):
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(AGENTS[name]))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _run(tmp_path, gateway_url, *args):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "TRIMGATE_KEY"))}
    env["PATH"] = f"{tmp_path}:{env['PATH']}"
    return subprocess.run([BIN, "wrap", "--gateway", gateway_url, *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_agents_reach_the_gateway_through_their_own_variables(tmp_path, gateway_url, mock, ledger):
    started_ms = int(time.time() * 1000)
    for name in AGENTS:
        _install(tmp_path, name)
        out = _run(tmp_path, gateway_url, name, "--", f"hello from {name}")
        assert out.returncode == 0, out.stderr
        assert f"hello from {name}" in out.stdout  # the mock echoes the prompt
    sent = mock.requests()
    assert [r["path"] for r in sent] == ["/v1/messages", "/v1/chat/completions",
                                         "/v1beta/models/gemini-2.5-pro:generateContent"]
    # The agents send no request id of their own: their rows are the ones since the start.
    rows = ledger.rows_since(started_ms, len(AGENTS))
    assert [row["model_requested"] for row in rows] == ["claude-sonnet-5-5", "gpt-5", "gemini-2.5-pro"], rows
    for row in rows:
        check_row(row)


def test_exit_codes_pass_through_and_a_missing_gateway_is_explained(tmp_path, gateway_url):
    script = tmp_path / "agent"
    script.write_text("#!/bin/sh\nexit 7\n")
    script.chmod(0o755)
    assert _run(tmp_path, gateway_url, str(script)).returncode == 7
    out = _run(tmp_path, "http://127.0.0.1:9", "claude", "--", "hi")
    assert out.returncode == 1
    assert "no gateway answers at http://127.0.0.1:9" in out.stderr
