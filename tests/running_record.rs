//! The `trimgate` command finds the desktop app's gateway through the `gateway.json` the app
//! writes in the data dir (`gateway_core::running`), on a port no config names: `status`,
//! `wrap` and `stats` use it when nothing else is named, pass over a record nobody answers
//! at, and leave it for a `--gateway` or another `--config`. A `trimgate serve` stands in for
//! the app, and the test writes the record the app would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::*;
use gateway_core::mock::MockConfig;
use gateway_core::running::{self, Running};
use serde_json::Value;

/// A loopback port nothing listens on.
fn refused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `trimgate <args>` as a user on this machine whose data dir is `data` and whose default
/// config is `config_home/trimgate/config.toml`.
fn cli(data: &Path, config_home: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(args)
        .env("XDG_DATA_HOME", data)
        .env("XDG_CONFIG_HOME", config_home)
        .env_remove("TRIMGATE_URL")
        .env_remove("TRIMGATE_CONFIG")
        .env_remove("TRIMGATE_KEY")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
async fn the_command_reaches_the_gateway_the_app_recorded_and_reads_its_ledger() {
    let mock = start_mock(MockConfig::default()).await;
    let ledger_dir = tempfile::tempdir().unwrap();
    let ledger = ledger_dir.path().join("app-ledger.sqlite");
    let extra = format!("[ledger]\nurl = \"sqlite://{}\"\n", ledger.display());
    let app = Gateway::spawn(&mock_config(&mock.url, "", &extra));
    let app_config = app.dir.path().join("config.toml");

    // The user's own default config names a port nobody listens on, and another ledger.
    let user = tempfile::tempdir().unwrap();
    let (data, config_home) = (user.path().join("data"), user.path().join("config"));
    let default_config = config_home.join("trimgate/config.toml");
    std::fs::create_dir_all(default_config.parent().unwrap()).unwrap();
    let unused = refused_port();
    std::fs::write(
        &default_config,
        format!("[server]\nlisten = \"127.0.0.1:{unused}\"\n"),
    )
    .unwrap();

    // No record: the default config's address, where nothing answers.
    let out = cli(&data, &config_home, &["status"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains(&format!("no gateway answers at http://127.0.0.1:{unused}")),
        "{}",
        text(&out)
    );

    let record = Running {
        listen: app.url.trim_start_matches("http://").parse().unwrap(),
        pid: app.child.id(),
        config: Some(app_config.clone()),
    };
    running::write(&data.join("trimgate").join(running::RUNNING_FILE), &record).unwrap();

    let out = cli(&data, &config_home, &["status", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = status["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["provider"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mock-anthropic", "mock-openai"], "{status}");

    let out = cli(
        &data,
        &config_home,
        &["wrap", "sh", "--", "-c", "printf %s \"$OPENAI_BASE_URL\""],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}/v1", app.url)
    );

    // The app's own config named: still the app. Another config named: that one's address.
    let app_config_arg = app_config.to_str().unwrap();
    let out = cli(&data, &config_home, &["status", "--config", app_config_arg]);
    assert!(out.status.success(), "{}", text(&out));
    let default_arg = default_config.to_str().unwrap();
    let out = cli(&data, &config_home, &["status", "--config", default_arg]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("127.0.0.1:{unused}")),
        "{}",
        text(&out)
    );

    // `stats` reads the app's ledger (the one its config names), not the default config's.
    let res = post_json(
        &format!("{}/v1/chat/completions", app.url),
        r#"{"model":"gpt-5","messages":[{"role":"user","content":"counted once"}]}"#,
        &[],
    )
    .await;
    assert_eq!(res.status(), 200);
    let requests = || {
        let out = cli(
            &data,
            &config_home,
            &["stats", "--json", "--by", "provider"],
        );
        assert!(out.status.success(), "{}", text(&out));
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        rows.iter()
            .map(|r| r["requests"].as_i64().unwrap())
            .sum::<i64>()
    };
    assert!(
        eventually(Duration::from_secs(20), || requests() == 1).await,
        "stats never counted the app's request"
    );

    // A record nobody answers at (an app that crashed) is passed over.
    let stale = Running {
        listen: format!("127.0.0.1:{}", refused_port()).parse().unwrap(),
        ..record
    };
    running::write(&data.join("trimgate").join(running::RUNNING_FILE), &stale).unwrap();
    let out = cli(&data, &config_home, &["status"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains(&format!("no gateway answers at http://127.0.0.1:{unused}")),
        "{}",
        text(&out)
    );
}
