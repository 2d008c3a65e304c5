/**
 * The Requests page and request detail: the bodies shown side by side with the rewritten
 * blocks marked, and the search form's state. Pure, so it can be tested.
 */
import type { RequestAttempt, RequestQuery } from './api';

/** A piece of a body: plain, or one of the rewritten blocks (`block` is its index). */
export interface Segment {
  text: string;
  block: number | null;
}

/** The body indented when it is JSON (escapes written one way, so blocks can be found), else as it is. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** How `s` appears inside a JSON string written by `JSON.stringify`. */
export function jsonEscaped(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/**
 * `text` cut at every place one of `blocks` (string contents, JSON-escaped here) appears,
 * each such piece marked with its block's index. Overlaps keep the earlier piece; blocks
 * that are absent or empty mark nothing.
 */
export function markBlocks(text: string, blocks: readonly (string | null | undefined)[]): Segment[] {
  const found: { start: number; end: number; block: number }[] = [];
  blocks.forEach((b, block) => {
    if (!b) return;
    const needle = jsonEscaped(b);
    for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) {
      found.push({ start: at, end: at + needle.length, block });
    }
  });
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: Segment[] = [];
  let pos = 0;
  for (const f of found) {
    if (f.start < pos) continue;
    if (f.start > pos) out.push({ text: text.slice(pos, f.start), block: null });
    out.push({ text: text.slice(f.start, f.end), block: f.block });
    pos = f.end;
  }
  if (pos < text.length || out.length === 0) out.push({ text: text.slice(pos), block: null });
  return out;
}

/** The search form as typed. */
export interface RequestFilters {
  since: string;
  model: string;
  provider: string;
  status: string;
  session: string;
}

export const SINCE_CHOICES: readonly { value: string; label: string }[] = [
  { value: '1h', label: 'Last hour' },
  { value: '24h', label: 'Last 24 hours' },
  { value: '7d', label: 'Last 7 days' },
  { value: '30d', label: 'Last 30 days' },
];

export const STATUS_CHOICES: readonly { value: string; label: string }[] = [
  { value: '', label: 'Any status' },
  { value: 'ok', label: 'Succeeded' },
  { value: 'error', label: 'Failed' },
  { value: '429', label: '429 rate limited' },
  { value: '500', label: '500' },
];

export function emptyFilters(): RequestFilters {
  return { since: '24h', model: '', provider: '', status: '', session: '' };
}

export const PAGE_SIZE = 50;

/** The query for the filters; `before_ms` asks for the page after the last row shown. */
export function queryOf(f: RequestFilters, before_ms?: number): RequestQuery {
  return { ...f, limit: PAGE_SIZE, before_ms };
}

/** The request's time, split the way the detail shows it: the gateway's own, the provider's wait for the first byte, the rest. */
export function timing(a: Pick<RequestAttempt, 'latency_ms' | 'overhead_ms' | 'first_byte_ms'>): { label: string; ms: number | null }[] {
  return [
    { label: 'Gateway overhead', ms: a.overhead_ms },
    { label: 'Time to first byte', ms: a.first_byte_ms ?? null },
    { label: 'Total', ms: a.latency_ms },
  ];
}

/** "tool_output" → "Tool output". */
export function passLabel(pass: string): string {
  const s = pass.replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}
