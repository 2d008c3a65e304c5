//! Retrievable originals through the real binary: a tool output whose passing tests were
//! elided reaches the provider with a marker saying where the whole output is kept; that
//! address (`GET /originals/<id>`, curl's way) and `trimgate show <id>` give it back byte
//! for byte; an unknown or malformed id is a 404 that names nothing else; with the local
//! key on, the route needs it like every other, and `trimgate show` reads it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

/// The id and address in the marker of what the provider got.
fn marker(sent: &str) -> (String, String) {
    let at = sent
        .find("[… all of it: curl -s ")
        .expect("a retrieval marker");
    let rest = &sent[at + "[… all of it: curl -s ".len()..];
    let url = rest.split_whitespace().next().unwrap().to_owned();
    let id = url.rsplit('/').next().unwrap().to_owned();
    assert!(
        rest.contains(&format!("(or: trimgate show {id})")),
        "{rest}"
    );
    (id, url)
}

#[tokio::test]
async fn an_elided_output_is_given_back_whole_by_its_marker() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let log = cargo_test_log();
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat_body(&log).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let sent: Value = serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap();
    let sent = sent["messages"][2]["content"].as_str().unwrap().to_owned();
    assert!(sent.contains("passing tests elided"), "{sent}");
    assert!(sent.contains("store::tests::keeps_order"));
    let (id, url) = marker(&sent);
    assert_eq!(
        url,
        format!("{}/originals/{id}", gw.url),
        "the gateway's own address"
    );

    // The address in the marker gives the output back byte for byte.
    let got = client().get(&url).send().await.unwrap();
    assert_eq!(got.status(), 200);
    assert!(got.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let whole = format!("[… original {id}, whole as the client sent it …]\n{log}");
    assert_eq!(got.text().await.unwrap(), whole);
    // So does `trimgate show`.
    let out = Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["show", "--gateway", &gw.url, &id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), whole);
    // The same output on the next turn gets the same marker (the prefix stays cacheable).
    post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat_body(&log).to_string(),
        &[],
    )
    .await;
    let again: Value = serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap();
    assert_eq!(again["messages"][2]["content"].as_str().unwrap(), sent);

    // The agent fetches it with its shell and sends it on: the provider gets all of it, while
    // the earlier result stays as it was sent before (the cached prefix holds).
    let mut fetched = chat_body(&log);
    let history = fetched["messages"].as_array_mut().unwrap();
    history.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": json!({"cmd": format!("curl -s {url}")}).to_string()}}]}));
    history.push(json!({"role": "tool", "tool_call_id": "call_2", "content": whole}));
    post_json(
        &format!("{}/v1/chat/completions", gw.url),
        fetched.to_string(),
        &[],
    )
    .await;
    let last: Value = serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap();
    assert_eq!(last["messages"][2]["content"].as_str().unwrap(), sent);
    assert_eq!(last["messages"][4]["content"].as_str().unwrap(), whole);

    // An id nobody was given, and one that is not an id: 404, naming nothing else.
    let other = format!("{}/originals/{}", gw.url, "0".repeat(20));
    for url in [other, format!("{}/originals/..%2Fconfig", gw.url)] {
        let res = client().get(&url).send().await.unwrap();
        assert_eq!(res.status(), 404);
        let body = res.text().await.unwrap();
        assert!(
            body.contains("no original is kept") && !body.contains("keeps_order"),
            "{body}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["show", "--gateway", &gw.url, &"0".repeat(20)])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("404"));
}

#[tokio::test]
async fn with_the_local_key_on_the_originals_need_it_and_show_reads_it() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "local_key = true", ""));
    let key_file = gw.dir.path().join("local-key");
    let key = std::fs::read_to_string(&key_file).unwrap_or_else(|_| {
        panic!(
            "no local key next to the config: {:?}",
            files_below(gw.dir.path())
        )
    });
    let log = cargo_test_log();
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        chat_body(&log).to_string(),
        &[("x-trimgate-key", key.trim())],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let sent: Value = serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap();
    let (id, url) = marker(sent["messages"][2]["content"].as_str().unwrap());
    assert_eq!(client().get(&url).send().await.unwrap().status(), 401);
    let out = Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["show", "--gateway", &gw.url, "--config"])
        .arg(gw.dir.path().join("config.toml"))
        .arg(&id)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8(out.stdout).unwrap().ends_with(&log));
}

#[tokio::test]
async fn an_original_outlives_the_process_that_elided_it() {
    let mock = start_mock(MockConfig::default()).await;
    let shared = tempfile::tempdir().unwrap();
    let config = mock_config(
        &mock.url,
        "",
        &format!(
            "[ledger]\nurl = \"sqlite://{}\"\n",
            shared.path().join("ledger.sqlite").display()
        ),
    );
    let mut first = Gateway::spawn(&config);
    let log = cargo_test_log();
    let res = post_json(
        &format!("{}/v1/chat/completions", first.url),
        chat_body(&log).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", first.stderr());
    let sent: Value = serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap();
    let (id, _) = marker(sent["messages"][2]["content"].as_str().unwrap());
    // Stopped the way a service is (its writer finishes what it has), then started again:
    // the new process has nothing in memory, the ledger has the output.
    first.signal("TERM");
    assert!(first
        .wait_exit(std::time::Duration::from_secs(15))
        .is_some());
    let second = Gateway::spawn(&config);
    let got = client()
        .get(format!("{}/originals/{id}", second.url))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200, "{}", second.stderr());
    assert!(got.text().await.unwrap().ends_with(&log));
    // One row, under the marker's id.
    let pool = gateway_core::ledger::open(&format!(
        "sqlite://{}",
        shared.path().join("ledger.sqlite").display()
    ))
    .await
    .unwrap();
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM originals")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(ids, vec![id]);
}

/// A full store: with room for about one output in memory and two in the ledger, three
/// outputs elided one after another leave the oldest gone from both (a 404 naming nothing),
/// the newest fetched whole, and the evictions counted in `/metrics` per store.
#[tokio::test]
async fn a_full_store_evicts_its_oldest_and_counts_it() {
    let mock = start_mock(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = mock_config(
        &mock.url,
        "",
        &format!(
            "[optimize]\noriginals_mib = 1\noriginals_db_mib = 1\n\n[ledger]\nurl = \"sqlite://{}\"\n",
            dir.path().join("ledger.sqlite").display()
        ),
    );
    let gw = Gateway::spawn(&config);
    // About 480 KiB each, different in every output.
    let log = |n: usize| {
        let mut log = format!("running 12001 tests (run {n})\n");
        for i in 0..12000 {
            log.push_str(&format!("test store::tests::case_{n}_{i:05} ... ok\n"));
        }
        log.push_str("test store::tests::keeps_order ... FAILED\n\nfailures:\n    store::tests::keeps_order\n\ntest result: FAILED. 12000 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.8s\n");
        log
    };
    let mut ids = Vec::new();
    for n in 0..3 {
        let res = post_json(
            &format!("{}/v1/chat/completions", gw.url),
            chat_body(&log(n)).to_string(),
            &[],
        )
        .await;
        assert_eq!(res.status(), 200, "{}", gw.stderr());
        let sent: Value =
            serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap();
        ids.push(marker(sent["messages"][2]["content"].as_str().unwrap()).0);
    }
    let fetch = |id: &String| client().get(format!("{}/originals/{id}", gw.url)).send();
    // The writer works off the request path: wait for the ledger's eviction to show.
    let mut metrics = String::new();
    for _ in 0..100 {
        metrics = metrics_text(&gw.url).await;
        if metrics.contains("trimgate_originals_evicted_total{store=\"ledger\"}") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        metrics.contains("trimgate_originals_evicted_total{store=\"memory\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("trimgate_originals_evicted_total{store=\"ledger\"}"),
        "{metrics}"
    );
    let oldest = fetch(&ids[0]).await.unwrap();
    assert_eq!(oldest.status(), 404);
    assert!(!oldest.text().await.unwrap().contains("keeps_order"));
    let newest = fetch(&ids[2]).await.unwrap();
    assert_eq!(newest.status(), 200);
    assert!(newest.text().await.unwrap().ends_with(&log(2)));
}
