import { describe, expect, it } from 'vitest';
import {
  budgetClass,
  budgetText,
  budgetUse,
  checkKeyForm,
  emptyKeyForm,
  expiryText,
  guardText,
  keyState,
  newKeyBody,
  optimizeWords,
  rateText,
  scopeText,
  sortKeys,
  type KeyForm,
} from '../src/lib/keys';

const NOW = Date.UTC(2025, 11, 1, 12, 0, 0);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function form(over: Partial<KeyForm> = {}): KeyForm {
  return { ...emptyKeyForm(), name: 'ci-bot', ...over };
}

describe('budgetUse', () => {
  it('has no bar without a budget', () => {
    expect(budgetUse(3, null)).toEqual({ level: 'none', share: null, fill: 0 });
    expect(budgetUse(3, undefined).level).toBe('none');
    expect(budgetUse(3, 0).level).toBe('none');
  });
  it('is fine up to 80 %, a warning past it, an error from 100 %', () => {
    expect(budgetUse(0, 5)).toEqual({ level: 'ok', share: 0, fill: 0 });
    expect(budgetUse(4, 5).level).toBe('ok');
    expect(budgetUse(4.01, 5).level).toBe('warn');
    expect(budgetUse(5, 5).level).toBe('over');
  });
  it('fills the bar at most once, but keeps the real share', () => {
    expect(budgetUse(7.5, 5)).toEqual({ level: 'over', share: 1.5, fill: 1 });
  });
  it('counts a missing spend as nothing spent', () => {
    expect(budgetUse(null, 5)).toEqual({ level: 'ok', share: 0, fill: 0 });
  });
  it('maps each level to a colour class', () => {
    expect(['none', 'ok', 'warn', 'over'].map((l) => budgetClass(l as Parameters<typeof budgetClass>[0]))).toEqual(['', 'good', 'warn', 'bad']);
  });
  it('says the spend against the budget, or that there is none', () => {
    expect(budgetText(1.2, 5)).toBe('$1.20 of $5.00');
    expect(budgetText(null, 5)).toBe('$0.00 of $5.00');
    expect(budgetText(0.3, null)).toBe('$0.30 spent · no budget');
  });
});

describe('keyState and expiryText', () => {
  it('tells keys in force from expired and revoked ones; revoked wins', () => {
    expect(keyState({ revoked_ms: null, expires_ms: null }, NOW)).toBe('active');
    expect(keyState({ revoked_ms: null, expires_ms: NOW + 1 }, NOW)).toBe('active');
    expect(keyState({ revoked_ms: null, expires_ms: NOW }, NOW)).toBe('expired');
    expect(keyState({ revoked_ms: NOW - 5, expires_ms: NOW - 1 }, NOW)).toBe('revoked');
  });
  it('says how long a key has left', () => {
    expect(expiryText(null, NOW)).toBe('never');
    expect(expiryText(NOW - 1, NOW)).toBe('expired');
    expect(expiryText(NOW + 30 * DAY, NOW)).toBe('in 30d 0h');
    expect(expiryText(NOW + 5 * HOUR + 3 * 60_000, NOW)).toBe('in 5h 3m');
    expect(expiryText(NOW + 41_500, NOW)).toBe('in 42s');
  });
});

describe('sortKeys', () => {
  it('lists keys in force first, then expired, then revoked, by name within each', () => {
    const k = (name: string, revoked_ms: number | null = null, expires_ms: number | null = null) => ({ name, revoked_ms, expires_ms });
    const sorted = sortKeys([k('zed'), k('old', NOW - DAY), k('alice'), k('gone', null, NOW - 1), k('bob', NOW - 2)], NOW);
    expect(sorted.map((x) => x.name)).toEqual(['alice', 'zed', 'gone', 'bob', 'old']);
  });
});

describe('what a key may use', () => {
  it('says "any" for an empty or missing list', () => {
    expect(scopeText([])).toBe('any');
    expect(scopeText(undefined)).toBe('any');
    expect(scopeText(null)).toBe('any');
    expect(scopeText(['gpt-5*', 'claude-*'])).toBe('gpt-5*, claude-*');
  });
  it('lists optimizer overrides, only those set', () => {
    expect(optimizeWords(undefined)).toEqual([]);
    expect(optimizeWords({})).toEqual([]);
    expect(optimizeWords({ tool_output: 'aggressive', prune: 'off', squeeze: false })).toEqual(['tool_output=aggressive', 'prune=off', 'no squeeze']);
    expect(optimizeWords({ terse: 'lite', squeeze: true })).toEqual(['terse=lite', 'squeeze']);
  });
  it('says the rate limits', () => {
    expect(rateText(null, null)).toBe('no limits');
    expect(rateText(60, null)).toBe('60 rpm');
    expect(rateText(60, 100_000)).toBe('60 rpm · 100,000 tpm');
  });
});

describe('the create form', () => {
  it('needs a name the gateway takes', () => {
    expect(checkKeyForm(form({ name: '' })).name).toMatch(/name/);
    expect(checkKeyForm(form({ name: 'a b' })).name).toMatch(/letters, digits/);
    expect(checkKeyForm(form({ name: 'x'.repeat(65) })).name).toBeDefined();
    expect(checkKeyForm(form({ name: 'team.ci_bot-2' }))).toEqual({});
    expect(checkKeyForm(form({ name: 'x'.repeat(64) }))).toEqual({});
  });
  it('checks limits, budgets and the expiry', () => {
    const errs = checkKeyForm(form({ rpm: '0', tpm: '1.5', budgetDay: '-1', budgetMonth: 'lots', expires: 'soon' }));
    expect(Object.keys(errs).sort()).toEqual(['budgetDay', 'budgetMonth', 'expires', 'rpm', 'tpm']);
    expect(checkKeyForm(form({ expires: '0d' })).expires).toBeDefined();
    for (const expires of ['30d', '12h', '1w', '90m', '1h 30m', '2 days']) expect(checkKeyForm(form({ expires }))).toEqual({});
    expect(checkKeyForm(form({ rpm: '60', tpm: '100000', budgetDay: '$5', budgetMonth: '0.50' }))).toEqual({});
  });
  it('sends only the name when nothing else is filled', () => {
    expect(newKeyBody(form({ name: '  ci-bot ', models: ' , ', expires: '  ' }))).toEqual({ name: 'ci-bot' });
  });
  it('sends every filled field, lists split on commas and numbers as numbers', () => {
    const body = newKeyBody(
      form({
        models: 'gpt-5*, claude-sonnet-*,gpt-5*',
        providers: 'openai , anthropic',
        rpm: '60',
        tpm: '100000',
        budgetDay: '5',
        budgetMonth: '$120.50',
        expires: ' 30d ',
        guard: 'block',
      }),
    );
    expect(body).toEqual({
      name: 'ci-bot',
      models: ['gpt-5*', 'claude-sonnet-*'],
      providers: ['openai', 'anthropic'],
      rpm: 60,
      tpm: 100_000,
      budget_day_usd: 5,
      budget_month_usd: 120.5,
      expires: '30d',
      guard: 'block',
    });
  });
  it('offers the guard modes, and blank follows the config', () => {
    expect(checkKeyForm(form({ guard: 'off' }))).toEqual({});
    expect(checkKeyForm(form({ guard: 'sometimes' as KeyForm['guard'] })).guard).toMatch(/Redact, block or off/);
    expect(newKeyBody(form({ guard: '' }))).toEqual({ name: 'ci-bot' });
    expect(guardText(undefined)).toBe('as the config says');
    expect(guardText('block')).toBe('block');
  });
});
