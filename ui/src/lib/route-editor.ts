/**
 * The routes editor's logic, pure so it can be tested: the draft (rows as the form edits
 * them) and the routes it stands for, the moves (drag and drop, keyboard), where a
 * problem's path (`routes[2].match`) shows, how an answer of the check reads, and the
 * debounced check that keeps only the latest answer.
 */

import type { Problem, Route, RouteAnswer } from './api';

/** A route as the form edits it: text fields, and an id that stays with the row when it moves. */
export interface DraftRow {
  id: number;
  match: string;
  provider: string;
  model: string;
  /** `provider/model` steps, separated by commas or spaces. */
  fallbacks: string;
  /** Empty: `[retry] max_attempts`. */
  maxAttempts: string;
}

/** The fields of a row a problem can be about, by the name its path uses. */
export type RouteField = 'match' | 'provider' | 'model' | 'fallbacks' | 'max_attempts';
const FIELDS: readonly RouteField[] = ['match', 'provider', 'model', 'fallbacks', 'max_attempts'];

let nextId = 1;

export function newRow(provider = ''): DraftRow {
  return { id: nextId++, match: '', provider, model: '', fallbacks: '', maxAttempts: '' };
}

export function rowsFrom(routes: Route[]): DraftRow[] {
  return routes.map((r) => ({
    id: nextId++,
    match: r.match,
    provider: r.provider,
    model: r.model ?? '',
    fallbacks: (r.fallbacks ?? []).join(', '),
    maxAttempts: r.max_attempts == null ? '' : String(r.max_attempts),
  }));
}

/** `"a/x, b/y c"` → `["a/x", "b/y", "c"]`. */
export function splitList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The routes the rows stand for, and the problems no JSON could carry to the gateway
 * (an attempt count that is not a whole number), with the paths the gateway would use.
 */
export function routesFrom(rows: DraftRow[]): { routes: Route[]; problems: Problem[] } {
  const problems: Problem[] = [];
  const routes = rows.map((row, i) => {
    const route: Route = { match: row.match.trim(), provider: row.provider };
    const model = row.model.trim();
    if (model) route.model = model;
    const fallbacks = splitList(row.fallbacks);
    if (fallbacks.length) route.fallbacks = fallbacks;
    const attempts = row.maxAttempts.trim();
    if (attempts) {
      if (/^\d+$/.test(attempts) && Number(attempts) <= 0xffff_ffff) route.max_attempts = Number(attempts);
      else problems.push({ path: `routes[${i}].max_attempts`, message: 'must be a whole number of attempts' });
    }
    return route;
  });
  return { routes, problems };
}

/**
 * A key that is the same for the same routes whatever order their fields came in (the
 * gateway's answers list them by name), for telling a draft from what is saved.
 */
export function routesKey(routes: Route[]): string {
  return JSON.stringify(routes.map((r) => [r.match, r.provider, r.model ?? null, r.fallbacks ?? [], r.max_attempts ?? null]));
}

/** The rows with the one at `from` put at `to` (both clamped); the same array when nothing moves. */
export function moveRow<T>(rows: T[], from: number, to: number): T[] {
  const target = Math.max(0, Math.min(rows.length - 1, to));
  if (from < 0 || from >= rows.length || from === target) return rows;
  const out = rows.slice();
  const [moved] = out.splice(from, 1);
  out.splice(target, 0, moved);
  return out;
}

/** Alt+ArrowUp / Alt+ArrowDown on a row: the step it moves by, else null. */
export function keyboardMove(e: { key: string; altKey: boolean; ctrlKey?: boolean; metaKey?: boolean; shiftKey?: boolean }): -1 | 1 | null {
  if (!e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return null;
  if (e.key === 'ArrowUp') return -1;
  if (e.key === 'ArrowDown') return 1;
  return null;
}

/** What the live region says after a move. */
export function moveAnnouncement(row: DraftRow, to: number, count: number): string {
  const name = row.match.trim() || 'the new route';
  return `Moved ${name} to position ${to + 1} of ${count}.`;
}

/** `routes[2].fallbacks[1]` → row 2, field `fallbacks`; a path elsewhere in the config → null. */
export function fieldOf(path: string): { row: number; field: RouteField | null } | null {
  const m = /^routes\[(\d+)\](?:\.([a-z_]+))?/.exec(path);
  if (!m) return null;
  const field = FIELDS.find((f) => f === m[2]) ?? null;
  return { row: Number(m[1]), field };
}

/** The message for one field of one row (several joined), if any. */
export function problemAt(problems: Problem[], row: number, field: RouteField): string | undefined {
  const messages = problems.filter((p) => {
    const at = fieldOf(p.path);
    return at !== null && at.row === row && at.field === field;
  });
  return messages.length ? messages.map((p) => p.message).join('; ') : undefined;
}

/** How the summary names a problem's place: "Route 2, match" (or the config path itself). */
export function problemPlace(path: string): string {
  const at = fieldOf(path);
  if (!at) return path || 'the config';
  return at.field ? `Route ${at.row + 1}, ${at.field.replace('_', ' ')}` : `Route ${at.row + 1}`;
}

/** A line saying where a request for the model would go, as a person reads it. */
export function describeAnswer(a: RouteAnswer): string {
  if (a.via === 'none' || !a.provider) {
    return a.error ? `No route: a client gets ${a.error.status} — ${a.error.message}` : 'No route serves this model.';
  }
  const sent = a.upstream_model && a.upstream_model !== a.model ? ` as ${a.upstream_model}` : '';
  const where = `${a.provider}${sent}`;
  switch (a.via) {
    case 'route':
      return `Route ${(a.route ?? 0) + 1} (${a.pattern}) → ${where}`;
    case 'provider_family':
      return `No route of the list matches: ${a.provider}'s own models (${a.pattern}) → ${where}`;
    case 'provider_model':
      return `The provider/model name → ${where}`;
    case 'default':
      return `No route matches: the default provider → ${where}`;
  }
}

/** The fallbacks as a line ("then b as y, c (cooling down)"), or "" for none. */
export function describeFallbacks(a: RouteAnswer): string {
  const steps = a.fallbacks ?? [];
  if (!steps.length) return '';
  const parts = steps.map((s) => `${s.provider} as ${s.model}${s.state === 'cooling_down' ? ' (cooling down)' : ''}`);
  return `If it fails before answering: ${parts.join(', then ')}.`;
}

/**
 * Calls `run` once input has been still for `ms`, and hands `apply` only the answer to the
 * latest call: an older answer that arrives late is dropped, so the page never shows an
 * answer to a draft it no longer holds.
 */
export function latestDebounced<A, R>(
  run: (arg: A) => Promise<R>,
  apply: (result: R | Error, arg: A) => void,
  ms: number,
  timers: { set: (f: () => void, ms: number) => unknown; clear: (t: unknown) => void } = {
    set: (f, t) => setTimeout(f, t),
    clear: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
  },
): { schedule(arg: A): void; cancel(): void; pending(): boolean } {
  let timer: unknown = null;
  let seq = 0;
  let inFlight = 0;
  return {
    schedule(arg: A) {
      if (timer !== null) timers.clear(timer);
      const mine = ++seq;
      timer = timers.set(() => {
        timer = null;
        inFlight++;
        run(arg).then(
          (r) => {
            inFlight--;
            if (mine === seq) apply(r, arg);
          },
          (e: unknown) => {
            inFlight--;
            if (mine === seq) apply(e instanceof Error ? e : new Error(String(e)), arg);
          },
        );
      }, ms);
    },
    cancel() {
      if (timer !== null) timers.clear(timer);
      timer = null;
      seq++;
    },
    pending() {
      return timer !== null || inFlight > 0;
    },
  };
}
