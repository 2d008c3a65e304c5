//! Importing CC Switch's, claude-code-router's and LiteLLM's provider setups through the
//! admin API of the real binary, with the sample files in `tests/fixtures/import/`: a
//! preview changes nothing and shows keys only masked; a bad file is refused naming the
//! file and the problem, nothing changed; an import adds providers and routes in one edit,
//! overwriting nothing, with its keys in the OS keychain and in no file (that part runs
//! under a Secret Service, as `tests/admin.rs` does).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use base64::Engine as _;
use common::*;
use serde_json::{json, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/import");

/// Every fake key the sample files hold, literally or through the environment below.
const SAMPLE_KEYS: [&str; 9] = [
    "sk-fake-ccswitch-deepseek-0001",
    "sk-fake-ccswitch-kimi-0002",
    "sk-fake-ccswitch-kimi-codex-0004",
    "fake-ccswitch-gemini-key-0005",
    "sk-or-fake-ccr-openrouter-0001",
    "AIza-fake-ccr-gemini-0002",
    "sk-ant-fake-litellm-anthropic-0001",
    "fake-litellm-gemini-key-0002",
    "sk-fake-deepseek-from-env-0001",
];

/// The gateway's environment: one variable a sample names set, two set empty (as unset,
/// whatever the machine running the tests has).
const ENV: &[(&str, &str)] = &[
    ("DEEPSEEK_API_KEY", "sk-fake-deepseek-from-env-0001"),
    ("OPENAI_API_KEY", ""),
    ("SILICONFLOW_API_KEY", ""),
];

const CONFIG: &str = "[server]\n\n[providers.mine]\nkind = \"openai_compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[[routes]]\nmatch = \"gpt-4o\"\nprovider = \"mine\"\n";

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

fn body(file_name: &str, content: &[u8], format: Option<&str>) -> Value {
    let mut b = json!({
        "file_name": file_name,
        "content_base64": base64::engine::general_purpose::STANDARD.encode(content),
    });
    if let Some(f) = format {
        b["format"] = json!(f);
    }
    b
}

/// `/import/<action>` (`preview` or `apply`) with the sample file `sample`, uploaded as `file_name`.
async fn send_sample(
    gw: &Gateway,
    action: &str,
    file_name: &str,
    sample_name: &str,
) -> (u16, Value) {
    let path = format!("/import/{action}");
    call(
        gw,
        "POST",
        &path,
        Some(&body(file_name, &sample(sample_name), None)),
    )
    .await
}

async fn call(gw: &Gateway, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let mut req = client()
        .request(
            method.parse().unwrap(),
            format!("{}/admin/api{path}", gw.url),
        )
        .bearer_auth(&gw.admin_token);
    if let Some(b) = body {
        req = req.json(b);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    for key in SAMPLE_KEYS {
        assert!(!text.contains(key), "{path} answered a key: {text}");
    }
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn named<'v>(list: &'v Value, name: &str) -> &'v Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

fn skipped_items(plan: &Value) -> Vec<String> {
    plan["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["item"].as_str().unwrap().to_owned())
        .collect()
}

/// Each sample is previewed — format found from its content, keys masked, a taken name
/// and a taken route reported — and the config file is the same byte for byte after.
#[tokio::test]
async fn previews_show_the_plan_and_change_nothing() {
    let gw = Gateway::spawn_with_env(CONFIG, ENV);
    let config_path = gw.dir.path().join("config.toml");
    let before = std::fs::read(&config_path).unwrap();

    let (status, plan) = send_sample(&gw, "preview", "cc-switch.db", "cc-switch.db").await;
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["format"], "cc-switch");
    let deepseek = named(&plan["providers"], "deepseek");
    assert_eq!(deepseek["kind"], "anthropic");
    assert_eq!(
        deepseek["base_url"],
        "https://api.deepseek.com/anthropic/v1"
    );
    assert_eq!(deepseek["key_mask"], "sk-…0001");
    assert!(skipped_items(&plan).iter().any(|i| i.contains("opencode")));
    assert_eq!(plan["problems"], json!([]));

    let (status, plan) =
        send_sample(&gw, "preview", "config.json", "claude-code-router.json").await;
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["format"], "claude-code-router");
    let deepseek = named(&plan["providers"], "deepseek");
    assert_eq!(deepseek["key_from"], "env ($DEEPSEEK_API_KEY)");
    assert_eq!(deepseek["key_mask"], "sk-…0001");
    assert!(skipped_items(&plan).contains(&"Router.think".to_owned()));

    let (status, plan) = send_sample(&gw, "preview", "config.yaml", "litellm.yaml").await;
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["format"], "litellm");
    // `gpt-4o` is routed in the config already: kept, and the import's left out.
    let items = skipped_items(&plan);
    assert!(items.contains(&"route \"gpt-4o\"".to_owned()), "{items:?}");
    assert!(
        items.contains(&"key of provider \"openai\"".to_owned()),
        "{items:?}"
    );
    assert!(plan["routes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["match"] != "gpt-4o"));

    assert_eq!(
        std::fs::read(&config_path).unwrap(),
        before,
        "a preview wrote the config"
    );
}

/// A missing, empty, malformed, unknown or newer file, a wrong format asked for, content
/// that is not base64 and a file over the limit: each refused with the file's name and the
/// problem, the config untouched.
#[tokio::test]
async fn bad_files_are_refused_by_name_and_nothing_changes() {
    let gw = Gateway::spawn(CONFIG);
    let config_path = gw.dir.path().join("config.toml");
    let before = std::fs::read(&config_path).unwrap();
    let mut newer = sample("cc-switch.db");
    // SQLite keeps user_version at bytes 60..64 of its header, big-endian.
    newer[60..64].copy_from_slice(&99u32.to_be_bytes());
    let cases: Vec<(Value, &str)> = vec![
        (
            body("empty.yaml", b"", None),
            "empty.yaml: the file is empty",
        ),
        (
            body(
                "broken.json",
                b"{\"Providers\": [",
                Some("claude-code-router"),
            ),
            "broken.json: not valid JSON",
        ),
        (
            body("notes.txt", b"shopping: [milk]\n", None),
            "notes.txt: not a format this import reads",
        ),
        (
            body("cc-switch.db", &newer, None),
            "cc-switch.db: a CC Switch database of schema version 99",
        ),
        (
            body(
                "config.yaml",
                &sample("litellm.yaml"),
                Some("claude-code-router"),
            ),
            "config.yaml: not valid JSON",
        ),
        (
            body("config.yaml", b"model_list: []\n", None),
            "config.yaml: the litellm file lists no providers",
        ),
        (
            body("config.json", b"{}", Some("mystery")),
            "unknown format \"mystery\"",
        ),
        (
            json!({"file_name": "config.json", "content_base64": "@@@"}),
            "config.json: content_base64 is not base64",
        ),
        (json!({"content_base64": ""}), "file_name"),
    ];
    for (request, expected) in &cases {
        for path in ["/import/preview", "/import/apply"] {
            let (status, err) = call(&gw, "POST", path, Some(request)).await;
            assert_eq!(status, 400, "{path} {request}: {err}");
            let message = err["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(expected),
                "{path}: {message:?} does not say {expected:?}"
            );
        }
    }
    let huge = body("huge.json", &vec![b' '; import_limit() + 1], None);
    let (status, err) = call(&gw, "POST", "/import/apply", Some(&huge)).await;
    assert_eq!(status, 413, "{err}");
    assert_eq!(err["error"]["type"], "too_large");
    assert_eq!(
        std::fs::read(&config_path).unwrap(),
        before,
        "a refused import wrote the config"
    );
    let (_, providers) = call(&gw, "GET", "/providers", None).await;
    assert_eq!(providers["providers"].as_array().unwrap().len(), 1);
}

fn import_limit() -> usize {
    gateway_core::import::MAX_FILE_BYTES
}

/// The three samples applied one after the other: providers and routes added in the file,
/// keys in the keychain and nowhere else, a taken name renamed and a taken route left
/// alone; applied again, nothing is added twice.
#[tokio::test]
async fn each_format_is_applied_with_its_keys_in_the_keychain() {
    if !keychain_available() {
        return;
    }
    let gw = Gateway::spawn_with_env(CONFIG, ENV);
    let config_path = gw.dir.path().join("config.toml");

    let (status, report) = send_sample(&gw, "apply", "cc-switch.db", "cc-switch.db").await;
    assert_eq!(status, 200, "{report}");
    let stored: Vec<&str> = report["keys_stored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["provider"].as_str().unwrap())
        .collect();
    assert_eq!(
        stored,
        ["deepseek", "kimi-for-coding", "kimi", "gemini-relay"]
    );

    let (status, report) =
        send_sample(&gw, "apply", "config.json", "claude-code-router.json").await;
    assert_eq!(status, 200, "{report}");
    // CC Switch's deepseek came first: this one is renamed, and says so.
    let renamed = named(&report["providers"], "deepseek-ccr");
    assert_eq!(renamed["renamed_from"], "deepseek");
    // Claude Code's slots are CC Switch's already: kept, reported.
    assert!(skipped_items(&report).contains(&"route \"claude-opus-*\"".to_owned()));

    let (status, report) = send_sample(&gw, "apply", "config.yaml", "litellm.yaml").await;
    assert_eq!(status, 200, "{report}");

    let (_, list) = call(&gw, "GET", "/providers", None).await;
    let providers = &list["providers"];
    for (name, kind) in [
        ("deepseek", "anthropic"),
        ("kimi", "openai_compatible"),
        ("gemini-relay", "gemini"),
        ("deepseek-ccr", "deepseek"),
        ("openrouter", "openai_compatible"),
        ("anthropic", "anthropic"),
    ] {
        let p = named(providers, name);
        assert_eq!(p["kind"], kind, "{p}");
        assert_eq!(p["key"]["source"], "keychain", "{p}");
        assert_eq!(p["key"]["set"], true, "{p}");
    }
    assert_eq!(
        named(providers, "kimi")["dialects"],
        json!(["openai_responses"])
    );
    // Named by the file through a variable the gateway does not have: no key yet.
    assert_eq!(named(providers, "siliconflow")["key"]["set"], false);
    assert_eq!(
        named(providers, "mine")["base_url"],
        "http://127.0.0.1:9/v1"
    );

    let (_, routes) = call(&gw, "GET", "/routes", None).await;
    let route = |m: &str| {
        routes["routes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["match"] == m)
            .cloned()
            .unwrap_or_else(|| panic!("no route {m} in {routes}"))
    };
    assert_eq!(route("claude-sonnet-*")["provider"], "deepseek");
    assert_eq!(route("claude-sonnet-*")["model"], "deepseek-v4-pro");
    assert_eq!(route("claude-3-5-haiku-*")["provider"], "ollama");
    assert_eq!(
        route("gpt-4o")["provider"],
        "mine",
        "the config's own route is kept"
    );
    assert_eq!(route("claude-sonnet")["model"], "claude-sonnet-4-5");

    // Applied again: everything there already, nothing added.
    let text_before = std::fs::read_to_string(&config_path).unwrap();
    let (status, again) = send_sample(&gw, "apply", "config.json", "claude-code-router.json").await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["providers"], json!([]), "{again}");
    assert_eq!(std::fs::read_to_string(&config_path).unwrap(), text_before);

    // No key in any file of the gateway's: the config, the ledger, the log.
    for entry in files_below(gw.dir.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap_or_default()).into_owned();
        for key in SAMPLE_KEYS {
            assert!(!text.contains(key), "{} holds a key", entry.display());
        }
    }
    // Deleting the providers deletes their keychain entries too.
    for p in providers.as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        if name != "mine" {
            let (status, _) = call(&gw, "DELETE", &format!("/providers/{name}"), None).await;
            assert_eq!(status, 204);
        }
    }
}
