//! Providers and their keys: list, add, change, remove, test; keys go in only.

use super::*;
use crate::config::clouds::{BedrockApi, Cloud, Entra};

/// Where a key comes from and whether it is there: its name and place, and a mask of it
/// when stored, never the key.
fn key_json(state: &AppState, key: &KeySource) -> Value {
    let (source, name) = match key {
        KeySource::Keychain(n) => ("keychain", Some(n.clone())),
        KeySource::Env(var) => ("env", Some(var.clone())),
        KeySource::File(path) => ("file", Some(path.display().to_string())),
        KeySource::None => ("none", None),
    };
    let stored = match key {
        KeySource::None => None,
        key => state.secrets().get(key).ok().flatten(),
    };
    json!({
        "source": source,
        "name": name,
        "set": stored.is_some(),
        "mask": stored.map(|s| mask(s.expose())),
    })
}

/// A cloud provider's settings as the form edits them: names, places and ids; a secret
/// only as [`key_json`] shows one. `null` for other kinds.
fn cloud_json(state: &AppState, cloud: Option<&Cloud>) -> Value {
    match cloud {
        None => Value::Null,
        Some(Cloud::Azure { api_version, entra }) => json!({
            "api_version": api_version,
            "entra": match entra {
                None => Value::Null,
                Some(Entra::Command(command)) => json!({ "command": command }),
                Some(Entra::ClientCredentials { token_url, client_id, secret, scope }) => {
                    // `{authority}/{tenant}/oauth2/v2.0/token`, as the config made it.
                    let base = token_url.trim_end_matches("/oauth2/v2.0/token");
                    let (authority, tenant) = base.rsplit_once('/').unwrap_or((base, ""));
                    json!({
                        "tenant_id": tenant,
                        "client_id": client_id,
                        "authority": authority,
                        "scope": scope,
                        "client_secret": key_json(state, secret),
                    })
                }
            },
        }),
        Some(Cloud::Bedrock {
            region,
            profile,
            api,
        }) => json!({
            "region": region,
            "aws_profile": profile,
            "bedrock_api": match api {
                BedrockApi::Auto => "auto",
                BedrockApi::Invoke => "invoke",
                BedrockApi::Converse => "converse",
            },
        }),
        Some(Cloud::Vertex {
            project,
            location,
            credentials_file,
        }) => json!({
            "project": project,
            "location": location,
            "credentials_file": credentials_file.as_ref().map(|f| f.display().to_string()),
        }),
    }
}

pub(super) fn provider_json(state: &AppState, p: &Provider) -> Value {
    let key = key_json(state, &p.key);
    let stored = key["set"].as_bool().unwrap_or(false);
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
            ClientAuth::WhenNoKey => !stored,
            ClientAuth::Never => false,
        },
        "key": key,
        "cloud": cloud_json(state, p.cloud.as_ref()),
        // Where a cloud's credentials come from, as `trimgate check` says it.
        "credentials": p.cloud.as_ref().map(|c| c.credentials(&p.key)),
    })
}

/// What the window may not put in the config, checked before an edit: a key file's
/// contents where its path goes, AWS keys where a profile's name goes, a key for a kind
/// that signs without one; the rest is the config's own validation.
fn check_cloud_fields(name: &str, kind: &str, edit: &ProviderEdit) -> Result<(), AdminError> {
    let at = |field: &str| format!("providers.{name}.{field}");
    let mut problems = Vec::new();
    if let Some(Some(file)) = &edit.credentials_file {
        let file = file.trim();
        if file.contains('\n') || file.starts_with('{') || file.contains("private_key") {
            problems.push(ConfigProblem {
                path: at("credentials_file"),
                message: "give the service-account key file's path; its contents stay in the file, never in the config".into(),
            });
        }
    }
    if let Some(Some(profile)) = &edit.aws_profile {
        let profile = profile.trim();
        let access_key = profile.len() == 20
            && (profile.starts_with("AKIA") || profile.starts_with("ASIA"))
            && profile
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        if access_key {
            problems.push(ConfigProblem {
                path: at("aws_profile"),
                message: "that is an AWS access key id: name a profile of your AWS config instead (or none, for the AWS credential chain); AWS keys stay in AWS's own files".into(),
            });
        } else if !profile.is_empty()
            && !profile
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@'))
        {
            problems.push(ConfigProblem {
                path: at("aws_profile"),
                message: format!(
                    "{profile:?} is not a profile name (letters, digits, '-', '_', '.', '@')"
                ),
            });
        }
    }
    let key = edit.key.as_deref().is_some_and(|k| !k.trim().is_empty());
    if key && kind == "vertex" {
        problems.push(ConfigProblem {
            path: at("key"),
            message: "Vertex takes no API key: it signs with a service-account key file or Application Default Credentials".into(),
        });
    }
    if let Some(Some(entra)) = &edit.entra {
        if key {
            problems.push(ConfigProblem {
                path: at("key"),
                message: "an Azure provider signs with its api-key or with Entra ID, not both"
                    .into(),
            });
        }
        if entra.is_app()
            && entra
                .command
                .as_deref()
                .is_some_and(|c| !c.trim().is_empty())
        {
            problems.push(ConfigProblem {
                path: at("entra"),
                message: "give either a command or tenant_id, client_id and client_secret".into(),
            });
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(AdminError::Invalid(problems))
    }
}

/// Keeps an Azure provider's Entra client secret in the keychain, when one was given.
fn store_entra_secret(state: &AppState, name: &str, edit: &ProviderEdit) -> Result<(), AdminError> {
    let Some(Some(entra)) = &edit.entra else {
        return Ok(());
    };
    match entra.client_secret.as_deref().map(str::trim) {
        Some(secret) if !secret.is_empty() => {
            store_key(state, &edit::entra_secret_entry(name), secret).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// An app's secret must be there for the flow to work: given now, or stored before.
fn needs_entra_secret(state: &AppState, name: &str, edit: &ProviderEdit) -> Result<(), AdminError> {
    let Some(Some(entra)) = &edit.entra else {
        return Ok(());
    };
    let given = entra
        .client_secret
        .as_deref()
        .is_some_and(|s| !s.trim().is_empty());
    let entry = KeySource::Keychain(edit::entra_secret_entry(name));
    if !entra.is_app() || given || state.secrets().get(&entry).ok().flatten().is_some() {
        return Ok(());
    }
    Err(AdminError::Invalid(vec![ConfigProblem {
        path: format!("providers.{name}.entra.client_secret"),
        message: "the app registration's client secret is needed; it goes to the keychain".into(),
    }]))
}

/// Forgets a keychain entry the file no longer names; a keychain that refuses is logged.
fn forget(state: &AppState, name: &str, entry: &KeySource) {
    if let Err(e) = state.secrets().delete(entry) {
        tracing::warn!(provider = %name, error = %e, "cannot delete a keychain entry of the provider");
    }
}

/// Whether a provider of `kind` has a key line in its table: not a cloud that signs
/// without one (Bedrock's AWS chain, Vertex) unless a key was given, nor an Azure one
/// signing with Entra ID.
fn takes_key_line(kind: &str, key_given: bool, edit: &ProviderEdit) -> bool {
    match kind {
        "openai_compatible" | "bedrock" => key_given,
        "vertex" => false,
        "azure_openai" => !matches!(edit.entra, Some(Some(_))),
        _ => true,
    }
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
            let kind = edit.kind.clone().unwrap_or_default();
            check_cloud_fields(&name, &kind, &edit)?;
            needs_entra_secret(&state, &name, &edit)?;
            let key = edit.key.clone().filter(|k| !k.trim().is_empty());
            let config = edit_config(&state, |doc| {
                edit::upsert_provider(doc, &name, &edit);
                if takes_key_line(&kind, key.is_some(), &edit) {
                    edit::use_keychain(doc, &name);
                }
                Ok(())
            })
            .await?;
            if let Some(key) = key {
                store_key(&state, &name, &key)?;
            }
            store_entra_secret(&state, &name, &edit)?;
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
            let kind = edit.kind.clone().unwrap_or_else(|| before.kind.as_str().to_owned());
            check_cloud_fields(&name, &kind, &edit)?;
            needs_entra_secret(&state, &name, &edit)?;
            // The window shows a URL's password masked; the masked URL sent back unchanged
            // keeps the password rather than writing the mask into the file.
            if let Some(Some(url)) = &edit.base_url {
                if url.trim() != before.base_url && url.trim() == crate::secrets::redact_url(&before.base_url) {
                    edit.base_url = Some(Some(before.base_url.clone()));
                }
            }
            let mut key_removed = false;
            let mut entra_only = false;
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
                // Signing with Entra ID from now on: the api-key goes, from the file and
                // the keychain; back to the key, its line comes back, to be entered again.
                let to_entra = matches!(edit.entra, Some(Some(_)))
                    && before.key == KeySource::Keychain(name.clone());
                if (moved || to_entra) && before.key != KeySource::None {
                    entra_only = !moved;
                    let entry = KeySource::Keychain(name.clone());
                    if let Err(e) = state.secrets().delete(&entry) {
                        if before.key == entry {
                            return Err(AdminError::Unavailable(format!(
                                "the key stored for the old host cannot be removed, so the host is not changed: {e}"
                            )));
                        }
                        tracing::warn!(provider = %name, error = %e, "cannot clear the provider's keychain entry");
                    }
                    if takes_key_line(&kind, false, &edit) {
                        edit::use_keychain(doc, &name);
                    } else {
                        edit::clear_key(doc, &name);
                    }
                    key_removed = true;
                } else if matches!(edit.entra, Some(None)) && kind == "azure_openai" {
                    edit::use_keychain(doc, &name);
                }
                Ok(())
            })
            .await?;
            store_entra_secret(&state, &name, &edit)?;
            if matches!(edit.entra, Some(None)) {
                forget(&state, &name, &KeySource::Keychain(edit::entra_secret_entry(&name)));
            }
            let mut body = provider_json(&state, find(&config, &name)?);
            if key_removed {
                body["key_removed"] = json!(true);
                body["message"] = json!(if entra_only {
                    "the provider signs with Microsoft Entra ID now: its api-key was removed from the keychain"
                } else {
                    "the provider's address moved to another host: its key was removed; enter it again to use it there"
                });
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
            let provider = find(&state.config(), &name)?.clone();
            edit_config(&state, |doc| Ok(edit::remove_provider(doc, &name)?)).await?;
            // The file no longer names them; a keychain that refuses is only logged.
            if let KeySource::Keychain(_) = provider.key {
                forget(&state, &name, &provider.key);
            }
            if let Some(Cloud::Azure {
                entra:
                    Some(Entra::ClientCredentials {
                        secret: secret @ KeySource::Keychain(_),
                        ..
                    }),
                ..
            }) = &provider.cloud
            {
                forget(&state, &name, secret);
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
            if provider.kind == crate::config::ProviderKind::Vertex {
                return Err(AdminError::BadRequest(
                    "Vertex takes no API key: it signs with a service-account key file or Application Default Credentials".into(),
                ));
            }
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
    answer(
        async {
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
            // A Bedrock provider without its API key signs with the AWS credential chain:
            // the file stops naming a key.
            if provider.kind == crate::config::ProviderKind::Bedrock {
                edit_config(&state, |doc| {
                    edit::clear_key(doc, &name);
                    Ok(())
                })
                .await?;
            }
            Ok(reply(StatusCode::NO_CONTENT, &Value::Null))
        }
        .await,
    )
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
