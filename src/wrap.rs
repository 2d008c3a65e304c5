//! `trimgate wrap <agent> -- <args>`: runs a coding agent with its base URLs pointed at
//! the running gateway and a placeholder key (the gateway puts the provider's real key on
//! each request; with gateway keys configured, `TRIMGATE_KEY` is sent instead). When the
//! gateway wants its local key (`[server] local_key`), the agent gets that too.

use std::path::Path;
use std::process::Command;

use gateway_core::headers::X_TRIMGATE_KEY;
use gateway_core::local_key::LocalKey;

/// Claude Code adds the `Name: value` lines in this variable to every request.
const ENV_CUSTOM_HEADERS: &str = "ANTHROPIC_CUSTOM_HEADERS";

/// The agents whose settings are known; anything else gets every variable below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agent {
    Claude,
    Codex,
    Gemini,
    Aider,
    Other,
}

impl Agent {
    fn of(program: &str) -> Agent {
        let name = std::path::Path::new(program)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(program);
        match name {
            "claude" => Agent::Claude,
            "codex" => Agent::Codex,
            "gemini" => Agent::Gemini,
            "aider" => Agent::Aider,
            _ => Agent::Other,
        }
    }
}

/// The gateway key the agent sends, when the gateway requires one.
const ENV_GATEWAY_KEY: &str = "TRIMGATE_KEY";

/// The placeholder a client sends when no gateway key is needed.
pub const PLACEHOLDER_KEY: &str = "trimgate-placeholder";

/// The environment `program` gets for a gateway at `base` (`http://127.0.0.1:8788`), with
/// `key` as its API key and, when the gateway wants it, the local key in `x-trimgate-key`.
pub fn environment(
    program: &str,
    base: &str,
    key: &str,
    local_key: Option<&str>,
) -> Vec<(&'static str, String)> {
    let base = base.trim_end_matches('/');
    let anthropic = [
        ("ANTHROPIC_BASE_URL", base.to_owned()),
        ("ANTHROPIC_API_KEY", key.to_owned()),
    ];
    let openai = [
        ("OPENAI_BASE_URL", format!("{base}/v1")),
        ("OPENAI_API_KEY", key.to_owned()),
    ];
    // Gemini CLI adds `/v1beta/models/…` to its base URL, and sends the key as
    // `x-goog-api-key`, where the gateway looks for a client's key too.
    let gemini = [
        ("GOOGLE_GEMINI_BASE_URL", base.to_owned()),
        ("GEMINI_API_KEY", key.to_owned()),
    ];
    // Claude Code may send its own login rather than the API key it is given (a declined
    // key, a subscription), so the local key also goes in a header of its own.
    let header = local_key.map(|k| (ENV_CUSTOM_HEADERS, format!("{X_TRIMGATE_KEY}: {k}")));
    let mut env: Vec<(&'static str, String)> = Vec::new();
    match Agent::of(program) {
        Agent::Claude => {
            env.extend(anthropic);
            env.extend(header);
        }
        Agent::Codex => env.extend(openai),
        Agent::Gemini => env.extend(gemini),
        // aider (through LiteLLM) reads OPENAI_API_BASE, and Anthropic's variables for Claude models.
        Agent::Aider | Agent::Other => {
            env.extend(openai);
            env.push(("OPENAI_API_BASE", format!("{base}/v1")));
            env.extend(anthropic);
            env.extend(gemini);
            env.extend(header);
        }
    }
    env
}

/// Checks the gateway answers, then runs the agent and returns its exit code.
/// The gateway's local key from its key file, for a client command to present.
pub fn read_local_key(path: &Path) -> Result<LocalKey, String> {
    LocalKey::read(path)
        .map_err(|e| format!("{e} (the gateway makes it when it starts with this config)"))
}

/// `local_key` is the gateway's key file when its config turns the local key on.
pub fn run(
    base: &str,
    program: &str,
    args: &[String],
    local_key: Option<&Path>,
) -> Result<i32, String> {
    let health = format!("{}/healthz", base.trim_end_matches('/'));
    if !reachable(&health) {
        return Err(format!(
            "no gateway answers at {base}: start it first (trimgate serve, or the desktop app), or name it with --gateway"
        ));
    }
    let local_key = local_key.map(read_local_key).transpose()?;
    let local_key = local_key.as_ref().map(LocalKey::expose);
    // A gateway key is let in with or without the local key; the local key stands in for
    // the placeholder, which is what clients without a header of their own can send.
    let key = std::env::var(ENV_GATEWAY_KEY)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .or_else(|| local_key.map(str::to_owned))
        .unwrap_or_else(|| PLACEHOLDER_KEY.to_owned());
    let mut command = Command::new(program);
    command.args(args);
    for (name, mut value) in environment(program, base, &key, local_key) {
        // Headers the user already gives Claude Code are kept, one per line.
        if name == ENV_CUSTOM_HEADERS {
            if let Some(own) = std::env::var(name).ok().filter(|v| !v.trim().is_empty()) {
                value = format!("{own}\n{value}");
            }
        }
        command.env(name, value);
    }
    eprintln!("trimgate: running {program} through {base}");
    let status = command
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    Ok(status.code().unwrap_or(1))
}

/// A plain HTTP/1.1 GET on loopback, without a client library: the gateway's health.
pub fn reachable(url: &str) -> bool {
    use std::io::{Read, Write};
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let Ok(addrs) = std::net::ToSocketAddrs::to_socket_addrs(authority) else {
        return false;
    };
    let timeout = std::time::Duration::from_secs(2);
    for addr in addrs {
        let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, timeout) else {
            continue;
        };
        let _ = stream.set_read_timeout(Some(timeout));
        let request =
            format!("GET /{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
        if stream.write_all(request.as_bytes()).is_err() {
            continue;
        }
        let mut head = [0u8; 12];
        if stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200") {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_gets_its_own_variables() {
        let get = |program: &str| environment(program, "http://127.0.0.1:8788/", "k", None);
        assert_eq!(
            get("claude"),
            [
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:8788".to_owned()),
                ("ANTHROPIC_API_KEY", "k".to_owned())
            ]
        );
        assert_eq!(get("/usr/local/bin/codex")[0].1, "http://127.0.0.1:8788/v1");
        assert_eq!(
            get("gemini"),
            [
                ("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:8788".to_owned()),
                ("GEMINI_API_KEY", "k".to_owned())
            ]
        );
        let aider: Vec<&str> = get("aider").iter().map(|(k, _)| *k).collect();
        assert!(aider.contains(&"OPENAI_API_BASE") && aider.contains(&"ANTHROPIC_BASE_URL"));
    }

    #[test]
    fn the_local_key_goes_in_its_own_header_where_the_agent_takes_custom_headers() {
        let get =
            |program: &str| environment(program, "http://127.0.0.1:8788", "k", Some("tg-local-1"));
        let header = (ENV_CUSTOM_HEADERS, "x-trimgate-key: tg-local-1".to_owned());
        assert!(get("claude").contains(&header));
        assert!(get("my-agent").contains(&header));
        assert!(get("codex").iter().all(|(k, _)| *k != ENV_CUSTOM_HEADERS));
    }
}
