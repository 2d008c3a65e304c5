//! Prometheus metrics: the record stage counts every request (by dialect, provider,
//! status and outcome), its latency and the gateway's own time, tokens by bucket, tokens
//! the optimizer saved, and upstream errors; the ledger reports its queue. Labels are
//! low-cardinality names from the config, never a key or a prompt.

use std::sync::Arc;
use std::time::Duration;

use metrics::{counter, histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::record::{Recorder, RequestRecord};

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
pub struct MetricsRecorder {
    pub inner: Arc<dyn Recorder>,
}

impl Recorder for MetricsRecorder {
    fn record(&self, r: RequestRecord) {
        let dialect = r.dialect.as_str();
        let provider = r.provider.clone().unwrap_or_else(|| "-".into());
        let status = r.status.to_string();
        counter!("trimgate_requests_total",
            "dialect" => dialect, "provider" => provider.clone(), "status" => status,
            "outcome" => r.outcome.as_str())
        .increment(1);
        histogram!("trimgate_request_duration_seconds", "dialect" => dialect, "provider" => provider.clone())
            .record(r.latency.as_secs_f64());
        histogram!("trimgate_overhead_seconds", "dialect" => dialect)
            .record(r.overhead.as_secs_f64());
        if let Some(error) = r.error {
            counter!("trimgate_errors_total", "kind" => error, "provider" => provider.clone())
                .increment(1);
        }
        if let Some(u) = r.usage {
            for (bucket, n) in [
                ("input", u.input),
                ("output", u.output),
                ("cache_read", u.cache_read),
                ("cache_write", u.cache_write),
            ] {
                counter!("trimgate_tokens_total", "provider" => provider.clone(), "bucket" => bucket).increment(n);
            }
        }
        if r.saved_tokens > 0 {
            counter!("trimgate_saved_tokens_total", "provider" => provider)
                .increment(r.saved_tokens as u64);
        }
        self.inner.record(r);
    }
}
