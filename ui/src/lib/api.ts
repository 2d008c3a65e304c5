/**
 * The one module that talks to the gateway's admin API (`docs/admin-api.md`).
 *
 * - `resolveConnection` finds the API base and the per-launch token: from
 *   `window.__TRIMGATE__` in the desktop shell, else the page's origin and the
 *   `#token=…` fragment that `trimgate serve` prints (kept in sessionStorage, then
 *   cleared from the address bar).
 * - `Api` has one typed method per endpoint; every failure is an `ApiError` with a
 *   `kind` the pages can branch on (`unauthorized`, `invalid` with `problems`, …).
 */

import type { Diagnostics } from './diagnostics';

// ---------------------------------------------------------------- wire types

export type ProviderKind =
  | 'openai'
  | 'anthropic'
  | 'deepseek'
  | 'gemini'
  | 'openai_compatible'
  | 'azure_openai'
  | 'bedrock'
  | 'vertex';
export const PROVIDER_KINDS: readonly ProviderKind[] = [
  'openai',
  'anthropic',
  'deepseek',
  'gemini',
  'openai_compatible',
  'azure_openai',
  'bedrock',
  'vertex',
];
/** The kinds bought through a cloud account, with settings of their own (`docs/clouds.md`). */
export type CloudKind = 'azure_openai' | 'bedrock' | 'vertex';
export type BedrockApi = 'auto' | 'invoke' | 'converse';

export type ToolOutputMode = 'off' | 'light' | 'standard' | 'aggressive' | 'auto';
export type TerseMode = 'off' | 'lite' | 'full' | 'auto';
export type PruneMode = 'off' | 'conservative' | 'balanced' | 'aggressive' | 'auto';
export const TOOL_OUTPUT_MODES: readonly ToolOutputMode[] = ['off', 'light', 'standard', 'aggressive', 'auto'];
export const TERSE_MODES: readonly TerseMode[] = ['off', 'lite', 'full', 'auto'];
export const PRUNE_MODES: readonly PruneMode[] = ['off', 'conservative', 'balanced', 'aggressive', 'auto'];

export interface Status {
  version: string;
  listen: string;
  uptime_secs: number;
  config_path: string | null;
  providers: number;
  /** The ledger's redacted URL, or null when there is no ledger. */
  ledger: string | null;
  cache: { entries: number; bytes: number };
  optimizer_paused: boolean;
  /** Requests since launch. */
  requests: number;
  /** The key clients must present (`[server] local_key`), or null when none is required. */
  local_key: string | null;
}

export interface ProviderKey {
  source: 'keychain' | 'env' | 'file' | 'none';
  /** The env var or file path, for those sources. */
  name?: string;
  set: boolean;
  /** First three and last four characters, only when set. */
  mask?: string;
}

/** Azure's Microsoft Entra ID token source as the gateway shows it: a command, or an app registration whose secret is only said to be set. */
export interface EntraView {
  command?: string;
  tenant_id?: string;
  client_id?: string;
  authority?: string;
  scope?: string;
  client_secret?: ProviderKey;
}

/** A cloud provider's own settings (null for other kinds); names, places and ids only. */
export interface CloudView {
  /** Azure: the classic paths' api-version; null for the v1 paths. */
  api_version?: string | null;
  entra?: EntraView | null;
  region?: string;
  /** Bedrock: a profile of the AWS config; null for the default credential chain. */
  aws_profile?: string | null;
  bedrock_api?: BedrockApi;
  project?: string;
  location?: string;
  /** Vertex: the service-account key file's path; null for Application Default Credentials. */
  credentials_file?: string | null;
}

export interface Provider {
  name: string;
  kind: ProviderKind;
  base_url: string;
  dialects: string[];
  models: string[];
  /// Whose credentials go to the provider: never (the key), forward, auto.
  client_auth: 'never' | 'forward' | 'auto';
  /// The client's own login is what the provider gets (a Claude subscription, say).
  uses_client_login: boolean;
  key: ProviderKey;
  cloud?: CloudView | null;
  /** Where a cloud's credentials come from, as `trimgate check` says it; null for other kinds. */
  credentials?: string | null;
}

/** What the form sends for Entra ID: a command, or tenant and app ids with the app's secret (to the keychain). */
export interface EntraIn {
  command?: string;
  tenant_id?: string;
  client_id?: string;
  client_secret?: string;
}

export interface NewProvider {
  name: string;
  kind: ProviderKind;
  base_url?: string;
  models?: string[];
  /** To the keychain: a provider's API key, Azure's api-key, a Bedrock API key. */
  key?: string;
  api_version?: string;
  entra?: EntraIn;
  region?: string;
  aws_profile?: string;
  bedrock_api?: BedrockApi;
  project?: string;
  location?: string;
  credentials_file?: string;
}

export interface ProviderPatch {
  kind?: ProviderKind;
  base_url?: string;
  models?: string[];
}

export interface TestResult {
  ok: boolean;
  status: number | null;
  latency_ms: number | null;
  message: string;
}

export interface Route {
  match: string;
  provider: string;
  model?: string;
  /** `provider/model` steps tried in order when the provider fails before answering. */
  fallbacks?: string[];
  /** Attempts for a request on this route, all steps together (else `[retry] max_attempts`). */
  max_attempts?: number;
}

/** One step of a route's chain as the check sees it: where it goes, and that provider's health now. */
export interface CheckedStep {
  provider: string;
  /** The model name that provider is sent. */
  model: string;
  state: HealthState;
  retry_in_secs: number | null;
}

/** Which rule answered: a route of the list, a provider kind's own family, `provider/model`, the default, or none. */
export type RouteVia = 'route' | 'provider_family' | 'provider_model' | 'default' | 'none';

/** Where a request for `model` would go (`POST /admin/api/routes/check`), or the error its client would get. */
export interface RouteAnswer {
  model: string;
  via: RouteVia;
  /** Index in the routes checked, when `via` is `route`. */
  route?: number | null;
  pattern?: string | null;
  provider?: string;
  upstream_model?: string;
  state?: HealthState;
  cooling_down?: boolean;
  retry_in_secs?: number | null;
  fallbacks?: CheckedStep[];
  max_attempts?: number;
  /** When nothing serves the model: what a client would be told. */
  error: { status: number; type: string; message: string } | null;
}

export interface RouteCheck {
  /** What a save of these routes would be refused for, each with its path (`routes[2].match`). */
  problems: Problem[];
  /** Null without a model, or while there are problems. */
  answer: RouteAnswer | null;
}

/** `up` in rotation; `cooling_down` out of it after failures; `probing` one request tries it again. */
export type HealthState = 'up' | 'cooling_down' | 'probing';

/** A configured provider's health (`GET /admin/api/health`). */
export interface ProviderHealth {
  provider: string;
  state: HealthState;
  /** Failed requests in a row so far (while up). */
  failures: number;
  /** Seconds until it is probed again, while cooling down; else null. */
  retry_in_secs: number | null;
}

export interface Modes {
  tool_output: ToolOutputMode;
  terse: TerseMode;
  prune: PruneMode;
  squeeze: boolean;
}

/** A per-model rule: a glob and any of the modes it overrides. */
export interface ModelRule extends Partial<Modes> {
  match: string;
}

/** A rule as the form edits it: fields the rule does not set are absent (never null). */
export function normalizeRule(r: ModelRule): ModelRule {
  const out: ModelRule = { match: r.match ?? '' };
  if (r.tool_output != null) out.tool_output = r.tool_output;
  if (r.terse != null) out.terse = r.terse;
  if (r.prune != null) out.prune = r.prune;
  if (typeof r.squeeze === 'boolean') out.squeeze = r.squeeze;
  return out;
}

export interface ModesConfig {
  defaults: Modes;
  models: ModelRule[];
  paused: boolean;
}

export interface Preview {
  output: string;
  tokens_before: number;
  tokens_after: number;
}

export type SavingsBy = 'model' | 'provider' | 'pass' | 'passes' | 'hour' | 'day';

export interface Totals {
  /** The group's name; for `hour`/`day`, the bucket's start in Unix ms. */
  key: string;
  requests: number;
  /** Failed requests (status 400 or more, a gateway error, a stream broken off); not those the client left. */
  errors: number;
  /** Requests the client left before the answer was whole; their tokens are in the totals. */
  cancelled: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  saved_tokens: number;
  cost_usd: number;
  saved_usd: number;
  overhead_ms_avg: number;
  cache_lookups: number;
  cache_hits: number;
}

export interface Savings {
  ledger: boolean;
  since_ms: number;
  by: SavingsBy;
  rows: Totals[];
  total: Totals;
}

/** Cache breaks by cause: the gateway's rewrite (never expected), the client's edit, the provider's expiry. */
export interface Breaks {
  gateway: number;
  client: number;
  provider: number;
}

/** One session's totals (`GET /admin/api/sessions`). */
export interface SessionTotals {
  session: string;
  first_ms: number;
  last_ms: number;
  model: string;
  requests: number;
  input_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  saved_tokens: number;
  cost_usd: number;
  saved_usd: number;
  breaks: Breaks;
  held_out: boolean;
}

/** One side of the holdout comparison; `tokens` are input-equivalent (input + removed by the passes). */
export interface HoldoutSide {
  sessions: number;
  requests: number;
  tokens: number;
  cost_usd: number;
}

/** Optimized traffic priced at the held-out group's rate for the same model (formula in ARCHITECTURE.md). */
export interface Holdout {
  optimized: HoldoutSide;
  held_out: HoldoutSide;
  models: string[];
  compared_optimized: HoldoutSide;
  compared_held_out: HoldoutSide;
  expected_usd: number | null;
  net_saved_usd: number | null;
  net_saved_share: number | null;
  note: string | null;
}

export interface SessionsReport {
  since_ms: number;
  sessions: SessionTotals[];
  session_count: number;
  breaks: Breaks;
  holdout: Holdout;
}

export interface Sessions {
  ledger: boolean;
  report: SessionsReport;
}

export interface PassChange {
  pass: string;
  before: number;
  after: number;
}

/** A row of the live feed: one attempt, with what each pass changed. */
export interface RequestRow extends RequestAttempt {
  passes: PassChange[];
}

/** What the Requests page asks for; empty fields do not narrow. */
export interface RequestQuery {
  since: string;
  model?: string;
  provider?: string;
  /** `ok`, `error` or an HTTP status. */
  status?: string;
  session?: string;
  before_ms?: number;
  limit?: number;
}

export function requestQueryString(q: RequestQuery): string {
  const params = new URLSearchParams({ since: q.since });
  for (const k of ['model', 'provider', 'status', 'session'] as const) {
    const v = q[k]?.trim();
    if (v) params.set(k, v);
  }
  if (q.before_ms != null) params.set('before_ms', String(q.before_ms));
  if (q.limit != null) params.set('limit', String(q.limit));
  return params.toString();
}

export interface RequestSearch {
  /** False when the gateway has no ledger: the rows are the live feed's. */
  ledger: boolean;
  since_ms: number;
  requests: RequestAttempt[];
}

/** One attempt of a request, from the ledger or the live feed (the fields both have, and the ledger's prices). */
export interface RequestAttempt {
  id: string;
  time_ms: number;
  dialect: string;
  provider: string | null;
  model: string | null;
  served: string | null;
  streamed: boolean;
  status: number;
  /** `completed`, `gateway_error`, `client_cancelled`, `upstream_failed` or `retried`. */
  outcome: string;
  error?: string | null;
  latency_ms: number;
  overhead_ms: number;
  /** From arrival to the provider's response headers; null when no provider answered. */
  first_byte_ms?: number | null;
  /** Provider-reported, or the gateway's own count where `tokens_estimated` says so; null when none (a cache hit, an error). */
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number | null;
  /** What the passes did, as in `x-trimgate-applied` (`tool_output=standard terse=lite`), or empty. */
  applied: string | null;
  saved_tokens: number;
  cost_usd?: number | null;
  saved_usd?: number | null;
  cache: string | null;
  /** Which token counts are the gateway's own (`input`, `output`, `input,output`): the client left, or the provider gave none. */
  tokens_estimated?: string | null;
  /** `generation`, or `count_tokens` for a count of a request's tokens (not a model call). */
  kind?: string;
  dropped?: string | null;
  session?: string | null;
  attempt?: number | null;
  api_key?: string | null;
  gateway_key?: string | null;
  cache_break?: string | null;
  /** The secrets the guard replaced, by kind (`github_token:1,env_secret:2`); null when none. Never a value. */
  secrets?: string | null;
}

export interface Rewrite {
  id: string;
  /** Whether the gateway still holds the block (its memory store). */
  held: boolean;
  pass?: string;
  original_chars?: number;
  replacement?: string;
  /** In place only when bodies are kept (they hold it anyway); else one `original()` call away. */
  original?: string | null;
}

export interface KeptBody {
  dialect: string;
  text: string;
}

export interface RequestDetail {
  id: string;
  /** `memory` (the live feed) or `ledger`. */
  source: string;
  attempts: RequestAttempt[];
  passes: PassChange[];
  rewrites: Rewrite[];
  bodies: { client: KeptBody; sent: (KeptBody & { provider: string })[] } | null;
  bodies_kept: boolean;
}

export interface KeptOriginal {
  id: string;
  pass?: string;
  original: string;
  replacement: string | null;
}

export interface BodiesUsage {
  on: boolean;
  requests: number;
  bytes: number;
  max_bytes: number;
}

export interface GatewaySettings {
  /** The address in the config file (what the next start uses). */
  listen: string;
  /** The address in use now. */
  running: string;
  /** The file names another address than the one in use. */
  restart_needed: boolean;
}

/** A virtual key's optimizer overrides: each field it sets wins over the config's modes. */
export interface KeyOptimize {
  tool_output?: ToolOutputMode;
  terse?: TerseMode;
  prune?: PruneMode;
  squeeze?: boolean;
}

/** A virtual key as listed (`GET /admin/api/keys`): never the key itself, only its hint. */
export interface VirtualKey {
  name: string;
  /** The key's first characters (`tg-vk-ab12cd`). */
  hint: string;
  /** Model globs it may use; empty: any. */
  models: string[];
  /** Providers it may use; empty or absent: any. */
  providers?: string[] | null;
  optimize?: KeyOptimize | null;
  rpm: number | null;
  tpm: number | null;
  budget_day_usd: number | null;
  budget_month_usd: number | null;
  expires_ms: number | null;
  created_ms: number;
  revoked_ms: number | null;
  /** What it spent today and this month (UTC); absent in the answer that makes it. */
  spent_day_usd?: number | null;
  spent_month_usd?: number | null;
  /** The guard's mode for its requests; absent: the config's. */
  guard?: GuardMode | null;
}

/** `POST /admin/api/keys`: only the fields the user filled. */
export interface NewVirtualKey {
  name: string;
  models?: string[];
  providers?: string[];
  rpm?: number;
  tpm?: number;
  budget_day_usd?: number;
  budget_month_usd?: number;
  /** How long it lasts: `30d`, `12h`; absent: forever. */
  expires?: string;
  /** The guard's mode for its requests; absent: the config's. */
  guard?: GuardMode;
}

/** The only answer that ever holds the key. */
export interface CreatedKey {
  key: string;
  stored: VirtualKey;
}

/** What the guard does with a secret in a request: replace it, refuse the request, or let it go. */
export type GuardMode = 'redact' | 'block' | 'off';
export const GUARD_MODES: readonly GuardMode[] = ['redact', 'block', 'off'];

/** `[[guard.rules]]`: a mode and hooks for the models (and providers) it matches. */
export interface GuardRule {
  /** A model name or glob; null: any model. */
  match: string | null;
  /** null: any provider. */
  provider: string | null;
  /** null: the rule sets hooks only. */
  mode: GuardMode | null;
  hooks: string[];
}

/** An HTTP guardrail hook, shown by the host it reaches (never its path, query or credentials). */
export interface GuardHook {
  name: string;
  /** `host[:port]`. */
  host: string;
  pre: boolean;
  post: boolean;
  timeout_ms: number;
  /** What a hook that fails does to the request: `open` lets it on, `closed` refuses it. */
  fail: 'open' | 'closed';
  /** Met by every request (`[guard] use_hooks`), not only through a rule. */
  every: boolean;
}

/** A request whose secrets the guard replaced: kinds and counts, never a value. */
export interface FlaggedRequest {
  request_id: string;
  ts_ms: number;
  model_requested: string | null;
  kinds: Record<string, number>;
}

/** `GET /admin/api/guard`: the settings in force and today's figures (UTC). */
export interface GuardView {
  mode: GuardMode;
  rules: GuardRule[];
  hooks: GuardHook[];
  /** The ids of `[[guard.patterns]]`. */
  patterns: string[];
  /** Values and patterns in the allow-list (never the entries). */
  allowed: number;
  vault_capacity?: number;
  /** False when the gateway has no ledger: no figures. */
  ledger: boolean;
  today: { since_ms: number; requests: number; secrets: number; by_kind: Record<string, number> };
  /** Today's latest requests with secrets, newest first. */
  recent: FlaggedRequest[];
}

/** One admin API call that changed something (`GET /admin/api/audit`). */
export interface AdminAction {
  at_ms: number;
  /** Who made it: `local window`, `admin key`. */
  who: string;
  method: string;
  path: string;
  status: number;
  /** The client's address, when known. */
  addr: string | null;
}

// ---------------------------------------------------------------- errors

/** The formats `POST /admin/api/import/…` reads. */
export type ImportFormat = 'cc-switch' | 'claude-code-router' | 'litellm';

/** A file to import: its name (named in errors), an optional format (else found from the content), its bytes in base64. */
export interface ImportRequest {
  file_name: string;
  format?: ImportFormat;
  content_base64: string;
}

/** A provider an import adds; its key only as a mask. */
export interface ImportedProvider {
  name: string;
  /** Its name in the file, when it had to change (taken, or not a valid name here). */
  renamed_from?: string;
  kind: ProviderKind;
  /** null: the kind's own address. */
  base_url: string | null;
  dialects?: string[];
  models: string[];
  key_mask: string | null;
  /** Where the key was found: `the file`, or `env VAR`. */
  key_from: string | null;
}

/** A part of the file that is not imported, and why. */
export interface SkippedItem {
  item: string;
  reason: string;
}

/** What a file would add (`POST /admin/api/import/preview`); nothing is changed. */
export interface ImportPreview {
  file: string;
  format: ImportFormat;
  providers: ImportedProvider[];
  routes: Route[];
  skipped: SkippedItem[];
  /** What the config would say about it; an apply would be refused while there are any. */
  problems: Problem[];
}

/** What an import added (`POST /admin/api/import/apply`). */
export interface ImportReport {
  file: string;
  format: ImportFormat;
  providers: ImportedProvider[];
  routes: Route[];
  keys_stored: { provider: string; mask: string }[];
  skipped: SkippedItem[];
}

/** One config problem, with the path of the field it is about (`providers.x.base_url`). */
export interface Problem {
  path: string;
  message: string;
}

export type ApiErrorKind =
  /** No token, or not this launch's: the page must be opened from the printed link. */
  | 'unauthorized'
  /** Refused by the loopback, Host or Origin guard. */
  | 'forbidden'
  /** A change the config would not accept; `problems` says which fields. */
  | 'invalid'
  /** Any other 4xx. */
  | 'client'
  /** A 5xx. */
  | 'server'
  /** The gateway could not be reached at all. */
  | 'network';

export class ApiError extends Error {
  constructor(
    readonly kind: ApiErrorKind,
    message: string,
    readonly status: number | null = null,
    readonly type: string | null = null,
    readonly problems: Problem[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The problem about `path` or any field under it (`providers.x` matches `providers.x.base_url`). */
  problemFor(path: string): string | undefined {
    const hit = this.problems.find((p) => p.path === path || p.path.endsWith('.' + path));
    return hit?.message;
  }
}

/** Turns a failed HTTP answer into an `ApiError`; `body` is its text (may be empty or not JSON). */
export function errorFromResponse(status: number, body: string): ApiError {
  let type: string | null = null;
  let message = '';
  let problems: Problem[] = [];
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === 'object') {
      const obj = parsed as Record<string, unknown>;
      const err = obj.error;
      if (err && typeof err === 'object') {
        const e = err as Record<string, unknown>;
        if (typeof e.type === 'string') type = e.type;
        if (typeof e.message === 'string') message = e.message;
        if (Array.isArray(e.problems)) problems = parseProblems(e.problems);
      }
      if (Array.isArray(obj.problems)) problems = parseProblems(obj.problems);
    }
  } catch {
    message = body.trim().slice(0, 300);
  }
  if (status === 401) {
    return new ApiError('unauthorized', message || 'this page has no valid admin token', status, type);
  }
  if (status === 403) {
    return new ApiError('forbidden', message || 'the gateway refused this page', status, type);
  }
  if (status === 400 && problems.length > 0) {
    return new ApiError('invalid', message || 'the config would not be valid', status, type, problems);
  }
  if (status >= 500) {
    return new ApiError('server', message || `the gateway failed (HTTP ${status})`, status, type, problems);
  }
  return new ApiError('client', message || `request refused (HTTP ${status})`, status, type, problems);
}

function parseProblems(list: unknown[]): Problem[] {
  const out: Problem[] = [];
  for (const item of list) {
    if (item && typeof item === 'object') {
      const p = item as Record<string, unknown>;
      out.push({ path: String(p.path ?? ''), message: String(p.message ?? '') });
    }
  }
  return out;
}

// ---------------------------------------------------------------- connection

export const TOKEN_STORAGE_KEY = 'trimgate.admin_token';

export interface Connection {
  /** Origin of the gateway, without a trailing slash (`http://127.0.0.1:8788`). */
  apiBase: string;
  token: string | null;
  /** True inside the desktop shell (the token was injected, not read from the link). */
  desktop: boolean;
}

/** What `resolveConnection` needs from the browser; `browserEnv()` gives the real one. */
export interface ConnectionEnv {
  injected: unknown;
  location: { origin: string; pathname: string; search: string; hash: string };
  storage: { getItem(key: string): string | null; setItem(key: string, value: string): void } | null;
  /** Replaces the address bar's URL without a reload (history.replaceState). */
  replaceUrl(url: string): void;
}

/** Reads `#token=…` (the fragment may also carry other `&`-separated pairs). */
export function tokenFromHash(hash: string): string | null {
  const raw = hash.startsWith('#') ? hash.slice(1) : hash;
  for (const part of raw.split('&')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq) === 'token') {
      const value = decodeURIComponent(part.slice(eq + 1)).trim();
      return value || null;
    }
  }
  return null;
}

export function resolveConnection(env: ConnectionEnv): Connection {
  const injected = env.injected;
  if (injected && typeof injected === 'object') {
    const inj = injected as Record<string, unknown>;
    const apiBase = typeof inj.apiBase === 'string' && inj.apiBase ? inj.apiBase : env.location.origin;
    const token = typeof inj.token === 'string' && inj.token ? inj.token : null;
    return { apiBase: trimSlash(apiBase), token, desktop: true };
  }
  const fromHash = tokenFromHash(env.location.hash);
  if (fromHash) {
    try {
      env.storage?.setItem(TOKEN_STORAGE_KEY, fromHash);
    } catch {
      // Storage can be disabled; the token still works for this page's life.
    }
    // The token must not linger in the address bar, history or a copied link.
    env.replaceUrl(env.location.pathname + env.location.search);
    return { apiBase: trimSlash(env.location.origin), token: fromHash, desktop: false };
  }
  let stored: string | null = null;
  try {
    stored = env.storage?.getItem(TOKEN_STORAGE_KEY) ?? null;
  } catch {
    stored = null;
  }
  return { apiBase: trimSlash(env.location.origin), token: stored, desktop: false };
}

export function browserEnv(): ConnectionEnv {
  return {
    injected: (window as unknown as { __TRIMGATE__?: unknown }).__TRIMGATE__,
    location: window.location,
    storage: browserTokenStore(),
    replaceUrl: (url) => window.history.replaceState(window.history.state, '', url),
  };
}

/** Where a browser tab keeps its bearer: sessionStorage (never localStorage, never the URL). */
export interface TokenStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/** The tab's sessionStorage, or null where the browser refuses it. */
export function browserTokenStore(): TokenStore | null {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

/** Keeps an admin key typed into the window as the tab's bearer, as `#token=` does. */
export function keepToken(storage: TokenStore | null, token: string): void {
  try {
    storage?.setItem(TOKEN_STORAGE_KEY, token);
  } catch {
    // Storage can be disabled; the key still works for this page's life.
  }
}

/** Forgets the tab's bearer (a refused key, or signing out). */
export function forgetToken(storage: TokenStore | null): void {
  try {
    storage?.removeItem(TOKEN_STORAGE_KEY);
  } catch {
    // Nothing was kept.
  }
}

/**
 * Whether the page came from this machine's loopback (`127.0.0.1`, `localhost`, `[::1]`),
 * where `trimgate serve` prints its link; else it was opened on a server, where the
 * window signs in with the server's admin key.
 */
export function isLoopbackBase(apiBase: string): boolean {
  let host: string;
  try {
    host = new URL(apiBase).hostname.toLowerCase();
  } catch {
    return false;
  }
  return host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

function trimSlash(s: string): string {
  return s.replace(/\/+$/, '');
}

// ---------------------------------------------------------------- client

type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface ApiOptions {
  fetch?: FetchLike;
  /** Called once per 401, so the app can show how to get a valid link. */
  onUnauthorized?: (err: ApiError) => void;
}

export class Api {
  private readonly fetchImpl: FetchLike;

  constructor(
    readonly connection: Connection,
    private readonly options: ApiOptions = {},
  ) {
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  status(): Promise<Status> {
    return this.call('GET', '/status');
  }

  async providers(): Promise<Provider[]> {
    const r = await this.call<{ providers: Provider[] }>('GET', '/providers');
    return r.providers;
  }

  addProvider(p: NewProvider): Promise<Provider> {
    return this.call('POST', '/providers', p);
  }

  updateProvider(name: string, patch: ProviderPatch): Promise<Provider> {
    return this.call('PUT', `/providers/${enc(name)}`, patch);
  }

  deleteProvider(name: string): Promise<void> {
    return this.call('DELETE', `/providers/${enc(name)}`);
  }

  setKey(name: string, key: string): Promise<{ mask: string }> {
    return this.call('PUT', `/providers/${enc(name)}/key`, { key });
  }

  deleteKey(name: string): Promise<void> {
    return this.call('DELETE', `/providers/${enc(name)}/key`);
  }

  testProvider(name: string): Promise<TestResult> {
    return this.call('POST', `/providers/${enc(name)}/test`);
  }

  /** Every configured provider's health, in config order. */
  async health(): Promise<ProviderHealth[]> {
    const r = await this.call<{ providers: ProviderHealth[] }>('GET', '/health');
    return r.providers;
  }

  /** Every virtual key, revoked ones too, with what each spent; `server` 503 without a ledger. */
  async keys(): Promise<VirtualKey[]> {
    const r = await this.call<{ keys: VirtualKey[] }>('GET', '/keys');
    return r.keys;
  }

  createKey(k: NewVirtualKey): Promise<CreatedKey> {
    return this.call('POST', '/keys', k);
  }

  async revokeKey(name: string): Promise<string> {
    const r = await this.call<{ revoked: string }>('DELETE', `/keys/${enc(name)}`);
    return r.revoked;
  }

  /** The admin actions, newest first; `server` 503 without a ledger. */
  async audit(limit = 100): Promise<AdminAction[]> {
    const r = await this.call<{ actions: AdminAction[] }>('GET', `/audit?limit=${limit}`);
    return r.actions;
  }

  async routes(): Promise<Route[]> {
    const r = await this.call<{ routes: Route[] }>('GET', '/routes');
    return r.routes;
  }

  async putRoutes(routes: Route[]): Promise<Route[]> {
    const r = await this.call<{ routes: Route[] }>('PUT', '/routes', { routes });
    return r.routes;
  }

  /** Replaces the routes whose `match` is in `replace` (and the new ones' own) with `routes`, keeping the rest; answers every route. */
  async patchRoutes(replace: string[], routes: Route[]): Promise<Route[]> {
    const r = await this.call<{ routes: Route[] }>('PATCH', '/routes', { replace, routes });
    return r.routes;
  }

  /** Checks a draft of the routes (absent: those in force) and answers where `model` would go; saves nothing. */
  checkRoutes(routes: Route[] | undefined, model: string | undefined): Promise<RouteCheck> {
    return this.call('POST', '/routes/check', { routes, model });
  }

  modes(): Promise<ModesConfig> {
    return this.call('GET', '/modes');
  }

  putModes(defaults: Modes, models: ModelRule[]): Promise<ModesConfig> {
    return this.call('PUT', '/modes', { defaults, models });
  }

  async pause(paused: boolean): Promise<boolean> {
    const r = await this.call<{ paused: boolean }>('POST', '/pause', { paused });
    return r.paused;
  }

  preview(text: string, tool_output: ToolOutputMode): Promise<Preview> {
    return this.call('POST', '/preview', { text, tool_output });
  }

  savings(by: SavingsBy, since = '7d'): Promise<Savings> {
    const q = new URLSearchParams({ since, by });
    return this.call('GET', `/savings?${q}`);
  }

  /** The latest sessions, cache breaks by cause, and net savings against the holdout. */
  sessions(since = '7d', limit = 8): Promise<Sessions> {
    const q = new URLSearchParams({ since, limit: String(limit) });
    return this.call('GET', `/sessions?${q}`);
  }

  async requests(limit = 50): Promise<RequestRow[]> {
    const r = await this.call<{ requests: RequestRow[] }>('GET', `/requests?limit=${limit}`);
    return r.requests;
  }

  /** Requests by time, model, provider, status and session: the ledger's, else the live feed's. */
  searchRequests(q: RequestQuery): Promise<RequestSearch> {
    return this.call('GET', `/requests/search?${requestQueryString(q)}`);
  }

  /** One request: attempts, passes, timing, rewritten blocks, and its bodies when kept. */
  requestDetail(id: string): Promise<RequestDetail> {
    return this.call('GET', `/requests/${enc(id)}`);
  }

  /** A rewritten block's original (and its replacement while the gateway holds it). */
  original(id: string): Promise<KeptOriginal> {
    return this.call('GET', `/originals/${enc(id)}`);
  }

  bodies(): Promise<BodiesUsage> {
    return this.call('GET', '/bodies');
  }

  keepBodies(keep: boolean): Promise<BodiesUsage> {
    return this.call('PUT', '/bodies', { keep });
  }

  /** The secrets guard: its settings in force, today's requests with secrets and the secrets by kind. */
  guard(): Promise<GuardView> {
    return this.call('GET', '/guard');
  }

  /** Writes `[guard] mode` to the config and puts it in force; answers as `guard()`. */
  putGuardMode(mode: GuardMode): Promise<GuardView> {
    return this.call('PUT', '/guard', { mode });
  }

  settings(): Promise<GatewaySettings> {
    return this.call('GET', '/settings');
  }

  putSettings(listen: string): Promise<GatewaySettings> {
    return this.call('PUT', '/settings', { listen });
  }

  /** What a file would add, keys masked; nothing is changed. */
  importPreview(req: ImportRequest): Promise<ImportPreview> {
    return this.call('POST', '/import/preview', req);
  }

  /** Adds what a file holds in one config edit, its keys to the keychain. */
  importApply(req: ImportRequest): Promise<ImportReport> {
    return this.call('POST', '/import/apply', req);
  }

  async reload(): Promise<void> {
    await this.call('POST', '/reload');
  }

  /** The report for an issue: version, config with secrets hidden, health, last errors, the log file. */
  diagnostics(): Promise<Diagnostics> {
    return this.call('GET', '/diagnostics');
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.connection.token) headers.authorization = `Bearer ${this.connection.token}`;
    const init: RequestInit = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.connection.apiBase}/admin/api${path}`, init);
    } catch (e) {
      throw new ApiError('network', `cannot reach the gateway at ${this.connection.apiBase}: ${describe(e)}`);
    }
    const text = await res.text();
    if (!res.ok) {
      const err = errorFromResponse(res.status, text);
      if (err.kind === 'unauthorized') this.options.onUnauthorized?.(err);
      throw err;
    }
    if (res.status === 204 || text.trim() === '') return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ApiError('server', `the gateway sent an answer that is not JSON (HTTP ${res.status})`, res.status);
    }
  }
}

function enc(name: string): string {
  return encodeURIComponent(name);
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

// ---------------------------------------------------------------- desktop shell

/** What `check_update` may answer; the shell decides, so every field is optional. */
export interface UpdateInfo {
  available: boolean;
  version?: string;
  notes?: string;
}

/** The running version and the last update check (the window's or the app's daily one). */
export interface UpdateStatus {
  currentVersion?: string;
  /** When the last check ran (Unix ms), the newer version it found, or why it failed. */
  lastCheck: { atMs: number; version?: string; error?: string } | null;
}

/**
 * The desktop shell's own commands (autostart, updates), reached through Tauri's
 * `invoke`. `desktopShell()` is null in a plain browser: these settings live in the
 * desktop app.
 */
export interface DesktopShell {
  getAutostart(): Promise<boolean>;
  setAutostart(enabled: boolean): Promise<void>;
  checkUpdate(): Promise<UpdateInfo>;
  installUpdate(): Promise<void>;
  updateStatus(): Promise<UpdateStatus>;
  /** Opens the log dir in the file manager. */
  openLogs(): Promise<void>;
}

type Invoke = (cmd: string, args?: Record<string, unknown>) => Promise<unknown>;

export class DesktopError extends Error {
  constructor(
    readonly kind: string,
    message: string,
  ) {
    super(message);
    this.name = 'DesktopError';
  }
}

export function desktopShell(win: unknown = typeof window === 'undefined' ? undefined : window): DesktopShell | null {
  const tauri = (win as { __TAURI__?: { core?: { invoke?: unknown } } } | undefined)?.__TAURI__;
  const invoke = tauri?.core?.invoke;
  if (typeof invoke !== 'function') return null;
  return shellFromInvoke(invoke as Invoke);
}

export function shellFromInvoke(invoke: Invoke): DesktopShell {
  const call = async (cmd: string, args?: Record<string, unknown>): Promise<unknown> => {
    try {
      return await invoke(cmd, args);
    } catch (e) {
      throw desktopErrorFrom(e);
    }
  };
  return {
    async getAutostart() {
      const v = await call('get_autostart');
      return typeof v === 'object' && v !== null ? Boolean((v as { enabled?: unknown }).enabled) : Boolean(v);
    },
    async setAutostart(enabled) {
      await call('set_autostart', { enabled });
    },
    async checkUpdate() {
      return updateInfoFrom(await call('check_update'));
    },
    async installUpdate() {
      await call('install_update');
    },
    async updateStatus() {
      return updateStatusFrom(await call('update_status'));
    },
    async openLogs() {
      await call('open_logs');
    },
  };
}

/** `check_update` may answer null (none), a version string, or `{version, notes, available?}`. */
export function updateInfoFrom(v: unknown): UpdateInfo {
  if (v == null || v === false) return { available: false };
  if (typeof v === 'string') return { available: true, version: v };
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const version = typeof o.version === 'string' ? o.version : undefined;
    const notes = typeof o.notes === 'string' ? o.notes : typeof o.body === 'string' ? o.body : undefined;
    const available = typeof o.available === 'boolean' ? o.available : version !== undefined;
    return { available, version, notes };
  }
  return { available: Boolean(v) };
}

export function updateStatusFrom(v: unknown): UpdateStatus {
  const o = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
  const last = (o.last_check && typeof o.last_check === 'object' ? o.last_check : null) as Record<string, unknown> | null;
  return {
    currentVersion: typeof o.current_version === 'string' ? o.current_version : undefined,
    lastCheck:
      last && typeof last.at_ms === 'number'
        ? {
            atMs: last.at_ms,
            version: typeof last.version === 'string' ? last.version : undefined,
            error: typeof last.error === 'string' ? last.error : undefined,
          }
        : null,
  };
}

/** Tauri commands reject with whatever the command returned as its error: `{kind, message}` here. */
export function desktopErrorFrom(e: unknown): DesktopError {
  if (e && typeof e === 'object') {
    const o = e as Record<string, unknown>;
    const message = typeof o.message === 'string' ? o.message : JSON.stringify(e);
    return new DesktopError(typeof o.kind === 'string' ? o.kind : 'shell', message);
  }
  return new DesktopError('shell', String(e));
}
