import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  Api,
  ApiError,
  TOKEN_STORAGE_KEY,
  desktopErrorFrom,
  desktopShell,
  updateStatusFrom,
  errorFromResponse,
  forgetToken,
  isLoopbackBase,
  keepToken,
  normalizeRule,
  resolveConnection,
  tokenFromHash,
  updateInfoFrom,
  type ConnectionEnv,
  type GuardMode,
} from '../src/lib/api';

function memoryStorage(initial: Record<string, string> = {}) {
  const data = new Map(Object.entries(initial));
  return {
    data,
    getItem: (k: string) => data.get(k) ?? null,
    setItem: (k: string, v: string) => void data.set(k, v),
    removeItem: (k: string) => void data.delete(k),
  };
}

function env(over: Partial<ConnectionEnv> & { hash?: string } = {}): ConnectionEnv & { urls: string[] } {
  const urls: string[] = [];
  return {
    injected: over.injected,
    location: over.location ?? {
      origin: 'http://127.0.0.1:8788',
      pathname: '/ui/',
      search: '',
      hash: over.hash ?? '',
    },
    storage: over.storage === undefined ? memoryStorage() : over.storage,
    replaceUrl: (u: string) => void urls.push(u),
    urls,
  };
}

describe('tokenFromHash', () => {
  it('reads the token the serve command prints', () => {
    expect(tokenFromHash('#token=ab12cd')).toBe('ab12cd');
  });
  it('reads it among other pairs and without the #', () => {
    expect(tokenFromHash('x=1&token=ff00')).toBe('ff00');
  });
  it('finds none in a router hash or an empty one', () => {
    expect(tokenFromHash('#/providers')).toBeNull();
    expect(tokenFromHash('')).toBeNull();
    expect(tokenFromHash('#token=')).toBeNull();
  });
});

describe('resolveConnection', () => {
  it('uses the desktop shell injection when present', () => {
    const e = env({ injected: { apiBase: 'http://127.0.0.1:9123/', token: 'desk' }, hash: '#token=ignored' });
    const c = resolveConnection(e);
    expect(c).toEqual({ apiBase: 'http://127.0.0.1:9123', token: 'desk', desktop: true });
    expect(e.urls).toEqual([]);
  });

  it('takes the token from the fragment, stores it for the tab and clears the address bar', () => {
    const storage = memoryStorage();
    const e = env({ hash: '#token=0123abcd', storage });
    const c = resolveConnection(e);
    expect(c).toEqual({ apiBase: 'http://127.0.0.1:8788', token: '0123abcd', desktop: false });
    expect(storage.data.get(TOKEN_STORAGE_KEY)).toBe('0123abcd');
    expect(e.urls).toEqual(['/ui/']);
  });

  it('falls back to the token stored earlier in this tab (after a reload)', () => {
    const e = env({ hash: '#/modes', storage: memoryStorage({ [TOKEN_STORAGE_KEY]: 'kept' }) });
    expect(resolveConnection(e).token).toBe('kept');
    expect(e.urls).toEqual([]);
  });

  it('has no token when neither the link nor the tab has one', () => {
    expect(resolveConnection(env()).token).toBeNull();
  });

  it('still works when storage is unavailable', () => {
    const throwing = {
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('denied');
      },
    };
    expect(resolveConnection(env({ hash: '#token=t1', storage: throwing })).token).toBe('t1');
    expect(resolveConnection(env({ storage: throwing })).token).toBeNull();
    expect(resolveConnection(env({ storage: null })).token).toBeNull();
  });
});

describe('signing in with an admin key', () => {
  it('keeps the key under the same name a #token= link uses, so a reload finds it', () => {
    const storage = memoryStorage({ other: 'x' });
    keepToken(storage, 'admin-key-1');
    expect(storage.data.get(TOKEN_STORAGE_KEY)).toBe('admin-key-1');
    const e = env({ hash: '#/keys', storage });
    expect(resolveConnection(e)).toEqual({ apiBase: 'http://127.0.0.1:8788', token: 'admin-key-1', desktop: false });
    expect(e.urls).toEqual([]);
  });

  it('forgets it (and only it) on a refusal or signing out', () => {
    const storage = memoryStorage({ [TOKEN_STORAGE_KEY]: 'k', other: 'x' });
    forgetToken(storage);
    expect([...storage.data.keys()]).toEqual(['other']);
    expect(resolveConnection(env({ storage })).token).toBeNull();
  });

  it('shrugs off storage that is missing or refuses', () => {
    const throwing = {
      getItem: () => null,
      setItem: () => {
        throw new Error('denied');
      },
      removeItem: () => {
        throw new Error('denied');
      },
    };
    expect(() => keepToken(throwing, 'k')).not.toThrow();
    expect(() => forgetToken(throwing)).not.toThrow();
    expect(() => keepToken(null, 'k')).not.toThrow();
  });

  it('tells a page opened on this machine from one opened on a server', () => {
    for (const base of ['http://127.0.0.1:8788', 'http://127.4.5.6:1', 'http://localhost:8788', 'http://[::1]:8788', 'http://LOCALHOST']) {
      expect(isLoopbackBase(base)).toBe(true);
    }
    for (const base of ['https://gateway.example.com', 'http://10.0.0.5:8788', 'http://127.0.0.1.nip.io', 'http://evil.localhost', 'not a url']) {
      expect(isLoopbackBase(base)).toBe(false);
    }
  });
});

describe('errorFromResponse', () => {
  it('maps 401 to unauthorized', () => {
    const e = errorFromResponse(401, '{"error":{"type":"unauthorized","message":"missing or wrong token"}}');
    expect(e.kind).toBe('unauthorized');
    expect(e.message).toBe('missing or wrong token');
    expect(e.type).toBe('unauthorized');
  });

  it('maps a 400 with problems to invalid, problems findable by field', () => {
    const body = JSON.stringify({
      error: { type: 'invalid_config', message: 'the config would not validate' },
      problems: [
        { path: 'providers.x.base_url', message: 'required for openai_compatible' },
        { path: 'optimize.models[1].match', message: 'bad glob' },
      ],
    });
    const e = errorFromResponse(400, body);
    expect(e.kind).toBe('invalid');
    expect(e.problems).toHaveLength(2);
    expect(e.problemFor('base_url')).toBe('required for openai_compatible');
    expect(e.problemFor('providers.x.base_url')).toBe('required for openai_compatible');
    expect(e.problemFor('models')).toBeUndefined();
  });

  it('also accepts problems nested inside the error object', () => {
    const e = errorFromResponse(400, '{"error":{"type":"invalid","message":"m","problems":[{"path":"a.b","message":"c"}]}}');
    expect(e.kind).toBe('invalid');
    expect(e.problemFor('b')).toBe('c');
  });

  it('maps other statuses', () => {
    expect(errorFromResponse(400, '{"error":{"message":"bad json"}}').kind).toBe('client');
    expect(errorFromResponse(403, '').kind).toBe('forbidden');
    expect(errorFromResponse(404, '{"error":{"message":"no provider named x"}}').message).toBe('no provider named x');
    expect(errorFromResponse(502, '<html>bad gateway</html>').kind).toBe('server');
    expect(errorFromResponse(502, '<html>bad gateway</html>').message).toBe('<html>bad gateway</html>');
    expect(errorFromResponse(500, '').message).toMatch(/HTTP 500/);
  });
});

describe('Api against a fake admin server', () => {
  let server: Server;
  let base = '';
  const seen: { method: string; url: string; auth: string | undefined; body: string }[] = [];
  const TOKEN = 'f00d';

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization, body });
        const json = (status: number, v: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(v));
        };
        if (req.headers.authorization !== `Bearer ${TOKEN}`) {
          return json(401, { error: { type: 'unauthorized', message: 'missing or wrong token' } });
        }
        const url = new URL(req.url ?? '/', 'http://x');
        const route = `${req.method} ${url.pathname}`;
        switch (route) {
          case 'GET /admin/api/status':
            return json(200, {
              version: '0.1.0',
              listen: '127.0.0.1:8788',
              uptime_secs: 5,
              config_path: '/tmp/c.toml',
              providers: 0,
              ledger: 'sqlite:///tmp/l.sqlite',
              cache: { entries: 0, bytes: 0 },
              optimizer_paused: false,
              requests: 0,
              local_key: null,
            });
          case 'GET /admin/api/providers':
            return json(200, { providers: [] });
          case 'GET /admin/api/health':
            return json(200, {
              providers: [
                { provider: 'openai', state: 'up', failures: 0, retry_in_secs: null },
                { provider: 'local', state: 'cooling_down', failures: 0, retry_in_secs: 28.5 },
              ],
            });
          case 'GET /admin/api/routes':
            return json(200, { routes: [{ match: 'claude-*', provider: 'anthropic', fallbacks: ['openai/gpt-5'], max_attempts: 4 }] });
          case 'POST /admin/api/providers': {
            const p = JSON.parse(body);
            if (p.kind === 'openai_compatible' && !p.base_url) {
              return json(400, {
                error: { type: 'invalid_config', message: 'the config would not validate' },
                problems: [{ path: `providers.${p.name}.base_url`, message: 'required for kind openai_compatible' }],
              });
            }
            return json(201, {
              name: p.name,
              kind: p.kind,
              base_url: p.base_url ?? 'https://api.openai.com/v1',
              dialects: ['chat', 'responses'],
              models: p.models ?? [],
              key: p.key ? { source: 'keychain', set: true, mask: 'sk-…mock' } : { source: 'none', set: false },
            });
          }
          case 'PUT /admin/api/providers/my%20mock/key':
            return json(200, { mask: 'sk-…1234' });
          case 'DELETE /admin/api/providers/my%20mock/key':
          case 'DELETE /admin/api/providers/my%20mock':
            res.writeHead(204);
            return res.end();
          case 'POST /admin/api/providers/my%20mock/test':
            return json(200, { ok: true, status: 200, latency_ms: 3, message: '2 models' });
          case 'GET /admin/api/savings':
            return json(200, {
              ledger: true,
              since_ms: 0,
              by: url.searchParams.get('by'),
              rows: [],
              total: { key: '', requests: 0 },
            });
          case 'GET /admin/api/requests':
            return json(200, { requests: [{ id: 'r1', limit: url.searchParams.get('limit') }] });
          case 'POST /admin/api/preview':
            return json(200, { output: 'short', tokens_before: 100, tokens_after: 10 });
          case 'POST /admin/api/pause':
            return json(200, { paused: JSON.parse(body).paused });
          case 'GET /admin/api/settings':
            return json(200, { listen: '127.0.0.1:8788', running: '127.0.0.1:8788', restart_needed: false });
          case 'PUT /admin/api/settings': {
            const { listen } = JSON.parse(body);
            if (!/^[\d.]+:\d+$/.test(listen)) {
              return json(400, {
                error: { type: 'invalid_config', message: 'nothing was saved' },
                problems: [{ path: 'server.listen', message: 'expected HOST:PORT' }],
              });
            }
            return json(200, { listen, running: '127.0.0.1:8788', restart_needed: listen !== '127.0.0.1:8788' });
          }
          case 'PATCH /admin/api/routes': {
            const { replace, routes } = JSON.parse(body);
            const kept = [{ match: 'fast', provider: 'local', model: 'qwen3' }].filter((r) => !replace.includes(r.match));
            return json(200, { routes: [...routes, ...kept] });
          }
          case 'GET /admin/api/keys':
            return json(200, {
              keys: [
                {
                  name: 'ci-bot',
                  hint: 'tg-vk-ab12cd',
                  models: ['gpt-5*'],
                  rpm: null,
                  tpm: 1000,
                  budget_day_usd: 5,
                  budget_month_usd: null,
                  expires_ms: null,
                  created_ms: 1,
                  revoked_ms: null,
                  spent_day_usd: 0.5,
                  spent_month_usd: 0.5,
                },
              ],
            });
          case 'POST /admin/api/keys': {
            const k = JSON.parse(body);
            if (k.name === 'taken') return json(400, { error: { type: 'invalid_request', message: 'a key named "taken" exists already' } });
            return json(201, { key: 'tg-vk-ab12cdef', stored: { ...k, hint: 'tg-vk-ab12cd', created_ms: 2, revoked_ms: null } });
          }
          case 'DELETE /admin/api/keys/team%2Fci%20bot':
            return json(200, { revoked: 'team/ci bot' });
          case 'GET /admin/api/audit':
            if (url.searchParams.get('limit') === '7') return json(503, { error: { type: 'unavailable', message: 'the ledger is off' } });
            return json(200, { actions: [{ at_ms: 5, who: 'admin key', method: 'DELETE', path: '/admin/api/keys/x', status: 200, addr: null }] });
          case 'GET /admin/api/guard':
          case 'PUT /admin/api/guard': {
            const mode = req.method === 'PUT' ? JSON.parse(body).mode : 'redact';
            if (!['redact', 'block', 'off'].includes(mode)) {
              return json(400, {
                error: { type: 'invalid_config', message: 'nothing was saved' },
                problems: [{ path: 'guard.mode', message: `"${mode}" is not a guard mode: redact, block or off` }],
              });
            }
            return json(200, {
              mode,
              rules: [{ match: 'claude-*', provider: null, mode: 'block', hooks: [] }],
              hooks: [],
              patterns: ['acme_token'],
              allowed: 2,
              ledger: true,
              today: { since_ms: 0, requests: 1, secrets: 3, by_kind: { github_token: 1, env_secret: 2 } },
              recent: [{ request_id: 'r1', ts_ms: 5, model_requested: 'gpt-5', kinds: { github_token: 1, env_secret: 2 } }],
            });
          }
          case 'GET /admin/api/broken':
            return res.end('not json');
          default:
            return json(404, { error: { type: 'not_found', message: `no route ${route}` } });
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const api = (token: string | null, onUnauthorized?: (e: ApiError) => void) =>
    new Api({ apiBase: base, token, desktop: false }, { onUnauthorized });

  it('sends the bearer token and reads typed answers', async () => {
    const s = await api(TOKEN).status();
    expect(s.listen).toBe('127.0.0.1:8788');
    expect(seen.at(-1)?.auth).toBe(`Bearer ${TOKEN}`);
    expect(seen.at(-1)?.url).toBe('/admin/api/status');
    expect(await api(TOKEN).providers()).toEqual([]);
  });

  it('turns a wrong token into an unauthorized error and tells the app once', async () => {
    const onUnauthorized = vi.fn();
    await expect(api('wrong', onUnauthorized).status()).rejects.toMatchObject({ kind: 'unauthorized', status: 401 });
    expect(onUnauthorized).toHaveBeenCalledTimes(1);
    await expect(api(null).providers()).rejects.toBeInstanceOf(ApiError);
    expect(seen.at(-1)?.auth).toBeUndefined();
  });

  it('posts a provider as JSON and gets problems back by field', async () => {
    const created = await api(TOKEN).addProvider({ name: 'm', kind: 'openai', base_url: 'http://x/v1', key: 'sk-mock' });
    expect(created.key).toEqual({ source: 'keychain', set: true, mask: 'sk-…mock' });
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ name: 'm', kind: 'openai', base_url: 'http://x/v1', key: 'sk-mock' });
    const err = await api(TOKEN)
      .addProvider({ name: 'local', kind: 'openai_compatible' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).kind).toBe('invalid');
    expect((err as ApiError).problemFor('base_url')).toBe('required for kind openai_compatible');
  });

  it('escapes provider names in paths and handles 204', async () => {
    expect(await api(TOKEN).setKey('my mock', 'sk-abc1234')).toEqual({ mask: 'sk-…1234' });
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ key: 'sk-abc1234' });
    await expect(api(TOKEN).deleteKey('my mock')).resolves.toBeUndefined();
    await expect(api(TOKEN).deleteProvider('my mock')).resolves.toBeUndefined();
    expect(seen.at(-1)?.method).toBe('DELETE');
    expect((await api(TOKEN).testProvider('my mock')).ok).toBe(true);
  });

  it('builds the savings and requests queries', async () => {
    const s = await api(TOKEN).savings('hour', '24h');
    expect(s.by).toBe('hour');
    expect(seen.at(-1)?.url).toBe('/admin/api/savings?since=24h&by=hour');
    await api(TOKEN).requests(20);
    expect(seen.at(-1)?.url).toBe('/admin/api/requests?limit=20');
  });

  it('previews and pauses', async () => {
    expect(await api(TOKEN).preview('x'.repeat(50), 'aggressive')).toEqual({ output: 'short', tokens_before: 100, tokens_after: 10 });
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ text: 'x'.repeat(50), tool_output: 'aggressive' });
    expect(await api(TOKEN).pause(true)).toBe(true);
  });

  it('reads each provider’s health and a route’s fallbacks', async () => {
    const health = await api(TOKEN).health();
    expect(seen.at(-1)?.url).toBe('/admin/api/health');
    expect(health.map((h) => [h.provider, h.state, h.retry_in_secs])).toEqual([
      ['openai', 'up', null],
      ['local', 'cooling_down', 28.5],
    ]);
    const [route] = await api(TOKEN).routes();
    expect(route.fallbacks).toEqual(['openai/gpt-5']);
    expect(route.max_attempts).toBe(4);
  });

  it('replaces some routes and reads back all of them', async () => {
    const slot = { match: 'claude-haiku-*', provider: 'local', model: 'qwen3:8b' };
    expect(await api(TOKEN).patchRoutes(['claude-haiku-*'], [slot])).toEqual([slot, { match: 'fast', provider: 'local', model: 'qwen3' }]);
    expect(seen.at(-1)?.method).toBe('PATCH');
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ replace: ['claude-haiku-*'], routes: [slot] });
  });

  it('reads and writes the listen address', async () => {
    expect((await api(TOKEN).settings()).restart_needed).toBe(false);
    const s = await api(TOKEN).putSettings('127.0.0.1:9000');
    expect(s).toEqual({ listen: '127.0.0.1:9000', running: '127.0.0.1:8788', restart_needed: true });
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ listen: '127.0.0.1:9000' });
    const err = await api(TOKEN)
      .putSettings('nowhere')
      .catch((e: unknown) => e);
    expect((err as ApiError).problemFor('listen')).toBe('expected HOST:PORT');
  });

  it('reads the guard and switches its mode, a mode that is none refused by field', async () => {
    const g = await api(TOKEN).guard();
    expect(g.mode).toBe('redact');
    expect(g.today.by_kind).toEqual({ github_token: 1, env_secret: 2 });
    const set = await api(TOKEN).putGuardMode('block');
    expect(set.mode).toBe('block');
    expect(seen.at(-1)).toMatchObject({ method: 'PUT', url: '/admin/api/guard' });
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ mode: 'block' });
    const err = await api(TOKEN)
      .putGuardMode('sometimes' as GuardMode)
      .catch((e: unknown) => e);
    expect((err as ApiError).kind).toBe('invalid');
    expect((err as ApiError).problemFor('guard.mode')).toMatch(/not a guard mode/);
  });

  it('reports a 404 with the server message and a non-JSON 200 as a server error', async () => {
    await expect(api(TOKEN).reload()).rejects.toMatchObject({ kind: 'client', status: 404 });
    const a = api(TOKEN) as unknown as { call: (m: string, p: string) => Promise<unknown> };
    await expect(a.call('GET', '/broken')).rejects.toMatchObject({ kind: 'server' });
  });

  it('lists, makes and revokes virtual keys, the name escaped in the path', async () => {
    const [k] = await api(TOKEN).keys();
    expect(k).toMatchObject({ name: 'ci-bot', budget_day_usd: 5, spent_day_usd: 0.5, budget_month_usd: null });
    const made = await api(TOKEN).createKey({ name: 'ci-bot-2', budget_day_usd: 5 });
    expect(made.key).toBe('tg-vk-ab12cdef');
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ name: 'ci-bot-2', budget_day_usd: 5 });
    await expect(api(TOKEN).createKey({ name: 'taken' })).rejects.toMatchObject({ kind: 'client', status: 400, message: 'a key named "taken" exists already' });
    expect(await api(TOKEN).revokeKey('team/ci bot')).toBe('team/ci bot');
    expect(seen.at(-1)?.method).toBe('DELETE');
  });

  it('reads the admin actions, and says 503 when there is no ledger', async () => {
    const [a] = await api(TOKEN).audit();
    expect(seen.at(-1)?.url).toBe('/admin/api/audit?limit=100');
    expect(a).toMatchObject({ who: 'admin key', addr: null });
    await expect(api(TOKEN).audit(7)).rejects.toMatchObject({ kind: 'server', status: 503, message: 'the ledger is off' });
  });

  it('reports an unreachable gateway as a network error', async () => {
    const dead = new Api({ apiBase: 'http://127.0.0.1:9', token: TOKEN, desktop: false });
    await expect(dead.status()).rejects.toMatchObject({ kind: 'network' });
  });
});

describe('desktop shell', () => {
  it('is absent in a plain browser', () => {
    expect(desktopShell({})).toBeNull();
    expect(desktopShell(undefined)).toBeNull();
    expect(desktopShell({ __TAURI__: {} })).toBeNull();
  });

  it('calls the Tauri commands through invoke', async () => {
    const calls: [string, unknown][] = [];
    let enabled = false;
    const invoke = async (cmd: string, args?: Record<string, unknown>) => {
      calls.push([cmd, args]);
      if (cmd === 'get_autostart') return enabled;
      if (cmd === 'set_autostart') enabled = Boolean(args?.enabled);
      if (cmd === 'check_update') return { version: '0.2.0', notes: 'faster' };
      if (cmd === 'install_update') throw { kind: 'updater', message: 'signature does not match' };
      if (cmd === 'update_status') return { current_version: '0.1.0', last_check: { at_ms: 1700000000000, version: '0.2.0', error: null } };
      return null;
    };
    const shell = desktopShell({ __TAURI__: { core: { invoke } } })!;
    expect(await shell.getAutostart()).toBe(false);
    await shell.setAutostart(true);
    expect(await shell.getAutostart()).toBe(true);
    expect(await shell.checkUpdate()).toEqual({ available: true, version: '0.2.0', notes: 'faster' });
    await expect(shell.installUpdate()).rejects.toMatchObject({ kind: 'updater', message: 'signature does not match' });
    expect(await shell.updateStatus()).toEqual({ currentVersion: '0.1.0', lastCheck: { atMs: 1700000000000, version: '0.2.0', error: undefined } });
    expect(calls.map((c) => c[0])).toEqual(['get_autostart', 'set_autostart', 'get_autostart', 'check_update', 'install_update', 'update_status']);
    expect(calls[1][1]).toEqual({ enabled: true });
  });

  it('reads the last update check, failed or never made', () => {
    expect(updateStatusFrom({ current_version: '0.1.0', last_check: null })).toEqual({ currentVersion: '0.1.0', lastCheck: null });
    expect(updateStatusFrom({ last_check: { at_ms: 5, version: null, error: 'status 502' } }).lastCheck).toEqual({ atMs: 5, version: undefined, error: 'status 502' });
    expect(updateStatusFrom(null)).toEqual({ currentVersion: undefined, lastCheck: null });
  });

  it('reads the shapes check_update may answer', () => {
    expect(updateInfoFrom(null)).toEqual({ available: false });
    expect(updateInfoFrom('0.3.0')).toEqual({ available: true, version: '0.3.0' });
    expect(updateInfoFrom({ available: false })).toEqual({ available: false, version: undefined, notes: undefined });
    expect(desktopErrorFrom('boom')).toMatchObject({ kind: 'shell', message: 'boom' });
  });
});

describe('normalizeRule', () => {
  it('drops fields a rule does not set, null or absent', () => {
    const raw = { match: 'claude-*', tool_output: 'aggressive', terse: null, prune: undefined } as unknown as Parameters<typeof normalizeRule>[0];
    expect(normalizeRule(raw)).toEqual({ match: 'claude-*', tool_output: 'aggressive' });
    expect(normalizeRule({ match: 'x', squeeze: false })).toEqual({ match: 'x', squeeze: false });
  });
});
