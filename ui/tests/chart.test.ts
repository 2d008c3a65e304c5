import { describe, expect, it } from 'vitest';
import type { Totals } from '../src/lib/api';
import { DAY_MS, HOUR_MS, addTotals, bars, emptyTotals, headline, seriesIsEmpty, timeSeries, totalSince } from '../src/lib/chart';

function t(key: string | number, over: Partial<Totals> = {}): Totals {
  return { ...emptyTotals(String(key)), ...over };
}

const H0 = Date.UTC(2026, 11, 1, 10); // 10:00 UTC

describe('timeSeries', () => {
  it('has one point per hour from the window start to now, zeros where no row', () => {
    const rows = [
      t(H0 + HOUR_MS, { requests: 2, input_tokens: 700, saved_tokens: 300, saved_usd: 0.01 }),
      t(H0 + 3 * HOUR_MS, { requests: 1, input_tokens: 100 }),
    ];
    const s = timeSeries(rows, 'hour', H0 + 15 * 60_000, H0 + 3 * HOUR_MS + 5 * 60_000);
    expect(s.xs).toEqual([0, 1, 2, 3].map((i) => (H0 + i * HOUR_MS) / 1000));
    expect(s.sent).toEqual([0, 700, 0, 100]);
    expect(s.saved).toEqual([0, 300, 0, 0]);
    expect(s.asked).toEqual([0, 1000, 0, 100]);
    expect(s.savedUsd).toEqual([0, 0.01, 0, 0]);
    expect(s.requests).toEqual([0, 2, 0, 1]);
    expect(seriesIsEmpty(s)).toBe(false);
  });

  it('buckets days and widens the window for a row outside it', () => {
    const day = Math.floor(H0 / DAY_MS) * DAY_MS;
    const s = timeSeries([t(day - 2 * DAY_MS, { requests: 1, input_tokens: 5 })], 'day', day - DAY_MS, day + 1000);
    expect(s.xs).toEqual([day - 2 * DAY_MS, day - DAY_MS, day].map((x) => x / 1000));
    expect(s.sent).toEqual([5, 0, 0]);
  });

  it('merges two rows that fall in the same bucket and skips keys that are not times', () => {
    const s = timeSeries(
      [t(H0, { requests: 1, input_tokens: 10 }), t(H0 + 60_000, { requests: 1, input_tokens: 5 }), t('gpt-5', { requests: 9 })],
      'hour',
      H0,
      H0,
    );
    expect(s.sent).toEqual([15]);
    expect(s.requests).toEqual([2]);
  });

  it('is empty with no rows', () => {
    const s = timeSeries([], 'hour', H0, H0 + 2 * HOUR_MS);
    expect(s.xs).toHaveLength(3);
    expect(seriesIsEmpty(s)).toBe(true);
  });
});

describe('bars', () => {
  it('sorts by value, drops zeros and scales to the largest', () => {
    const b = bars([t('a', { saved_tokens: 50 }), t('b', { saved_tokens: 200 }), t('c', { saved_tokens: 0 })], (x) => x.saved_tokens);
    expect(b.map((x) => [x.label, x.value, x.fraction])).toEqual([
      ['b', 200, 1],
      ['a', 50, 0.25],
    ]);
  });

  it('folds the tail into "other"', () => {
    const rows = [1, 2, 3, 4, 5].map((n) => t(`m${n}`, { saved_tokens: n * 10 }));
    const b = bars(rows, (x) => x.saved_tokens, 3);
    expect(b.map((x) => [x.label, x.value])).toEqual([
      ['m5', 50],
      ['m4', 40],
      ['other (3)', 60],
    ]);
    expect(b[2].fraction).toBe(1);
    expect(b[2].row).toBeNull();
  });
});

describe('headline', () => {
  it('computes the shares the overview shows', () => {
    const h = headline(t('', { requests: 4, input_tokens: 750, saved_tokens: 250, cache_read_tokens: 150, cache_lookups: 4, cache_hits: 1, saved_usd: 0.5, cost_usd: 2 }));
    expect(h.savedShare).toBe(0.25);
    expect(h.promptCacheShare).toBe(0.2);
    expect(h.responseCacheHitRate).toBe(0.25);
    expect(h.savedUsd).toBe(0.5);
  });

  it('counts errors apart from requests the client left', () => {
    const h = headline(t('', { requests: 10, errors: 1, cancelled: 3 }));
    expect(h.errorRate).toBe(0.1);
    expect(h.cancelled).toBe(3);
    expect(headline(emptyTotals()).errorRate).toBeNull();
    expect(addTotals(t('', { cancelled: 2 }), t('', { cancelled: 1 })).cancelled).toBe(3);
  });

  it('has no shares without traffic', () => {
    const h = headline(emptyTotals());
    expect(h.savedShare).toBeNull();
    expect(h.promptCacheShare).toBeNull();
    expect(h.responseCacheHitRate).toBeNull();
  });
});

describe('totals arithmetic', () => {
  it('adds totals, weighting the overhead average by requests', () => {
    const s = addTotals(t('x', { requests: 1, overhead_ms_avg: 1, saved_tokens: 3 }), t('y', { requests: 3, overhead_ms_avg: 5, saved_tokens: 4 }));
    expect(s.key).toBe('x');
    expect(s.requests).toBe(4);
    expect(s.saved_tokens).toBe(7);
    expect(s.overhead_ms_avg).toBe(4);
  });

  it('sums buckets from a start', () => {
    const sum = totalSince([t(H0, { requests: 1 }), t(H0 + HOUR_MS, { requests: 2 }), t(H0 + 2 * HOUR_MS, { requests: 4 })], H0 + HOUR_MS);
    expect(sum.requests).toBe(6);
  });
});
