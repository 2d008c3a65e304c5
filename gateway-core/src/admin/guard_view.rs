//! The secrets guard as the window's Guard page shows it: its settings (the mode, the rules,
//! the hooks by host, the custom patterns' ids, how many values the allow-list holds) and
//! today's figures from the ledger; and the gateway's mode, written to `[guard] mode`.
//! Never a secret, an allow-list entry, a hook's path or query, or a header it sends.

use super::*;
use crate::guard::{FailMode, Hook, Mode, Settings};
use crate::ledger::guard_stats::{self, GuardReport};

/// A hook's `host[:port]`: what it reaches, without credentials, path or query (where a
/// token may sit).
fn hook_host(url: &str) -> String {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return String::new();
    };
    match (uri.host(), uri.port_u16()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => String::new(),
    }
}

fn hook_json(hook: &Hook, every: bool) -> Value {
    let Hook {
        name,
        url,
        pre,
        post,
        timeout,
        fail,
        // Header names and the variables their values come from: not the window's business.
        headers: _,
    } = hook;
    json!({
        "name": name,
        "host": hook_host(url),
        "pre": pre,
        "post": post,
        "timeout_ms": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        "fail": match fail {
            FailMode::Open => "open",
            FailMode::Closed => "closed",
        },
        // Met by every request (`[guard] use_hooks`), not only through a rule.
        "every": every,
    })
}

/// The settings in force, as the window shows them. Destructured whole, so that a setting
/// added to [`Settings`] is a build error here until someone decides whether the window
/// may see it.
fn settings_json(settings: &Settings) -> Value {
    let Settings {
        mode,
        rules,
        hooks,
        // The compiled rules hold the allow-list's values: only its size is shown.
        detect: _,
        key_file: _,
        vault_capacity,
        patterns,
        allowed,
    } = settings;
    let mut listed: Vec<Value> = hooks.iter().map(|h| hook_json(h, true)).collect();
    let mut names: Vec<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
    for hook in rules.iter().flat_map(|r| &r.hooks) {
        if !names.contains(&hook.name.as_str()) {
            names.push(&hook.name);
            listed.push(hook_json(hook, false));
        }
    }
    let rules: Vec<Value> = rules
        .iter()
        .map(|r| {
            json!({
                "match": r.pattern,
                "provider": r.provider,
                "mode": r.mode.map(Mode::as_str),
                "hooks": r.hooks.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "mode": mode.as_str(),
        "rules": rules,
        "hooks": listed,
        "patterns": patterns,
        "allowed": allowed,
        "vault_capacity": vault_capacity,
    })
}

/// The settings in force and what the ledger says of today (UTC).
async fn guard_json(state: &AdminState) -> Result<Value, AdminError> {
    let admin = state.admin()?;
    let mut body = settings_json(&state.config().guard);
    let since = crate::clock::day_start(crate::clock::now_ms());
    let report = match &admin.ledger {
        Some(pool) => guard_stats::report(pool, since, guard_stats::RECENT)
            .await
            .map_err(|e| AdminError::Unavailable(format!("cannot read the ledger: {e}")))?,
        None => GuardReport {
            since_ms: since,
            ..GuardReport::default()
        },
    };
    body["ledger"] = json!(admin.ledger.is_some());
    body["today"] = json!({
        "since_ms": report.since_ms,
        "requests": report.requests,
        "secrets": report.secrets(),
        "by_kind": report.by_kind,
    });
    body["recent"] = json!(report.recent);
    Ok(body)
}

pub(super) async fn get_guard(State(state): State<AdminState>) -> Response {
    answer(guard_json(&state).await.map(|v| reply(StatusCode::OK, &v)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GuardIn {
    mode: String,
}

/// Writes `[guard] mode`; the config's validation says what is not a mode.
pub(super) async fn put_guard(State(state): State<AdminState>, body: Bytes) -> Response {
    answer(
        async {
            let GuardIn { mode } = parse(&body)?;
            edit_config(&state, |doc| {
                edit::set_guard_mode(doc, &mode);
                Ok(())
            })
            .await?;
            ok(guard_json(&state).await?)
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_is_shown_by_its_host_only() {
        assert_eq!(
            hook_host("https://user:pw@hooks.example:8443/check?token=abc"),
            "hooks.example:8443"
        );
        assert_eq!(hook_host("http://127.0.0.1/v1/guard"), "127.0.0.1");
        assert_eq!(hook_host("not a url"), "");
    }
}
