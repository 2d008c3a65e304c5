//! The routes editor's check through the real binary: a draft is checked by the config's
//! own validation and answered by the proxy's own table, and nothing is written — a glob
//! that does not compile is named by its path (and a save of it refused, the file as it
//! was), the answer follows the draft's order, a provider that failed shows cooling down
//! in the answer as the proxy sees it, and the checks stay out of the actions log.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use gateway_core::mock::MockConfig;
use serde_json::{json, Value};

async fn call(gw: &Gateway, method: &str, path: &str, body: Value) -> (u16, Value) {
    let res = client()
        .request(
            method.parse().unwrap(),
            format!("{}/admin/api{path}", gw.url),
        )
        .bearer_auth(&gw.admin_token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

fn routes(order: &[(&str, &str, &str)]) -> Value {
    order
        .iter()
        .map(|(pattern, provider, model)| json!({"match": pattern, "provider": provider, "model": model}))
        .collect()
}

#[tokio::test]
async fn a_draft_is_checked_and_answered_without_being_saved() {
    let mock = start_mock(MockConfig::default()).await;
    // A provider nothing listens for: one refused request takes it out of rotation.
    let extra = "[retry]\ncooldown_failures = 1\ncooldown_secs = 600\nmax_attempts = 1\n\n[providers.dead]\nkind = \"openai_compatible\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodels = [\"m-dead\"]\n";
    let gw = Gateway::spawn(&mock_config(&mock.url, "", extra));
    let file = gw.dir.path().join("config.toml");
    let before = std::fs::read_to_string(&file).unwrap();
    let narrow = ("claude-haiku-*", "mock-openai", "gpt-5-mini");
    let broad = ("claude-*", "mock-openai", "gpt-5");

    // The first route that matches, in the draft's order; a reorder changes the answer.
    let (status, got) = call(
        &gw,
        "POST",
        "/routes/check",
        json!({"routes": routes(&[narrow, broad]), "model": "claude-haiku-4-5"}),
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["problems"], json!([]));
    let a = &got["answer"];
    assert_eq!(
        (a["via"].as_str(), a["route"].as_u64()),
        (Some("route"), Some(0)),
        "{a}"
    );
    assert_eq!(
        (a["provider"].as_str(), a["upstream_model"].as_str()),
        (Some("mock-openai"), Some("gpt-5-mini"))
    );
    let (_, got) = call(
        &gw,
        "POST",
        "/routes/check",
        json!({"routes": routes(&[broad, narrow]), "model": "claude-haiku-4-5"}),
    )
    .await;
    assert_eq!(
        (
            got["answer"]["route"].as_u64(),
            got["answer"]["upstream_model"].as_str()
        ),
        (Some(0), Some("gpt-5"))
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        before,
        "a check writes nothing"
    );
    // Without a draft, the routes in force: none, so the Anthropic kind's own family.
    let (_, got) = call(
        &gw,
        "POST",
        "/routes/check",
        json!({"model": "claude-haiku-4-5"}),
    )
    .await;
    assert_eq!(
        (
            got["answer"]["via"].as_str(),
            got["answer"]["provider"].as_str()
        ),
        (Some("provider_family"), Some("mock-anthropic"))
    );

    // A glob that does not compile: its path and why, no answer; a save of it is refused
    // with the same path and the file stays as it was.
    let bad = routes(&[narrow, ("claude-[", "mock-openai", "gpt-5")]);
    let (status, got) = call(
        &gw,
        "POST",
        "/routes/check",
        json!({"routes": bad, "model": "claude-haiku-4-5"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(got["problems"][0]["path"], "routes[1].match", "{got}");
    assert!(got["problems"][0]["message"]
        .as_str()
        .unwrap()
        .contains("not a valid glob"));
    assert_eq!(got["answer"], Value::Null);
    let (status, err) = call(&gw, "PUT", "/routes", json!({"routes": bad})).await;
    assert_eq!(
        (status, err["problems"][0]["path"].as_str()),
        (400, Some("routes[1].match")),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);

    // What a client would be told for a model nothing serves.
    let (_, got) = call(
        &gw,
        "POST",
        "/routes/check",
        json!({"routes": [], "model": "llama3"}),
    )
    .await;
    assert_eq!(
        (
            got["answer"]["via"].as_str(),
            got["answer"]["error"]["status"].as_u64()
        ),
        (Some("none"), Some(404))
    );
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        json!({"model": "llama3", "messages": [{"role": "user", "content": "hi"}]}).to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 404);
    let told: Value = res.json().await.unwrap();
    assert_eq!(got["answer"]["error"]["message"], told["error"]["message"]);

    // A provider that refused a request is cooling down in the answer, its fallback up.
    let fragile = json!([{"match": "fragile-*", "provider": "dead", "model": "m-dead", "fallbacks": ["mock-openai/gpt-5-mini"]}]);
    let (status, _) = call(
        &gw,
        "PUT",
        "/routes",
        json!({"routes": [{"match": "fragile-*", "provider": "dead", "model": "m-dead"}]}),
    )
    .await;
    assert_eq!(status, 200);
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        json!({"model": "fragile-1", "messages": [{"role": "user", "content": "hi"}]}).to_string(),
        &[],
    )
    .await;
    assert!(res.status().is_server_error(), "{}", res.status());
    let (_, got) = call(
        &gw,
        "POST",
        "/routes/check",
        json!({"routes": fragile, "model": "fragile-1"}),
    )
    .await;
    let a = &got["answer"];
    assert_eq!(
        (a["provider"].as_str(), a["cooling_down"].as_bool()),
        (Some("dead"), Some(true)),
        "{a}"
    );
    assert_eq!(a["fallbacks"][0]["provider"], "mock-openai");
    assert_eq!(a["fallbacks"][0]["state"], "up");

    // The actions log holds the saves, not the checks sent as the user types.
    let log = admin_get(&gw, "/audit").await;
    let paths: Vec<&str> = log["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/admin/api/routes"), "{log}");
    assert!(!paths.contains(&"/admin/api/routes/check"), "{log}");
}
