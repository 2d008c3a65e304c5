import { describe, expect, it } from 'vitest';
import {
  baseUrlFromListen,
  formatInOut,
  requestCancelled,
  effectiveListen,
  formatAgo,
  formatBucket,
  formatBytes,
  formatClock,
  formatDateTime,
  formatCount,
  formatDuration,
  formatMs,
  formatPercent,
  formatTick,
  formatTokens,
  formatUsd,
  healthLabel,
  outcomeLabel,
  parseList,
  requestSucceeded,
  routeSteps,
  share,
  splitApplied,
} from '../src/lib/format';

describe('formatTokens', () => {
  it('keeps small counts whole and shortens large ones', () => {
    expect(formatTokens(0)).toBe('0');
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(1000)).toBe('1k');
    expect(formatTokens(1234)).toBe('1.23k');
    expect(formatTokens(12_345)).toBe('12.3k');
    expect(formatTokens(4_200_000)).toBe('4.2M');
    expect(formatTokens(52_000_000)).toBe('52M');
    expect(formatTokens(3_100_000_000)).toBe('3.1B');
    expect(formatTokens(-1500)).toBe('-1.5k');
    expect(formatTokens(null)).toBe('–');
    expect(formatTokens(Number.NaN)).toBe('–');
  });
});

describe('formatUsd', () => {
  it('shows small savings instead of rounding them to zero', () => {
    expect(formatUsd(0)).toBe('$0.00');
    expect(formatUsd(0.00004)).toBe('<$0.0001');
    expect(formatUsd(0.0012)).toBe('$0.0012');
    expect(formatUsd(0.125)).toBe('$0.125');
    expect(formatUsd(0.5)).toBe('$0.50');
    expect(formatUsd(12.345)).toBe('$12.35');
    expect(formatUsd(12_345.6)).toBe('$12,346');
    expect(formatUsd(-2)).toBe('-$2.00');
    expect(formatUsd(undefined)).toBe('–');
  });
});

describe('percentages and shares', () => {
  it('formats a share', () => {
    expect(formatPercent(0)).toBe('0%');
    expect(formatPercent(0.0004)).toBe('<0.1%');
    expect(formatPercent(0.0123)).toBe('1.2%');
    expect(formatPercent(0.5)).toBe('50%');
    expect(formatPercent(1)).toBe('100%');
    expect(formatPercent(null)).toBe('–');
  });
  it('has no share of nothing', () => {
    expect(share(1, 0)).toBeNull();
    expect(share(1, 4)).toBe(0.25);
  });
});

describe('durations and sizes', () => {
  it('formats milliseconds', () => {
    expect(formatMs(0)).toBe('0 ms');
    expect(formatMs(0.4)).toBe('<1 ms');
    expect(formatMs(42.4)).toBe('42 ms');
    expect(formatMs(1530)).toBe('1.53 s');
    expect(formatMs(12_340)).toBe('12.3 s');
    expect(formatMs(125_000)).toBe('2m 5s');
  });
  it('formats uptime', () => {
    expect(formatDuration(59)).toBe('59s');
    expect(formatDuration(61)).toBe('1m 1s');
    expect(formatDuration(3700)).toBe('1h 1m');
    expect(formatDuration(90_000)).toBe('1d 1h');
  });
  it('formats bytes', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(2048)).toBe('2 KiB');
    expect(formatBytes(5_500_000)).toBe('5.2 MiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3 GiB');
  });
});

describe('times', () => {
  const d = new Date(2026, 11, 1, 9, 5, 7);
  it('formats a clock time and buckets in local time', () => {
    expect(formatClock(d.getTime())).toBe('09:05:07');
    expect(formatBucket(d.getTime(), 'hour')).toBe('Dec 1 09:00');
    expect(formatBucket(d.getTime(), 'day')).toBe('Dec 1');
  });
  it('formats a moment with its date, to the minute', () => {
    expect(formatDateTime(d.getTime())).toBe('Dec 1 2026, 09:05');
    expect(formatDateTime(d.getTime(), true)).toBe('Dec 1 2026, 09:05:07');
    expect(formatDateTime(null)).toBe('–');
  });
  it('labels axis ticks briefly, with the date at midnight', () => {
    expect(formatTick(d.getTime(), 'hour')).toBe('09:05');
    expect(formatTick(new Date(2026, 11, 2, 0, 0).getTime(), 'hour')).toBe('Dec 2');
    expect(formatTick(d.getTime(), 'day')).toBe('Dec 1');
  });
  it('says how long ago', () => {
    const now = d.getTime();
    expect(formatAgo(now - 3000, now)).toBe('3s ago');
    expect(formatAgo(now - 5 * 60_000, now)).toBe('5m ago');
    expect(formatAgo(now - 2 * 3_600_000, now)).toBe('2h ago');
    expect(formatAgo(now - 3 * 86_400_000, now)).toBe('3d ago');
    expect(formatAgo(now + 1000, now)).toBe('0s ago');
  });
});

describe('lists', () => {
  it('splits the applied header value', () => {
    expect(splitApplied('tool_output=standard terse=lite')).toEqual(['tool_output=standard', 'terse=lite']);
    expect(splitApplied('')).toEqual([]);
    expect(splitApplied(null)).toEqual([]);
  });
  it('parses a models field', () => {
    expect(parseList(' gpt-5, gpt-5-mini ,\n gpt-5,, ')).toEqual(['gpt-5', 'gpt-5-mini']);
    expect(parseList('')).toEqual([]);
  });
});

describe('baseUrlFromListen', () => {
  it('makes a URL a local client can use', () => {
    expect(baseUrlFromListen('127.0.0.1:8788')).toBe('http://127.0.0.1:8788');
    expect(baseUrlFromListen('0.0.0.0:8788')).toBe('http://127.0.0.1:8788');
    expect(baseUrlFromListen('[::]:9000')).toBe('http://[::1]:9000');
    expect(baseUrlFromListen('http://localhost:8788/')).toBe('http://localhost:8788');
  });
});

describe('effectiveListen', () => {
  it('uses the configured address unless it asked for any free port', () => {
    expect(effectiveListen('127.0.0.1:8788', 'http://127.0.0.1:9999')).toBe('127.0.0.1:8788');
    expect(effectiveListen('127.0.0.1:0', 'http://127.0.0.1:41235')).toBe('127.0.0.1:41235');
    expect(effectiveListen(null, 'http://localhost:8788/')).toBe('localhost:8788');
  });
});

describe('formatCount', () => {
  it('groups thousands', () => {
    expect(formatCount(1234567)).toBe('1,234,567');
    expect(formatCount(undefined)).toBe('–');
  });
});

describe('request outcome', () => {
  it('is a success only when completed with a non-error status', () => {
    expect(requestSucceeded({ status: 200, outcome: 'completed' })).toBe(true);
    expect(requestSucceeded({ status: 404, outcome: 'completed' })).toBe(false);
    expect(requestSucceeded({ status: 200, outcome: 'client_cancelled' })).toBe(false);
    expect(requestSucceeded({ status: 502, outcome: 'gateway_error' })).toBe(false);
    expect(outcomeLabel('upstream_failed')).toBe('upstream failed');
  });
});

describe('healthLabel', () => {
  it('says up, probing, or cooling down with the seconds left rounded up', () => {
    expect(healthLabel({ state: 'up', retry_in_secs: null })).toBe('up');
    expect(healthLabel(null)).toBe('up');
    expect(healthLabel({ state: 'probing', retry_in_secs: null })).toBe('probing');
    expect(healthLabel({ state: 'cooling_down', retry_in_secs: 41.2 })).toBe('cooling down · retry in 42s');
    expect(healthLabel({ state: 'cooling_down', retry_in_secs: 599.5 })).toBe('cooling down · retry in 10m 0s');
    expect(healthLabel({ state: 'cooling_down', retry_in_secs: 0.01 })).toBe('cooling down · retry in 1s');
  });

  it('says the next request probes it once the cooldown ran out, and copes with a state it does not know', () => {
    expect(healthLabel({ state: 'cooling_down', retry_in_secs: 0 })).toBe('cooling down · next request probes it');
    expect(healthLabel({ state: 'cooling_down', retry_in_secs: null })).toBe('cooling down');
    expect(healthLabel({ state: 'half_open', retry_in_secs: null })).toBe('half open');
  });
});

describe('routeSteps', () => {
  it('lists the route’s target then its fallbacks, in the order tried', () => {
    expect(routeSteps({ provider: 'openai', model: 'gpt-5' })).toEqual(['openai/gpt-5']);
    expect(routeSteps({ provider: 'local' })).toEqual(['local']);
    expect(routeSteps({ provider: 'anthropic', model: 'claude-sonnet-5-5', fallbacks: ['openai/gpt-5', 'local/qwen3'] })).toEqual([
      'anthropic/claude-sonnet-5-5',
      'openai/gpt-5',
      'local/qwen3',
    ]);
  });
});

describe('formatInOut and requestCancelled', () => {
  it('marks the counts the gateway made itself', () => {
    expect(formatInOut({ input_tokens: 1200, output_tokens: 40, tokens_estimated: null })).not.toContain('≈');
    expect(formatInOut({ input_tokens: 1200, output_tokens: 40, tokens_estimated: 'output' })).toMatch(/^[^≈]+ \/ ≈/);
    expect(formatInOut({ input_tokens: 1200, output_tokens: 0, tokens_estimated: 'input,output' }).match(/≈/g)?.length).toBe(2);
    expect(formatInOut({ input_tokens: null, output_tokens: null })).toBe('–');
  });

  it('tells a request the client left from a failure', () => {
    expect(requestCancelled({ status: 200, outcome: 'client_cancelled' })).toBe(true);
    expect(requestCancelled({ status: 502, outcome: 'client_cancelled' })).toBe(false);
    expect(requestCancelled({ status: 200, outcome: 'upstream_failed' })).toBe(false);
  });
});
