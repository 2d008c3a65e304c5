import { describe, expect, it } from 'vitest';
import { MODE_TEXT, allowedText, hookReach, hookStages, kindBars, kindCounts, parseSecrets, ruleScope, secretsText } from '../src/lib/guard';
import { GUARD_MODES } from '../src/lib/api';

describe('a request’s secrets column', () => {
  it('reads kinds and counts, largest first, a kind listed twice summed', () => {
    expect(parseSecrets('github_token:1,env_secret:2')).toEqual([
      { kind: 'env_secret', count: 2 },
      { kind: 'github_token', count: 1 },
    ]);
    expect(parseSecrets(' jwt:1 , jwt:2,aws_access_key:3')).toEqual([
      { kind: 'aws_access_key', count: 3 },
      { kind: 'jwt', count: 3 },
    ]);
  });
  it('is empty when there is none, and skips what it cannot read', () => {
    expect(parseSecrets(null)).toEqual([]);
    expect(parseSecrets(undefined)).toEqual([]);
    expect(parseSecrets('')).toEqual([]);
    expect(parseSecrets('???,x:0,Bad:1,y:-2,:3,z:')).toEqual([]);
    expect(parseSecrets('custom:1,oops')).toEqual([{ kind: 'custom', count: 1 }]);
  });
  it('says the kinds with their counts', () => {
    const found = parseSecrets('github_token:1,env_secret:2');
    expect(secretsText(found)).toBe('env_secret ×2 · github_token ×1');
    expect(secretsText([])).toBe('');
  });
});

describe('today’s secrets by kind', () => {
  it('draws bars largest first, the largest full width', () => {
    const bars = kindBars({ github_token: 1, env_secret: 4, jwt: 2 });
    expect(bars.map((b) => [b.label, b.value, b.fraction])).toEqual([
      ['env_secret', 4, 1],
      ['jwt', 2, 0.5],
      ['github_token', 1, 0.25],
    ]);
    expect(bars.every((b) => b.row === null)).toBe(true);
  });
  it('has no bar for a kind at zero, nor without figures', () => {
    expect(kindBars({ jwt: 0 })).toEqual([]);
    expect(kindBars(undefined)).toEqual([]);
    expect(kindCounts({ b: 1, a: 1 }).map((k) => k.kind)).toEqual(['a', 'b']);
  });
});

describe('the words for the settings', () => {
  it('explains every mode', () => {
    for (const m of GUARD_MODES) expect(MODE_TEXT[m].help.length).toBeGreaterThan(10);
    expect(MODE_TEXT.block.label).toBe('Block');
  });
  it('says what a rule matches', () => {
    expect(ruleScope({ match: 'claude-*', provider: null })).toBe('claude-*');
    expect(ruleScope({ match: 'claude-*', provider: 'anthropic' })).toBe('claude-* on anthropic');
    expect(ruleScope({ match: null, provider: 'local' })).toBe('any model on local');
  });
  it('says when a hook is called and for which requests', () => {
    expect(hookStages({ pre: true, post: true })).toBe('request and answer');
    expect(hookStages({ pre: true, post: false })).toBe('request');
    expect(hookStages({ pre: false, post: true })).toBe('answer');
    const rules = [
      { match: 'claude-*', provider: null, hooks: ['dlp'] },
      { match: null, provider: 'local', hooks: ['dlp', 'audit'] },
    ];
    expect(hookReach({ name: 'audit', every: true }, rules)).toBe('every request');
    expect(hookReach({ name: 'dlp', every: false }, rules)).toBe('claude-*, any model on local');
    expect(hookReach({ name: 'spare', every: false }, rules)).toBe('no request');
  });
  it('tells the allow-list by its size only', () => {
    expect(allowedText(0)).toMatch(/^Nothing is allowed through/);
    expect(allowedText(1)).toBe('1 value or pattern is allowed through as it is.');
    expect(allowedText(1200)).toBe('1,200 values and patterns are allowed through as they are.');
  });
});
