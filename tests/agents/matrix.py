"""README's agent × provider table, rendered from the outcomes of test_agents.py."""

import re

AGENTS = [("claude", "Claude Code"), ("codex", "Codex CLI"), ("gemini", "Gemini CLI")]
ROUTING_TITLES = [
    ("openai", "OpenAI"),
    ("anthropic", "Anthropic"),
    ("chat-only", "Chat-only server (Ollama, vLLM, OpenRouter)"),
    ("deepseek", "DeepSeek"),
    ("gemini", "Gemini"),
    ("azure", "Azure OpenAI"),
    ("bedrock", "Amazon Bedrock"),
    ("vertex", "Vertex AI"),
]
START = "<!-- agent-matrix -->"
END = "<!-- /agent-matrix -->"


AGENT_DIALECT = {"claude": "Messages", "codex": "Responses", "gemini": "Gemini"}
DIALECT = {"/v1/messages": "Messages", "/v1/responses": "Responses", "/v1/chat/completions": "Chat"}
# A cloud's paths (the first match names it): the dialect the body is in, and the cloud's
# API where the column alone does not say it. Azure's classic paths name the deployment
# (`/openai/deployments/{d}/…`), its v1 ones (`/openai/v1/…`) put it in the body; Bedrock's
# name the model (`/model/{id}/invoke`, `/model/{id}/converse-stream`); Vertex's the
# project, location, publisher and model (`/v1/projects/{p}/locations/{l}/publishers/…`).
CLOUD_PATHS = [
    (re.compile(r"^/openai/(deployments/[^/]+|v1)/chat/completions$"), ("Chat", None)),
    (re.compile(r"^/openai(/v1)?/responses$"), ("Responses", None)),
    (re.compile(r"^/model/[^/]+/invoke(-with-response-stream)?$"), ("Messages", "InvokeModel")),
    # Converse is Bedrock's own wire: the gateway speaks Messages and converts at the edge.
    (re.compile(r"^/model/[^/]+/converse(-stream)?$"), ("Converse", None)),
    (re.compile(r"^/v1/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/[^/]+:(rawPredict|streamRawPredict)$"),
     ("Messages", "rawPredict")),
    (re.compile(r"^/v1/projects/[^/]+/locations/[^/]+/publishers/google/models/[^/]+:(generateContent|streamGenerateContent)$"),
     ("Gemini", None)),
]


def dialect(path):
    """(the dialect a provider path is in, the cloud API it names or None): Gemini's name the
    model (`/v1beta/models/…`), as do Bedrock's and Vertex's."""
    if path.startswith("/v1beta/"):
        return "Gemini", None
    for pattern, named in CLOUD_PATHS:
        if pattern.match(path):
            return named
    return DIALECT[path], None


def _cell(results, routings, agent, routing):
    plain = results.get(f"{agent}|{routing}|plain")
    tool = results.get(f"{agent}|{routing}|tool")
    to, api = dialect(routings[agent][routing][1])
    how = "as sent" if to == AGENT_DIALECT[agent] else f"translated to {to}"
    if api:
        how += f" ({api})"
    if plain and tool:
        return f"✅ {how}"
    if plain:
        return f"⚠️ {how}: streamed turn only, the tool round trip failed"
    return f"❌ {how}"


def _passed(results, agent, routing):
    both = results.get(f"{agent}|{routing}|plain") and results.get(f"{agent}|{routing}|tool")
    return "✅" if both else "❌"


def render(results, routings, versions):
    """`versions` maps each agent of AGENTS to the version that ran."""
    head = "| agent | " + " | ".join(t for _, t in ROUTING_TITLES) + " |"
    rule = "|---" * (len(ROUTING_TITLES) + 1) + "|"
    rows = [f"| {name} {versions[agent]} | "
            + " | ".join(_cell(results, routings, agent, r) for r, _ in ROUTING_TITLES) + " |"
            for agent, name in AGENTS]
    login = "✅" if results.get("claude|subscription|plain") else "❌"
    chatgpt = "✅" if results.get("codex|subscription|plain") else "❌"
    patched = [t for r, t in ROUTING_TITLES if results.get(f"codex|{r}|apply_patch")]
    chains = ", ".join(
        f"{name} " + " / ".join("✅" if results.get(f"{agent}|chain|{fallback}") else "❌"
                                for fallback in ("as-sent", "translated"))
        for agent, name in AGENTS)
    note = ("\n✅ means a streamed turn and a shell-tool round trip (the mock calls the agent's "
            "shell tool, the agent runs it, the final answer quotes its output) both passed.\n"
            f"Gemini CLI translated to OpenAI Responses (a provider that speaks nothing else): "
            f"{_passed(results, 'gemini', 'responses')}\n"
            f"Claude Code signed in with a Claude subscription (its OAuth login forwarded to an "
            f"Anthropic provider with no key): {login}\n"
            f"Codex CLI's freeform `apply_patch` tool edited a file through: {', '.join(patched) or 'none'}\n"
            f"Codex CLI signed in with ChatGPT (its login forwarded to ChatGPT's Codex backend "
            f"through a provider with `client_auth = \"forward\"`): {chatgpt}\n"
            f"The shell-tool round trip through a fallback chain whose first provider answers "
            f"529s and drops connections, the fallback speaking the agent's dialect / another "
            f"one: {chains}\n")
    return "\n".join([head, rule, *rows]) + "\n" + note


def section(readme):
    """The table between the markers in README, stripped."""
    start = readme.find(START)
    end = readme.find(END)
    if start < 0 or end < 0:
        return None
    return readme[start + len(START):end].strip()
