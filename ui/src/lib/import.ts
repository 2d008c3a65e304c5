/**
 * The Providers page's import: which format a file looks like, its bytes as the admin API
 * takes them, and the words the panel shows. The gateway reads the file itself; the guess
 * here only labels the "detected" choice before anything is sent.
 */
import type { ImportFormat, ImportRequest, ImportedProvider } from './api';

/** The most the gateway takes (its `import::MAX_FILE_BYTES`). */
export const MAX_IMPORT_BYTES = 16 * 1024 * 1024;

export const IMPORT_FORMATS: readonly { value: ImportFormat; label: string }[] = [
  { value: 'cc-switch', label: 'CC Switch database (cc-switch.db)' },
  { value: 'claude-code-router', label: 'claude-code-router config.json' },
  { value: 'litellm', label: 'LiteLLM config.yaml' },
];

/** What the file input accepts. */
export const IMPORT_ACCEPT = '.db,.sqlite,.json,.yaml,.yml';

const SQLITE_MAGIC = 'SQLite format 3\u0000';

/** The format a file's content looks like, as the gateway decides it: SQLite's header, JSON with `Providers`, YAML with `model_list`. */
export function guessFormat(bytes: Uint8Array): ImportFormat | null {
  const head = String.fromCharCode(...bytes.subarray(0, SQLITE_MAGIC.length));
  if (head === SQLITE_MAGIC) return 'cc-switch';
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes.subarray(0, 1 << 20));
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      return 'Providers' in parsed ? 'claude-code-router' : null;
    }
  } catch {
    // Not JSON: YAML, perhaps.
  }
  return /^model_list\s*:/m.test(text) ? 'litellm' : null;
}

export function formatLabel(format: ImportFormat | null): string {
  return IMPORT_FORMATS.find((f) => f.value === format)?.label ?? 'not recognised';
}

/** Base64 of `bytes`, in chunks (a spread of megabytes would overflow the call stack). */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  const CHUNK = 0x8000;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(binary);
}

/** Why a file cannot be sent at all, or null. */
export function fileProblem(name: string, size: number): string | null {
  if (size === 0) return `${name} is empty.`;
  if (size > MAX_IMPORT_BYTES) return `${name} is larger than ${MAX_IMPORT_BYTES >> 20} MiB, the most an import takes.`;
  return null;
}

/** The request for a file; `format` empty means "found from the content". */
export function importRequest(name: string, bytes: Uint8Array, format: ImportFormat | ''): ImportRequest {
  const req: ImportRequest = { file_name: name, content_base64: toBase64(bytes) };
  if (format) req.format = format;
  return req;
}

/** "3 providers, 4 routes, 2 skipped". */
export function planSummary(plan: { providers: unknown[]; routes: unknown[]; skipped: unknown[] }): string {
  const n = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;
  return [n(plan.providers.length, 'provider', 'providers'), n(plan.routes.length, 'route', 'routes'), n(plan.skipped.length, 'skipped', 'skipped')].join(', ');
}

/** How a provider's key is shown in the preview: its mask and where it was found, or that it has none. */
export function keyText(p: ImportedProvider): string {
  if (!p.key_mask) return 'no key';
  return p.key_from ? `${p.key_mask} (from ${p.key_from})` : p.key_mask;
}
