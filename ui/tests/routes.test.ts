import { describe, expect, it } from 'vitest';
import { PLACEHOLDER_KEY, WRAP_LINES, firstModel, firstRequestLines, setupLines } from '../src/lib/agents';
import { PAGES, hrefFor, pageFromHash } from '../src/lib/routes';

describe('hash router', () => {
  it('maps hashes to pages, anything else to the overview', () => {
    expect(pageFromHash('#/providers')).toBe('providers');
    expect(pageFromHash('#/modes')).toBe('modes');
    expect(pageFromHash('#/routes')).toBe('routes');
    expect(pageFromHash('#agents')).toBe('agents');
    expect(pageFromHash('#/keys')).toBe('keys');
    expect(pageFromHash('#/guard')).toBe('guard');
    expect(pageFromHash('#/settings?x=1')).toBe('settings');
    expect(pageFromHash('')).toBe('overview');
    expect(pageFromHash('#token=abc')).toBe('overview');
    expect(pageFromHash('#/nope')).toBe('overview');
  });
  it('round-trips every page', () => {
    for (const p of PAGES) expect(pageFromHash(hrefFor(p.id))).toBe(p.id);
  });
});

describe('agent setup lines', () => {
  it('points Claude Code at the root and OpenAI clients at /v1 with a placeholder key', () => {
    const lines = setupLines('127.0.0.1:9123');
    const byId = Object.fromEntries(lines.map((l) => [l.id, l.text]));
    expect(byId.claude).toBe('export ANTHROPIC_BASE_URL=http://127.0.0.1:9123');
    expect(byId.openai).toBe(`export OPENAI_BASE_URL=http://127.0.0.1:9123/v1 OPENAI_API_KEY=${PLACEHOLDER_KEY}`);
    expect(byId.python).toContain('base_url="http://127.0.0.1:9123/v1"');
  });
  it('carry the local key: Claude Code in its own header, other clients as their key', () => {
    const key = 'tg-local-0123abcd';
    const byId = Object.fromEntries(setupLines('127.0.0.1:9123', key).map((l) => [l.id, l.text]));
    expect(byId.claude).toBe(
      `export ANTHROPIC_BASE_URL=http://127.0.0.1:9123 ANTHROPIC_CUSTOM_HEADERS='x-trimgate-key: ${key}'`,
    );
    expect(byId.openai).toBe(`export OPENAI_BASE_URL=http://127.0.0.1:9123/v1 OPENAI_API_KEY=${key}`);
    expect(byId.python).toContain(`api_key="${key}"`);
    expect(byId['anthropic-sdk']).toContain(`api_key="${key}"`);
    for (const text of Object.values(byId)) expect(text).not.toContain(PLACEHOLDER_KEY);
  });
  it('leave the local key out when the gateway does not ask for one', () => {
    for (const line of setupLines('127.0.0.1:9123', null)) {
      expect(line.text).not.toContain('x-trimgate-key');
      expect(line.text).not.toContain('tg-local-');
    }
  });
  it('offers trimgate wrap for each agent', () => {
    expect(WRAP_LINES.map((l) => l.text.split(' ').slice(0, 3).join(' '))).toEqual([
      'trimgate wrap claude',
      'trimgate wrap codex',
      'trimgate wrap aider',
    ]);
  });
});

describe('first request lines', () => {
  const openai = { name: 'work', kind: 'openai' as const, models: [] };
  const ollama = { name: 'local', kind: 'openai_compatible' as const, models: [] };
  it('carry a model of the first provider that has one, as provider/model', () => {
    expect(firstModel(openai)).toBe('work/gpt-5-mini');
    expect(firstModel({ ...ollama, models: ['qwen3-coder'] })).toBe('local/qwen3-coder');
    expect(firstModel(ollama)).toBeNull();
    const lines = firstRequestLines('127.0.0.1:8788', null, [ollama, openai]);
    const byId = Object.fromEntries(lines.map((l) => [l.id, l.text]));
    expect(byId['first-claude']).toBe(
      "ANTHROPIC_BASE_URL=http://127.0.0.1:8788 ANTHROPIC_DEFAULT_HAIKU_MODEL=work/gpt-5-mini claude -p --model work/gpt-5-mini 'Say hello.'",
    );
    expect(byId['first-codex']).toBe("OPENAI_BASE_URL=http://127.0.0.1:8788/v1 OPENAI_API_KEY=sk-trimgate codex exec -m work/gpt-5-mini 'Say hello.'");
    expect(byId['first-curl']).toContain(`-d '{"model":"work/gpt-5-mini","messages":[{"role":"user","content":"Say hello."}]}'`);
  });
  it('are none without a model to name, and carry the local key when there is one', () => {
    expect(firstRequestLines('127.0.0.1:8788', null, [ollama])).toEqual([]);
    const lines = firstRequestLines('127.0.0.1:8788', 'tg-local-1', [openai]);
    expect(lines[0].text).toContain("ANTHROPIC_CUSTOM_HEADERS='x-trimgate-key: tg-local-1'");
    expect(lines[2].text).toContain('authorization: Bearer tg-local-1');
  });
});
