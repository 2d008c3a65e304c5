import { describe, expect, it } from 'vitest';
import type { Provider, Route } from '../src/lib/api';
import {
  CLAUDE_SLOTS,
  SUBAGENT_MODEL,
  applySlots,
  parseTargetKey,
  slotPatch,
  slotSetupLines,
  slotTargets,
  slotsFromRoutes,
  standIn,
  targetKey,
} from '../src/lib/slots';

function provider(name: string, models: string[]): Provider {
  return { name, kind: 'openai_compatible', base_url: 'http://127.0.0.1:11434/v1', dialects: ['chat'], models, client_auth: 'never', uses_client_login: false, key: { source: 'none', set: false } };
}

const USERS: Route[] = [
  { match: 'fast', provider: 'local', model: 'qwen3' },
  { match: 'claude-*', provider: 'local' },
];

describe('Claude Code slot routes', () => {
  it('map each slot by its glob, and subagents by one stable name', () => {
    expect(CLAUDE_SLOTS.map((s) => [s.id, s.match, s.env])).toEqual([
      ['opus', 'claude-opus-*', 'ANTHROPIC_DEFAULT_OPUS_MODEL'],
      ['sonnet', 'claude-sonnet-*', 'ANTHROPIC_DEFAULT_SONNET_MODEL'],
      ['haiku', 'claude-haiku-*', 'ANTHROPIC_DEFAULT_HAIKU_MODEL'],
      ['subagent', 'claude-subagent', 'CLAUDE_CODE_SUBAGENT_MODEL'],
    ]);
    const patch = slotPatch({
      haiku: { provider: 'deepseek', model: 'deepseek-chat' },
      opus: { provider: 'openai', model: 'gpt-5' },
      subagent: { provider: 'local', model: 'qwen3' },
    });
    expect(patch.replace).toEqual(['claude-opus-*', 'claude-sonnet-*', 'claude-haiku-*', 'claude-subagent']);
    expect(patch.routes).toEqual([
      { match: 'claude-opus-*', provider: 'openai', model: 'gpt-5' },
      { match: 'claude-haiku-*', provider: 'deepseek', model: 'deepseek-chat' },
      { match: 'claude-subagent', provider: 'local', model: 'qwen3' },
    ]);
  });

  it('go ahead of the user’s routes the first time, which stay as they are', () => {
    const after = applySlots(USERS, { opus: { provider: 'openai', model: 'gpt-5' } });
    expect(after).toEqual([{ match: 'claude-opus-*', provider: 'openai', model: 'gpt-5' }, ...USERS]);
  });

  it('replace the earlier slot routes in their place instead of stacking, and drop a slot set back', () => {
    const once = applySlots(USERS, {
      opus: { provider: 'openai', model: 'gpt-5' },
      haiku: { provider: 'deepseek', model: 'deepseek-chat' },
    });
    // The user moved the slots below their alias by hand.
    const moved = [once[2], once[0], once[1], once[3]];
    const twice = applySlots(moved, {
      haiku: { provider: 'local', model: 'qwen3:8b' },
      sonnet: { provider: 'openai', model: 'gpt-5-mini' },
    });
    expect(twice).toEqual([
      { match: 'fast', provider: 'local', model: 'qwen3' },
      { match: 'claude-sonnet-*', provider: 'openai', model: 'gpt-5-mini' },
      { match: 'claude-haiku-*', provider: 'local', model: 'qwen3:8b' },
      { match: 'claude-*', provider: 'local' },
    ]);
    expect(applySlots(twice, {})).toEqual(USERS);
    // Applying what is in force changes nothing.
    expect(applySlots(twice, slotsFromRoutes(twice))).toEqual(twice);
  });

  it('read back what is in force, the first route of a slot winning', () => {
    const routes: Route[] = [
      { match: 'claude-haiku-*', provider: 'deepseek', model: 'deepseek-chat' },
      { match: 'claude-haiku-*', provider: 'local', model: 'shadowed' },
      { match: 'claude-opus-*', provider: 'anthropic' },
      ...USERS,
    ];
    expect(slotsFromRoutes(routes)).toEqual({
      haiku: { provider: 'deepseek', model: 'deepseek-chat' },
      opus: { provider: 'anthropic' },
    });
    // A slot that passes Claude's name through is written back as it was.
    expect(slotPatch(slotsFromRoutes(routes)).routes[0]).toEqual({ match: 'claude-opus-*', provider: 'anthropic' });
  });

  it('offer every provider’s listed models as provider/model', () => {
    const targets = slotTargets([provider('local', ['qwen3', 'org/model:tag']), provider('empty', [])]);
    expect(targets.map(targetKey)).toEqual(['local/qwen3', 'local/org/model:tag']);
    expect(parseTargetKey('local/org/model:tag')).toEqual({ provider: 'local', model: 'org/model:tag' });
    expect(parseTargetKey('anthropic')).toEqual({ provider: 'anthropic' });
    expect(parseTargetKey('')).toBeNull();
  });
});

describe('Claude Code slot lines', () => {
  it('name the subagent model, the slots as GET /v1/models lists them, and the picker', () => {
    const lines = slotSetupLines({
      opus: { provider: 'deepseek', model: 'deepseek-reasoner' },
      haiku: { provider: 'local', model: 'qwen3:8b' },
      subagent: { provider: 'local', model: 'qwen3' },
    });
    const byId = Object.fromEntries(lines.map((l) => [l.id, l.text]));
    expect(byId['claude-subagent']).toBe(`export CLAUDE_CODE_SUBAGENT_MODEL=${SUBAGENT_MODEL}`);
    expect(byId['claude-slot-names']).toBe(
      'export ANTHROPIC_DEFAULT_OPUS_MODEL=claude-opus-deepseek-reasoner ANTHROPIC_DEFAULT_HAIKU_MODEL=claude-haiku-qwen3-8b',
    );
    expect(byId['claude-picker']).toBe('export CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1');
  });

  it('say nothing of a subagent that is not mapped, and nothing at all with no slot mapped', () => {
    const ids = slotSetupLines({ sonnet: { provider: 'openai', model: 'gpt-5' } }).map((l) => l.id);
    expect(ids).toEqual(['claude-slot-names', 'claude-picker']);
    expect(slotSetupLines({})).toEqual([]);
  });

  it('write stand-in names as the gateway does', () => {
    expect(standIn('claude-sonnet-*', 'Qwen/Qwen3 Coder')).toBe('claude-sonnet-Qwen-Qwen3-Coder');
    expect(standIn('claude-opus-*', 'llama3.1:70b')).toBe('claude-opus-llama3.1-70b');
    expect(standIn('gpt-?', 'x')).toBeNull();
    expect(standIn('claude-subagent', 'x')).toBeNull();
  });
});
