/** Number, money, time and size formatting for the window; pure functions. */

/** 950 → "950", 12_345 → "12.3k", 4_200_000 → "4.2M". */
export function formatTokens(n: number | null | undefined): string {
  if (n == null || !Number.isFinite(n)) return '–';
  const sign = n < 0 ? '-' : '';
  const a = Math.abs(n);
  if (a < 1000) return sign + String(Math.round(a));
  if (a < 1_000_000) return sign + trimZero((a / 1000).toFixed(a < 10_000 ? 2 : 1)) + 'k';
  if (a < 1_000_000_000) return sign + trimZero((a / 1_000_000).toFixed(a < 10_000_000 ? 2 : 1)) + 'M';
  return sign + trimZero((a / 1_000_000_000).toFixed(2)) + 'B';
}

/** Full count with thousands separators: 12345 → "12,345". */
export function formatCount(n: number | null | undefined): string {
  if (n == null || !Number.isFinite(n)) return '–';
  return Math.round(n).toLocaleString('en-US');
}

/**
 * US dollars: cents for amounts of a dollar or more, and enough digits below that for
 * small savings to show (a saved request is often a fraction of a cent).
 */
export function formatUsd(n: number | null | undefined): string {
  if (n == null || !Number.isFinite(n)) return '–';
  const sign = n < 0 ? '-' : '';
  const a = Math.abs(n);
  if (a === 0) return '$0.00';
  if (a >= 1000) return sign + '$' + Math.round(a).toLocaleString('en-US');
  if (a >= 1) return sign + '$' + a.toFixed(2);
  if (a >= 0.01) return sign + '$' + a.toFixed(3).replace(/0$/, '');
  if (a >= 0.0001) return sign + '$' + a.toFixed(4);
  return sign + '<$0.0001';
}

/** A share in [0, 1] as a percentage: 0.1234 → "12.3%"; none → "–". */
export function formatPercent(share: number | null | undefined): string {
  if (share == null || !Number.isFinite(share)) return '–';
  const pct = share * 100;
  if (pct === 0) return '0%';
  if (Math.abs(pct) < 0.1) return '<0.1%';
  return trimZero(pct.toFixed(pct >= 10 ? 0 : 1)) + '%';
}

/** Share `part / whole`, or null when `whole` is 0 (nothing to divide). */
export function share(part: number, whole: number): number | null {
  return whole > 0 ? part / whole : null;
}

/** Milliseconds: 42 → "42 ms", 1530 → "1.53 s", 125_000 → "2m 5s". */
export function formatMs(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return '–';
  if (ms < 1) return ms <= 0 ? '0 ms' : '<1 ms';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${trimZero((ms / 1000).toFixed(ms < 10_000 ? 2 : 1))} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${s % 60}s`;
}

/** Seconds of uptime: 59 → "59s", 3700 → "1h 1m", 90_000 → "1d 1h". */
export function formatDuration(secs: number): string {
  const s = Math.max(0, Math.floor(secs));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}

/**
 * A provider's health as its badge says it: "up", "cooling down · retry in 4m 2s" (the
 * seconds left rounded up, so it never says 0 while it still waits), "probing".
 */
export function healthLabel(h: { state: string; retry_in_secs: number | null } | null | undefined): string {
  if (!h || h.state === 'up') return 'up';
  if (h.state === 'probing') return 'probing';
  if (h.state === 'cooling_down') {
    const left = h.retry_in_secs;
    if (left == null || !Number.isFinite(left)) return 'cooling down';
    return left > 0 ? `cooling down · retry in ${formatDuration(Math.ceil(left))}` : 'cooling down · next request probes it';
  }
  return h.state.replace(/_/g, ' ');
}

/** Where a route sends a request, in the order tried: `provider/model` (or the provider alone), then each fallback. */
export function routeSteps(r: { provider: string; model?: string | null; fallbacks?: string[] | null }): string[] {
  return [r.model ? `${r.provider}/${r.model}` : r.provider, ...(r.fallbacks ?? [])];
}

/** Bytes: 512 → "512 B", 2048 → "2 KiB", 5_500_000 → "5.2 MiB". */
export function formatBytes(n: number | null | undefined): string {
  if (n == null || !Number.isFinite(n)) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${trimZero((n / 1024).toFixed(1))} KiB`;
  if (n < 1024 ** 3) return `${trimZero((n / 1024 / 1024).toFixed(1))} MiB`;
  return `${trimZero((n / 1024 ** 3).toFixed(2))} GiB`;
}

function pad2(n: number): string {
  return n < 10 ? '0' + n : String(n);
}

/** Local wall-clock time of a Unix-ms instant: "14:03:27". */
export function formatClock(ms: number, date: Date = new Date(ms)): string {
  return `${pad2(date.getHours())}:${pad2(date.getMinutes())}:${pad2(date.getSeconds())}`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A time bucket's label: hours as "Dec 1 14:00", days as "Dec 1". */
export function formatBucket(ms: number, by: 'hour' | 'day'): string {
  const d = new Date(ms);
  const day = `${MONTHS[d.getMonth()]} ${d.getDate()}`;
  return by === 'hour' ? `${day} ${pad2(d.getHours())}:00` : day;
}

/** A moment with its date, to the minute (or the second): "Dec 1 2025, 14:03" (local time). */
export function formatDateTime(ms: number | null | undefined, seconds = false): string {
  if (ms == null || !Number.isFinite(ms)) return '–';
  const d = new Date(ms);
  const time = seconds ? formatClock(ms, d) : `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
  return `${MONTHS[d.getMonth()]} ${d.getDate()} ${d.getFullYear()}, ${time}`;
}

/** An axis tick: hours as "14:00" (the date at midnight), days as "Dec 1". */
export function formatTick(ms: number, by: 'hour' | 'day'): string {
  const d = new Date(ms);
  if (by === 'day' || (d.getHours() === 0 && d.getMinutes() === 0)) return `${MONTHS[d.getMonth()]} ${d.getDate()}`;
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}

/** "3s ago", "5m ago", "2h ago" relative to `now`. */
export function formatAgo(ms: number, now: number = Date.now()): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** `tool_output=standard terse=lite` → ["tool_output=standard", "terse=lite"]; empty → []. */
export function splitApplied(applied: string | null | undefined): string[] {
  if (!applied) return [];
  return applied.split(/[\s,]+/).filter(Boolean);
}

/** A request that got its answer: a non-error status, delivered whole (`completed`). */
export function requestSucceeded(r: { status: number; outcome: string }): boolean {
  return r.status < 400 && r.outcome === 'completed';
}

/** Left by the client before its answer was whole: not a failure, and charged for what it used. */
export function requestCancelled(r: { status: number; outcome: string }): boolean {
  return r.status < 400 && r.outcome === 'client_cancelled';
}

/** `12 / 40`, with `≈` before a count the gateway made itself (`tokens_estimated`). */
export function formatInOut(r: { input_tokens: number | null; output_tokens: number | null; tokens_estimated?: string | null }): string {
  if (r.input_tokens == null && r.output_tokens == null) return '–';
  const est = (r.tokens_estimated ?? '').split(',');
  const mark = (which: string) => (est.includes(which) ? '≈' : '');
  return `${mark('input')}${formatTokens(r.input_tokens)} / ${mark('output')}${formatTokens(r.output_tokens)}`;
}

/** `client_cancelled` → "client cancelled". */
export function outcomeLabel(outcome: string): string {
  return outcome.replace(/_/g, ' ');
}

/** Models as typed in a form: commas or new lines, trimmed, no empties or repeats. */
export function parseList(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of text.split(/[,\n]/)) {
    const v = raw.trim();
    if (v && !seen.has(v)) {
      seen.add(v);
      out.push(v);
    }
  }
  return out;
}

/** `127.0.0.1:8788` or `[::1]:8788` → a base URL a client on this machine can use. */
export function baseUrlFromListen(listen: string): string {
  let hostPort = listen.replace(/^https?:\/\//, '').replace(/\/+$/, '');
  // A gateway bound to every interface is still reached through loopback from here.
  hostPort = hostPort.replace(/^0\.0\.0\.0(?=:)/, '127.0.0.1').replace(/^\[::\](?=:)/, '[::1]');
  return `http://${hostPort}`;
}

/**
 * The address agents should use: the gateway's configured `listen`, unless that names no
 * real port (`:0`, "any free port"), in which case the address this page reached the
 * gateway at (`apiBase`) is the one that works.
 */
export function effectiveListen(listen: string | null | undefined, apiBase: string): string {
  const fromBase = apiBase.replace(/^https?:\/\//, '').replace(/\/.*$/, '');
  if (!listen) return fromBase;
  return /:0$/.test(listen.trim()) ? fromBase : listen.trim();
}

function trimZero(s: string): string {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}
