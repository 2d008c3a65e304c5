//! The log file and the diagnostics, on the real binary: `trimgate serve` writes its log to
//! the platform's log dir beside stderr, with neither a key nor a prompt in it; a log dir
//! that cannot be written stops nothing and is said once; `GET /admin/api/diagnostics`
//! reports the version, the config, the providers, the last errors and the log file,
//! never a key.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

/// The provider key, distinctive enough that any trace of it in a file is found.
const KEY: &str = "sk-logs-test-7c1e9a40d2b85f36";
/// What the user asked: never in a log or a report.
const PROMPT: &str = "ZEBRA-PROMPT-91f3 what does the fox say";

fn config(mock_url: &str) -> String {
    // A provider nobody listens for: its requests fail with a warning in the log.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = dead.local_addr().unwrap();
    mock_config(
        mock_url,
        "",
        &format!(
            r#"
[[routes]]
match = "gone-*"
provider = "gone"

[providers.gone]
kind = "openai_compatible"
base_url = "http://{dead}/v1"
api_key = {{ env = "TG_TEST_OPENAI_KEY" }}
"#
        ),
    )
}

async fn chat(gw: &Gateway, model: &str, headers: &[(&str, &str)]) -> u16 {
    let mut req = client()
        .post(format!("{}/v1/chat/completions", gw.url))
        .json(&json!({
            "model": model,
            "messages": [{"role": "user", "content": PROMPT}],
        }));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap().status().as_u16()
}

async fn diagnostics(gw: &Gateway) -> (Value, String) {
    let raw = admin_get_text(gw, "/diagnostics").await;
    (serde_json::from_str(&raw).unwrap(), raw)
}

fn log_file(gw: &Gateway) -> std::path::PathBuf {
    // The harness points XDG_STATE_HOME at the test's folder.
    gw.dir.path().join("trimgate/logs/trimgate.log")
}

/// Requests that succeed and fail go through with a provider key and a recognisable
/// prompt; the log file has their lines, and neither the key nor the prompt.
#[tokio::test]
async fn the_log_file_is_written_without_keys_or_prompts() {
    let mock = start_mock(MockConfig {
        openai_key: Some(KEY.into()),
        ..MockConfig::default()
    })
    .await;
    let gw = Gateway::spawn_with_env(&config(&mock.url), &[("TG_TEST_OPENAI_KEY", KEY)]);
    assert_eq!(chat(&gw, "gpt-5", &[]).await, 200);
    assert_eq!(
        chat(&gw, "gpt-5", &[("x-mock-error-status", "400")]).await,
        400
    );
    assert_eq!(chat(&gw, "gone-model", &[]).await, 502);

    let path = log_file(&gw);
    let log = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}\nstderr:\n{}", path.display(), gw.stderr()));
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.iter().any(|l| l.contains("gateway started")), "{log}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("WARN") && l.contains("request failed") && l.contains("gone")),
        "the failed request is in the log:\n{log}"
    );
    assert!(!log.contains(KEY), "a provider key in the log:\n{log}");
    assert!(!log.contains("ZEBRA-PROMPT"), "a prompt in the log:\n{log}");
    // The file has what stderr has.
    let stderr = gw.stderr();
    assert!(stderr.contains("request failed"), "{stderr}");
    assert!(!stderr.contains(KEY) && !stderr.contains("ZEBRA-PROMPT"));
    // The start says where the file is.
    assert!(
        stderr.contains(&format!("log: {}", path.display())),
        "{stderr}"
    );
    // Each request's line, written after its ledger row, reaches both, byte for byte.
    let request_lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains(" request request_id="))
            .map(str::to_owned)
            .collect()
    };
    // (The failed request's last row, after its retries' rows, is the last line.)
    let last_row = |text: &str| text.contains(" outcome=\"gateway_error\"");
    let logged = eventually(std::time::Duration::from_secs(5), || {
        last_row(&std::fs::read_to_string(&path).unwrap())
    })
    .await;
    let file_text = std::fs::read_to_string(&path).unwrap();
    assert!(logged, "{file_text}");
    let in_file = request_lines(&file_text);
    assert!(
        in_file.iter().any(|l| l.contains("status=200")),
        "{file_text}"
    );
    assert!(
        in_file.iter().any(|l| l.contains("status=400")),
        "{file_text}"
    );
    assert!(in_file.iter().any(|l| last_row(l)), "{file_text}");
    assert_eq!(request_lines(&gw.stderr()), in_file);

    let (report, raw) = diagnostics(&gw).await;
    assert!(
        !raw.contains(KEY),
        "a provider key in the diagnostics:\n{raw}"
    );
    assert!(
        !raw.contains("ZEBRA-PROMPT"),
        "a prompt in the diagnostics:\n{raw}"
    );
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(report["log"]["file"], path.display().to_string());
    assert_eq!(report["log"]["writable"], true);
    let mut providers: Vec<&str> = report["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["provider"].as_str().unwrap())
        .collect();
    providers.sort_unstable();
    assert_eq!(providers, ["gone", "mock-anthropic", "mock-openai"]);
    let errors = report["last_errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["level"] == "WARN"
                && e["message"].as_str().unwrap().contains("request failed")),
        "{errors:?}"
    );
    let config = report["config"].as_str().unwrap();
    assert!(config.contains("env = \"TG_TEST_OPENAI_KEY\""), "{config}");
    let text = report["text"].as_str().unwrap();
    for part in [
        format!("version: {}", env!("CARGO_PKG_VERSION")),
        format!("log file: {}", path.display()),
        "mock-openai: up".into(),
        "request failed".into(),
        "[providers.gone]".into(),
    ] {
        assert!(text.contains(&part), "{part:?} not in:\n{text}");
    }
}

/// A key that ends up somewhere it does not belong (here in a config value with no
/// secret's name) is still masked in the report: the gateway knows its keys.
#[tokio::test]
async fn a_key_pasted_anywhere_in_the_config_is_masked_in_the_diagnostics() {
    let mock = start_mock(MockConfig::default()).await;
    let extra = format!("[telemetry]\nservice_name = \"{KEY}\"\n");
    let gw = Gateway::spawn_with_env(
        &mock_config(&mock.url, "", &extra),
        &[("TG_TEST_ANTHROPIC_KEY", KEY)],
    );
    let (report, raw) = diagnostics(&gw).await;
    assert!(!raw.contains(KEY), "{raw}");
    assert!(
        report["config"].as_str().unwrap().contains("sk-…5f36"),
        "{report}"
    );
}

/// A log dir that cannot be made: the gateway serves anyway, says so in one line naming
/// the dir and the error, and the diagnostics report it.
#[tokio::test]
async fn an_unwritable_log_dir_is_said_once_and_serving_goes_on() {
    let mock = start_mock(MockConfig::default()).await;
    let blocker = tempfile::NamedTempFile::new().unwrap();
    let dir = blocker.path().join("logs");
    let gw = Gateway::spawn_with_env(
        &mock_config(&mock.url, "", ""),
        &[("TRIMGATE_LOG_DIR", dir.to_str().unwrap())],
    );
    assert_eq!(chat(&gw, "gpt-5", &[]).await, 200);
    let stderr = gw.stderr();
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("cannot write the log file"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains(&dir.display().to_string()), "{}", said[0]);
    assert!(said[0].contains("Not a directory"), "{}", said[0]);

    let (report, _) = diagnostics(&gw).await;
    assert_eq!(report["log"]["writable"], false);
    assert!(report["log"]["error"]
        .as_str()
        .unwrap()
        .contains("Not a directory"));
    assert!(report["text"].as_str().unwrap().contains(&format!(
        "{} cannot be written",
        dir.join("trimgate.log").display()
    )));
}

/// `TRIMGATE_LOG_DIR=off`, as the container image sets it: no file anywhere.
#[tokio::test]
async fn the_log_file_can_be_turned_off() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn_with_env(
        &mock_config(&mock.url, "", ""),
        &[("TRIMGATE_LOG_DIR", "off")],
    );
    assert_eq!(chat(&gw, "gpt-5", &[]).await, 200);
    assert!(!gw.dir.path().join("trimgate/logs").exists());
    let (report, _) = diagnostics(&gw).await;
    assert_eq!(report["log"]["off"], true);
    assert!(report["text"].as_str().unwrap().contains("log file: off"));
}
