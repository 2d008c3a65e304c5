"""README's agent × provider table, rendered from the outcomes of test_agents.py."""

ROUTING_TITLES = [
    ("openai", "OpenAI"),
    ("anthropic", "Anthropic"),
    ("chat-only", "Chat-only server (Ollama, vLLM, OpenRouter)"),
    ("deepseek", "DeepSeek"),
]
START = "<!-- agent-matrix -->"
END = "<!-- /agent-matrix -->"


AGENT_PATH = {"claude": "/v1/messages", "codex": "/v1/responses"}
DIALECT = {"/v1/messages": "Messages", "/v1/responses": "Responses", "/v1/chat/completions": "Chat"}


def _cell(results, routings, agent, routing):
    plain = results.get(f"{agent}|{routing}|plain")
    tool = results.get(f"{agent}|{routing}|tool")
    path = routings[agent][routing][1]
    how = "as sent" if path == AGENT_PATH[agent] else f"translated to {DIALECT[path]}"
    if plain and tool:
        return f"✅ {how}"
    if plain:
        return f"⚠️ {how}: streamed turn only, the tool round trip failed"
    return f"❌ {how}"


def render(results, routings, claude_version, codex_version):
    head = "| agent | " + " | ".join(t for _, t in ROUTING_TITLES) + " |"
    rule = "|---" * (len(ROUTING_TITLES) + 1) + "|"
    rows = [
        f"| Claude Code {claude_version} | " + " | ".join(_cell(results, routings, "claude", r) for r, _ in ROUTING_TITLES) + " |",
        f"| Codex CLI {codex_version} | " + " | ".join(_cell(results, routings, "codex", r) for r, _ in ROUTING_TITLES) + " |",
    ]
    login = "✅" if results.get("claude|subscription|plain") else "❌"
    chatgpt = "✅" if results.get("codex|subscription|plain") else "❌"
    patched = [t for r, t in ROUTING_TITLES if results.get(f"codex|{r}|apply_patch")]
    chains = ", ".join(
        f"{name} " + " / ".join("✅" if results.get(f"{agent}|chain|{fallback}") else "❌"
                                for fallback in ("as-sent", "translated"))
        for agent, name in (("claude", "Claude Code"), ("codex", "Codex CLI")))
    note = ("\n✅ means a streamed turn and a shell-tool round trip (the mock calls the agent's "
            "shell tool, the agent runs it, the final answer quotes its output) both passed.\n"
            f"Claude Code signed in with a Claude subscription (its OAuth login forwarded to an "
            f"Anthropic provider with no key): {login}\n"
            f"Codex CLI's freeform `apply_patch` tool edited a file through: {', '.join(patched) or 'none'}\n"
            f"Codex CLI signed in with ChatGPT (its login forwarded to ChatGPT's Codex backend "
            f"through a provider with `client_auth = \"forward\"`): {chatgpt}\n"
            f"The shell-tool round trip through a fallback chain whose first provider answers "
            f"529s and drops connections, the fallback speaking the agent's dialect / the other "
            f"one: {chains}\n")
    return "\n".join([head, rule, *rows]) + "\n" + note


def section(readme):
    """The table between the markers in README, stripped."""
    start = readme.find(START)
    end = readme.find(END)
    if start < 0 or end < 0:
        return None
    return readme[start + len(START):end].strip()
