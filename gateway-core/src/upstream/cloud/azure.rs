//! Microsoft Entra ID tokens for Azure OpenAI: printed by a configured command (`az
//! account get-access-token`), or asked for with an app registration's client secret (the
//! client-credentials flow). Kept until five minutes before they expire.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt as _, Full};

use super::token::{jwt_lasts, Kept};
use crate::config::clouds::Entra as Source;
use crate::secrets::{Secret, SecretStore};

/// How long a command or the token endpoint may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// A token whose lifetime cannot be read is asked for again this often.
const UNKNOWN_LIFETIME: Duration = Duration::from_secs(600);

pub struct Entra {
    source: Source,
    kept: Kept,
}

impl Entra {
    pub fn new(source: Source) -> Entra {
        Entra {
            source,
            kept: Kept::new(),
        }
    }

    pub async fn token(&self, secrets: &dyn SecretStore) -> Result<Secret, String> {
        self.kept
            .get(|| async {
                match &self.source {
                    Source::Command(command) => from_command(command).await,
                    Source::ClientCredentials {
                        token_url,
                        client_id,
                        secret,
                        scope,
                    } => {
                        let secret = secrets
                            .get(secret)
                            .map_err(|e| format!("the Entra ID client secret: {e}"))?
                            .ok_or("the Entra ID client secret is not set")?;
                        client_credentials(token_url, client_id, &secret, scope).await
                    }
                }
            })
            .await
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Runs `command` in the platform's shell; its output is the token, or `az`'s JSON
/// (`accessToken` with `expires_on`).
async fn from_command(command: &str) -> Result<(Secret, Duration), String> {
    #[cfg(windows)]
    let mut cmd = {
        let mut c = tokio::process::Command::new("cmd");
        c.arg("/C").arg(command);
        c
    };
    #[cfg(not(windows))]
    let mut cmd = {
        let mut c = tokio::process::Command::new("sh");
        c.arg("-c").arg(command);
        c
    };
    cmd.kill_on_drop(true).stdin(std::process::Stdio::null());
    let output = tokio::time::timeout(FETCH_TIMEOUT, cmd.output())
        .await
        .map_err(|_| {
            format!(
                "the Entra ID token command did not finish within {}s",
                FETCH_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("the Entra ID token command could not be run: {e}"))?;
    if !output.status.success() {
        // Its error output says what is wrong (not logged in, say); never its standard output.
        let said = String::from_utf8_lossy(&output.stderr);
        let said: String = said.trim().chars().take(300).collect();
        return Err(format!(
            "the Entra ID token command failed ({}): {said}",
            output.status
        ));
    }
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if text.is_empty() {
        return Err("the Entra ID token command printed nothing".into());
    }
    let now = now_unix();
    if text.starts_with('{') {
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|_| "the Entra ID token command printed JSON that could not be read")?;
        let token = json
            .get("accessToken")
            .or_else(|| json.get("access_token"))
            .and_then(|t| t.as_str())
            .ok_or("the Entra ID token command's JSON has no accessToken")?;
        let lasts = json
            .get("expires_on")
            .and_then(|e| e.as_u64().or_else(|| e.as_str()?.parse().ok()))
            .map(|exp| Duration::from_secs(exp.saturating_sub(now)))
            .or_else(|| jwt_lasts(token, now))
            .unwrap_or(UNKNOWN_LIFETIME);
        return Ok((Secret::new(token), lasts));
    }
    let lasts = jwt_lasts(&text, now).unwrap_or(UNKNOWN_LIFETIME);
    Ok((Secret::new(text.as_str()), lasts))
}

/// The client-credentials grant at `token_url`.
async fn client_credentials(
    token_url: &str,
    client_id: &str,
    secret: &Secret,
    scope: &str,
) -> Result<(Secret, Duration), String> {
    let form = form_urlencoded(&[
        ("grant_type", "client_credentials"),
        ("client_id", client_id),
        ("client_secret", secret.expose()),
        ("scope", scope),
    ]);
    let (status, body) = post_form(token_url, form).await?;
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    if !(200..300).contains(&status) {
        let why = json
            .get("error_description")
            .or_else(|| json.get("error"))
            .and_then(|e| e.as_str())
            .unwrap_or("no reason given");
        let why: String = why.chars().take(300).collect();
        return Err(format!(
            "Entra ID refused the client credentials ({status}): {why}"
        ));
    }
    let token = json
        .get("access_token")
        .and_then(|t| t.as_str())
        .ok_or("Entra ID's answer has no access_token")?;
    let lasts = json
        .get("expires_in")
        .and_then(|e| e.as_u64().or_else(|| e.as_str()?.parse().ok()))
        .map(Duration::from_secs)
        .unwrap_or(UNKNOWN_LIFETIME);
    Ok((Secret::new(token), lasts))
}

fn form_urlencoded(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// One form POST over the gateway's own TLS setup; the status and body.
pub(super) async fn post_form(url: &str, form: String) -> Result<(u16, Bytes), String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|_| format!("{:?} is not a URL", crate::secrets::redact_url(url)))?;
    let tls = crate::upstream::tls_config()?;
    let connector = crate::upstream::connector(&tls, Some(Duration::from_secs(10)));
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, Full<Bytes>>(connector);
    let mut request = Request::new(Full::new(Bytes::from(form)));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = uri;
    request.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    let host = uri_host(url);
    let response = tokio::time::timeout(FETCH_TIMEOUT, client.request(request))
        .await
        .map_err(|_| format!("{host} did not answer within {}s", FETCH_TIMEOUT.as_secs()))?
        .map_err(|e| {
            format!(
                "{host} could not be reached: {}",
                crate::upstream::root_cause(&e)
            )
        })?;
    let status = response.status().as_u16();
    let body = tokio::time::timeout(FETCH_TIMEOUT, response.into_body().collect())
        .await
        .map_err(|_| {
            format!(
                "{host}'s answer did not arrive within {}s",
                FETCH_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("{host}'s answer broke off: {e}"))?
        .to_bytes();
    Ok((status, body))
}

fn uri_host(url: &str) -> String {
    url.parse::<http::Uri>()
        .ok()
        .and_then(|u| u.host().map(str::to_owned))
        .unwrap_or_else(|| "the token endpoint".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_escaped() {
        assert_eq!(
            form_urlencoded(&[("scope", "https://x/.default"), ("s", "a b&c")]),
            "scope=https%3A%2F%2Fx%2F.default&s=a+b%26c"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_command_gives_a_token_and_its_lifetime() {
        let (token, lasts) = from_command("echo tok-123").await.unwrap();
        assert_eq!(token.expose(), "tok-123");
        assert_eq!(lasts, UNKNOWN_LIFETIME);
        let exp = now_unix() + 3600;
        let (token, lasts) = from_command(&format!(
            "printf '{{\"accessToken\":\"abc\",\"expires_on\":{exp}}}'"
        ))
        .await
        .unwrap();
        assert_eq!(token.expose(), "abc");
        assert!(lasts > Duration::from_secs(3500) && lasts <= Duration::from_secs(3600));
        let err = from_command("echo not logged in >&2; exit 3")
            .await
            .unwrap_err();
        assert!(err.contains("not logged in"), "{err}");
        assert!(from_command("true")
            .await
            .unwrap_err()
            .contains("printed nothing"));
    }
}
