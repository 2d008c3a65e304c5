//! Trimgate's gateway core: everything between an agent's HTTP request and the provider.
//!
//! A request flows one way through these rooms:
//!
//! - [`launch`]   — where the parts meet: the router; a gateway started from a config, closed in order.
//! - [`server`]   — the listener: limits, connections, idle, serving threads, graceful shutdown.
//! - [`state`]    — what every handler shares: the config in force, clients, cache, recorder.
//! - [`auth`]     — who may use the client routes: gateway keys and the local key.
//! - [`ingress`]  — who may send a request at all: `Host` on loopback, a browser's `Origin`, header limits.
//! - [`idle`]     — when a connection counts as idle (no request open), so it can be closed.
//! - [`endpoints`] — the gateway's own routes: the proxied `/v1/…`, models, metrics, health.
//! - [`proxy`]    — the request stages: ingress → route → prepare body → upstream → relay → record.
//! - [`routing`]  — model name → provider (globs, aliases, `provider/model`, default route),
//!   and the route's fallback chain.
//! - [`retry`]    — which failures are tried again, and after how long (`retry-after`, resets, backoff).
//! - [`health`]   — providers' cooldowns and retry budgets, in memory.
//! - [`keys`]     — which key of a provider's pool serves a request (sticky per session).
//! - [`sessions`] — a session for every request, and the per-turn cache-break detector.
//! - [`upstream`] — the pooled HTTP client and the provider's URL, auth and headers.
//! - [`relay`]    — SSE frames relayed as they arrive, with usage captured on the way.
//! - [`estimate`] — the tokens a request used when its provider did not say (left midway, no usage).
//! - [`record`]   — the record stage: one [`record::RequestRecord`] per request, success or failure (plain data).
//! - [`feed`]     — the last requests in memory, for the window's live feed (a recorder in front of the others).
//! - [`pending`]  — a request on its way to its record: closes its span and hands the record over once.
//! - [`clock`]    — the wall clock in Unix milliseconds, as the ledger, cache and window count it.
//! - [`db`]       — what the stores sharing one database both need from its pool.
//! - [`error`]    — typed errors (the wire's among them), turned into the client's own error shape in one place.
//! - [`config`]   — TOML config parsed into raw types, validated into runtime types, a file per section with its defaults (`ProviderKind` comes from the wire).
//! - [`import`]   — CC Switch's, claude-code-router's and LiteLLM's provider setups read into a plan to add.
//! - [`secrets`]  — where provider keys come from ([`secrets::SecretStore`]).
//! - [`models`]   — `GET /v1/models` in OpenAI or Anthropic shape.
//! - [`headers`]  — header names, and which headers are relayed, forwarded or dropped.
//! - [`local_key`] — the optional local client key: made once, kept owner-only, checked on every client route.
//! - [`files`]    — the gateway's own files: replaced whole, owner-only when it creates them.
//! - [`running`]  — where the desktop app's gateway listens (`gateway.json`), for the `trimgate` command.
//! - [`ledger`]   — one row per request in SQLite or PostgreSQL, written off the request path.
//! - [`pricing`]  — what a request cost, per usage bucket, from a dated price table.
//! - [`admin`]    — the admin API the window uses (guarded: loopback, Host, Origin, token) and `/ui`.
//! - [`cache`]    — the response cache: exact and similar-request answers replayed, persisted.
//! - [`guard`]    — secrets in what goes out replaced by stand-ins, and put back into the answer.
//! - [`hooks`]    — the guard's HTTP guardrail hooks: the request and the answer checked, masked or refused.
//! - [`logs`]     — the log file (where it lives, rotated by size) and the last warnings and errors.
//! - [`telemetry`] — Prometheus metrics from the record stage and the ledger; the request spans an OTLP exporter sends.
//!
//! The wire layer is its own crate, `trimgate-wire`, which knows no config and no HTTP
//! rendering; its modules are re-exported here, at the paths they had when they lived here:
//!
//! - [`dialect`]  — the closed set of wire dialects (OpenAI Chat, OpenAI Responses, Anthropic Messages).
//! - [`sniff`]    — reads `model` and `stream` from the inbound bytes and splices the few edits passthrough needs.
//! - [`usage`]    — provider-reported token usage, per dialect, and where a stream's answer ends.
//! - [`answer_text`] — the text a streamed answer has said so far, for counting when the provider does not.
//! - [`sse`]      — server-sent events: where a frame ends, and the data it carries (once in `relay`).
//! - [`translate`] — the canonical IR and a codec per dialect, for requests across dialects.
//!
//! The optimizer is a crate too, `trimgate-optimize`, above the wire and below everything
//! here (pure decisions from its inputs, no I/O), re-exported as [`optimize`]: the passes
//! that rewrite requests to spend fewer tokens.
//!
//! With the `test-util` feature, `mock` re-exports the mock provider (crate `trimgate-mock`)
//! and the in-memory doubles are built, for tests.

pub mod admin;
pub mod auth;
pub mod bodies;
pub mod cache;
pub mod clock;
pub mod config;
pub mod db;
pub mod endpoints;
pub mod error;
pub mod estimate;
pub mod feed;
pub mod files;
pub mod guard;
pub mod headers;
pub mod health;
pub mod hooks;
pub mod idle;
pub mod import;
pub mod ingress;
pub mod keys;
pub mod launch;
pub mod ledger;
pub mod local_key;
pub mod logs;
pub mod models;
pub mod pending;
pub mod pricing;
pub mod proxy;
pub mod record;
pub mod relay;
pub mod retry;
pub mod routing;
pub mod running;
pub mod secrets;
pub mod server;
pub mod sessions;
pub mod state;
pub mod telemetry;
pub mod upstream;
pub mod virtual_keys;
pub mod workers;

// The wire layer (crate `trimgate-wire`), at the paths it had when it lived in this crate.
pub use trimgate_wire::{answer_text, dialect, sniff, sse, translate, usage};
// The optimizer (crate `trimgate-optimize`), likewise.
pub use trimgate_optimize as optimize;

#[cfg(feature = "test-util")]
pub use trimgate_mock as mock;
