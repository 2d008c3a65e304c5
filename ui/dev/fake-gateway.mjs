#!/usr/bin/env node
// A stand-in for `trimgate serve` for working on the window without building the gateway:
// serves ui/dist at /ui/ and answers the admin API of docs/admin-api.md from memory, plus a
// canned OpenAI Chat Completions endpoint so traffic shows in the feed and the charts.
// It prints the same `Window:` line as the real server. Nothing it computes is a real
// saving: tool messages are "compacted" to a fifth of their length. Virtual keys are kept
// and their spend counted (a chat request presenting one is charged to it), but not
// enforced; `--admin-key` is taken as the bearer as well as the printed token, as a server
// beyond loopback takes its admin key; admin changes are logged for `GET /admin/api/audit`.
// GitHub tokens and AWS access key ids in chat requests are counted for the Guard page
// (nothing is replaced or refused; the mode is only kept).
//
//   node dev/fake-gateway.mjs [--port 8799] [--no-ledger] [--admin-key KEY]
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const port = Number(args[args.indexOf('--port') + 1] || 0) || 0;
const ledgerOn = !args.includes('--no-ledger');
const adminKey = args.includes('--admin-key') ? args[args.indexOf('--admin-key') + 1] || null : null;
const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const token = randomBytes(32).toString('hex');
const started = Date.now();

const state = {
  providers: new Map(),
  keys: new Map(),
  modes: {
    defaults: { tool_output: 'auto', terse: 'off', prune: 'auto', squeeze: false },
    models: [],
  },
  paused: false,
  requests: [],
  routes: [],
  /** Provider name → when its cooldown ends (ms). */
  cooling: new Map(),
  /** Virtual key name → { stored, secret, charges: [{ at_ms, usd }] }. */
  vkeys: new Map(),
  /** Admin changes, oldest first. */
  audit: [],
  /** `[guard] mode`. */
  guardMode: 'redact',
};
/** Secrets the stand-in finds, by kind: a tiny part of the gateway's rules. */
const SECRET_RULES = [
  ['github_token', /\bghp_[A-Za-z0-9]{36}\b/g],
  ['aws_access_key', /\bAKIA[0-9A-Z]{16}\b/g],
];
/** As `[retry] cooldown_failures = 1`, `cooldown_secs = 600`. */
const COOLDOWN_MS = 600_000;
/** A provider at port 1 stands for one that refuses connections. */
const refuses = (p) => /:1(\/|$)/.test(p.base_url ?? '');
const globMatch = (glob, name) => new RegExp('^' + glob.split('*').map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*') + '$').test(name);

/** The provider and model a request goes to: its route's steps in order, past cooling or refusing ones. */
function pick(model) {
  const route = state.routes.find((r) => globMatch(r.match, model));
  if (!route) {
    const p = [...state.providers.values()].find((q) => q.models.includes(model) || q.kind === 'openai');
    return p ? { provider: p, served: model } : null;
  }
  const steps = [[route.provider, route.model ?? model], ...(route.fallbacks ?? []).map((f) => f.split('/'))];
  for (const [name, served] of steps) {
    const p = state.providers.get(name);
    if (!p || (state.cooling.get(name) ?? 0) > Date.now()) continue;
    if (refuses(p)) {
      state.cooling.set(name, Date.now() + COOLDOWN_MS);
      continue;
    }
    return { provider: p, served };
  }
  return null;
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };
const mask = (k) => `${k.slice(0, 3)}…${k.slice(-4)}`;
const tokens = (s) => Math.ceil(s.length / 4);

function providerView(p) {
  const key = state.keys.get(p.name);
  return {
    name: p.name,
    kind: p.kind,
    base_url: p.base_url,
    dialects: p.kind === 'anthropic' ? ['messages'] : ['chat'],
    models: p.models,
    // As the gateway: an Anthropic provider without a key forwards the client's own login.
    client_auth: p.kind === 'anthropic' ? 'auto' : 'never',
    uses_client_login: p.kind === 'anthropic' && !key,
    key: key ? { source: 'keychain', set: true, mask: mask(key) } : { source: 'none', set: false },
  };
}

function totals(key, rows) {
  const t = {
    key,
    requests: 0,
    errors: 0,
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    saved_tokens: 0,
    cost_usd: 0,
    saved_usd: 0,
    overhead_ms_avg: 0,
    cache_lookups: 0,
    cache_hits: 0,
  };
  for (const r of rows) {
    t.requests += 1;
    t.errors += r.status >= 400 ? 1 : 0;
    t.input_tokens += r.input_tokens;
    t.output_tokens += r.output_tokens;
    t.saved_tokens += r.saved_tokens;
    t.cost_usd += r.input_tokens * 1.25e-6 + r.output_tokens * 1e-5;
    t.saved_usd += r.saved_tokens * 1.25e-6;
    t.overhead_ms_avg += r.overhead_ms / rows.length;
    t.cache_lookups += 1;
    t.cache_hits += r.cache === 'hit' ? 1 : 0;
  }
  return t;
}

function savings(url) {
  const by = url.searchParams.get('by') ?? 'model';
  const since = url.searchParams.get('since') ?? '7d';
  const m = /^(\d+)([smhd]?)$/.exec(since);
  const unit = { '': 0, s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[m?.[2] ?? 'd'];
  const sinceMs = !m ? 0 : unit === 0 ? Number(m[1]) : Date.now() - Number(m[1]) * unit;
  const rows = ledgerOn ? state.requests.filter((r) => r.time_ms >= sinceMs) : [];
  const groups = new Map();
  const add = (k, r) => groups.set(k, [...(groups.get(k) ?? []), r]);
  for (const r of rows) {
    if (by === 'hour' || by === 'day') {
      const step = by === 'hour' ? 36e5 : 864e5;
      add(String(Math.floor(r.time_ms / step) * step), r);
    } else if (by === 'pass') {
      for (const p of r.passes) add(p.pass, { ...r, saved_tokens: p.before - p.after });
    } else if (by === 'passes') add(r.applied ?? '', r);
    else add(by === 'provider' ? r.provider : r.model, r);
  }
  return {
    ledger: ledgerOn,
    since_ms: sinceMs,
    by,
    rows: [...groups].map(([k, rs]) => totals(k, rs)),
    total: totals('total', rows),
  };
}

/** `GET /sessions`: the fake's requests as one session, with no held-out traffic. */
function sessionsReport(url) {
  const { since_ms, total } = savings(url);
  const side = { sessions: total.requests ? 1 : 0, requests: total.requests, tokens: total.input_tokens + total.saved_tokens, cost_usd: total.cost_usd };
  const none = { sessions: 0, requests: 0, tokens: 0, cost_usd: 0 };
  const breaks = { gateway: 0, client: 0, provider: 0 };
  const sessions = total.requests
    ? [{ session: 'h-0123456789abcdef', first_ms: since_ms, last_ms: Date.now(), model: 'claude-sonnet-5-5', requests: total.requests, input_tokens: total.input_tokens, cache_read_tokens: total.cache_read_tokens, cache_write_tokens: 0, saved_tokens: total.saved_tokens, cost_usd: total.cost_usd, saved_usd: total.saved_usd, breaks, held_out: false }]
    : [];
  return {
    ledger: ledgerOn,
    report: {
      since_ms,
      sessions,
      session_count: sessions.length,
      breaks,
      holdout: { optimized: side, held_out: none, models: [], compared_optimized: none, compared_held_out: none, expected_usd: null, net_saved_usd: null, net_saved_share: null, note: 'not enough held-out traffic: none in this window (set [optimize] holdout, e.g. 0.1)' },
    },
  };
}

const DAY_MS = 864e5;
/** Cost as the savings totals price it. */
const costOf = (input, output) => input * 1.25e-6 + output * 1e-5;
const badRequest = (message) => [400, { error: { type: 'invalid_request', message } }];
const NO_LEDGER = [503, { error: { type: 'unavailable', message: "virtual keys live in the ledger's database, and the ledger is off" } }];
const KEY_FIELDS = ['name', 'models', 'providers', 'optimize', 'rpm', 'tpm', 'budget_day_usd', 'budget_month_usd', 'expires', 'guard'];
const GUARD_MODES = ['redact', 'block', 'off'];
const DURATION_UNITS = { m: 6e4, min: 6e4, h: 36e5, d: DAY_MS, w: 7 * DAY_MS };

/** `30d`, `12h`, `1w 2d` → ms; null when it is not such a duration. */
function parseDuration(text) {
  const parts = [...String(text).matchAll(/(\d+)\s*(min|m|h|d|w)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('').replace(/\s/g, '') !== String(text).replace(/\s/g, '')) return null;
  return parts.reduce((ms, p) => ms + Number(p[1]) * DURATION_UNITS[p[2]], 0);
}

function keyView({ stored, charges }) {
  const now = Date.now();
  const dayStart = Math.floor(now / DAY_MS) * DAY_MS;
  const d = new Date(now);
  const monthStart = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const since = (t) => charges.filter((c) => c.at_ms >= t).reduce((sum, c) => sum + c.usd, 0);
  return { ...stored, spent_day_usd: since(dayStart), spent_month_usd: since(monthStart) };
}

function keys(method, seg, body) {
  if (!ledgerOn) return NO_LEDGER;
  const now = Date.now();
  if (!seg[1] && method === 'GET') {
    const list = [...state.vkeys.values()].sort((a, b) => (a.stored.name < b.stored.name ? -1 : 1));
    return [200, { keys: list.map(keyView) }];
  }
  if (!seg[1] && method === 'POST') {
    const unknown = Object.keys(body).find((k) => !KEY_FIELDS.includes(k));
    if (unknown) return badRequest(`unknown field \`${unknown}\`, expected one of ${KEY_FIELDS.join(', ')}`);
    const name = String(body.name ?? '').trim();
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) return badRequest("a key's name is 1 to 64 letters, digits, '-', '_' or '.'");
    if (state.vkeys.has(name)) return badRequest(`a key named "${name}" exists already`);
    if (body.rpm === 0 || body.tpm === 0) return badRequest('rpm and tpm must be at least 1');
    if (body.guard != null && !GUARD_MODES.includes(body.guard)) return badRequest(`${JSON.stringify(body.guard)} is not a guard mode: redact, block or off`);
    for (const b of [body.budget_day_usd, body.budget_month_usd]) {
      if (b != null && !(Number.isFinite(b) && b > 0)) return badRequest('a budget is a positive number of US dollars');
    }
    let expires_ms = null;
    if (body.expires != null) {
      const ms = parseDuration(body.expires);
      if (ms == null) return badRequest(`expires ${JSON.stringify(body.expires)}: unknown time unit`);
      expires_ms = now + ms;
    }
    const secret = `tg-vk-${randomBytes(32).toString('hex')}`;
    const stored = {
      name,
      hint: secret.slice(0, 12),
      models: body.models ?? [],
      providers: body.providers ?? [],
      optimize: body.optimize ?? null,
      rpm: body.rpm ?? null,
      tpm: body.tpm ?? null,
      budget_day_usd: body.budget_day_usd ?? null,
      budget_month_usd: body.budget_month_usd ?? null,
      expires_ms,
      created_ms: now,
      revoked_ms: null,
      ...(body.guard ? { guard: body.guard } : {}),
    };
    state.vkeys.set(name, { stored, secret, charges: [] });
    return [201, { key: secret, stored }];
  }
  const k = state.vkeys.get(seg[1]);
  if (seg[1] && !seg[2] && method === 'DELETE') {
    if (!k || k.stored.revoked_ms != null) return [404, { error: { type: 'not_found', message: `no key named ${JSON.stringify(seg[1])}` } }];
    k.stored.revoked_ms = now;
    return [200, { revoked: k.stored.name }];
  }
  return [404, { error: { type: 'not_found', message: 'no such admin endpoint' } }];
}

function chat(body, presented) {
  const model = body.model;
  const picked = pick(model);
  const provider = picked?.provider;
  let input = 0;
  let saved = 0;
  /** Kind → count, as the gateway's ledger column has them; none when the guard is off. */
  const found = new Map();
  for (const m of body.messages ?? []) {
    const text = typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
    for (const [kind, re] of state.guardMode === 'off' ? [] : SECRET_RULES) {
      const n = (text.match(re) ?? []).length;
      if (n) found.set(kind, (found.get(kind) ?? 0) + n);
    }
    const n = tokens(text);
    input += n;
    if (m.role === 'tool' && n > 200 && !state.paused && state.modes.defaults.tool_output !== 'off') saved += Math.floor(n * 0.8);
  }
  const row = {
    id: randomBytes(8).toString('hex'),
    time_ms: Date.now(),
    dialect: 'chat',
    provider: provider?.name ?? null,
    model,
    served: picked?.served ?? model,
    streamed: false,
    status: provider ? 200 : 404,
    outcome: provider ? 'completed' : 'gateway_error',
    latency_ms: 20 + Math.floor(Math.random() * 60),
    overhead_ms: 1,
    input_tokens: input - saved,
    output_tokens: provider ? 12 : 0,
    cache_read_tokens: 0,
    applied: saved > 0 ? `tool_output=${state.modes.defaults.tool_output}` : '',
    saved_tokens: saved,
    cache: 'miss',
    passes: saved > 0 ? [{ pass: 'tool_output', before: saved * 1.25, after: saved * 0.25 }] : [],
    secrets: found.size ? [...found].map(([k, n]) => `${k}:${n}`).join(',') : null,
  };
  state.requests.unshift(row);
  state.requests.length = Math.min(state.requests.length, 200);
  const vkey = [...state.vkeys.values()].find((k) => k.secret === presented);
  if (vkey && provider) vkey.charges.push({ at_ms: row.time_ms, usd: costOf(row.input_tokens, row.output_tokens) });
  if (!provider) return [404, { error: { message: `no provider serves ${model}`, type: 'invalid_request_error' } }];
  return [
    200,
    {
      id: 'chatcmpl-fake',
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'The failing test is in relay.rs.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: row.input_tokens, completion_tokens: 12, total_tokens: row.input_tokens + 12 },
    },
  ];
}

function admin(method, path, url, body) {
  const seg = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (method === 'GET' && path === '/status') {
    return [
      200,
      {
        version: '0.1.0-fake',
        listen: `127.0.0.1:${server.address().port}`,
        uptime_secs: Math.floor((Date.now() - started) / 1000),
        config_path: '/tmp/fake/config.toml',
        providers: state.providers.size,
        ledger: ledgerOn ? 'sqlite:///tmp/fake/ledger.sqlite' : null,
        cache: { entries: 0, bytes: 0 },
        optimizer_paused: state.paused,
        requests: state.requests.length,
        local_key: null,
      },
    ];
  }
  if (seg[0] === 'providers') {
    const name = seg[1];
    const p = name ? state.providers.get(name) : undefined;
    if (!name && method === 'GET') return [200, { providers: [...state.providers.values()].map(providerView) }];
    if (!name && method === 'POST') {
      const problems = [];
      if (!body.name) problems.push({ path: 'providers', message: 'a provider needs a name' });
      if (body.kind === 'openai_compatible' && !body.base_url)
        problems.push({ path: `providers.${body.name}.base_url`, message: 'required for kind openai_compatible' });
      if (state.providers.has(body.name)) problems.push({ path: `providers.${body.name}`, message: 'already exists' });
      if (problems.length) return [400, { error: { type: 'invalid_config', message: 'the config would not validate' }, problems }];
      const np = {
        name: body.name,
        kind: body.kind,
        base_url: body.base_url ?? 'https://api.openai.com/v1',
        models: body.models ?? [],
      };
      state.providers.set(np.name, np);
      if (body.key) state.keys.set(np.name, body.key);
      return [201, providerView(np)];
    }
    if (!p) return [404, { error: { type: 'not_found', message: `no provider named ${name}` } }];
    if (seg[2] === 'key' && method === 'PUT') {
      state.keys.set(name, body.key);
      return [200, { mask: mask(body.key) }];
    }
    if (seg[2] === 'key' && method === 'DELETE') {
      state.keys.delete(name);
      return [204];
    }
    if (seg[2] === 'test' && method === 'POST') {
      const ok = state.keys.has(name);
      return [200, { ok, status: ok ? 200 : 401, latency_ms: 4, message: ok ? `${p.models.length || 3} models listed` : 'no key' }];
    }
    if (method === 'PUT') {
      Object.assign(p, body);
      return [200, providerView(p)];
    }
    if (method === 'DELETE') {
      state.providers.delete(name);
      state.keys.delete(name);
      return [204];
    }
  }
  if (seg[0] === 'keys') return keys(method, seg, body);
  if (method === 'GET' && path === '/audit') {
    if (!ledgerOn) return NO_LEDGER;
    const limit = Number(url.searchParams.get('limit') ?? 100);
    return [200, { actions: state.audit.slice(-limit).reverse() }];
  }
  if (method === 'GET' && path === '/health') {
    const now = Date.now();
    const view = (p) => {
      const until = state.cooling.get(p.name) ?? 0;
      return until > now
        ? { provider: p.name, state: 'cooling_down', failures: 0, retry_in_secs: (until - now) / 1000 }
        : { provider: p.name, state: 'up', failures: 0, retry_in_secs: null };
    };
    return [200, { providers: [...state.providers.values()].map(view) }];
  }
  if (path === '/routes/check' && method === 'POST') {
    // As the gateway's check, roughly: the same paths for an unknown provider and a glob
    // that does not compile, and the first route that matches.
    const routes = body.routes ?? state.routes;
    const problems = [];
    routes.forEach((r, i) => {
      if (!state.providers.has(r.provider)) problems.push({ path: `routes[${i}].provider`, message: `no provider named ${JSON.stringify(r.provider)} is configured` });
      if (!r.match) problems.push({ path: `routes[${i}].match`, message: 'must not be empty' });
      else if ((r.match.match(/\[/g) ?? []).length > (r.match.match(/\]/g) ?? []).length)
        problems.push({ path: `routes[${i}].match`, message: `${JSON.stringify(r.match)} is not a valid glob: unclosed character class; missing ']'` });
    });
    if (problems.length || !body.model) return [200, { problems, answer: null }];
    const model = body.model;
    const i = routes.findIndex((r) => globMatch(r.match, model));
    if (i < 0) {
      const message = `model ${JSON.stringify(model)} is not served by this gateway`;
      return [200, { problems, answer: { model, via: 'none', error: { status: 404, type: 'unknown_model', message } } }];
    }
    const r = routes[i];
    const step = ([provider, m]) => {
      const cooling = (state.cooling.get(provider) ?? 0) > Date.now();
      return { provider, model: m ?? model, state: cooling ? 'cooling_down' : 'up', retry_in_secs: null };
    };
    const first = step([r.provider, r.model]);
    const answer = { model, via: 'route', route: i, pattern: r.match, provider: first.provider, upstream_model: first.model, state: first.state,
      cooling_down: first.state === 'cooling_down', retry_in_secs: null, fallbacks: (r.fallbacks ?? []).map((f) => step(f.split('/'))),
      max_attempts: r.max_attempts ?? 3, error: null };
    return [200, { problems, answer }];
  }
  if (path === '/routes') {
    if (method === 'PUT') state.routes = body.routes;
    if (method === 'PATCH') {
      // As the gateway does: the named routes go, the new ones take the first one's place.
      const goes = (r) => (body.replace ?? []).includes(r.match) || body.routes.some((n) => n.match === r.match);
      const first = state.routes.findIndex(goes);
      const kept = state.routes.filter((r) => !goes(r));
      const at = first < 0 ? 0 : first;
      state.routes = [...kept.slice(0, at), ...body.routes, ...kept.slice(at)];
    }
    return [200, { routes: state.routes }];
  }
  if (path === '/modes') {
    if (method === 'PUT') {
      const bad = body.models.findIndex((r) => !r.match);
      if (bad >= 0)
        return [
          400,
          {
            error: { type: 'invalid_config', message: 'the config would not validate' },
            problems: [{ path: `optimize.models[${bad}].match`, message: 'a rule needs a model glob' }],
          },
        ];
      state.modes = { defaults: body.defaults, models: body.models };
    }
    return [200, { ...state.modes, paused: state.paused }];
  }
  if (path === '/pause' && method === 'POST') {
    state.paused = Boolean(body.paused);
    return [200, { paused: state.paused }];
  }
  if (path === '/preview' && method === 'POST') {
    const lines = String(body.text).split('\n');
    const kept = body.tool_output === 'off' ? lines : lines.filter((l) => !/ \.\.\. ok$|^npm http fetch/.test(l));
    const output = kept.length < lines.length ? [...kept, `[… ${lines.length - kept.length} lines elided …]`].join('\n') : body.text;
    return [200, { output, tokens_before: tokens(body.text), tokens_after: tokens(output) }];
  }
  if (path === '/savings' && method === 'GET') return [200, savings(url)];
  if (path === '/sessions' && method === 'GET') return [200, sessionsReport(url)];
  if (path === '/requests' && method === 'GET') {
    const limit = Number(url.searchParams.get('limit') ?? 50);
    return [200, { requests: state.requests.slice(0, limit) }];
  }
  if (path === '/reload' && method === 'POST') return [200, { ok: true }];
  if (path === '/diagnostics' && method === 'GET') {
    const dir = '/tmp/fake/state/trimgate/logs';
    const log = { off: false, dir, file: `${dir}/trimgate.log`, writable: true, error: null };
    const providers = [...state.providers.keys()].map((provider) => ({ provider, state: 'up', failures: 0, retry_in_secs: null }));
    const listen = `127.0.0.1:${server.address().port}`;
    const text = [
      'Trimgate diagnostics',
      'version: 0.1.0-fake',
      `listen: ${listen}`,
      `log file: ${log.file}`,
      '',
      `providers (${providers.length}):`,
      ...providers.map((p) => `  ${p.provider}: up, 0 failure(s) in a row`),
    ].join('\n');
    return [200, { version: '0.1.0-fake', os: 'linux x86_64', listen, config_path: '/tmp/fake/config.toml', config: '', providers, last_errors: [], log, text }];
  }
  if (path === '/guard') {
    if (method === 'PUT') {
      if (!GUARD_MODES.includes(body.mode))
        return [
          400,
          {
            error: { type: 'invalid_config', message: 'the change would make the config invalid; nothing was saved' },
            problems: [{ path: 'guard.mode', message: `${JSON.stringify(body.mode)} is not a guard mode: redact, block or off` }],
          },
        ];
      state.guardMode = body.mode;
    }
    const since = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const flagged = ledgerOn ? state.requests.filter((r) => r.secrets && r.time_ms >= since) : [];
    const byKind = {};
    for (const r of flagged) {
      for (const [kind, n] of r.secrets.split(',').map((e) => e.split(':'))) byKind[kind] = (byKind[kind] ?? 0) + Number(n);
    }
    return [
      200,
      {
        mode: state.guardMode,
        rules: [{ match: 'claude-*', provider: null, mode: 'block', hooks: ['dlp'] }],
        hooks: [{ name: 'dlp', host: 'dlp.example:8443', pre: true, post: false, timeout_ms: 2000, fail: 'open', every: false }],
        patterns: ['acme_token'],
        allowed: 2,
        vault_capacity: 10000,
        ledger: ledgerOn,
        today: { since_ms: since, requests: flagged.length, secrets: Object.values(byKind).reduce((a, b) => a + b, 0), by_kind: byKind },
        recent: flagged.slice(0, 20).map((r) => ({ request_id: r.id, ts_ms: r.time_ms, model_requested: r.model, kinds: Object.fromEntries(r.secrets.split(',').map((e) => [e.split(':')[0], Number(e.split(':')[1])])) })),
      },
    ];
  }
  if (path === '/settings') {
    const running = `127.0.0.1:${server.address().port}`;
    if (method === 'PUT') {
      if (!/^[^:\s]+:\d+$/.test(String(body.listen)))
        return [
          400,
          {
            error: { type: 'invalid_config', message: 'the change would make the config invalid; nothing was saved' },
            problems: [{ path: 'server.listen', message: 'expected HOST:PORT' }],
          },
        ];
      state.listen = body.listen;
    }
    const listen = state.listen ?? running;
    return [200, { listen, running, restart_needed: listen !== running }];
  }
  return [404, { error: { type: 'not_found', message: `no admin route ${method} ${path}` } }];
}

const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const send = (status, value) => {
    if (value === undefined) {
      res.writeHead(status);
      return res.end();
    }
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };
  let raw = '';
  for await (const chunk of req) raw += chunk;
  let body = {};
  try {
    body = raw ? JSON.parse(raw) : {};
  } catch {
    return send(400, { error: { type: 'bad_request', message: 'body is not JSON' } });
  }
  if (url.pathname.startsWith('/admin/api/')) {
    const who =
      req.headers.authorization === `Bearer ${token}` ? 'local window' : adminKey && req.headers.authorization === `Bearer ${adminKey}` ? 'admin key' : null;
    if (!who) {
      return send(401, { error: { type: 'unauthorized', message: 'missing or wrong admin token' } });
    }
    const path = url.pathname.slice('/admin/api'.length);
    const [status, value] = admin(req.method, path, url, body);
    if (req.method !== 'GET' && ledgerOn && url.pathname !== '/admin/api/routes/check') {
      state.audit.push({ at_ms: Date.now(), who, method: req.method, path: url.pathname, status, addr: req.socket.remoteAddress ?? null });
      state.audit.splice(0, Math.max(0, state.audit.length - 1000));
    }
    return send(status, value);
  }
  if (url.pathname === '/v1/chat/completions' && req.method === 'POST') {
    const presented = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    const [status, value] = chat(body, presented);
    return send(status, value);
  }
  if (url.pathname === '/ui') {
    res.writeHead(308, { location: '/ui/' });
    return res.end();
  }
  if (url.pathname.startsWith('/ui/')) {
    const rel = normalize(url.pathname.slice(4) || 'index.html').replace(/^(\.\.[/\\])+/, '');
    try {
      const data = await readFile(join(dist, rel || 'index.html'));
      res.writeHead(200, { 'content-type': TYPES[extname(rel)] ?? 'application/octet-stream' });
      return res.end(data);
    } catch {
      return send(404, { error: { type: 'not_found', message: 'no such file (run npm run build first)' } });
    }
  }
  send(404, { error: { type: 'not_found', message: `no route ${req.method} ${url.pathname}` } });
});

server.listen(port, '127.0.0.1', () => {
  const p = server.address().port;
  console.log(`Trimgate (fake) listening on http://127.0.0.1:${p}`);
  console.log(`  Window: http://127.0.0.1:${p}/ui/#token=${token}`);
});
