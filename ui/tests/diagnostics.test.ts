import { describe, expect, it } from 'vitest';
import { browserClipboard, copyText, logFileView, type LogStatus } from '../src/lib/diagnostics';

const WRITING: LogStatus = {
  off: false,
  dir: '/home/u/.local/state/trimgate/logs',
  file: '/home/u/.local/state/trimgate/logs/trimgate.log',
  writable: true,
  error: null,
};

describe('logFileView', () => {
  it('shows the file and offers its dir while lines go there', () => {
    expect(logFileView(WRITING)).toEqual({ path: WRITING.file, dir: WRITING.dir, problem: null });
  });
  it('names the dir and the error when the file cannot be written, and offers no dir', () => {
    const v = logFileView({ ...WRITING, writable: false, error: 'Permission denied (os error 13)' });
    expect(v.dir).toBeNull();
    expect(v.path).toBe(WRITING.file);
    expect(v.problem).toContain(WRITING.dir);
    expect(v.problem).toContain('Permission denied');
  });
  it('says the file is off', () => {
    const v = logFileView({ off: true, dir: null, file: null, writable: false, error: null });
    expect(v.path).toBeNull();
    expect(v.problem).toContain('off');
  });
});

describe('copyText', () => {
  it('copies through the clipboard', async () => {
    let copied = '';
    expect(await copyText('report', { writeText: async (t) => void (copied = t) })).toBe(true);
    expect(copied).toBe('report');
  });
  it('is false without a clipboard, or when it refuses', async () => {
    expect(await copyText('report', null)).toBe(false);
    expect(await copyText('report', { writeText: () => Promise.reject(new Error('denied')) })).toBe(false);
  });
  it('finds no clipboard where the page has none', () => {
    expect(browserClipboard({})).toBeNull();
    expect(browserClipboard(undefined)).toBeNull();
    expect(browserClipboard({ clipboard: { writeText: async () => {} } })).not.toBeNull();
  });
});
