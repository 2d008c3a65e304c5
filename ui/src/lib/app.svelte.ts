/**
 * State the whole window shares: the API client for this launch, the gateway's status,
 * and whether the token was refused (then every page gives way to how to get a link).
 */
import { Api, ApiError, browserEnv, resolveConnection, type Status } from './api';
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
export function listenAddress(): string | null {
  return app.status ? effectiveListen(app.status.listen, connection.apiBase) : null;
}

export function messageOf(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  return e instanceof Error ? e.message : String(e);
}
