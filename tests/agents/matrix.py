"""README's agent × provider table, rendered from the outcomes of test_agents.py."""

ROUTING_TITLES = [
    ("native", "own dialect"),
    ("openai", "OpenAI"),
    ("anthropic", "Anthropic"),
    ("chat-only", "Chat-only server (Ollama, vLLM, OpenRouter)"),
    ("deepseek", "DeepSeek"),
]
START = "<!-- agent-matrix -->"
END = "<!-- /agent-matrix -->"


def _cell(results, agent, routing):
    plain = results.get(f"{agent}|{routing}|plain")
    tool = results.get(f"{agent}|{routing}|tool")
    if plain and tool:
        return "✅ streamed turn, shell tool round trip"
    if plain:
        return "⚠️ streamed turn only"
    return "❌"


def render(results, claude_version, codex_version):
    head = "| agent | " + " | ".join(t for _, t in ROUTING_TITLES) + " |"
    rule = "|---" * (len(ROUTING_TITLES) + 1) + "|"
    rows = [
        f"| Claude Code {claude_version} | " + " | ".join(_cell(results, "claude", r) for r, _ in ROUTING_TITLES) + " |",
        f"| Codex CLI {codex_version} | " + " | ".join(_cell(results, "codex", r) for r, _ in ROUTING_TITLES) + " |",
    ]
    login = "✅" if results.get("claude|subscription|plain") else "❌"
    note = (f"\nClaude Code signed in with a Claude subscription (its OAuth login forwarded to an "
            f"Anthropic provider with no key): {login}\n")
    return "\n".join([head, rule, *rows]) + "\n" + note


def section(readme):
    """The table between the markers in README, stripped."""
    start = readme.find(START)
    end = readme.find(END)
    if start < 0 or end < 0:
        return None
    return readme[start + len(START):end].strip()
