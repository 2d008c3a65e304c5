//! `trimgate keys create|list|revoke`: virtual keys in the ledger's database, for a gateway
//! that serves a team. A key is printed once, when it is made; the database keeps only its
//! digest. A running gateway sees a key made or revoked here within two seconds.

use clap::{Args, Subcommand};
use gateway_core::ledger::keys::{self, Limits, NewKey, Overrides, StoredKey};

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Make a key and print it (the only time it is shown).
    Create(CreateArgs),
    /// List the keys: name, hint, limits, state.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: refused from now on (a running gateway within two seconds).
    Revoke {
        /// The key's name.
        name: String,
    },
}

#[derive(Args)]
pub struct CreateArgs {
    /// The key's name, as the ledger and `trimgate stats --by key` show it.
    #[arg(long)]
    name: String,
    /// Model patterns it may use, comma-separated globs (`claude-*,gpt-5*`); default any.
    #[arg(long, value_delimiter = ',')]
    models: Vec<String>,
    /// Requests per minute.
    #[arg(long)]
    rpm: Option<u64>,
    /// Tokens (input + output) per minute.
    #[arg(long)]
    tpm: Option<u64>,
    /// Spend per UTC day, in US dollars, from the ledger's prices.
    #[arg(long)]
    budget_usd_day: Option<f64>,
    /// Spend per UTC calendar month, in US dollars.
    #[arg(long)]
    budget_usd_month: Option<f64>,
    /// How long it lasts: 30d, 12h, 90m.
    #[arg(long)]
    expires: Option<String>,
    /// Providers it may be served by, comma-separated names as the config gives them
    /// (`openai,anthropic`); default any. Steps of a route on other providers are skipped.
    #[arg(long, value_delimiter = ',')]
    providers: Vec<String>,
    /// Optimizer overrides: comma-separated pass=mode pairs, the passes and modes of
    /// `[[gateway_keys]].optimize` (`tool_output=light,terse=off,squeeze=on`); a mode not
    /// allowed is refused with the ones that are.
    #[arg(long, value_delimiter = ',', value_name = "PASS=MODE")]
    optimize: Vec<String>,
    /// What the guard does with secrets in its requests: redact, block or off; default
    /// the config's.
    #[arg(long, value_name = "MODE")]
    guard: Option<String>,
}

pub async fn run(pool: &gateway_core::ledger::AnyPool, command: KeysCommand) -> Result<(), String> {
    let now = gateway_core::clock::now_ms();
    match command {
        KeysCommand::Create(a) => {
            let expires_ms = match a.expires {
                Some(text) => {
                    let d = humantime::parse_duration(&text)
                        .map_err(|e| format!("--expires {text:?}: {e} (say 30d, 12h or 90m)"))?;
                    Some(now + d.as_millis() as i64)
                }
                None => None,
            };
            let mut optimize = Overrides::default();
            for pair in a.optimize.iter().filter(|p| !p.trim().is_empty()) {
                let (pass, mode) = pair.split_once('=').ok_or_else(|| {
                    format!("--optimize {pair:?}: expected pass=mode (tool_output=light)")
                })?;
                optimize
                    .set(pass, mode)
                    .map_err(|e| format!("--optimize {pair:?}: {e}"))?;
            }
            let new = NewKey {
                name: a.name,
                limits: Limits {
                    models: a
                        .models
                        .into_iter()
                        .filter(|m| !m.trim().is_empty())
                        .collect(),
                    rpm: a.rpm,
                    tpm: a.tpm,
                    budget_day_usd: a.budget_usd_day,
                    budget_month_usd: a.budget_usd_month,
                    expires_ms,
                    providers: a
                        .providers
                        .into_iter()
                        .filter(|p| !p.trim().is_empty())
                        .collect(),
                    optimize,
                    guard: a.guard,
                },
            };
            let (key, stored) = keys::create(pool, new, now)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!(
                "made key {:?} ({}); it is not shown again:",
                stored.name,
                limits(&stored)
            );
            println!("{key}");
            Ok(())
        }
        KeysCommand::List { json } => {
            let all = keys::list(pool).await.map_err(|e| e.to_string())?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?
                );
                return Ok(());
            }
            if all.is_empty() {
                println!("no virtual keys (make one with `trimgate keys create --name NAME`)");
            }
            for k in &all {
                println!(
                    "{:<20} {:<14} {:<8} {}",
                    k.name,
                    format!("{}…", k.hint),
                    state(k, now),
                    limits(k)
                );
            }
            Ok(())
        }
        KeysCommand::Revoke { name } => {
            keys::revoke(pool, &name, now)
                .await
                .map_err(|e| e.to_string())?;
            println!("revoked {name:?}");
            Ok(())
        }
    }
}

fn state(k: &StoredKey, now: i64) -> &'static str {
    if k.revoked_ms.is_some() {
        "revoked"
    } else if k.limits.expires_ms.is_some_and(|at| at <= now) {
        "expired"
    } else {
        "active"
    }
}

/// `models claude-*; 600 rpm; $50/day; providers anthropic; optimize terse=off` — what
/// the key may do.
fn limits(k: &StoredKey) -> String {
    let mut parts = Vec::new();
    parts.push(if k.limits.models.is_empty() {
        "any model".to_owned()
    } else {
        format!("models {}", k.limits.models.join(","))
    });
    if let Some(n) = k.limits.rpm {
        parts.push(format!("{n} rpm"));
    }
    if let Some(n) = k.limits.tpm {
        parts.push(format!("{n} tpm"));
    }
    if let Some(b) = k.limits.budget_day_usd {
        parts.push(format!("${b}/day"));
    }
    if let Some(b) = k.limits.budget_month_usd {
        parts.push(format!("${b}/month"));
    }
    if !k.limits.providers.is_empty() {
        parts.push(format!("providers {}", k.limits.providers.join(",")));
    }
    let Overrides {
        tool_output,
        terse,
        prune,
        squeeze,
    } = &k.limits.optimize;
    let squeeze = squeeze.map(|on| if on { "on" } else { "off" }.to_owned());
    let optimize: Vec<String> = [
        ("tool_output", tool_output),
        ("terse", terse),
        ("prune", prune),
        ("squeeze", &squeeze),
    ]
    .into_iter()
    .filter_map(|(pass, mode)| mode.as_ref().map(|m| format!("{pass}={m}")))
    .collect();
    if !optimize.is_empty() {
        parts.push(format!("optimize {}", optimize.join(",")));
    }
    if let Some(at) = k.limits.expires_ms {
        parts.push(format!("expires {}", crate::format_ms(at)));
    }
    parts.join("; ")
}
