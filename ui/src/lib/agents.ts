/** The lines a user pastes to point an agent at the gateway; pure so tests can check them. */
import type { Provider, ProviderKind } from './api';
import { baseUrlFromListen } from './format';

export interface SetupLine {
  id: string;
  /** Who it is for; also the copy button's accessible name ("Copy Claude Code setup"). */
  label: string;
  text: string;
  note?: string;
}

/** Any key works on the loopback default: the gateway adds the provider's real key. */
export const PLACEHOLDER_KEY = 'sk-trimgate';

/** The header a client presents the gateway's local key in, apart from its own login. */
export const LOCAL_KEY_HEADER = 'x-trimgate-key';

/**
 * The lines for a gateway at `listen`. With a local key (`[server] local_key`), Claude Code
 * gets it in a header of its own (its login stays in `Authorization`), and clients whose
 * key would be a placeholder send it as their key instead.
 */
export function setupLines(listen: string, localKey: string | null = null): SetupLine[] {
  const base = baseUrlFromListen(listen);
  const key = localKey ?? PLACEHOLDER_KEY;
  const claudeHeader = localKey ? ` ANTHROPIC_CUSTOM_HEADERS='${LOCAL_KEY_HEADER}: ${localKey}'` : '';
  return [
    {
      id: 'claude',
      label: 'Claude Code setup',
      text: `export ANTHROPIC_BASE_URL=${base}${claudeHeader}`,
      note: localKey
        ? "Claude Code keeps its own login or key; the header carries this gateway's local key."
        : 'Claude Code keeps its own login or key; the gateway puts the provider key in.',
    },
    {
      id: 'openai',
      label: 'Codex CLI, OpenAI SDKs and aider setup',
      text: `export OPENAI_BASE_URL=${base}/v1 OPENAI_API_KEY=${key}`,
      note: localKey
        ? "The key is this gateway's local key: it lets the client in, and the gateway never forwards it."
        : 'The key is a placeholder: the client must send one, and the gateway never forwards it.',
    },
    {
      id: 'python',
      label: 'Python OpenAI SDK',
      text: `OpenAI(base_url="${base}/v1", api_key="${key}")`,
    },
    {
      id: 'anthropic-sdk',
      label: 'Anthropic SDKs',
      text: `Anthropic(base_url="${base}", api_key="${key}")`,
    },
  ];
}

/** `trimgate wrap` runs an agent with its base URL already pointed at the gateway. */
export const WRAP_LINES: readonly SetupLine[] = [
  { id: 'wrap-claude', label: 'Claude Code through trimgate wrap', text: 'trimgate wrap claude' },
  { id: 'wrap-codex', label: 'Codex CLI through trimgate wrap', text: 'trimgate wrap codex' },
  {
    id: 'wrap-aider',
    label: 'aider through trimgate wrap',
    text: 'trimgate wrap aider -- --model openai/gpt-5',
    note: 'Everything after -- goes to the agent as it is.',
  },
];

/** A model each kind of provider serves, for a first request when the provider lists none. */
const KIND_MODELS: Record<ProviderKind, string | null> = {
  openai: 'gpt-5-mini',
  anthropic: 'claude-sonnet-4-5',
  deepseek: 'deepseek-chat',
  gemini: 'gemini-2.5-flash',
  openai_compatible: null,
  // A cloud's model names are the account's own (a deployment, a Bedrock id, a Vertex id).
  azure_openai: null,
  bedrock: null,
  vertex: null,
};

/** The model name a first request to `p` uses: `provider/model`, which routes there whatever the routes say. */
export function firstModel(p: Pick<Provider, 'name' | 'kind' | 'models'>): string | null {
  const model = p.models[0] ?? KIND_MODELS[p.kind];
  return model ? `${p.name}/${model}` : null;
}

function shellQuoted(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * A first request through the gateway for each agent, carrying a model of the first
 * configured provider that has one: Claude Code and Codex CLI headless, and curl.
 * Empty when no provider has a model name to use.
 */
export function firstRequestLines(listen: string, localKey: string | null, providers: readonly Pick<Provider, 'name' | 'kind' | 'models'>[]): SetupLine[] {
  const target = providers.map((p) => ({ p, model: firstModel(p) })).find((t) => t.model !== null);
  if (!target?.model) return [];
  const base = baseUrlFromListen(listen);
  const key = localKey ?? PLACEHOLDER_KEY;
  const model = target.model;
  const claudeHeader = localKey ? ` ANTHROPIC_CUSTOM_HEADERS=${shellQuoted(`${LOCAL_KEY_HEADER}: ${localKey}`)}` : '';
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello.' }] });
  return [
    {
      id: 'first-claude',
      label: 'Claude Code, first request',
      text: `ANTHROPIC_BASE_URL=${base}${claudeHeader} ANTHROPIC_DEFAULT_HAIKU_MODEL=${model} claude -p --model ${model} 'Say hello.'`,
      note: `Served by ${target.p.name}, side calls included. To keep Claude's own model names, map them on the Routes or Agents page.`,
    },
    {
      id: 'first-codex',
      label: 'Codex CLI, first request',
      text: `OPENAI_BASE_URL=${base}/v1 OPENAI_API_KEY=${key} codex exec -m ${model} 'Say hello.'`,
    },
    {
      id: 'first-curl',
      label: 'curl, first request',
      text: `curl -s ${base}/v1/chat/completions -H 'content-type: application/json' -H 'authorization: Bearer ${key}' -d ${shellQuoted(body)}`,
    },
  ];
}
