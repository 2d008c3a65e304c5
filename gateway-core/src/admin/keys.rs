//! Virtual keys from the window: list them with what they spent, make one (shown once, in
//! this answer only), revoke one (refused by this gateway at once).

use super::*;
use crate::ledger::keys::{self, KeyError, Limits, NewKey, Overrides};

fn pool(state: &AdminState) -> Result<&AnyPool, AdminError> {
    state.admin()?.ledger.as_ref().ok_or_else(|| {
        AdminError::Unavailable(
            "virtual keys live in the ledger's database, and the ledger is off".into(),
        )
    })
}

fn key_error(e: KeyError) -> AdminError {
    match e {
        KeyError::Exists(_) | KeyError::Invalid(_) => AdminError::BadRequest(e.to_string()),
        KeyError::NotFound(_) => AdminError::NotFound(e.to_string()),
        KeyError::Db(_) => AdminError::Unavailable(e.to_string()),
    }
}

/// Every key (never the key itself), with what it spent today and this month (UTC).
pub(super) async fn list_keys(State(state): State<AdminState>) -> Response {
    answer(
        async {
            let pool = pool(&state)?;
            let now = crate::clock::now_ms();
            let mut out = Vec::new();
            for k in keys::list(pool).await.map_err(key_error)? {
                let (spent_day, spent_month) = keys::spent_today_and_month(pool, &k.name, now)
                    .await
                    .map_err(key_error)?;
                let mut v =
                    serde_json::to_value(&k).map_err(|e| AdminError::Internal(e.to_string()))?;
                v["spent_day_usd"] = json!(spent_day);
                v["spent_month_usd"] = json!(spent_month);
                out.push(v);
            }
            ok(json!({ "keys": out }))
        }
        .await,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CreateKey {
    name: String,
    #[serde(default)]
    models: Vec<String>,
    rpm: Option<u64>,
    tpm: Option<u64>,
    budget_day_usd: Option<f64>,
    budget_month_usd: Option<f64>,
    /// How long it lasts: `30d`, `12h`.
    expires: Option<String>,
    #[serde(default)]
    providers: Vec<String>,
    /// Read apart from the rest, so that a value of the wrong type is named in the answer.
    optimize: Option<serde_json::Value>,
    /// The guard's mode for its requests: `redact`, `block` or `off`.
    guard: Option<String>,
}

/// Makes a key; the answer is the only place it is ever shown.
pub(super) async fn create_key(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let pool = pool(&state)?;
            let c: CreateKey = parse(&body)?;
            let now = crate::clock::now_ms();
            let expires_ms = match c.expires {
                Some(text) => Some(
                    now + humantime::parse_duration(&text)
                        .map_err(|e| AdminError::BadRequest(format!("expires {text:?}: {e}")))?
                        .as_millis() as i64,
                ),
                None => None,
            };
            let optimize: Overrides = match c.optimize {
                Some(value) => serde_json::from_value(value)
                    .map_err(|e| AdminError::BadRequest(format!("optimize: {e}")))?,
                None => Overrides::default(),
            };
            let new = NewKey {
                name: c.name,
                limits: Limits {
                    models: c.models,
                    rpm: c.rpm,
                    tpm: c.tpm,
                    budget_day_usd: c.budget_day_usd,
                    budget_month_usd: c.budget_month_usd,
                    expires_ms,
                    providers: c.providers,
                    optimize,
                    guard: c.guard,
                },
            };
            let (key, stored) = keys::create(pool, new, now).await.map_err(key_error)?;
            if let Some(book) = state.keys() {
                book.made();
            }
            tracing::info!(key = %stored.name, "virtual key made through the admin API");
            Ok(reply(
                StatusCode::CREATED,
                &json!({"key": key, "stored": stored}),
            ))
        }
        .await,
    )
}

/// Revokes a key: this gateway refuses it from the next request.
pub(super) async fn revoke_key(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> Response {
    answer(
        async {
            let pool = pool(&state)?;
            keys::revoke(pool, &name, crate::clock::now_ms())
                .await
                .map_err(key_error)?;
            if let Some(book) = state.keys() {
                book.forget(&name);
            }
            tracing::info!(key = %name, "virtual key revoked through the admin API");
            ok(json!({ "revoked": name }))
        }
        .await,
    )
}
