//! Providers and their keys: list, add, change, remove, test; keys go in only.

use super::*;

pub(super) fn provider_json(state: &AppState, p: &Provider) -> Value {
    let (source, name) = match &p.key {
        KeySource::Keychain(n) => ("keychain", Some(n.clone())),
        KeySource::Env(var) => ("env", Some(var.clone())),
        KeySource::File(path) => ("file", Some(path.display().to_string())),
        KeySource::None => ("none", None),
    };
    let stored = match &p.key {
        KeySource::None => None,
        key => state.secrets().get(key).ok().flatten(),
    };
    json!({
        "name": p.name,
        "kind": p.kind.as_str(),
        // A password in the URL stays in the config file; the window gets it masked.
        "base_url": crate::secrets::redact_url(&p.base_url),
        "dialects": p.dialects.iter().map(|d| d.as_str()).collect::<Vec<_>>(),
        "models": p.models,
        "client_auth": p.client_auth.as_str(),
        // The client's own login goes to this provider (a Claude subscription, say).
        "uses_client_login": match p.client_auth {
            ClientAuth::Forward => true,
            ClientAuth::WhenNoKey => stored.is_none(),
            ClientAuth::Never => false,
        },
        "key": {
            "source": source,
            "name": name,
            "set": stored.is_some(),
            "mask": stored.map(|s| mask(s.expose())),
        },
    })
}

pub(super) async fn list_providers(State(state): State<AdminState>) -> Response {
    let config = state.config();
    let all: Vec<Value> = config
        .providers
        .iter()
        .map(|p| provider_json(&state, p))
        .collect();
    answer(ok(json!({ "providers": all })))
}

pub(super) fn find<'c>(config: &'c Config, name: &str) -> Result<&'c Arc<Provider>, AdminError> {
    config
        .providers
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| AdminError::NotFound(format!("no provider named {name:?}")))
}

pub(super) fn valid_name(name: &str) -> Result<(), AdminError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(AdminError::BadRequest(
            "a provider's name is 1 to 64 letters, digits, - or _".into(),
        ))
    }
}

pub(super) async fn create_provider(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let edit: ProviderEdit = parse(&body)?;
            let name = edit
                .name
                .clone()
                .ok_or_else(|| AdminError::BadRequest("`name` is required".into()))?;
            valid_name(&name)?;
            if edit.kind.is_none() {
                return Err(AdminError::BadRequest("`kind` is required".into()));
            }
            if state.config().providers.iter().any(|p| p.name == name) {
                return Err(AdminError::BadRequest(format!(
                    "a provider named {name:?} exists"
                )));
            }
            let key = edit.key.clone().filter(|k| !k.trim().is_empty());
            let config = edit_config(&state, |doc| {
                edit::upsert_provider(doc, &name, &edit);
                if key.is_some() || edit.kind.as_deref() != Some("openai_compatible") {
                    edit::use_keychain(doc, &name);
                }
                Ok(())
            })
            .await?;
            if let Some(key) = key {
                store_key(&state, &name, &key)?;
            }
            let p = find(&config, &name)?;
            Ok(reply(StatusCode::CREATED, &provider_json(&state, p)))
        }
        .await,
    )
}

pub(super) async fn update_provider(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    answer(
        async {
            let mut edit: ProviderEdit = parse(&body)?;
            if edit.name.is_some() || edit.key.is_some() {
                return Err(AdminError::BadRequest(
                    "a provider's name cannot change, and its key is set with PUT …/key".into(),
                ));
            }
            let before = find(&state.config(), &name)?.clone();
            // The window shows a URL's password masked; the masked URL sent back unchanged
            // keeps the password rather than writing the mask into the file.
            if let Some(Some(url)) = &edit.base_url {
                if url.trim() != before.base_url && url.trim() == crate::secrets::redact_url(&before.base_url) {
                    edit.base_url = Some(Some(before.base_url.clone()));
                }
            }
            let mut key_removed = false;
            let config = edit_config(&state, |doc| {
                edit::upsert_provider(doc, &name, &edit);
                // A key goes only to the host it was entered for: pointed elsewhere, the
                // provider's key is unbound (and its keychain entry forgotten) before the
                // change is in force, until it is entered again.
                let after = Config::from_toml(&doc.to_string(), "edit").ok();
                let moved = after
                    .as_ref()
                    .and_then(|c| c.providers.iter().find(|p| p.name == name))
                    .is_some_and(|p| !same_hosts(&before, p));
                if moved && before.key != KeySource::None {
                    let entry = KeySource::Keychain(name.clone());
                    if let Err(e) = state.secrets().delete(&entry) {
                        if before.key == entry {
                            return Err(AdminError::Unavailable(format!(
                                "the key stored for the old host cannot be removed, so the host is not changed: {e}"
                            )));
                        }
                        tracing::warn!(provider = %name, error = %e, "cannot clear the provider's keychain entry");
                    }
                    edit::use_keychain(doc, &name);
                    key_removed = true;
                }
                Ok(())
            })
            .await?;
            let mut body = provider_json(&state, find(&config, &name)?);
            if key_removed {
                body["key_removed"] = json!(true);
                body["message"] = json!(
                    "the provider's address moved to another host: its key was removed; enter it again to use it there"
                );
            }
            ok(body)
        }
        .await,
    )
}

/// Whether two versions of a provider send to the same hosts (scheme, host and port).
pub(super) fn same_hosts(a: &Provider, b: &Provider) -> bool {
    fn origin(url: &str) -> Option<String> {
        let uri = url.parse::<http::Uri>().ok()?;
        Some(format!(
            "{}://{}",
            uri.scheme_str()?,
            uri.authority()?.as_str().to_ascii_lowercase()
        ))
    }
    origin(&a.base_url) == origin(&b.base_url)
        && a.anthropic_base_url.as_deref().map(origin)
            == b.anthropic_base_url.as_deref().map(origin)
}

pub(super) async fn delete_provider(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> Response {
    answer(
        async {
            let key = find(&state.config(), &name)?.key.clone();
            edit_config(&state, |doc| Ok(edit::remove_provider(doc, &name)?)).await?;
            if let KeySource::Keychain(_) = key {
                // The file no longer names it; a keychain that refuses is only logged.
                if let Err(e) = state.secrets().delete(&key) {
                    tracing::warn!(provider = %name, error = %e, "cannot delete the provider's keychain entry");
                }
            }
            Ok(reply(StatusCode::NO_CONTENT, &Value::Null))
        }
        .await,
    )
}

pub(super) fn store_key(state: &AppState, name: &str, key: &str) -> Result<String, AdminError> {
    if key.chars().any(char::is_control) || key.trim().is_empty() {
        return Err(AdminError::BadRequest(
            "a key is one line of printable characters".into(),
        ));
    }
    state
        .secrets()
        .set(&KeySource::Keychain(name.to_owned()), key)
        .map_err(|e| AdminError::Unavailable(e.to_string()))?;
    Ok(mask(key.trim()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeyIn {
    key: String,
}

pub(super) async fn set_key(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Response {
    answer(
        async {
            let KeyIn { key } = parse(&body)?;
            let provider = find(&state.config(), &name)?.clone();
            let shown = store_key(&state, &name, &key)?;
            if provider.key != KeySource::Keychain(name.clone()) {
                edit_config(&state, |doc| {
                    edit::use_keychain(doc, &name);
                    Ok(())
                })
                .await?;
            }
            ok(json!({ "mask": shown }))
        }
        .await,
    )
}

pub(super) async fn delete_key(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> Response {
    answer((|| {
        let provider = find(&state.config(), &name)?.clone();
        let KeySource::Keychain(_) = provider.key else {
            return Err(AdminError::BadRequest(format!(
                "{name}'s key comes from {}, not the keychain",
                provider.key
            )));
        };
        state
            .secrets()
            .delete(&provider.key)
            .map_err(|e| AdminError::Unavailable(e.to_string()))?;
        Ok(reply(StatusCode::NO_CONTENT, &Value::Null))
    })())
}

pub(super) async fn test_provider(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> Response {
    answer(
        async {
            let runtime = state.runtime();
            let provider = find(&runtime.config, &name)?;
            let started = Instant::now();
            let result = runtime.upstream.probe(provider).await;
            let latency_ms = started.elapsed().as_secs_f64() * 1e3;
            ok(match result {
                Ok(status) => json!({
                    "ok": status.is_success(),
                    "status": status.as_u16(),
                    "latency_ms": latency_ms,
                    "message": match status.as_u16() {
                        200..=299 => "the provider answered with its model list".to_owned(),
                        401 | 403 => "the provider refused the key".to_owned(),
                        s => format!("the provider answered {s}"),
                    },
                }),
                Err(e) => json!({
                    "ok": false, "status": null, "latency_ms": latency_ms, "message": e.to_string(),
                }),
            })
        }
        .await,
    )
}
