//! Request traces over OTLP/HTTP: the exporter, the tracer provider and the `tracing`
//! layer that turns gateway-core's request spans into OpenTelemetry spans. Built only
//! when the config names an endpoint.
//!
//! Spans are batched and sent as protobuf by the SDK's own background thread, with a
//! blocking HTTP client of their own, so exporting never runs on the request path.

use std::time::Duration;

use gateway_core::config::Telemetry;
use gateway_core::telemetry::SPAN_TARGET;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::{Layer, Registry};

/// A layer of the process's subscriber.
pub type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a graceful stop waits for the last spans to go out.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// The instrumentation scope of the spans.
const SCOPE: &str = "trimgate";

/// The running exporter. [`Traces::shutdown`] sends what is still queued.
pub struct Traces {
    provider: SdkTracerProvider,
}

/// Starts exporting to `endpoint` (the full traces URL) and returns the layer that feeds
/// the exporter: it listens to the request spans' target and nothing else, so no log
/// event, and nothing a dependency traces, becomes part of a span.
pub fn start(endpoint: &str, telemetry: &Telemetry) -> Result<(BoxedLayer, Traces), String> {
    // An https:// collector is reached with the same TLS crypto as the providers.
    gateway_core::upstream::install_tls_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| {
            format!(
                "cannot start the OTLP exporter for {}: {e}",
                gateway_core::ledger::redact(endpoint)
            )
        })?;
    let sampler = if telemetry.sample_ratio >= 1.0 {
        Sampler::AlwaysOn
    } else {
        Sampler::TraceIdRatioBased(telemetry.sample_ratio)
    };
    let resource = Resource::builder()
        .with_service_name(telemetry.service_name.clone())
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(sampler)
        .with_resource(resource)
        .build();
    let scope = InstrumentationScope::builder(SCOPE)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer_with_scope(scope))
        // Spans carry what the gateway records, not where in the source they were made.
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(Targets::new().with_target(SPAN_TARGET, Level::INFO))
        .boxed();
    Ok((layer, Traces { provider }))
}

impl Traces {
    /// Exports the spans still queued and stops the exporter, waiting at most a few seconds.
    pub async fn shutdown(self) {
        let provider = self.provider;
        // Shutdown blocks until the batch thread is done: keep it off the async workers.
        let done =
            tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT))
                .await;
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the last spans may not have been exported"),
            Err(e) => tracing::warn!(error = %e, "the trace exporter did not stop cleanly"),
        }
    }
}
