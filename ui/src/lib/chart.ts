/** Shaping the admin API's savings rows into what the charts and headline show; pure functions. */

import type { Totals } from './api';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export interface Series {
  /** Bucket starts, Unix seconds (uPlot's x unit). */
  xs: number[];
  /** Tokens the client asked to send (provider-reported input + what the passes removed). */
  asked: number[];
  /** Input tokens the provider was actually sent. */
  sent: number[];
  saved: number[];
  savedUsd: number[];
  requests: number[];
}

/**
 * One point per bucket from the bucket holding `sinceMs` to the one holding `nowMs`,
 * zeros where the ledger has no row, so a quiet hour shows as a gap in use rather than
 * being skipped. Buckets are Unix-epoch aligned (UTC), as the gateway groups them.
 * Rows outside the window are kept (the window grows to hold them).
 */
export function timeSeries(rows: Totals[], by: 'hour' | 'day', sinceMs: number, nowMs: number): Series {
  const step = by === 'hour' ? HOUR_MS : DAY_MS;
  const byStart = new Map<number, Totals>();
  for (const row of rows) {
    const start = Number(row.key);
    if (!Number.isFinite(start)) continue;
    const aligned = Math.floor(start / step) * step;
    const prev = byStart.get(aligned);
    byStart.set(aligned, prev ? addTotals(prev, row) : row);
  }
  let first = Math.floor(sinceMs / step) * step;
  let last = Math.floor(nowMs / step) * step;
  for (const start of byStart.keys()) {
    if (start < first) first = start;
    if (start > last) last = start;
  }
  const out: Series = { xs: [], asked: [], sent: [], saved: [], savedUsd: [], requests: [] };
  if (last < first) return out;
  for (let t = first; t <= last; t += step) {
    const row = byStart.get(t);
    const sent = row?.input_tokens ?? 0;
    const saved = row?.saved_tokens ?? 0;
    out.xs.push(t / 1000);
    out.sent.push(sent);
    out.saved.push(saved);
    out.asked.push(sent + saved);
    out.savedUsd.push(row?.saved_usd ?? 0);
    out.requests.push(row?.requests ?? 0);
  }
  return out;
}

/** True when a series has nothing to draw (every bucket empty). */
export function seriesIsEmpty(s: Series): boolean {
  return s.requests.every((n) => n === 0) && s.asked.every((n) => n === 0);
}

export interface Bar {
  label: string;
  value: number;
  /** value / the largest value, in [0, 1], for the bar's width. */
  fraction: number;
  row: Totals | null;
}

/**
 * Bars for a grouped total (by model, by pass…), largest first; beyond `top`, the rest
 * are summed into one "other" bar. Rows whose value is 0 are dropped.
 */
export function bars(rows: Totals[], value: (t: Totals) => number, top = 8): Bar[] {
  const items = rows
    .map((row) => ({ label: row.key || '–', value: value(row), row }))
    .filter((b) => b.value > 0)
    .sort((a, b) => b.value - a.value || a.label.localeCompare(b.label));
  let kept: { label: string; value: number; row: Totals | null }[] = items;
  if (items.length > top) {
    const rest = items.slice(top - 1);
    kept = [...items.slice(0, top - 1), { label: `other (${rest.length})`, value: sum(rest.map((b) => b.value)), row: null }];
  }
  const max = Math.max(0, ...kept.map((b) => b.value));
  return kept.map((b) => ({ ...b, fraction: max > 0 ? b.value / max : 0 }));
}

export interface Headline {
  requests: number;
  /** Share of requests that failed (the provider's or the gateway's error); a request the client left is not one. */
  errorRate: number | null;
  /** Requests the client left before the answer was whole, charged for what they used. */
  cancelled: number;
  savedTokens: number;
  savedUsd: number;
  costUsd: number;
  /** Share of the input the client asked to send that the passes removed. */
  savedShare: number | null;
  /** Share of cacheable requests the response cache answered. */
  responseCacheHitRate: number | null;
  /** Share of input tokens the provider served from its prompt cache. */
  promptCacheShare: number | null;
}

export function headline(t: Totals): Headline {
  const asked = t.input_tokens + t.saved_tokens;
  return {
    requests: t.requests,
    errorRate: t.requests > 0 ? t.errors / t.requests : null,
    cancelled: t.cancelled,
    savedTokens: t.saved_tokens,
    savedUsd: t.saved_usd,
    costUsd: t.cost_usd,
    savedShare: asked > 0 ? t.saved_tokens / asked : null,
    responseCacheHitRate: t.cache_lookups > 0 ? t.cache_hits / t.cache_lookups : null,
    promptCacheShare: t.input_tokens > 0 ? t.cache_read_tokens / t.input_tokens : null,
  };
}

/** Totals summed over the rows whose bucket starts at or after `fromMs` (today, this week). */
export function totalSince(rows: Totals[], fromMs: number): Totals {
  let acc = emptyTotals('sum');
  for (const row of rows) {
    if (Number(row.key) >= fromMs) acc = addTotals(acc, row);
  }
  return acc;
}

export function emptyTotals(key = ''): Totals {
  return {
    key,
    requests: 0,
    errors: 0,
    cancelled: 0,
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    saved_tokens: 0,
    cost_usd: 0,
    saved_usd: 0,
    overhead_ms_avg: 0,
    cache_lookups: 0,
    cache_hits: 0,
  };
}

/** Sum of two totals (the overhead average weighted by requests). */
export function addTotals(a: Totals, b: Totals): Totals {
  const requests = a.requests + b.requests;
  return {
    key: a.key,
    requests,
    errors: a.errors + b.errors,
    cancelled: a.cancelled + b.cancelled,
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cache_read_tokens: a.cache_read_tokens + b.cache_read_tokens,
    saved_tokens: a.saved_tokens + b.saved_tokens,
    cost_usd: a.cost_usd + b.cost_usd,
    saved_usd: a.saved_usd + b.saved_usd,
    overhead_ms_avg: requests > 0 ? (a.overhead_ms_avg * a.requests + b.overhead_ms_avg * b.requests) / requests : 0,
    cache_lookups: a.cache_lookups + b.cache_lookups,
    cache_hits: a.cache_hits + b.cache_hits,
  };
}

/** Start of the local day holding `nowMs`, in Unix ms. */
export function startOfLocalDay(nowMs: number): number {
  const d = new Date(nowMs);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}

function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
