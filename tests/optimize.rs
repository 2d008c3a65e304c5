//! The optimizer through the real binary: what the provider receives, the echo headers,
//! modes from config, gateway keys and the request header, in each dialect.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

/// A cargo test run: hundreds of passing tests and one failure with its assertion.
fn cargo_test_log() -> String {
    let mut log = String::from("   Compiling demo v0.1.0 (/tmp/demo)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.31s\n     Running unittests src/lib.rs (target/debug/deps/demo-1a2b3c)\n\nrunning 401 tests\n");
    for i in 0..400 {
        log.push_str(&format!("test parser::tests::case_{i:03} ... ok\n"));
    }
    log.push_str("test parser::tests::rejects_trailing_comma ... FAILED\n\nfailures:\n\n---- parser::tests::rejects_trailing_comma stdout ----\n\nthread 'parser::tests::rejects_trailing_comma' panicked at src/parser.rs:212:9:\nassertion `left == right` failed\n  left: Ok(3)\n right: Err(TrailingComma)\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    parser::tests::rejects_trailing_comma\n\ntest result: FAILED. 400 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.05s\n\nerror: test failed, to rerun pass `--lib`\n");
    log
}

const FACTS: [&str; 4] = [
    "parser::tests::rejects_trailing_comma",
    "src/parser.rs:212:9",
    "right: Err(TrailingComma)",
    "400 passed; 1 failed",
];

fn chat_body(log: &str) -> Value {
    json!({
        "model": "gpt-5",
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Run the tests and fix what fails."},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"cargo test\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": log},
        ],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}],
    })
}

fn anthropic_body(log: &str) -> Value {
    json!({
        "model": "claude-sonnet-5-5", "max_tokens": 512,
        "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "Run the tests and fix what fails."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "cargo test"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": log}]}]},
        ],
        "tools": [{"name": "bash", "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}],
    })
}

fn header(res: &reqwest::Response, name: &str) -> String {
    res.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no {name} header"))
}

fn last_body(mock: &Mock) -> Value {
    serde_json::from_slice(&mock.state.requests().pop().unwrap().body).unwrap()
}

#[tokio::test]
async fn tool_output_is_compacted_with_every_fact_kept_and_the_rest_untouched() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let log = cargo_test_log();
    let body = chat_body(&log);
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        body.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    assert_eq!(header(&res, "x-trimgate-applied"), "tool_output=auto");
    let saved_bytes: i64 = header(&res, "x-trimgate-saved-bytes").parse().unwrap();
    let saved_tokens: i64 = header(&res, "x-trimgate-saved-tokens").parse().unwrap();
    assert!(
        saved_bytes > log.len() as i64 / 2,
        "saved {saved_bytes} of {}",
        log.len()
    );
    assert!(saved_tokens > 1000, "saved {saved_tokens} tokens");

    let mut sent = last_body(&mock);
    let compacted = sent["messages"][3]["content"].as_str().unwrap().to_owned();
    for fact in FACTS {
        assert!(compacted.contains(fact), "{fact:?} lost from:\n{compacted}");
    }
    assert!(compacted.len() < log.len() / 2);
    // Everything but that one block reached the provider as sent.
    sent["messages"][3]["content"] = Value::String(log.clone());
    assert_eq!(sent, body);
}

#[tokio::test]
async fn the_header_turns_passes_off_and_bad_values_are_refused_in_the_clients_shape() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let body = chat_body(&cargo_test_log()).to_string();
    let url = format!("{}/v1/chat/completions", gw.url);
    let res = post_json(&url, body.clone(), &[("x-trimgate-optimize", "off")]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-applied"), "");
    assert_eq!(header(&res, "x-trimgate-saved-bytes"), "0");
    assert_eq!(
        mock.state.requests().pop().unwrap().body,
        body.as_bytes(),
        "byte-identical with every pass off"
    );

    let res = post_json(
        &url,
        body.clone(),
        &[("x-trimgate-optimize", "tool_output=max")],
    )
    .await;
    assert_eq!(res.status(), 400);
    let err: Value = res.json().await.unwrap();
    assert_eq!(err["error"]["code"], "invalid_optimize_header");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("tool_output"));

    let res = post_json(
        &format!("{}/v1/messages", gw.url),
        anthropic_body(&cargo_test_log()).to_string(),
        &[("x-trimgate-optimize", "squeeze=maybe")],
    )
    .await;
    assert_eq!(res.status(), 400);
    let err: Value = res.json().await.unwrap();
    assert_eq!(err["type"], "error");
    assert_eq!(err["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn anthropic_block_lists_streams_and_translation_are_optimized_too() {
    let mock = start_mock(MockConfig::default()).await;
    // claude-* also routed to the Chat side under another name, to cross dialects.
    let routes =
        "[[routes]]\nmatch = \"cross-claude\"\nprovider = \"mock-openai\"\nmodel = \"gpt-5\"\n";
    let gw = Gateway::spawn(&mock_config(&mock.url, "", routes));
    let log = cargo_test_log();

    // Native Anthropic, streamed.
    let mut body = anthropic_body(&log);
    body["stream"] = json!(true);
    let res = post_json(&format!("{}/v1/messages", gw.url), body.to_string(), &[]).await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    assert_eq!(header(&res, "x-trimgate-applied"), "tool_output=auto");
    assert!(
        header(&res, "x-trimgate-saved-tokens")
            .parse::<i64>()
            .unwrap()
            > 1000
    );
    let events = res.text().await.unwrap();
    assert!(events.contains("message_stop"));
    let sent = last_body(&mock);
    let text = sent["messages"][2]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.len() < log.len() / 2);
    for fact in FACTS {
        assert!(text.contains(fact), "{fact:?} lost");
    }
    assert_eq!(sent["system"], body["system"]);

    // Anthropic client, Chat provider: optimized before translation.
    let mut body = anthropic_body(&log);
    body["model"] = json!("cross-claude");
    let res = post_json(&format!("{}/v1/messages", gw.url), body.to_string(), &[]).await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    assert_eq!(header(&res, "x-trimgate-applied"), "tool_output=auto");
    let sent = last_body(&mock);
    let tool = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool["tool_call_id"], "toolu_1");
    let text = match &tool["content"] {
        Value::String(s) => s.clone(),
        other => other[0]["text"].as_str().unwrap().to_owned(),
    };
    assert!(text.len() < log.len() / 2 && text.contains(FACTS[0]));
}

#[tokio::test]
async fn modes_come_from_model_globs_then_gateway_keys() {
    let mock = start_mock(MockConfig::default()).await;
    let extra = r#"
[optimize]
terse = "lite"

[[optimize.models]]
match = "gpt-5*"
tool_output = "off"

[[gateway_keys]]
name = "ci"
key = { env = "TG_TEST_GATEWAY_KEY_CI" }
optimize = { tool_output = "aggressive", terse = "off" }

[[gateway_keys]]
name = "dev"
key = { env = "TG_TEST_GATEWAY_KEY_DEV" }
"#;
    let gw = Gateway::spawn_with_env(
        &mock_config(&mock.url, "", extra),
        &[
            ("TG_TEST_GATEWAY_KEY_CI", "tg-ci-secret-1"),
            ("TG_TEST_GATEWAY_KEY_DEV", "tg-dev-secret-2"),
        ],
    );
    let url = format!("{}/v1/chat/completions", gw.url);
    let body = chat_body(&cargo_test_log()).to_string();

    let res = post_json(&url, body.clone(), &[]).await;
    assert_eq!(res.status(), 401);
    let err: Value = res.json().await.unwrap();
    assert_eq!(err["error"]["code"], "invalid_api_key");
    let res = post_json(&url, body.clone(), &[("authorization", "Bearer tg-wrong")]).await;
    assert_eq!(res.status(), 401);
    assert!(
        mock.state.requests().is_empty(),
        "refused before the provider"
    );

    // The dev key: defaults (terse lite) with the gpt-5* rule (compaction off).
    let res = post_json(
        &url,
        body.clone(),
        &[("authorization", "Bearer tg-dev-secret-2")],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    assert_eq!(header(&res, "x-trimgate-applied"), "terse=lite");
    let sent = last_body(&mock);
    assert!(sent["messages"][0]["content"]
        .as_str()
        .unwrap()
        .starts_with("You are a coding agent.\n\nAnswer tersely"));
    assert_eq!(
        sent["messages"][3]["content"],
        chat_body(&cargo_test_log())["messages"][3]["content"]
    );

    // The ci key overrides both, and works as an Anthropic x-api-key too.
    let res = post_json(&url, body.clone(), &[("x-api-key", "tg-ci-secret-1")]).await;
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "x-trimgate-applied"), "tool_output=aggressive");
    let got = mock.state.requests().pop().unwrap();
    assert!(
        !got.headers
            .values()
            .any(|v| v.to_str().unwrap_or("").contains("tg-ci-secret-1")),
        "a gateway key never goes upstream"
    );
}

#[tokio::test]
async fn a_holdout_share_of_sessions_goes_unoptimized_and_is_marked() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", "[optimize]\nholdout = 0.5\n"));
    let url = format!("{}/v1/chat/completions", gw.url);
    let log = cargo_test_log();
    let mut groups = Vec::new();
    for session in 0..16 {
        let mut body = chat_body(&log);
        body["messages"][1]["content"] = json!(format!("Session {session}: run the tests."));
        let text = body.to_string();
        let mut applied = Vec::new();
        // Two turns of one session land in the same group.
        for _ in 0..2 {
            let res = post_json(&url, text.clone(), &[]).await;
            assert_eq!(res.status(), 200);
            applied.push(header(&res, "x-trimgate-applied"));
            let sent = mock.state.requests().pop().unwrap().body;
            if applied.last().unwrap() == "holdout" {
                assert_eq!(sent, text.as_bytes(), "a held-out request goes as sent");
            } else {
                assert!(sent.len() < text.len());
            }
        }
        assert_eq!(applied[0], applied[1]);
        groups.push(applied[0].clone());
    }
    let held = groups.iter().filter(|g| *g == "holdout").count();
    assert!(
        (2..=14).contains(&held),
        "{held} of 16 sessions held out at 50 %: {groups:?}"
    );
    // A client that names its modes is never held out.
    let res = post_json(
        &url,
        chat_body(&log).to_string(),
        &[("x-trimgate-optimize", "tool_output=standard")],
    )
    .await;
    assert_eq!(header(&res, "x-trimgate-applied"), "tool_output=standard");
}

/// A file read twice and a test run repeated with the same result, as Claude Code sends
/// them: the provider gets one copy of each and a reference where it repeats; the ledger
/// counts the references as their own pass, beside the compaction.
#[tokio::test]
async fn a_repeated_output_reaches_the_provider_once_and_the_ledger_counts_it_apart() {
    let mock = start_mock(MockConfig::default()).await;
    let gw = Gateway::spawn(&mock_config(&mock.url, "", ""));
    let file: String = (1..=300)
        .map(|i| format!("    {i}→    let total_{i} = ledger.sum(&entries[{i}..]);\n"))
        .collect();
    let log = cargo_test_log();
    let result =
        |id: &str, text: &str| json!({"type": "tool_result", "tool_use_id": id, "content": text});
    let call = |id: &str, cmd: &str| json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": cmd}}]});
    let body = json!({
        "model": "claude-sonnet-5-5", "max_tokens": 512,
        "messages": [
            {"role": "user", "content": "Fix the failing test."},
            call("toolu_1", "cat -n src/ledger.rs"),
            {"role": "user", "content": [result("toolu_1", &file)]},
            call("toolu_2", "cargo test"),
            {"role": "user", "content": [result("toolu_2", &log)]},
            call("toolu_3", "cat -n src/ledger.rs"),
            {"role": "user", "content": [result("toolu_3", &file)]},
            call("toolu_4", "cargo test"),
            {"role": "user", "content": [result("toolu_4", &format!("Exit code 101\n{log}"))]},
        ],
    });
    let res = post_json(&format!("{}/v1/messages", gw.url), body.to_string(), &[]).await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    assert_eq!(
        header(&res, "x-trimgate-applied"),
        "repeats=on tool_output=auto"
    );
    let id = header(&res, "x-request-id");

    let sent = last_body(&mock);
    let text = |m: usize| {
        sent["messages"][m]["content"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(text(2), file, "the first read goes as sent (source code)");
    assert!(
        text(4).contains("right: Err(TrailingComma)"),
        "the first run, compacted"
    );
    assert!(
        text(6).starts_with(
            "[… the same output as the earlier tool result of call toolu_1 (300 lines,"
        ),
        "{}",
        text(6)
    );
    // Claude Code's exit-code line is the agent's: it stays above the reference.
    assert!(
        text(8).starts_with(
            "Exit code 101\n[… the same output as the earlier tool result of call toolu_2"
        ),
        "{}",
        text(8)
    );

    // The ledger's rows: each pass with its own before and after.
    let detail = admin_get(&gw, &format!("/requests/{id}")).await;
    let pass = |name: &str| {
        detail["passes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pass"] == name)
            .unwrap_or_else(|| panic!("no {name} pass in {detail}"))
            .clone()
    };
    let repeats = pass("repeats");
    let before = repeats["before"].as_u64().unwrap();
    let after = repeats["after"].as_u64().unwrap();
    // Both repeats' tokens (the file and the run) went; two reference lines came.
    assert!(before > 4000 && after < 100, "{repeats}");
    let compaction = pass("tool_output");
    assert!(compaction["after"].as_u64() < compaction["before"].as_u64());
}
