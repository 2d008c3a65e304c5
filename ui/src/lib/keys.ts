/**
 * The Keys page's logic, pure so it can be tested: how far a key is into its budget, when
 * it expires, the order keys are listed in, and the form that makes one (checked here, then
 * turned into a `POST /admin/api/keys` body of only the fields filled).
 */
import { GUARD_MODES, type GuardMode, type KeyOptimize, type NewVirtualKey, type VirtualKey } from './api';
import { formatDuration, formatUsd, parseList } from './format';

// ---------------------------------------------------------------- budgets

/** Past this share of a budget its bar turns to the warning colour; at 1 to the error colour. */
export const BUDGET_WARN_SHARE = 0.8;

/** `none`: no budget; `ok`; `warn`: past 80 %; `over`: the budget is spent. */
export type BudgetLevel = 'none' | 'ok' | 'warn' | 'over';

export interface BudgetUse {
  level: BudgetLevel;
  /** Spent over budget, unclamped (1.3 when 30 % over); null without a budget. */
  share: number | null;
  /** The bar's width in [0, 1]. */
  fill: number;
}

/** How far `spent` is into `budget` (US dollars); a missing spend counts as nothing spent. */
export function budgetUse(spent: number | null | undefined, budget: number | null | undefined): BudgetUse {
  if (budget == null || !Number.isFinite(budget) || budget <= 0) return { level: 'none', share: null, fill: 0 };
  const used = spent != null && Number.isFinite(spent) ? Math.max(0, spent) : 0;
  const share = used / budget;
  const level: BudgetLevel = share >= 1 ? 'over' : share > BUDGET_WARN_SHARE ? 'warn' : 'ok';
  return { level, share, fill: Math.min(1, share) };
}

/** The bar's colour class (the stylesheet's `good`, `warn`, `bad`), or none without a budget. */
export function budgetClass(level: BudgetLevel): '' | 'good' | 'warn' | 'bad' {
  return level === 'over' ? 'bad' : level === 'warn' ? 'warn' : level === 'ok' ? 'good' : '';
}

/** "$1.20 of $5.00"; "$0.30 spent · no budget" without one. */
export function budgetText(spent: number | null | undefined, budget: number | null | undefined): string {
  const used = formatUsd(spent ?? 0);
  return budget == null ? `${used} spent · no budget` : `${used} of ${formatUsd(budget)}`;
}

// ---------------------------------------------------------------- state, expiry, order

/** `revoked` wins over `expired`: a revoked key stays refused whatever its expiry. */
export type KeyState = 'active' | 'expired' | 'revoked';

export function keyState(k: Pick<VirtualKey, 'revoked_ms' | 'expires_ms'>, now: number = Date.now()): KeyState {
  if (k.revoked_ms != null) return 'revoked';
  if (k.expires_ms != null && k.expires_ms <= now) return 'expired';
  return 'active';
}

/** "never", "expired", or how long is left: "in 29d 23h", "in 5h 3m", "in 42s". */
export function expiryText(expiresMs: number | null | undefined, now: number = Date.now()): string {
  if (expiresMs == null) return 'never';
  if (expiresMs <= now) return 'expired';
  return `in ${formatDuration(Math.ceil((expiresMs - now) / 1000))}`;
}

const STATE_ORDER: Record<KeyState, number> = { active: 0, expired: 1, revoked: 2 };

/** Keys in force first, then expired ones, then revoked ones; by name within each. */
export function sortKeys<K extends Pick<VirtualKey, 'name' | 'revoked_ms' | 'expires_ms'>>(keys: readonly K[], now: number = Date.now()): K[] {
  return [...keys].sort(
    (a, b) => STATE_ORDER[keyState(a, now)] - STATE_ORDER[keyState(b, now)] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

/** A list a key is limited to, or "any" when it is not. */
export function scopeText(list: readonly string[] | null | undefined): string {
  return list && list.length > 0 ? list.join(', ') : 'any';
}

/** The key's optimizer overrides as `field=value` words (`squeeze` / `no squeeze` for the switch). */
export function optimizeWords(o: KeyOptimize | null | undefined): string[] {
  if (!o) return [];
  const out: string[] = [];
  if (o.tool_output) out.push(`tool_output=${o.tool_output}`);
  if (o.terse) out.push(`terse=${o.terse}`);
  if (o.prune) out.push(`prune=${o.prune}`);
  if (typeof o.squeeze === 'boolean') out.push(o.squeeze ? 'squeeze' : 'no squeeze');
  return out;
}

/** A key's guard mode as the table says it: its own, or the config's. */
export function guardText(mode: GuardMode | null | undefined): string {
  return mode ?? 'as the config says';
}

/** "60 rpm · 100k tpm", one of them, or "no limits". */
export function rateText(rpm: number | null | undefined, tpm: number | null | undefined): string {
  const parts: string[] = [];
  if (rpm != null) parts.push(`${rpm.toLocaleString('en-US')} rpm`);
  if (tpm != null) parts.push(`${tpm.toLocaleString('en-US')} tpm`);
  return parts.length ? parts.join(' · ') : 'no limits';
}

// ---------------------------------------------------------------- the form

/** The create form as typed: every field a string, blank when not filled. */
export interface KeyForm {
  name: string;
  models: string;
  providers: string;
  rpm: string;
  tpm: string;
  budgetDay: string;
  budgetMonth: string;
  expires: string;
  /** The guard's mode for its requests; blank: the config's. */
  guard: '' | GuardMode;
}

export type KeyField = keyof KeyForm;

export function emptyKeyForm(): KeyForm {
  return { name: '', models: '', providers: '', rpm: '', tpm: '', budgetDay: '', budgetMonth: '', expires: '', guard: '' };
}

/** As the gateway checks it: 1 to 64 letters, digits, `-`, `_` or `.`. */
export const KEY_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** One or more `<number><unit>` parts (`30d`, `12h`, `1w`, `1h 30m`), as the gateway reads `expires`. */
const EXPIRES = /^(\d+\s*(?:w|weeks?|d|days?|h|hrs?|hours?|m|mins?|minutes?)\s*)+$/;

/** A whole number of at least 1, or null. */
function parseCount(text: string): number | null {
  return /^\d+$/.test(text) && Number(text) >= 1 ? Number(text) : null;
}

/** Dollars (`5`, `0.50`, `$12`), more than zero, or null. */
function parseUsd(text: string): number | null {
  const t = text.replace(/^\$/, '').trim();
  if (!/^(\d+(\.\d*)?|\.\d+)$/.test(t)) return null;
  const n = Number(t);
  return n > 0 ? n : null;
}

/** What is wrong with the form, by field; empty when it can be sent. */
export function checkKeyForm(f: KeyForm): Partial<Record<KeyField, string>> {
  const errs: Partial<Record<KeyField, string>> = {};
  const name = f.name.trim();
  if (!name) errs.name = 'Give the key a name, e.g. ci-bot or alice.';
  else if (!KEY_NAME.test(name)) errs.name = 'Use 1 to 64 letters, digits, -, _ or .';
  for (const field of ['rpm', 'tpm'] as const) {
    if (f[field].trim() && parseCount(f[field].trim()) === null) errs[field] = 'A whole number, at least 1.';
  }
  for (const field of ['budgetDay', 'budgetMonth'] as const) {
    if (f[field].trim() && parseUsd(f[field].trim()) === null) errs[field] = 'US dollars, more than 0, e.g. 5 or 0.50.';
  }
  const expires = f.expires.trim();
  if (expires && (!EXPIRES.test(expires) || !/[1-9]/.test(expires))) errs.expires = 'A duration such as 30d, 12h or 1w; blank: never.';
  if (f.guard && !GUARD_MODES.includes(f.guard)) errs.guard = 'Redact, block or off; blank: as the config says.';
  return errs;
}

/** The `POST /admin/api/keys` body: the name and only the fields filled (call `checkKeyForm` first). */
export function newKeyBody(f: KeyForm): NewVirtualKey {
  const body: NewVirtualKey = { name: f.name.trim() };
  const models = parseList(f.models);
  if (models.length) body.models = models;
  const providers = parseList(f.providers);
  if (providers.length) body.providers = providers;
  const rpm = parseCount(f.rpm.trim());
  if (rpm !== null) body.rpm = rpm;
  const tpm = parseCount(f.tpm.trim());
  if (tpm !== null) body.tpm = tpm;
  const day = parseUsd(f.budgetDay.trim());
  if (day !== null) body.budget_day_usd = day;
  const month = parseUsd(f.budgetMonth.trim());
  if (month !== null) body.budget_month_usd = month;
  const expires = f.expires.trim();
  if (expires) body.expires = expires;
  if (f.guard) body.guard = f.guard;
  return body;
}
