/** What the Overview's net-savings card says, from the sessions report; pure functions. */

import type { Breaks, HoldoutSide, SessionsReport, SessionTotals } from './api';
import { formatPercent, formatTokens, formatUsd } from './format';

export interface NetSavingsView {
  /** The headline: net $ saved against the holdout, or "–" without enough held-out traffic. */
  net: string;
  /** "12% less than the held-out rate", or why there is no figure. */
  detail: string;
  enough: boolean;
  /** "$2.40 per million tokens · 40 sessions, 400 requests". */
  optimized: string;
  heldOut: string;
  /** "none", or "1 client · 2 provider" (and the gateway's, which should never be). */
  breaks: string;
  /** The gateway's own breaks: shown as a warning when any. */
  gatewayBreaks: number;
}

/** Dollars per million input-equivalent tokens, or null with no tokens. */
export function usdPerMtok(s: HoldoutSide): number | null {
  return s.tokens > 0 ? (s.cost_usd * 1e6) / s.tokens : null;
}

function side(s: HoldoutSide): string {
  const rate = usdPerMtok(s);
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  const counts = `${plural(s.sessions, 'session')}, ${plural(s.requests, 'request')}`;
  return rate == null ? counts : `${formatUsd(rate)} per million tokens · ${counts}`;
}

/** Breaks by cause, the gateway's first: "none", "1 gateway · 2 client · 1 provider". */
export function formatBreaks(b: Breaks): string {
  const parts = (['gateway', 'client', 'provider'] as const).filter((k) => b[k] > 0).map((k) => `${b[k]} ${k}`);
  return parts.length ? parts.join(' · ') : 'none';
}

export function netSavings(report: SessionsReport): NetSavingsView {
  const h = report.holdout;
  const enough = h.net_saved_usd != null;
  let detail: string;
  if (enough) {
    const share = h.net_saved_share ?? 0;
    const direction = share >= 0 ? 'less' : 'more';
    detail =
      `${formatPercent(Math.abs(share))} ${direction} than ${formatUsd(h.expected_usd)} at the held-out rate` +
      ` (${h.models.join(', ')})`;
  } else {
    detail = h.note ?? 'Not enough held-out traffic.';
  }
  return {
    net: enough ? formatUsd(h.net_saved_usd) : '–',
    detail,
    enough,
    optimized: side(enough ? h.compared_optimized : h.optimized),
    heldOut: side(enough ? h.compared_held_out : h.held_out),
    breaks: formatBreaks(report.breaks),
    gatewayBreaks: report.breaks.gateway,
  };
}

/** A session's id as a table shows it: derived ids whole, an agent's long id shortened. */
export function shortSession(id: string): string {
  return id.length > 20 ? `${id.slice(0, 8)}…${id.slice(-6)}` : id;
}

/** "12.3k (4.1k cached)": input tokens and the share the provider's cache served. */
export function sessionInput(s: SessionTotals): string {
  const cached = s.cache_read_tokens > 0 ? ` (${formatTokens(s.cache_read_tokens)} cached)` : '';
  return formatTokens(s.input_tokens) + cached;
}
