/**
 * Claude Code's model slots — opus, sonnet, haiku, and the model its subagents use —
 * mapped to any configured provider's model by routes. Pure, so tests can check what the
 * preset writes.
 *
 * Claude Code asks for a slot's model by a Claude name (`claude-opus-4-5-20251101`,
 * `claude-haiku-4-5-20251001`), so each of the three is a glob route over its family.
 * Subagents ask for what `CLAUDE_CODE_SUBAGENT_MODEL` names, so that slot is the route of
 * one stable name, `claude-subagent`. Applying writes them with `PATCH /admin/api/routes`
 * (`slotPatch`): every earlier slot route is replaced, every other route kept.
 */
import type { Provider, Route } from './api';
import type { SetupLine } from './agents';

export type SlotId = 'opus' | 'sonnet' | 'haiku' | 'subagent';

export interface Slot {
  id: SlotId;
  /** "Opus"; the picker is labelled "Opus model". */
  label: string;
  /** The route's `match`. */
  match: string;
  /** The Claude Code env var that names this slot's model. */
  env: string;
  help: string;
}

/** The name Claude Code's subagents ask for, with `CLAUDE_CODE_SUBAGENT_MODEL` set to it. */
export const SUBAGENT_MODEL = 'claude-subagent';

export const CLAUDE_SLOTS: readonly Slot[] = [
  { id: 'opus', label: 'Opus', match: 'claude-opus-*', env: 'ANTHROPIC_DEFAULT_OPUS_MODEL', help: 'Hard problems, and planning with opusplan.' },
  { id: 'sonnet', label: 'Sonnet', match: 'claude-sonnet-*', env: 'ANTHROPIC_DEFAULT_SONNET_MODEL', help: 'Everyday coding.' },
  { id: 'haiku', label: 'Haiku', match: 'claude-haiku-*', env: 'ANTHROPIC_DEFAULT_HAIKU_MODEL', help: 'Quick side calls: titles, summaries, background work.' },
  { id: 'subagent', label: 'Subagent', match: SUBAGENT_MODEL, env: 'CLAUDE_CODE_SUBAGENT_MODEL', help: 'The tasks Claude Code hands to subagents.' },
];

/** Where a slot goes: a provider, and its model (none: Claude's own name is passed on as it is). */
export interface SlotTarget {
  provider: string;
  model?: string;
}

/** Each mapped slot's target; a slot left out goes where Claude names go without a route. */
export type SlotChoices = Partial<Record<SlotId, SlotTarget>>;

/** `provider/model` (or `provider`), what a picker holds: a provider's name has no `/`. */
export function targetKey(t: SlotTarget): string {
  return t.model ? `${t.provider}/${t.model}` : t.provider;
}

export function parseTargetKey(key: string): SlotTarget | null {
  if (!key) return null;
  const i = key.indexOf('/');
  if (i < 0) return { provider: key };
  if (i === 0 || i === key.length - 1) return null;
  return { provider: key.slice(0, i), model: key.slice(i + 1) };
}

export function targetLabel(t: SlotTarget): string {
  return t.model ? `${t.provider} / ${t.model}` : `${t.provider} / Claude's own name`;
}

/** What every picker offers: each configured provider's listed models, in the API's order. */
export function slotTargets(providers: readonly Provider[]): SlotTarget[] {
  return providers.flatMap((p) => p.models.map((model) => ({ provider: p.name, model })));
}

/** The slots as the routes map them now (the first route of a slot's `match` is the one in force). */
export function slotsFromRoutes(routes: readonly Route[]): SlotChoices {
  const out: SlotChoices = {};
  for (const slot of CLAUDE_SLOTS) {
    const r = routes.find((x) => x.match === slot.match);
    if (r) out[slot.id] = r.model ? { provider: r.provider, model: r.model } : { provider: r.provider };
  }
  return out;
}

/** The body of `PATCH /admin/api/routes` that applies `choices`: every slot route out, the mapped ones in, in slot order. */
export function slotPatch(choices: SlotChoices): { replace: string[]; routes: Route[] } {
  const routes: Route[] = [];
  for (const slot of CLAUDE_SLOTS) {
    const t = choices[slot.id];
    if (!t) continue;
    routes.push(t.model ? { match: slot.match, provider: t.provider, model: t.model } : { match: slot.match, provider: t.provider });
  }
  return { replace: CLAUDE_SLOTS.map((s) => s.match), routes };
}

/**
 * The routes after `PATCH /admin/api/routes` (docs/admin-api.md): those whose `match` is in
 * `replace` or among the new ones' go; the new ones take the place of the first that went,
 * or go first; the rest stay in order.
 */
export function replaceRoutes(current: readonly Route[], replace: readonly string[], routes: readonly Route[]): Route[] {
  const goes = (r: Route) => replace.includes(r.match) || routes.some((n) => n.match === r.match);
  const first = current.findIndex(goes);
  const kept = current.filter((r) => !goes(r));
  const at = first < 0 ? 0 : first;
  return [...kept.slice(0, at), ...routes, ...kept.slice(at)];
}

/** The routes the preset leaves in the config: the user's own kept, the slots' replaced. */
export function applySlots(current: readonly Route[], choices: SlotChoices): Route[] {
  const { replace, routes } = slotPatch(choices);
  return replaceRoutes(current, replace, routes);
}

/**
 * The name `GET /v1/models` lists a renaming glob route under (docs/dialects.md, "Endpoints"): each `*`
 * replaced by the model, any character but ASCII letters, digits, `.`, `_` and `-` as `-`.
 */
export function standIn(pattern: string, model: string): string | null {
  if (/[?[{]/.test(pattern) || !pattern.includes('*')) return null;
  return pattern.split('*').join(model.replace(/[^A-Za-z0-9._-]/gu, '-'));
}

/** Lines to paste for the slots as mapped: the subagent's name, the slots' names, the picker. */
export function slotSetupLines(choices: SlotChoices): SetupLine[] {
  const lines: SetupLine[] = [];
  const sub = choices.subagent;
  if (sub) {
    lines.push({
      id: 'claude-subagent',
      label: 'Claude Code subagent model',
      text: `export CLAUDE_CODE_SUBAGENT_MODEL=${SUBAGENT_MODEL}`,
      note: `Subagents then ask for ${SUBAGENT_MODEL}, which goes to ${targetLabel(sub)}.`,
    });
  }
  const named = CLAUDE_SLOTS.flatMap((slot) => {
    const model = slot.id === 'subagent' ? undefined : choices[slot.id]?.model;
    const name = model ? standIn(slot.match, model) : null;
    return name ? [`${slot.env}=${name}`] : [];
  });
  if (named.length) {
    lines.push({
      id: 'claude-slot-names',
      label: 'Claude Code slot names',
      text: `export ${named.join(' ')}`,
      note: "Optional: Claude Code's own names for these slots already match the routes. With these, /status names the model each slot goes to.",
    });
  }
  if (CLAUDE_SLOTS.some((slot) => choices[slot.id])) {
    lines.push({
      id: 'claude-picker',
      label: 'Claude Code model picker',
      text: 'export CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1',
      note: 'Claude Code 2.1.126 or newer then lists the mapped names in /model. It asks GET /v1/models with its key: set ANTHROPIC_AUTH_TOKEN or ANTHROPIC_API_KEY (any value on loopback).',
    });
  }
  return lines;
}
