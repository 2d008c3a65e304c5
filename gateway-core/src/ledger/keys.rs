//! Virtual keys in the ledger's database: made, listed, revoked, and found by digest. The
//! key itself is never stored: only its SHA-256, and its first characters as a hint.

use sha2::{Digest, Sha256};
use sqlx::{AnyPool, Row};

/// The prefix every virtual key starts with, so that clients' keys are told apart from
/// the gateway keys a config lists without asking the database.
pub const PREFIX: &str = "tg-vk-";

/// What a key may do.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Limits {
    /// Model patterns (globs) it may use; empty: any.
    pub models: Vec<String>,
    pub rpm: Option<u64>,
    pub tpm: Option<u64>,
    pub budget_day_usd: Option<f64>,
    pub budget_month_usd: Option<f64>,
    pub expires_ms: Option<i64>,
    /// Provider names, as the config names them, it may be served by; empty: any.
    pub providers: Vec<String>,
    /// Its optimizer overrides, over the config's modes as a gateway key's are.
    pub optimize: Overrides,
    /// Its guard mode (`redact`, `block`, `off`); none follows the config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
}

/// A key's optimizer overrides, in `[[gateway_keys]].optimize`'s shape.
pub use crate::optimize::modes::WrittenModes as Overrides;

/// One virtual key as stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredKey {
    pub name: String,
    /// The key's first characters.
    pub hint: String,
    #[serde(flatten)]
    pub limits: Limits,
    pub created_ms: i64,
    pub revoked_ms: Option<i64>,
}

/// A key to make.
#[derive(Debug, Clone, Default)]
pub struct NewKey {
    pub name: String,
    pub limits: Limits,
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("a key named {0:?} exists already")]
    Exists(String),
    #[error("no key named {0:?}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error("the ledger's database: {0}")]
    Db(#[from] sqlx::Error),
}

/// The hex SHA-256 of a presented key, as stored.
pub fn digest(key: &str) -> String {
    Sha256::digest(key.trim().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Makes a key: returns it (the only time it is seen) and what was stored.
pub async fn create(
    pool: &AnyPool,
    mut new: NewKey,
    now_ms: i64,
) -> Result<(String, StoredKey), KeyError> {
    let name = new.name.trim().to_owned();
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(KeyError::Invalid(
            "a key's name is 1 to 64 letters, digits, '-', '_' or '.'".into(),
        ));
    }
    for pattern in &new.limits.models {
        globset::Glob::new(pattern)
            .map_err(|e| KeyError::Invalid(format!("model pattern {pattern:?}: {e}")))?;
    }
    for provider in &mut new.limits.providers {
        *provider = provider.trim().to_owned();
        // Stored comma-joined.
        if provider.is_empty() || provider.contains(',') {
            return Err(KeyError::Invalid(format!(
                "providers: {provider:?} is not a provider's name (names are non-empty, without commas)"
            )));
        }
    }
    let o = &mut new.limits.optimize;
    for mode in [&mut o.tool_output, &mut o.terse, &mut o.prune]
        .into_iter()
        .flatten()
    {
        *mode = mode.trim().to_ascii_lowercase();
    }
    o.patch().map_err(KeyError::Invalid)?;
    if let Some(guard) = &mut new.limits.guard {
        *guard = guard.trim().to_ascii_lowercase();
        crate::guard::Mode::parse(guard).map_err(KeyError::Invalid)?;
    }
    if new.limits.rpm == Some(0) || new.limits.tpm == Some(0) {
        return Err(KeyError::Invalid("rpm and tpm must be at least 1".into()));
    }
    for budget in [new.limits.budget_day_usd, new.limits.budget_month_usd]
        .into_iter()
        .flatten()
    {
        if !(budget.is_finite() && budget > 0.0) {
            return Err(KeyError::Invalid(
                "a budget is a positive number of US dollars".into(),
            ));
        }
    }
    // 256 random bits, hex.
    let key = format!(
        "{PREFIX}{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let stored = StoredKey {
        hint: key[..PREFIX.len() + 6].to_owned(),
        name,
        limits: new.limits,
        created_ms: now_ms,
        revoked_ms: None,
    };
    let optimize = if stored.limits.optimize.is_empty() {
        None
    } else {
        Some(
            serde_json::to_string(&stored.limits.optimize)
                .map_err(|e| KeyError::Invalid(format!("optimize: {e}")))?,
        )
    };
    let exists = sqlx::query("SELECT 1 FROM virtual_keys WHERE name = $1")
        .bind(&stored.name)
        .fetch_optional(pool)
        .await?;
    if exists.is_some() {
        return Err(KeyError::Exists(stored.name));
    }
    // Not kept prepared: sqlx's Any driver types a NULL budget `float4` for PostgreSQL, and
    // a statement kept from a key without a budget would refuse the next key's budget.
    sqlx::query(
        "INSERT INTO virtual_keys (name, digest, hint, models, rpm, tpm, budget_day_usd, \
         budget_month_usd, expires_ms, created_ms, revoked_ms, providers, optimize, guard) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11, $12, $13)",
    )
    .persistent(false)
    .bind(&stored.name)
    .bind(digest(&key))
    .bind(&stored.hint)
    .bind((!stored.limits.models.is_empty()).then(|| stored.limits.models.join(",")))
    .bind(stored.limits.rpm.map(|n| n as i64))
    .bind(stored.limits.tpm.map(|n| n as i64))
    .bind(stored.limits.budget_day_usd)
    .bind(stored.limits.budget_month_usd)
    .bind(stored.limits.expires_ms)
    .bind(stored.created_ms)
    .bind((!stored.limits.providers.is_empty()).then(|| stored.limits.providers.join(",")))
    .bind(optimize)
    .bind(stored.limits.guard.clone())
    .execute(pool)
    .await?;
    Ok((key, stored))
}

const COLUMNS: &str = "name, hint, models, rpm, tpm, budget_day_usd, budget_month_usd, \
                       expires_ms, created_ms, revoked_ms, providers, optimize, guard";

/// A comma-joined list as stored; NULL is none.
fn split(joined: Option<String>) -> Vec<String> {
    joined
        .map(|m| m.split(',').map(str::to_owned).collect())
        .unwrap_or_default()
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<StoredKey, sqlx::Error> {
    let optimize = match r.try_get::<Option<String>, _>("optimize")? {
        Some(json) => serde_json::from_str(&json).map_err(|e| sqlx::Error::ColumnDecode {
            index: "optimize".into(),
            source: Box::new(e),
        })?,
        None => Overrides::default(),
    };
    Ok(StoredKey {
        name: r.try_get("name")?,
        hint: r.try_get("hint")?,
        limits: Limits {
            models: split(r.try_get("models")?),
            rpm: r.try_get::<Option<i64>, _>("rpm")?.map(|n| n as u64),
            tpm: r.try_get::<Option<i64>, _>("tpm")?.map(|n| n as u64),
            budget_day_usd: r.try_get("budget_day_usd")?,
            budget_month_usd: r.try_get("budget_month_usd")?,
            expires_ms: r.try_get("expires_ms")?,
            providers: split(r.try_get("providers")?),
            optimize,
            guard: r.try_get("guard")?,
        },
        created_ms: r.try_get("created_ms")?,
        revoked_ms: r.try_get("revoked_ms")?,
    })
}

/// Every key, revoked ones too, by name.
pub async fn list(pool: &AnyPool) -> Result<Vec<StoredKey>, KeyError> {
    let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM virtual_keys ORDER BY name"))
        .fetch_all(pool)
        .await?;
    Ok(rows.iter().map(from_row).collect::<Result<_, _>>()?)
}

/// The key with this digest, revoked or not.
pub async fn find(pool: &AnyPool, digest: &str) -> Result<Option<StoredKey>, KeyError> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM virtual_keys WHERE digest = $1"
    ))
    .bind(digest)
    .fetch_optional(pool)
    .await?;
    Ok(row.as_ref().map(from_row).transpose()?)
}

/// Whether any key is in force (not revoked, not expired).
pub async fn any_active(pool: &AnyPool, now_ms: i64) -> Result<bool, KeyError> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n FROM virtual_keys WHERE revoked_ms IS NULL \
         AND (expires_ms IS NULL OR expires_ms > $1)",
    )
    .bind(now_ms)
    .fetch_one(pool)
    .await?;
    Ok(row.try_get::<i64, _>("n")? > 0)
}

/// Revokes a key: from now on it is refused.
pub async fn revoke(pool: &AnyPool, name: &str, now_ms: i64) -> Result<(), KeyError> {
    let done = sqlx::query(
        "UPDATE virtual_keys SET revoked_ms = $1 WHERE name = $2 AND revoked_ms IS NULL",
    )
    .bind(now_ms)
    .bind(name)
    .execute(pool)
    .await?;
    if done.rows_affected() == 0 {
        return Err(KeyError::NotFound(name.to_owned()));
    }
    Ok(())
}

/// What a key's requests cost since `since_ms`, from the ledger's priced rows.
pub async fn spent_since(pool: &AnyPool, name: &str, since_ms: i64) -> Result<f64, KeyError> {
    let row = sqlx::query(
        "SELECT COALESCE(SUM(cost_usd), 0.0) AS c FROM requests WHERE gateway_key = $1 AND ts_ms >= $2",
    )
    .bind(name)
    .bind(since_ms)
    .fetch_one(pool)
    .await?;
    Ok(row.try_get("c")?)
}

/// What a key spent in the UTC day and the UTC month of `now_ms`.
pub async fn spent_today_and_month(
    pool: &AnyPool,
    name: &str,
    now_ms: i64,
) -> Result<(f64, f64), KeyError> {
    use crate::clock::{day_start, month_start};
    Ok((
        spent_since(pool, name, day_start(now_ms)).await?,
        spent_since(pool, name, month_start(now_ms, 0)).await?,
    ))
}
