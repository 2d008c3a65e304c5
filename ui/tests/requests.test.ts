import { describe, expect, it } from 'vitest';
import { requestQueryString } from '../src/lib/api';
import { emptyFilters, jsonEscaped, markBlocks, prettyJson, queryOf, timing } from '../src/lib/requests';
import { hrefForRequest, pageFromHash, requestIdFromHash } from '../src/lib/routes';

describe('marking rewritten blocks in a body', () => {
  const body = prettyJson(JSON.stringify({ messages: [{ role: 'tool', content: 'line "one"\nline two' }, { role: 'user', content: 'again: line "one"\nline two' }] }));

  it('finds a block by its JSON-escaped text, every time it appears', () => {
    const segs = markBlocks(body, ['line "one"\nline two']);
    const marked = segs.filter((s) => s.block === 0);
    expect(marked).toHaveLength(2);
    expect(marked[0].text).toBe(jsonEscaped('line "one"\nline two'));
    expect(segs.map((s) => s.text).join('')).toBe(body);
  });

  it('leaves the body whole when no block is found, or none is given', () => {
    expect(markBlocks(body, ['absent'])).toEqual([{ text: body, block: null }]);
    expect(markBlocks(body, [null, ''])).toEqual([{ text: body, block: null }]);
    expect(markBlocks('', ['x'])).toEqual([{ text: '', block: null }]);
  });

  it('keeps the earlier of two overlapping blocks', () => {
    const segs = markBlocks('abcdef', ['bcd', 'cde']);
    expect(segs).toEqual([
      { text: 'a', block: null },
      { text: 'bcd', block: 0 },
      { text: 'ef', block: null },
    ]);
  });

  it('writes escapes one way: a client that escaped non-ASCII still matches', () => {
    const fromPython = '{"content": "caf\\u00e9 \\u2192 ok"}';
    const segs = markBlocks(prettyJson(fromPython), ['café → ok']);
    expect(segs.some((s) => s.block === 0)).toBe(true);
    expect(prettyJson('not json')).toBe('not json');
  });
});

describe('the Requests page', () => {
  it('routes a request id through the hash', () => {
    const href = hrefForRequest('req/1 2');
    expect(pageFromHash(href)).toBe('requests');
    expect(requestIdFromHash(href)).toBe('req/1 2');
    expect(requestIdFromHash('#/requests')).toBeNull();
    expect(requestIdFromHash('#/providers/x')).toBeNull();
  });

  it('asks only for the filters given', () => {
    const f = { ...emptyFilters(), model: ' gpt ', status: 'error' };
    expect(requestQueryString(queryOf(f))).toBe('since=24h&model=gpt&status=error&limit=50');
    expect(requestQueryString(queryOf(emptyFilters(), 1700))).toBe('since=24h&before_ms=1700&limit=50');
  });

  it('splits the time into overhead, first byte and total', () => {
    expect(timing({ latency_ms: 120, overhead_ms: 0.4, first_byte_ms: 80 }).map((t) => t.ms)).toEqual([0.4, 80, 120]);
    expect(timing({ latency_ms: 3, overhead_ms: 3 })[1].ms).toBeNull();
  });
});
