import { describe, expect, it } from 'vitest';
import type { Holdout, SessionsReport, SessionTotals } from '../src/lib/api';
import { formatBreaks, netSavings, sessionInput, shortSession, usdPerMtok } from '../src/lib/sessions';

const side = (sessions: number, requests: number, tokens: number, cost_usd: number) => ({ sessions, requests, tokens, cost_usd });

function report(holdout: Partial<Holdout>, breaks = { gateway: 0, client: 0, provider: 0 }): SessionsReport {
  return {
    since_ms: 0,
    sessions: [],
    session_count: 0,
    breaks,
    holdout: {
      optimized: side(40, 400, 10_000_000, 24),
      held_out: side(5, 40, 1_000_000, 3),
      models: [],
      compared_optimized: side(0, 0, 0, 0),
      compared_held_out: side(0, 0, 0, 0),
      expected_usd: null,
      net_saved_usd: null,
      net_saved_share: null,
      note: null,
      ...holdout,
    },
  };
}

describe('netSavings', () => {
  it('shows the net saved against the held-out rate with both sides', () => {
    const v = netSavings(
      report({
        models: ['claude-sonnet-5-5'],
        compared_optimized: side(40, 400, 10_000_000, 24),
        compared_held_out: side(5, 40, 1_000_000, 3),
        expected_usd: 30,
        net_saved_usd: 6,
        net_saved_share: 0.2,
      }),
    );
    expect(v.enough).toBe(true);
    expect(v.net).toBe('$6.00');
    expect(v.detail).toBe('20% less than $30.00 at the held-out rate (claude-sonnet-5-5)');
    expect(v.optimized).toBe('$2.40 per million tokens · 40 sessions, 400 requests');
    expect(v.heldOut).toBe('$3.00 per million tokens · 5 sessions, 40 requests');
  });

  it('says when optimizing cost more than the control group', () => {
    const v = netSavings(report({ models: ['m'], expected_usd: 10, net_saved_usd: -1, net_saved_share: -0.1 }));
    expect(v.net).toBe('-$1.00');
    expect(v.detail).toMatch(/^10% more than \$10\.00/);
  });

  it('gives no figure without enough held-out traffic, and says why', () => {
    const note = 'not enough held-out traffic: none in this window (set [optimize] holdout, e.g. 0.1)';
    const v = netSavings(report({ held_out: side(0, 0, 0, 0), note }));
    expect(v.enough).toBe(false);
    expect(v.net).toBe('–');
    expect(v.detail).toBe(note);
    expect(v.heldOut).toBe('0 sessions, 0 requests');
    expect(v.optimized).toBe('$2.40 per million tokens · 40 sessions, 400 requests');
  });

  it('counts breaks by cause, the gateway first', () => {
    const v = netSavings(report({}, { gateway: 1, client: 2, provider: 0 }));
    expect(v.breaks).toBe('1 gateway · 2 client');
    expect(v.gatewayBreaks).toBe(1);
    expect(formatBreaks({ gateway: 0, client: 0, provider: 0 })).toBe('none');
  });
});

describe('session rows', () => {
  it('shortens long agent ids and keeps derived ones', () => {
    expect(shortSession('h-0123456789abcdef')).toBe('h-0123456789abcdef');
    expect(shortSession('5f0c2d8e-1b7a-4c1e-9a43-7d2b9e6f1a20')).toBe('5f0c2d8e…6f1a20');
  });

  it('shows input with its cached share', () => {
    const s = { input_tokens: 12_345, cache_read_tokens: 4_100 } as SessionTotals;
    expect(sessionInput(s)).toBe('12.3k (4.1k cached)');
    expect(sessionInput({ ...s, cache_read_tokens: 0 })).toBe('12.3k');
    expect(usdPerMtok(side(1, 1, 0, 1))).toBeNull();
  });
});
