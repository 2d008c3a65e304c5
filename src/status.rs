//! `trimgate status` asks the running gateway which providers are in rotation, cooling
//! down or being probed (`GET /status`), with the key a client would present;
//! `trimgate healthcheck` whether it answers at all (`GET /healthz`), for a container.

use std::time::Duration;

use gateway_core::headers::X_TRIMGATE_KEY;
use serde_json::Value;

/// Where to ask and what to present.
pub struct Target {
    /// `http://127.0.0.1:8788`
    pub base: String,
    /// The gateway's local key, when its config turns it on.
    pub local_key: Option<String>,
    /// A gateway key (`TRIMGATE_KEY`), when the gateway requires one.
    pub gateway_key: Option<String>,
}

/// `GET base + path` with the keys a client would present: the body of a 2xx answer, or
/// what went wrong.
async fn get(target: &Target, path: &str) -> Result<String, String> {
    gateway_core::upstream::install_tls_provider();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| e.to_string())?;
    let url = format!("{}{path}", target.base.trim_end_matches('/'));
    let mut request = client.get(&url);
    if let Some(key) = &target.local_key {
        request = request.header(X_TRIMGATE_KEY, key);
    }
    if let Some(key) = &target.gateway_key {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("no gateway answers at {}: {e}", target.base))?;
    let status = response.status();
    let body = response.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("{url} answered {status}: {}", body.trim()));
    }
    Ok(body)
}

/// Prints a tool output as the client sent it, before a pass elided part of it.
pub async fn show(target: &Target, id: &str) -> Result<(), String> {
    let body = get(target, &format!("/originals/{id}")).await?;
    use std::io::Write;
    std::io::stdout()
        .write_all(body.as_bytes())
        .map_err(|e| e.to_string())
}

/// Prints the gateway's provider health; an error when no gateway answers, or it refuses.
pub async fn run(target: &Target, json: bool) -> Result<(), String> {
    let url = format!("{}/status", target.base.trim_end_matches('/'));
    let body = get(target, "/status").await?;
    let parsed: Value =
        serde_json::from_str(&body).map_err(|e| format!("{url} answered with bad JSON: {e}"))?;
    if json {
        println!("{parsed:#}");
    } else {
        print!("{}", table(&target.base, &parsed));
    }
    Ok(())
}

/// Whether the gateway at `base` answers `GET /healthz` with 200 within a few seconds.
pub fn healthcheck(base: &str) -> Result<(), String> {
    let url = format!("{}/healthz", base.trim_end_matches('/'));
    if !crate::wrap::reachable(&url) {
        return Err(format!("no gateway answers at {base} ({url})"));
    }
    println!("ok: {url}");
    Ok(())
}

/// One line for the gateway, then one per provider (and per pool key with a circuit).
fn table(base: &str, status: &Value) -> String {
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("?").to_owned();
    let mut out = format!(
        "Trimgate {} at {base}: {}\n",
        text(status, "version"),
        text(status, "status")
    );
    let providers = status["providers"].as_array().cloned().unwrap_or_default();
    if providers.is_empty() {
        out.push_str("no providers configured\n");
        return out;
    }
    let width = providers
        .iter()
        .map(|p| text(p, "provider").len())
        .max()
        .unwrap_or(0)
        .max("PROVIDER".len());
    out.push_str(&format!(
        "{:<width$}  {:<12}  {:>8}  RETRY IN\n",
        "PROVIDER", "STATE", "FAILURES"
    ));
    for p in &providers {
        let retry = p["retry_in_secs"]
            .as_f64()
            .map(|s| format!("{s:.1} s"))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<width$}  {:<12}  {:>8}  {retry}\n",
            text(p, "provider"),
            text(p, "state"),
            p["failures"].as_u64().unwrap_or(0),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_per_provider_with_the_wait_of_one_cooling_down() {
        let status = serde_json::json!({
            "status": "ok",
            "version": "1.2.3",
            "providers": [
                {"provider": "anthropic", "state": "cooling_down", "failures": 0, "retry_in_secs": 12.34},
                {"provider": "openai", "state": "up", "failures": 1, "retry_in_secs": null},
            ],
        });
        let printed = table("http://127.0.0.1:8788", &status);
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(lines[0], "Trimgate 1.2.3 at http://127.0.0.1:8788: ok");
        assert_eq!(lines[1], "PROVIDER   STATE         FAILURES  RETRY IN");
        assert_eq!(lines[2], "anthropic  cooling_down         0  12.3 s");
        assert_eq!(lines[3], "openai     up                   1  ");
        assert_eq!(lines.len(), 4);
    }
}
