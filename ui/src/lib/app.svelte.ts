/**
 * State the whole window shares: the API client for this launch, the gateway's status,
 * and whether the token was refused (then every page gives way to how to get a link, or,
 * in a browser, to signing in with the server's admin key).
 */
import { Api, ApiError, browserEnv, browserTokenStore, forgetToken, keepToken, resolveConnection, type Status } from './api';
import { effectiveListen } from './format';

export const connection = resolveConnection(browserEnv());

class AppState {
  unauthorized = $state(false);
  status = $state<Status | null>(null);
  statusError = $state<string | null>(null);
}

export const app = new AppState();

export const api = new Api(connection, {
  onUnauthorized: () => {
    app.unauthorized = true;
  },
});

if (!connection.token) app.unauthorized = true;

export async function refreshStatus(): Promise<Status | null> {
  try {
    const s = await api.status();
    app.status = s;
    app.statusError = null;
    return s;
  } catch (e) {
    app.statusError = messageOf(e);
    return null;
  }
}

/** Where agents reach this gateway (see `effectiveListen`); null until the status is known. */
/** Why the last admin key typed in was not taken. */
export const KEY_REFUSED = 'That admin key was refused.';

/**
 * Signs the tab in with an admin key: kept in sessionStorage as the bearer (as a `#token=`
 * link's token is) and tried on `/status`. Answers null when it was taken, else why not;
 * a key not taken is forgotten at once.
 */
export async function signIn(key: string): Promise<string | null> {
  const value = key.trim();
  if (!value) return 'Enter the admin key.';
  const store = browserTokenStore();
  keepToken(store, value);
  connection.token = value;
  try {
    app.status = await api.status();
    app.statusError = null;
    app.unauthorized = false;
    return null;
  } catch (e) {
    forgetToken(store);
    connection.token = null;
    app.unauthorized = true;
    return e instanceof ApiError && e.kind === 'unauthorized' ? KEY_REFUSED : messageOf(e);
  }
}

/** Forgets the tab's bearer; every page gives way to signing in again. */
export function signOut(): void {
  forgetToken(browserTokenStore());
  connection.token = null;
  app.status = null;
  app.statusError = null;
  app.unauthorized = true;
}

export function listenAddress(): string | null {
  return app.status ? effectiveListen(app.status.listen, connection.apiBase) : null;
}

export function messageOf(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  return e instanceof Error ? e.message : String(e);
}
