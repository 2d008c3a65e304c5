//! `[telemetry]`: where request traces go, and how many; the OTLP names it follows.

use serde::Deserialize;

use super::ConfigProblem;

/// The standard OpenTelemetry variable; when set it overrides `telemetry.otlp_endpoint`.
pub const ENV_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The standard OpenTelemetry protocol variable: the endpoint variable is not for us
/// when it names another protocol than ours.
pub const ENV_OTLP_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";
/// The one OTLP protocol the gateway exports.
pub const OTLP_PROTOCOL: &str = "http/protobuf";
/// Appended to a collector's base URL for OTLP/HTTP traces.
pub const OTLP_TRACES_PATH: &str = "/v1/traces";
/// `service.name` of exported spans unless the config names another.
pub const DEFAULT_SERVICE_NAME: &str = "trimgate";
/// `[telemetry]`: request traces exported over OTLP/HTTP; nothing is exported without an endpoint.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP base URL (`http://127.0.0.1:4318`); `/v1/traces` is
    /// appended unless the URL already ends in it.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported spans; default `trimgate`.
    pub service_name: Option<String>,
    /// Share of requests traced, 0 to 1; default 1.
    pub sample_ratio: Option<f64>,
}

/// Where request traces go, and how many.
#[derive(Clone, Debug, PartialEq)]
pub struct Telemetry {
    /// The full OTLP/HTTP traces URL (`…/v1/traces`); `None` exports nothing.
    pub otlp_endpoint: Option<String>,
    pub service_name: String,
    /// Share of requests traced, in `0.0..=1.0`.
    pub sample_ratio: f64,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            otlp_endpoint: None,
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            sample_ratio: 1.0,
        }
    }
}

pub(super) fn validate_telemetry(
    telemetry: TelemetryConfig,
    problems: &mut Vec<ConfigProblem>,
) -> Telemetry {
    let TelemetryConfig {
        otlp_endpoint,
        service_name,
        sample_ratio,
    } = telemetry;
    let defaults = Telemetry::default();
    let otlp_endpoint = otlp_endpoint.and_then(|url| {
        otlp_traces_url(&url)
            .map_err(|message| {
                problems.push(ConfigProblem {
                    path: "telemetry.otlp_endpoint".into(),
                    message,
                })
            })
            .ok()
    });
    let service_name = match service_name {
        None => defaults.service_name,
        Some(name) if !name.trim().is_empty() => name.trim().to_owned(),
        Some(_) => {
            problems.push(ConfigProblem {
                path: "telemetry.service_name".into(),
                message: "must not be empty (leave it out for \"trimgate\")".into(),
            });
            defaults.service_name
        }
    };
    let sample_ratio = match sample_ratio {
        None => defaults.sample_ratio,
        Some(r) if (0.0..=1.0).contains(&r) => r,
        Some(r) => {
            problems.push(ConfigProblem {
                path: "telemetry.sample_ratio".into(),
                message: format!("must be a share between 0 and 1, got {r}"),
            });
            defaults.sample_ratio
        }
    };
    Telemetry {
        otlp_endpoint,
        service_name,
        sample_ratio,
    }
}

/// The OTLP/HTTP traces URL for a collector's base URL: `/v1/traces` is appended unless
/// the URL already ends in it (the rule of `OTEL_EXPORTER_OTLP_ENDPOINT`).
pub fn otlp_traces_url(text: &str) -> Result<String, String> {
    let trimmed = text.trim().trim_end_matches('/');
    let uri = trimmed
        .parse::<http::Uri>()
        .map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
        return Err(format!(
            "{text:?} must be an http:// or https:// URL with a host, like http://127.0.0.1:4318"
        ));
    }
    if uri.query().is_some() {
        return Err(format!("{text:?} must not have a query string"));
    }
    if trimmed.ends_with(OTLP_TRACES_PATH) {
        Ok(trimmed.to_owned())
    } else {
        Ok(format!("{trimmed}{OTLP_TRACES_PATH}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, ConfigError};

    #[test]
    fn telemetry_is_off_unless_an_endpoint_is_given() {
        let config = Config::from_toml("", "t.toml").map(|c| c.telemetry);
        assert_eq!(config.ok(), Some(Telemetry::default()));
        let text = "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/\"\nsample_ratio = 0.25\n";
        let telemetry = Config::from_toml(text, "t.toml").map(|c| c.telemetry);
        assert_eq!(
            telemetry.ok(),
            Some(Telemetry {
                otlp_endpoint: Some("http://127.0.0.1:4318/v1/traces".into()),
                service_name: "trimgate".into(),
                sample_ratio: 0.25,
            })
        );
    }

    #[test]
    fn otlp_endpoints_get_the_traces_path_once() {
        for (given, expected) in [
            ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
            (
                "https://otel.example.com/",
                "https://otel.example.com/v1/traces",
            ),
            ("http://collector/otlp", "http://collector/otlp/v1/traces"),
            (
                "http://collector:4318/v1/traces",
                "http://collector:4318/v1/traces",
            ),
        ] {
            assert_eq!(otlp_traces_url(given).as_deref(), Ok(expected), "{given}");
        }
        for bad in [
            "127.0.0.1:4318",
            "grpc://collector:4317",
            "http://",
            "http://x/?a=b",
        ] {
            assert!(otlp_traces_url(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn bad_telemetry_values_are_reported_with_their_paths() {
        let text = r#"
            [telemetry]
            otlp_endpoint = "ftp://collector:4318"
            service_name = " "
            sample_ratio = 1.5
        "#;
        let Err(ConfigError::Invalid { problems, .. }) = Config::from_toml(text, "t.toml") else {
            panic!("config should be invalid");
        };
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "telemetry.otlp_endpoint",
                "telemetry.service_name",
                "telemetry.sample_ratio"
            ]
        );
        for ratio in ["-0.1", "nan", "inf"] {
            let text = format!("[telemetry]\nsample_ratio = {ratio}\n");
            let err = Config::from_toml(&text, "t.toml")
                .err()
                .map(|e| e.to_string());
            assert!(
                err.as_deref()
                    .is_some_and(|e| e.contains("telemetry.sample_ratio")),
                "{ratio}: {err:?}"
            );
        }
        let err = Config::from_toml("[telemetry]\notlp_endpont = \"x\"\n", "t.toml")
            .err()
            .map(|e| e.to_string());
        assert!(err.unwrap_or_default().contains("otlp_endpont"));
    }
}
