/** The window's pages and the hash router's parsing; pure so it can be tested. */

export type PageId = 'overview' | 'requests' | 'providers' | 'routes' | 'modes' | 'guard' | 'agents' | 'keys' | 'settings';

export const PAGES: readonly { id: PageId; title: string }[] = [
  { id: 'overview', title: 'Overview' },
  { id: 'requests', title: 'Requests' },
  { id: 'providers', title: 'Providers' },
  { id: 'routes', title: 'Routes' },
  { id: 'modes', title: 'Models & modes' },
  { id: 'guard', title: 'Guard' },
  { id: 'agents', title: 'Agents' },
  { id: 'keys', title: 'Keys' },
  { id: 'settings', title: 'Settings' },
];

/** `#/providers` → "providers"; anything unknown (or a `#token=…` not yet cleared) → "overview". */
export function pageFromHash(hash: string): PageId {
  const id = hash.replace(/^#\/?/, '').split(/[/?&]/)[0];
  return PAGES.some((p) => p.id === id) ? (id as PageId) : 'overview';
}

export function hrefFor(page: PageId): string {
  return `#/${page}`;
}

/** `#/requests/<id>` → the request's id (decoded); null on any other hash. */
export function requestIdFromHash(hash: string): string | null {
  const m = /^#\/?requests\/([^?&]+)/.exec(hash);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return null;
  }
}

export function hrefForRequest(id: string): string {
  return `#/requests/${encodeURIComponent(id)}`;
}
