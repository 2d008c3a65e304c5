/**
 * The Guard page's and the request detail's reading of what the secrets guard reports:
 * the ledger's `kind:count` lists, today's secrets by kind as bars, and the words for
 * modes, rules and hooks. Kinds and counts only: a secret's value never reaches the
 * window. Pure, so it can be tested.
 */
import type { GuardHook, GuardMode, GuardRule } from './api';
import type { Bar } from './chart';

export interface KindCount {
  kind: string;
  count: number;
}

/** Largest count first, then by name. */
function ordered(list: KindCount[]): KindCount[] {
  return list.sort((a, b) => b.count - a.count || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
}

/**
 * A request's `secrets` column (`github_token:1,env_secret:2`) as counts by kind, largest
 * first. A kind listed twice is summed; an entry that is not `name:count` with a positive
 * count is skipped, as the gateway skips it.
 */
export function parseSecrets(column: string | null | undefined): KindCount[] {
  const byKind = new Map<string, number>();
  for (const entry of (column ?? '').split(',')) {
    const m = /^\s*([a-z0-9_]+)\s*:\s*(\d+)\s*$/.exec(entry);
    if (!m || Number(m[2]) <= 0) continue;
    byKind.set(m[1], (byKind.get(m[1]) ?? 0) + Number(m[2]));
  }
  return ordered([...byKind].map(([kind, count]) => ({ kind, count })));
}

/** Counts by kind as the admin API gives them (`{"github_token": 3}`), largest first. */
export function kindCounts(byKind: Record<string, number> | null | undefined): KindCount[] {
  return ordered(
    Object.entries(byKind ?? {})
      .filter(([, n]) => Number.isFinite(n) && n > 0)
      .map(([kind, count]) => ({ kind, count })),
  );
}

/** "github_token ×1 · env_secret ×2"; empty when there are none. */
export function secretsText(list: readonly KindCount[]): string {
  return list.map((k) => `${k.kind} ×${k.count}`).join(' · ');
}

/** Today's secrets by kind as the Overview's bar lists draw them, largest first. */
export function kindBars(byKind: Record<string, number> | null | undefined): Bar[] {
  const list = kindCounts(byKind);
  const max = Math.max(0, ...list.map((k) => k.count));
  return list.map((k) => ({ label: k.kind, value: k.count, fraction: max > 0 ? k.count / max : 0, row: null }));
}

/** What each mode does, in the words the page uses. */
export const MODE_TEXT: Readonly<Record<GuardMode, { label: string; help: string }>> = {
  redact: {
    label: 'Redact',
    help: 'Each secret is replaced by a placeholder before the provider sees it, and put back in the answer.',
  },
  block: {
    label: 'Block',
    help: 'A request with a secret is refused, naming the kind of secret and where it was.',
  },
  off: {
    label: 'Off',
    help: 'Requests go to the provider as the agent sent them, secrets included.',
  },
};

/** What a rule matches: "claude-* on anthropic", "any model on anthropic", "claude-*". */
export function ruleScope(rule: Pick<GuardRule, 'match' | 'provider'>): string {
  const model = rule.match ?? 'any model';
  return rule.provider ? `${model} on ${rule.provider}` : model;
}

/** When a hook is called: before the provider, on the answer, or both. */
export function hookStages(h: Pick<GuardHook, 'pre' | 'post'>): string {
  if (h.pre && h.post) return 'request and answer';
  if (h.pre) return 'request';
  if (h.post) return 'answer';
  return 'never';
}

/** Which requests meet a hook: every one, or those of the rules that name it. */
export function hookReach(h: Pick<GuardHook, 'name' | 'every'>, rules: readonly Pick<GuardRule, 'match' | 'provider' | 'hooks'>[]): string {
  if (h.every) return 'every request';
  const by = rules.filter((r) => r.hooks.includes(h.name)).map(ruleScope);
  return by.length ? by.join(', ') : 'no request';
}

/** The allow-list by its size only (its entries never reach the window). */
export function allowedText(n: number): string {
  if (n <= 0) return 'Nothing is allowed through: every secret found is handled.';
  return n === 1
    ? '1 value or pattern is allowed through as it is.'
    : `${n.toLocaleString('en-US')} values and patterns are allowed through as they are.`;
}
