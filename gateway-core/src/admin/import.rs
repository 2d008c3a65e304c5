//! Importing another tool's providers: a preview of what a file would add, and applying it
//! in one config edit, with its keys in the keychain.

use base64::Engine as _;
use toml_edit::DocumentMut;

use super::providers::store_key;
use super::*;
use crate::config::ProviderKind;
use crate::import::{self, Existing, Format, Plan, MAX_FILE_BYTES};

/// The body: the file's base64 (4 bytes for 3) and a little for its name and format.
const MAX_BODY_BYTES: usize = MAX_FILE_BYTES.div_ceil(3) * 4 + 64 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportIn {
    file_name: String,
    /// Overrides what the content says: `cc-switch`, `claude-code-router`, `litellm`.
    #[serde(default)]
    format: Option<String>,
    content_base64: String,
}

/// The file in the body read into a plan, settled beside the config in force.
async fn plan_of(state: &AdminState, body: Body) -> Result<(String, Plan), AdminError> {
    let too_large = || {
        AdminError::TooLarge(format!(
            "an imported file may hold at most {} MiB",
            MAX_FILE_BYTES >> 20
        ))
    };
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| too_large())?;
    let input: ImportIn = parse(&bytes)?;
    let file = input.file_name.trim().to_owned();
    if file.is_empty() {
        return Err(AdminError::BadRequest("`file_name` is required".into()));
    }
    let format = match input
        .format
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
    {
        None => None,
        Some(f) => Some(Format::parse(f).ok_or_else(|| {
            AdminError::BadRequest(format!(
                "unknown format {f:?}; expected cc-switch, claude-code-router or litellm"
            ))
        })?),
    };
    let content = base64::engine::general_purpose::STANDARD
        .decode(input.content_base64.trim())
        .map_err(|e| {
            AdminError::BadRequest(format!("{file}: content_base64 is not base64: {e}"))
        })?;
    if content.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let name = file.clone();
    // A CC Switch database is copied to a file and opened: off the serving threads.
    let mut plan = tokio::task::spawn_blocking(move || {
        import::read(&name, &content, format, &|var| std::env::var(var).ok())
    })
    .await
    .map_err(|e| AdminError::Internal(e.to_string()))?
    .map_err(|e| AdminError::BadRequest(e.to_string()))?;
    let config = state.config();
    let providers: Vec<Existing> = config
        .providers
        .iter()
        .map(|p| Existing {
            name: p.name.clone(),
            kind: p.kind,
            base_url: p.base_url.clone(),
        })
        .collect();
    let routes: Vec<String> = edit::routes(&current_doc(state)?)
        .into_iter()
        .map(|r| r.pattern)
        .collect();
    plan.settle(&providers, &routes);
    Ok((file, plan))
}

fn current_doc(state: &AdminState) -> Result<DocumentMut, AdminError> {
    let path = config_file(state.admin()?)?;
    Ok(edit::read(&path, &state.config())?)
}

/// Writes the plan into the document: each provider (its key pointed at the keychain when
/// it has one, or when its kind needs one), then the routes, ahead of the routes there.
fn apply_to(doc: &mut DocumentMut, plan: &Plan) -> Result<(), AdminError> {
    for p in &plan.providers {
        if edit::has_provider(doc, &p.name) {
            return Err(AdminError::BadRequest(format!(
                "a provider named {:?} was added meanwhile; nothing was imported",
                p.name
            )));
        }
        let change = ProviderEdit {
            kind: Some(p.kind.as_str().to_owned()),
            base_url: p.base_url.clone().map(Some),
            models: Some(p.models.clone()),
            ..ProviderEdit::default()
        };
        edit::upsert_provider(doc, &p.name, &change);
        if !p.dialects.is_empty() {
            edit::set_dialects(doc, &p.name, &p.dialects);
        }
        if p.key.is_some() || p.kind != ProviderKind::OpenAiCompatible {
            edit::use_keychain(doc, &p.name);
        }
    }
    let routes: Vec<RouteEdit> = plan
        .routes
        .iter()
        .map(|r| RouteEdit {
            pattern: r.pattern.clone(),
            provider: r.provider.clone(),
            model: r.model.clone(),
            fallbacks: r.fallbacks.clone(),
            max_attempts: None,
        })
        .collect();
    if !routes.is_empty() {
        edit::replace_routes(doc, &[], &routes);
    }
    Ok(())
}

/// What the file would add (keys masked), what is skipped and why, and the problems the
/// config would have with it; nothing is changed.
pub(super) async fn preview_import(State(state): State<AdminState>, body: Body) -> Response {
    answer(
        async {
            let (file, plan) = plan_of(&state, body).await?;
            let mut doc = current_doc(&state)?;
            apply_to(&mut doc, &plan)?;
            let problems: Vec<Value> = match Config::from_toml(&doc.to_string(), &file) {
                Ok(_) => Vec::new(),
                Err(e) => match EditError::from(e) {
                    EditError::Invalid(problems) => problems
                        .iter()
                        .map(|p| json!({"path": p.path, "message": p.message}))
                        .collect(),
                    other => vec![json!({"path": "", "message": format!("{other:?}")})],
                },
            };
            ok(json!({
                "file": file,
                "format": plan.format,
                "providers": plan.providers,
                "routes": plan.routes,
                "skipped": plan.skipped,
                "problems": problems,
            }))
        }
        .await,
    )
}

/// Adds what the file holds in one config edit, its keys first to the keychain (taken out
/// again if the edit fails, so a refused import leaves nothing behind).
pub(super) async fn apply_import(State(state): State<AdminState>, body: Body) -> Response {
    answer(
        async {
            let (file, plan) = plan_of(&state, body).await?;
            let mut stored: Vec<(String, String)> = Vec::new();
            for p in &plan.providers {
                let Some(key) = &p.key else { continue };
                match store_key(&state, &p.name, key.expose()) {
                    Ok(shown) => stored.push((p.name.clone(), shown)),
                    Err(e) => {
                        forget(&state, &stored);
                        return Err(e);
                    }
                }
            }
            if let Err(e) = edit_config(&state, |doc| apply_to(doc, &plan)).await {
                forget(&state, &stored);
                return Err(e);
            }
            tracing::info!(
                file = %file,
                format = %plan.format,
                providers = plan.providers.len(),
                routes = plan.routes.len(),
                skipped = plan.skipped.len(),
                "imported"
            );
            ok(json!({
                "file": file,
                "format": plan.format,
                "providers": plan.providers,
                "routes": plan.routes,
                "keys_stored": stored
                    .iter()
                    .map(|(provider, mask)| json!({"provider": provider, "mask": mask}))
                    .collect::<Vec<_>>(),
                "skipped": plan.skipped,
            }))
        }
        .await,
    )
}

/// Deletes the keys an import stored before it was refused.
fn forget(state: &AppState, stored: &[(String, String)]) {
    for (name, _) in stored {
        if let Err(e) = state.secrets().delete(&KeySource::Keychain(name.clone())) {
            tracing::warn!(provider = %name, error = %e, "cannot delete a key of a refused import");
        }
    }
}
