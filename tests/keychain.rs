//! Provider keys in the OS keychain, for real: the Secret Service of a gnome-keyring
//! daemon on a private D-Bus session (`scripts/test.sh` runs this file under
//! `dbus-run-session`). The key is stored and read through the `keyring` crate, seen by
//! `secret-tool` as any other program would see it, used by the gateway binary to call the
//! provider, and never written to the config or the ledger.
//!
//! Without a session bus the tests say so and pass, unless `TRIMGATE_REQUIRE_KEYCHAIN=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "keychain")]

mod common;

use std::process::Command;

use common::*;
use gateway_core::mock::MockConfig;
use gateway_core::secrets::{KeySource, KeyringStore, SecretError, SecretStore, KEYCHAIN_SERVICE};
use serde_json::json;

fn secret_tool_lookup(name: &str) -> Option<String> {
    let out = Command::new("secret-tool")
        .args(["lookup", "service", KEYCHAIN_SERVICE, "username", name])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn unique(tag: &str) -> String {
    format!("tg-test-{tag}-{}", std::process::id())
}

#[test]
fn keys_are_stored_read_and_deleted_in_the_secret_service() {
    if !keychain_available() {
        return;
    }
    let name = unique("roundtrip");
    let source = KeySource::Keychain(name.clone());
    let store = KeyringStore;
    assert!(matches!(store.get(&source), Err(SecretError::Missing(_))));
    store.set(&source, "sk-keychain-roundtrip-0001").unwrap();
    assert_eq!(
        store.get(&source).unwrap().unwrap().expose(),
        "sk-keychain-roundtrip-0001"
    );
    // Another program sees it where the platform keeps secrets.
    assert_eq!(
        secret_tool_lookup(&name).as_deref(),
        Some("sk-keychain-roundtrip-0001")
    );
    store.delete(&source).unwrap();
    assert!(matches!(store.get(&source), Err(SecretError::Missing(_))));
    assert_eq!(secret_tool_lookup(&name), None);
    // Deleting what is not there is fine; env and file sources are not written.
    store.delete(&source).unwrap();
    assert!(matches!(
        store.set(&KeySource::Env("X".into()), "k"),
        Err(SecretError::ReadOnly(_))
    ));
}

#[tokio::test]
async fn the_gateway_calls_the_provider_with_the_keychain_key() {
    if !keychain_available() {
        return;
    }
    let name = unique("gateway");
    let source = KeySource::Keychain(name.clone());
    KeyringStore.set(&source, OPENAI_KEY).unwrap();
    let mock = start_mock(MockConfig::default()).await;
    let config = format!(
        r#"
[providers.openai]
kind = "openai"
base_url = "{}/v1"
api_key = {{ keychain = "{name}" }}
"#,
        mock.url
    );
    let gw = Gateway::spawn(&config);
    let body = json!({"model": "gpt-5", "messages": [{"role": "user", "content": "keychain"}]});
    let res = post_json(
        &format!("{}/v1/chat/completions", gw.url),
        body.to_string(),
        &[],
    )
    .await;
    assert_eq!(res.status(), 200, "{}", gw.stderr());
    let sent = mock.state.requests();
    assert_eq!(
        sent[0]
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    // The key is in none of the gateway's files.
    for entry in files_below(gw.dir.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(OPENAI_KEY),
            "{} holds the key",
            entry.display()
        );
    }
    KeyringStore.delete(&source).unwrap();
}
