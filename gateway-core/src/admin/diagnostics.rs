//! What a person pastes into an issue: the version, the platform, the config in force with
//! every secret hidden, the providers' health, the last warnings and errors, and where
//! the log file is (or why there is none). As JSON for the window, and as `text`, the
//! same as a plain report.
//!
//! Keys never appear in it: the config shows where each key comes from (`{ env = … }`,
//! `{ keychain = … }`), a value under a secret's name or in `headers` is masked, a URL's
//! password hidden; and every key the gateway holds is masked wherever it turns up, a
//! last net for a key pasted where it does not belong.

use std::fmt::Write as _;
use std::path::Path;

use toml::{Table, Value as Toml};

use super::*;
use crate::logs::{LogStatus, LoggedEvent};
use crate::secrets::redact_url;

/// Keys and secrets shorter than this are not searched for in the report: a short one
/// would mask ordinary words, and no provider issues keys that short.
const SHORTEST_SECRET: usize = 8;

pub(super) async fn diagnostics(State(state): State<AdminState>) -> Response {
    answer((|| {
        let admin = state.admin()?;
        let config = state.config();
        let secrets = held_secrets(&state, &config);
        let hide = |text: &str| hide_secrets(text, &secrets);
        let providers = state.health.report_for(
            config.providers.iter().map(|p| p.name.as_str()),
            Instant::now(),
        );
        let logs = crate::logs::current();
        let log = logs
            .as_ref()
            .map(|l| l.status().clone())
            .unwrap_or_default();
        let last_errors: Vec<LoggedEvent> = logs
            .map(|l| l.recent_errors())
            .unwrap_or_default()
            .into_iter()
            .map(|e| LoggedEvent {
                message: hide(&e.message),
                ..e
            })
            .collect();
        let report = Report {
            version: env!("CARGO_PKG_VERSION"),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            listen: state.listening().to_string(),
            config_path: admin.config_path.as_ref().map(|p| p.display().to_string()),
            config: hide(&config_text(admin.config_path.as_deref(), &config)),
            providers: &providers,
            last_errors: &last_errors,
            log: &log,
        };
        let text = report.text();
        let mut body = serde_json::to_value(&report)
            .map_err(|e| AdminError::Internal(format!("cannot write the report: {e}")))?;
        body["text"] = Value::String(text);
        ok(body)
    })())
}

#[derive(serde::Serialize)]
struct Report<'a> {
    version: &'static str,
    os: String,
    listen: String,
    config_path: Option<String>,
    config: String,
    providers: &'a [crate::health::ProviderHealth],
    last_errors: &'a [LoggedEvent],
    log: &'a LogStatus,
}

impl Report<'_> {
    /// The report as plain text, ready to paste into an issue.
    fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Trimgate diagnostics");
        let _ = writeln!(out, "version: {}", self.version);
        let _ = writeln!(out, "os: {}", self.os);
        let _ = writeln!(out, "listen: {}", self.listen);
        let _ = writeln!(
            out,
            "config file: {}",
            self.config_path.as_deref().unwrap_or("none")
        );
        let _ = writeln!(out, "log file: {}", log_line(self.log));
        let _ = writeln!(out, "\nproviders ({}):", self.providers.len());
        for p in self.providers {
            let _ = write!(
                out,
                "  {}: {}, {} failure(s) in a row",
                p.provider, p.state, p.failures
            );
            if let Some(secs) = p.retry_in_secs {
                let _ = write!(out, ", probed in {secs:.0} s");
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "\nlast warnings and errors ({}):",
            self.last_errors.len()
        );
        for e in self.last_errors {
            let _ = writeln!(out, "  {} {} {}: {}", e.time, e.level, e.target, e.message);
        }
        let _ = writeln!(
            out,
            "\nconfig (keys shown as where they come from):\n{}",
            self.config.trim_end()
        );
        out
    }
}

fn log_line(log: &LogStatus) -> String {
    let file = log.file.as_ref().map(|f| f.display().to_string());
    match (log.off, &log.error, file) {
        (true, _, _) => "off (stderr only)".to_owned(),
        (false, Some(error), Some(file)) => format!("{file} cannot be written: {error}"),
        (false, Some(error), None) => format!("none: {error}"),
        (false, None, Some(file)) => file,
        (false, None, None) => "not set up by this program".to_owned(),
    }
}

/// The config in force as TOML: the file, with the `TRIMGATE__` variables over it; without
/// either, the providers found in the environment. Comments are left out (a key pasted in
/// one would otherwise show), and so is every secret (see the module's doc).
fn config_text(path: Option<&Path>, running: &Config) -> String {
    let mut note = String::new();
    let mut table = match path.map(std::fs::read_to_string) {
        Some(Ok(text)) => text.parse::<Table>().unwrap_or_else(|_| {
            note = "# the file is not valid TOML now; the config in force was read before\n".into();
            Table::new()
        }),
        Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => {
            note = format!("# the file cannot be read: {e}\n");
            Table::new()
        }
        _ => Table::new(),
    };
    if let Ok(vars) = crate::config::env::read(std::env::vars()) {
        let _ = crate::config::env::apply(&mut table, &vars);
    }
    if table.is_empty() {
        table = providers_from_environment(running);
    }
    scrub(&mut table, false);
    note + &toml::to_string(&table).unwrap_or_default()
}

/// The providers a config-less start found keys for, as the file would name them.
fn providers_from_environment(running: &Config) -> Table {
    let mut providers = Table::new();
    for p in &running.providers {
        let mut t = Table::new();
        t.insert("kind".into(), p.kind.as_str().into());
        t.insert("base_url".into(), p.base_url.as_str().into());
        if let Some((kind, where_)) = source(&p.key) {
            let mut key = Table::new();
            key.insert(kind.into(), where_.into());
            t.insert("api_key".into(), key.into());
        }
        providers.insert(p.name.clone(), t.into());
    }
    let mut table = Table::new();
    if !providers.is_empty() {
        table.insert("providers".into(), providers.into());
    }
    table
}

fn source(key: &KeySource) -> Option<(&'static str, String)> {
    match key {
        KeySource::Env(var) => Some(("env", var.clone())),
        KeySource::File(path) => Some(("file", path.display().to_string())),
        KeySource::Keychain(name) => Some(("keychain", name.clone())),
        KeySource::None => None,
    }
}

/// Masks the values under a secret's name and in `headers`, and hides URLs' passwords.
fn scrub(table: &mut Table, all_secret: bool) {
    for (name, value) in table.iter_mut() {
        let secret = all_secret || names_a_secret(name);
        scrub_value(value, name, secret);
    }
}

fn scrub_value(value: &mut Toml, name: &str, secret: bool) {
    match value {
        Toml::String(s) if secret => *s = mask(s),
        Toml::String(s) if s.contains("://") => *s = redact_url(s),
        Toml::Table(t) => scrub(t, name == "headers"),
        Toml::Array(items) => {
            for item in items {
                scrub_value(item, name, secret);
            }
        }
        _ => {}
    }
}

/// `api_key`, `key`, `api_keys`, `password`, `token`, `secret`…; not `keychain`, which
/// names an entry.
fn names_a_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.ends_with("key")
        || name.ends_with("keys")
        || ["password", "secret", "token"]
            .iter()
            .any(|s| name.contains(s))
}

/// Every key and secret the gateway holds: providers' (and their pools'), gateway keys,
/// the admin key, the local key.
fn held_secrets(state: &AdminState, config: &Config) -> Vec<String> {
    let mut sources: Vec<&KeySource> = Vec::new();
    for p in &config.providers {
        sources.push(&p.key);
        sources.extend(p.pool.iter().map(|k| &k.source));
    }
    sources.extend(config.gateway_keys.iter().map(|k| &k.key));
    sources.extend(config.admin.key.iter());
    let mut held: Vec<String> = sources
        .into_iter()
        .filter(|s| **s != KeySource::None)
        .filter_map(|s| state.secrets().get(s).ok().flatten())
        .map(|s| s.expose().to_owned())
        .collect();
    held.extend(state.local_key().map(|k| k.expose().to_owned()));
    held
}

fn hide_secrets(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_owned();
    for secret in secrets {
        let secret = secret.trim();
        if secret.chars().count() >= SHORTEST_SECRET && text.contains(secret) {
            text = text.replace(secret, &mask(secret));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_and_sources_kept() {
        let mut table: Table = r#"
            ledger = { url = "postgres://tg:hunter2-pw@db/tg" }
            [providers.a]
            base_url = "https://user:pw-in-url@example.com/v1"
            api_key = { keychain = "a" }
            headers = { "x-org" = "org-abcdefghijklmnop" }
            [admin]
            key = "sk-admin-0123456789"
        "#
        .parse()
        .unwrap();
        scrub(&mut table, false);
        let text = toml::to_string(&table).unwrap();
        for secret in [
            "hunter2-pw",
            "pw-in-url",
            "org-abcdefghijklmnop",
            "sk-admin-0123456789",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("keychain = \"a\""), "{text}");
        assert!(text.contains("example.com/v1"), "{text}");
    }

    #[test]
    fn a_held_key_is_masked_wherever_it_turns_up() {
        let held = vec!["sk-live-0123456789abcdef".to_owned(), "short".to_owned()];
        let text = hide_secrets(
            "error: bad key sk-live-0123456789abcdef; short words stay",
            &held,
        );
        assert_eq!(text, "error: bad key sk-…cdef; short words stay");
    }
}
