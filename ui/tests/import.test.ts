import { describe, expect, it } from 'vitest';
import { MAX_IMPORT_BYTES, fileProblem, guessFormat, importRequest, keyText, planSummary, toBase64 } from '../src/lib/import';

const text = (s: string) => new TextEncoder().encode(s);

describe('guessFormat', () => {
  it('reads the format from the content as the gateway does', () => {
    const sqlite = new Uint8Array(64);
    sqlite.set(text('SQLite format 3\u0000'));
    expect(guessFormat(sqlite)).toBe('cc-switch');
    expect(guessFormat(text('{"Providers": [], "Router": {}}'))).toBe('claude-code-router');
    expect(guessFormat(text('# proxy\nmodel_list:\n  - model_name: gpt-4o\n'))).toBe('litellm');
  });

  it('recognises nothing else', () => {
    expect(guessFormat(text('{"providers": []}'))).toBeNull();
    expect(guessFormat(text('[1, 2]'))).toBeNull();
    expect(guessFormat(text('shopping: [milk]\n'))).toBeNull();
    expect(guessFormat(new Uint8Array())).toBeNull();
  });
});

describe('toBase64', () => {
  it('encodes any bytes, large ones in chunks', () => {
    expect(toBase64(text('hi'))).toBe('aGk=');
    const big = new Uint8Array(70_000).map((_, i) => i % 256);
    const decoded = Uint8Array.from(atob(toBase64(big)), (c) => c.charCodeAt(0));
    expect(decoded).toEqual(big);
  });
});

describe('importRequest and fileProblem', () => {
  it('sends the format only when one is chosen', () => {
    expect(importRequest('a.json', text('{}'), '')).toEqual({ file_name: 'a.json', content_base64: 'e30=' });
    expect(importRequest('a.json', text('{}'), 'litellm').format).toBe('litellm');
  });

  it('refuses empty and oversized files by name', () => {
    expect(fileProblem('a.db', 0)).toBe('a.db is empty.');
    expect(fileProblem('a.db', MAX_IMPORT_BYTES + 1)).toContain('larger than 16 MiB');
    expect(fileProblem('a.db', 10)).toBeNull();
  });
});

describe('words', () => {
  it('summarises a plan and shows keys only as their masks', () => {
    expect(planSummary({ providers: [1], routes: [1, 2], skipped: [] })).toBe('1 provider, 2 routes, 0 skipped');
    const p = { name: 'x', kind: 'openai' as const, base_url: null, models: [], key_mask: 'sk-…0001', key_from: 'env OPENAI_API_KEY' };
    expect(keyText(p)).toBe('sk-…0001 (from env OPENAI_API_KEY)');
    expect(keyText({ ...p, key_mask: null })).toBe('no key');
  });
});
