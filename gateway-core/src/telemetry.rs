//! Prometheus metrics and request spans.
//!
//! Metrics: the record stage counts every request (by dialect, provider, status and
//! outcome), its latency and the gateway's own time, tokens by bucket, tokens the
//! optimizer saved, and upstream errors; the ledger reports its queue. Labels are
//! low-cardinality names from the config, never a key or a prompt.
//!
//! Spans: one `trimgate.request` span per request, from the handler's start to its
//! record (for a stream, its last frame), with a `trimgate.upstream` child from sending
//! to the provider's response headers. They carry names, models, counts and statuses
//! from the record, never a key, a header value or the text of a prompt or an answer.
//! They use [`SPAN_TARGET`], which only an OTLP exporter listens to: without one they
//! are disabled callsites and cost next to nothing, and the log output never shows them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{counter, histogram, Counter, Histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing::field::Empty;
use tracing::Span;

use crate::dialect::Endpoint;
use crate::error::GatewayError;
use crate::record::{Outcome, Recorder, RequestRecord};

/// Latency buckets in seconds: the gateway's own time is sub-millisecond, a model's
/// answer takes seconds to minutes.
const SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Installs the process-wide Prometheus recorder; `None` if one is installed already.
pub fn install() -> Option<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets(SECONDS)
        .ok()?
        .install_recorder()
        .ok()?;
    // Histograms are drained into their buckets by upkeep.
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        loop {
            tick.tick().await;
            upkeep.run_upkeep();
        }
    });
    Some(handle)
}

/// Counts each record, then hands it on.
///
/// The series' handles are resolved once per label set and kept: the registry's own
/// lookup hashes and compares every label, and building the labels allocates, which on
/// every request cost more than the counting itself.
pub struct MetricsRecorder {
    inner: Arc<dyn Recorder>,
    series: Mutex<Series>,
}

/// `trimgate_requests_total`'s labels besides the provider: dialect, status, outcome, kind.
type RequestLabels = (&'static str, u16, &'static str, &'static str);

/// Handles by label set. Providers, dialects, statuses, outcomes and error kinds are few.
#[derive(Default)]
struct Series {
    /// Keyed with FNV: looked up on every request, by names the config chose.
    providers: fnv::FnvHashMap<String, ProviderSeries>,
    overhead: Vec<(&'static str, Histogram)>,
}

/// One provider's handles (`-` for requests refused before a provider was chosen).
#[derive(Default)]
struct ProviderSeries {
    requests: Vec<(RequestLabels, Counter)>,
    durations: Vec<(&'static str, Histogram)>,
    errors: Vec<(&'static str, Counter)>,
    /// input, output, cache_read, cache_write.
    tokens: Option<[Counter; 4]>,
    saved: Option<Counter>,
}

/// The handle for `key` in a short list of them, registered on first use.
fn find_or<K: PartialEq + Copy, H: Clone>(
    list: &mut Vec<(K, H)>,
    key: K,
    make: impl FnOnce() -> H,
) -> H {
    if let Some((_, h)) = list.iter().find(|(k, _)| *k == key) {
        return h.clone();
    }
    let h = make();
    list.push((key, h.clone()));
    h
}

impl MetricsRecorder {
    pub fn new(inner: Arc<dyn Recorder>) -> MetricsRecorder {
        MetricsRecorder {
            inner,
            series: Mutex::new(Series::default()),
        }
    }

    fn count(&self, r: &RequestRecord) {
        let dialect = r.dialect.as_str();
        let provider = r.provider.as_deref().unwrap_or("-");
        let mut series = match self.series.lock() {
            Ok(series) => series,
            Err(poisoned) => poisoned.into_inner(),
        };
        let Series {
            providers,
            overhead,
        } = &mut *series;
        find_or(
            overhead,
            dialect,
            || histogram!("trimgate_overhead_seconds", "dialect" => dialect),
        )
        .record(r.overhead.as_secs_f64());
        let p = match providers.get_mut(provider) {
            Some(p) => p,
            None => providers.entry(provider.to_owned()).or_default(),
        };
        let outcome = r.outcome.as_str();
        let kind = r.kind.as_str();
        find_or(&mut p.requests, (dialect, r.status, outcome, kind), || {
            counter!("trimgate_requests_total",
                "dialect" => dialect, "provider" => provider.to_owned(),
                "status" => r.status.to_string(), "outcome" => outcome, "kind" => kind)
        })
        .increment(1);
        find_or(&mut p.durations, dialect, || {
            histogram!("trimgate_request_duration_seconds",
                "dialect" => dialect, "provider" => provider.to_owned())
        })
        .record(r.latency.as_secs_f64());
        if r.kind != crate::record::Kind::Generation {
            // Counted as requests, by outcome; they use no tokens and are no model's error.
            return;
        }
        if let Some(error) = r.error.filter(|_| r.outcome != Outcome::ClientCancelled) {
            find_or(&mut p.errors, error, || {
                counter!("trimgate_errors_total", "kind" => error, "provider" => provider.to_owned())
            })
            .increment(1);
        }
        if let Some(u) = r.usage {
            let tokens = p.tokens.get_or_insert_with(|| {
                ["input", "output", "cache_read", "cache_write"].map(|bucket| {
                    counter!("trimgate_tokens_total", "provider" => provider.to_owned(), "bucket" => bucket)
                })
            });
            for (counter, n) in tokens
                .iter()
                .zip([u.input, u.output, u.cache_read, u.cache_write])
            {
                counter.increment(n);
            }
        }
        if let Some(cause) = r.cache_break {
            // Rare (a session's cached prefix shrank): no handle kept.
            counter!("trimgate_cache_breaks_total", "cause" => cause.as_str()).increment(1);
        }
        if r.saved_tokens > 0 {
            p.saved
                .get_or_insert_with(
                    || counter!("trimgate_saved_tokens_total", "provider" => provider.to_owned()),
                )
                .increment(r.saved_tokens as u64);
        }
    }
}

impl Recorder for MetricsRecorder {
    fn record(&self, r: Arc<RequestRecord>) {
        self.count(&r);
        self.inner.record(r);
    }
}

/// The log filter the shells read (`tracing_subscriber`'s syntax; `info` when unset).
pub const ENV_LOG: &str = "TRIMGATE_LOG";

/// The `tracing` target of the request spans: the log filter turns it off, the OTLP
/// exporter's filter admits it alone.
pub const SPAN_TARGET: &str = "trimgate_spans";

/// The span of one request on `endpoint`; its other fields come from the record, in
/// [`end_request_span`].
pub fn request_span(endpoint: Endpoint, path: &str) -> Span {
    tracing::info_span!(
        target: SPAN_TARGET,
        "trimgate.request",
        "otel.kind" = "server",
        "otel.status_code" = Empty,
        "url.path" = path,
        "trimgate.dialect" = endpoint.dialect().as_str(),
        "trimgate.request_id" = Empty,
        "trimgate.gateway_key" = Empty,
        "trimgate.provider" = Empty,
        "gen_ai.request.model" = Empty,
        "gen_ai.response.model" = Empty,
        "trimgate.streamed" = Empty,
        "http.response.status_code" = Empty,
        "trimgate.outcome" = Empty,
        "error.type" = Empty,
        "trimgate.overhead_ms" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.usage.cache_creation.input_tokens" = Empty,
        "trimgate.optimize.applied" = Empty,
        "trimgate.optimize.saved_tokens" = Empty,
        "trimgate.optimize.saved_bytes" = Empty,
        "trimgate.cache" = Empty,
    )
}

/// Fills in the request span from the finished record and closes it (the span is
/// exported once the handler, which holds the other handle, has returned too).
pub fn end_request_span(span: Span, r: &RequestRecord) {
    if span.is_disabled() {
        return;
    }
    span.record("trimgate.request_id", r.request_id.as_str());
    span.record("trimgate.gateway_key", r.gateway_key.as_deref());
    span.record("trimgate.provider", r.provider.as_deref());
    span.record("gen_ai.request.model", r.model_requested.as_deref());
    span.record("gen_ai.response.model", r.model_served.as_deref());
    span.record("trimgate.streamed", r.streamed);
    if r.status != 0 {
        span.record("http.response.status_code", i64::from(r.status));
    }
    span.record("trimgate.outcome", r.outcome.as_str());
    span.record("error.type", r.error);
    span.record("trimgate.overhead_ms", millis(r.overhead));
    if let Some(u) = r.usage {
        span.record("gen_ai.usage.input_tokens", count(u.input));
        span.record("gen_ai.usage.output_tokens", count(u.output));
        span.record("gen_ai.usage.cache_read.input_tokens", count(u.cache_read));
        span.record(
            "gen_ai.usage.cache_creation.input_tokens",
            count(u.cache_write),
        );
    }
    if !r.applied.is_empty() {
        span.record("trimgate.optimize.applied", r.applied.as_str());
        span.record("trimgate.optimize.saved_tokens", r.saved_tokens);
        span.record("trimgate.optimize.saved_bytes", r.saved_bytes);
    }
    if let Some(cache) = r.cache {
        span.record("trimgate.cache", cache.as_str());
    }
    // A server span is in error for the gateway's or the provider's failures, not the client's.
    if r.status >= 500 || r.outcome == Outcome::UpstreamFailed {
        span.record("otel.status_code", "error");
    }
}

/// The span of one call to `provider`, a child of the request's span.
pub fn upstream_span(provider: &str, endpoint: Endpoint, url: &http::Uri) -> Span {
    // The fields are worked out only for a span something wants (finding the host in a
    // URL parses its authority).
    tracing::info_span!(
        target: SPAN_TARGET,
        "trimgate.upstream",
        "otel.kind" = "client",
        "otel.status_code" = Empty,
        "trimgate.provider" = provider,
        "trimgate.dialect" = endpoint.dialect().as_str(),
        "server.address" = url.host(),
        "http.response.status_code" = Empty,
        "trimgate.upstream.first_byte_ms" = Empty,
        "error.type" = Empty,
    )
}

/// Records how the call went (`sent` is when it started, taken only for a live span) and
/// closes the span.
pub fn end_upstream_span<B>(
    span: Span,
    sent: Option<Instant>,
    result: &Result<http::Response<B>, GatewayError>,
) {
    if span.is_disabled() {
        return;
    }
    if let Some(sent) = sent {
        span.record("trimgate.upstream.first_byte_ms", millis(sent.elapsed()));
    }
    match result {
        Ok(response) => {
            let status = response.status();
            span.record("http.response.status_code", i64::from(status.as_u16()));
            if status.is_client_error() || status.is_server_error() {
                span.record("otel.status_code", "error");
            }
        }
        Err(e) => {
            span.record("error.type", e.metric_label());
            span.record("otel.status_code", "error");
        }
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A token count as OTLP's integer type.
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
