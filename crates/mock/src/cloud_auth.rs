//! The clouds' token endpoints and the access tokens they issue.
//!
//! - Microsoft Entra, `POST /{tenant}/oauth2/v2.0/token`: the client-credentials grant an
//!   Azure OpenAI client uses (`scope=https://cognitiveservices.azure.com/.default`).
//! - Google, `POST /token`: a service account's signed JWT (`grant_type=urn:ietf:params:
//!   oauth:grant-type:jwt-bearer`), or an authorized user's refresh token, for Vertex AI.
//!
//! Tokens are opaque and random and live `MockConfig::token_lifetime_secs`; Azure accepts
//! only Entra's for Cognitive Services, Vertex only Google's. The JWT's signature is not
//! checked here: a test verifies it against the service account's public key from the
//! captured request. The endpoints are captured in `/_mock/requests` but take no faults and
//! are not counted among the provider requests.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::Response;
use base64::Engine;
use bytes::Bytes;
use http::header::HOST;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::{dates, form_pairs, json_response, random_id, unix_now, MockState};

/// Tokens kept at most; the oldest go first when a long run asks for more.
const MAX_TOKENS: usize = 10_000;

/// The resources an Entra token must be for to call Azure OpenAI.
const AZURE_RESOURCES: &[&str] = &[
    "https://cognitiveservices.azure.com",
    "https://ai.azure.com",
];

/// The scope a Google token must carry to call Vertex AI.
pub(crate) const CLOUD_PLATFORM: &str = "https://www.googleapis.com/auth/cloud-platform";

/// The audiences Google's own token endpoint takes besides its URL: google-auth signs the
/// first whatever the key file's `token_uri` says; gcp_auth signs the `token_uri`.
const GOOGLE_AUDIENCES: &[&str] = &[
    "https://oauth2.googleapis.com/token",
    "https://www.googleapis.com/oauth2/v4/token",
];

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const JWT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How far in the future Google takes a JWT's `iat` (clocks differ).
const CLOCK_SKEW_SECS: u64 = 300;
/// The longest a service account's JWT may live.
const JWT_MAX_LIFETIME_SECS: u64 = 3600;

/// Who issued a token, which decides where it is good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Issuer {
    /// Entra, for the resource of its scope.
    Entra,
    /// Google, for Cloud Platform.
    Google,
}

struct Issued {
    issuer: Issuer,
    /// Entra: the resource the scope named (`https://cognitiveservices.azure.com`).
    resource: String,
    expires: Instant,
}

/// The access tokens issued, by token.
#[derive(Default)]
pub(crate) struct Tokens {
    issued: HashMap<String, Issued>,
}

/// What a bearer token presented to an API is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenCheck {
    Valid,
    Expired,
    /// Never issued, or issued for somewhere else.
    Unknown,
}

impl Tokens {
    fn issue(&mut self, issuer: Issuer, resource: &str, token: String, lifetime: Duration) {
        let now = Instant::now();
        if self.issued.len() >= MAX_TOKENS {
            self.issued.retain(|_, issued| issued.expires > now);
        }
        if self.issued.len() >= MAX_TOKENS {
            let oldest = self
                .issued
                .iter()
                .min_by_key(|(_, issued)| issued.expires)
                .map(|(token, _)| token.clone());
            if let Some(oldest) = oldest {
                self.issued.remove(&oldest);
            }
        }
        self.issued.insert(
            token,
            Issued {
                issuer,
                resource: resource.to_owned(),
                expires: now + lifetime,
            },
        );
    }

    fn check(&self, token: &str, issuer: Issuer) -> TokenCheck {
        let Some(issued) = self.issued.get(token) else {
            return TokenCheck::Unknown;
        };
        let good_for = issued.issuer == issuer
            && (issuer != Issuer::Entra || AZURE_RESOURCES.contains(&issued.resource.as_str()));
        if !good_for {
            TokenCheck::Unknown
        } else if Instant::now() >= issued.expires {
            TokenCheck::Expired
        } else {
            TokenCheck::Valid
        }
    }
}

impl MockState {
    fn issue_token(&self, issuer: Issuer, resource: &str, prefix: &str) -> (String, u64) {
        let lifetime = self.config().token_lifetime_secs;
        let token = random_id(prefix, 64);
        self.lock_tokens().issue(
            issuer,
            resource,
            token.clone(),
            Duration::from_secs(lifetime),
        );
        (token, lifetime)
    }

    /// Whether `token` is one this mock issued as `issuer` for the API asking, and alive.
    pub(crate) fn check_token(&self, token: &str, issuer: Issuer) -> TokenCheck {
        self.lock_tokens().check(token, issuer)
    }
}

/// The bearer token of `Authorization: Bearer …`, if any.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = super::header_str(headers, http::header::AUTHORIZATION.as_str())?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The form fields of a token request; a field given twice keeps its first value.
struct Form(Vec<(String, String)>);

impl Form {
    fn read(body: &[u8]) -> Self {
        Self(form_pairs(&String::from_utf8_lossy(body)).collect())
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
            .filter(|v| !v.is_empty())
    }
}

// ---------------------------------------------------------------------------------------
// Microsoft Entra

/// `POST /{tenant}/oauth2/v2.0/token`.
pub(super) async fn entra_token(
    State(state): State<MockState>,
    Path(_tenant): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.capture(&method, &uri, &headers, &body);
    entra(&state, &Form::read(&body))
}

#[derive(Serialize)]
struct EntraToken<'a> {
    token_type: &'static str,
    expires_in: u64,
    ext_expires_in: u64,
    access_token: &'a str,
}

fn entra(state: &MockState, form: &Form) -> Response {
    let missing = |name: &str| {
        entra_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            900_144,
            &format!("The request body must contain the following parameter: '{name}'."),
        )
    };
    let Some(grant_type) = form.get("grant_type") else {
        return missing("grant_type");
    };
    if grant_type != "client_credentials" {
        return entra_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            70_003,
            &format!("The app requested an unsupported grant type '{grant_type}'."),
        );
    }
    if form.get("client_id").is_none() {
        return missing("client_id");
    }
    let assertion = form.get("client_assertion_type") == Some(JWT_ASSERTION_TYPE)
        && form.get("client_assertion").is_some();
    if form.get("client_secret").is_none() && !assertion {
        return entra_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            7_000_218,
            "The request body must contain the following parameter: 'client_assertion' or \
             'client_secret'.",
        );
    }
    let Some(scope) = form.get("scope") else {
        return missing("scope");
    };
    let Some(resource) = scope.strip_suffix("/.default").filter(|r| !r.is_empty()) else {
        return entra_error(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            1_002_012,
            &format!(
                "The provided value for scope {scope} is not valid. Client credential flows \
                 must have a scope value with /.default suffixed to the resource identifier \
                 (application ID URI)."
            ),
        );
    };
    let (token, lifetime) = state.issue_token(Issuer::Entra, resource, "entra-mock-");
    json_response(
        StatusCode::OK,
        &EntraToken {
            token_type: "Bearer",
            expires_in: lifetime,
            ext_expires_in: lifetime,
            access_token: &token,
        },
    )
}

#[derive(Serialize)]
struct EntraError<'a> {
    error: &'a str,
    error_description: &'a str,
    error_codes: [u32; 1],
    timestamp: &'a str,
    trace_id: &'a str,
    correlation_id: &'a str,
    error_uri: &'a str,
}

/// Entra's error: the `AADSTS` code in front of the description and the trace ids after it.
fn entra_error(status: StatusCode, error: &str, code: u32, message: &str) -> Response {
    let timestamp = dates::rfc3339(unix_now()).replace('T', " ");
    let trace_id = uuid::Uuid::new_v4().to_string();
    let correlation_id = uuid::Uuid::new_v4().to_string();
    let description = format!(
        "AADSTS{code}: {message} Trace ID: {trace_id} Correlation ID: {correlation_id} \
         Timestamp: {timestamp}"
    );
    json_response(
        status,
        &EntraError {
            error,
            error_description: &description,
            error_codes: [code],
            timestamp: &timestamp,
            trace_id: &trace_id,
            correlation_id: &correlation_id,
            error_uri: &format!("https://login.microsoftonline.com/error?code={code}"),
        },
    )
}

// ---------------------------------------------------------------------------------------
// Google

/// `POST /token`.
pub(super) async fn google_token(
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.capture(&method, &uri, &headers, &body);
    let form = Form::read(&body);
    match google(&form, &token_url(&uri, &headers), unix_now()) {
        Ok(()) => {
            let (token, lifetime) = state.issue_token(Issuer::Google, CLOUD_PLATFORM, "ya29.mock-");
            json_response(
                StatusCode::OK,
                &GoogleToken {
                    access_token: &token,
                    expires_in: lifetime,
                    token_type: "Bearer",
                },
            )
        }
        Err(refusal) => json_response(
            StatusCode::BAD_REQUEST,
            &GoogleError {
                error: refusal.error,
                error_description: &refusal.description,
            },
        ),
    }
}

/// Where the request came: what a service account's JWT must name as its audience.
fn token_url(uri: &Uri, headers: &HeaderMap) -> String {
    let host = super::header_str(headers, HOST.as_str())
        .map(str::to_owned)
        .or_else(|| uri.authority().map(|a| a.as_str().to_owned()))
        .unwrap_or_default();
    format!("http://{host}/token")
}

#[derive(Serialize)]
struct GoogleToken<'a> {
    access_token: &'a str,
    expires_in: u64,
    token_type: &'static str,
}

#[derive(Serialize)]
struct GoogleError<'a> {
    error: &'a str,
    error_description: &'a str,
}

/// Why Google refuses a token request: the OAuth error code and its description.
#[derive(Debug)]
struct Refusal {
    error: &'static str,
    description: String,
}

impl Refusal {
    fn new(error: &'static str, description: impl Into<String>) -> Self {
        Self {
            error,
            description: description.into(),
        }
    }
}

#[derive(Deserialize)]
struct JwtHeader {
    alg: Option<String>,
}

#[derive(Deserialize)]
struct JwtClaims {
    iss: Option<String>,
    scope: Option<String>,
    aud: Option<Value>,
    iat: Option<f64>,
    exp: Option<f64>,
}

/// Google's checks on a token request; `Ok` means a token is issued.
fn google(form: &Form, token_url: &str, now: u64) -> Result<(), Refusal> {
    let missing = |name: &str| {
        Refusal::new(
            "invalid_request",
            format!("Missing required parameter: {name}"),
        )
    };
    let grant_type = form
        .get("grant_type")
        .ok_or_else(|| missing("grant_type"))?;
    match grant_type {
        JWT_BEARER => {
            let assertion = form.get("assertion").ok_or_else(|| missing("assertion"))?;
            check_jwt(assertion, token_url, now)
        }
        "refresh_token" => {
            for name in ["client_id", "client_secret", "refresh_token"] {
                form.get(name).ok_or_else(|| missing(name))?;
            }
            Ok(())
        }
        other => Err(Refusal::new(
            "unsupported_grant_type",
            format!("Invalid grant_type: {other}"),
        )),
    }
}

/// A service account's assertion, read without checking its signature: RS256, an issuer,
/// the token URL as audience (or Google's, as Google takes), at most an hour long and not
/// expired, Cloud Platform scope.
fn check_jwt(assertion: &str, token_url: &str, now: u64) -> Result<(), Refusal> {
    let invalid = |why: &str| Refusal::new("invalid_grant", format!("Invalid JWT: {why}"));
    let mut parts = assertion.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid(
            "not a JWS compact serialization (header.claims.signature)",
        ));
    };
    let header: JwtHeader =
        decode_part(header).ok_or_else(|| invalid("the header is not base64url JSON"))?;
    let claims: JwtClaims =
        decode_part(claims).ok_or_else(|| invalid("the claim set is not base64url JSON"))?;
    if signature.is_empty() || decode_base64url(signature).is_none() {
        return Err(Refusal::new("invalid_grant", "Invalid JWT Signature."));
    }
    if header.alg.as_deref() != Some("RS256") {
        return Err(invalid(&format!(
            "alg must be RS256, not {}",
            header.alg.as_deref().unwrap_or("(none)")
        )));
    }
    if claims.iss.as_deref().is_none_or(str::is_empty) {
        return Err(Refusal::new(
            "invalid_grant",
            "Invalid grant: account not found",
        ));
    }
    let audience = claims
        .aud
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or_default();
    if audience != token_url && !GOOGLE_AUDIENCES.contains(&audience) {
        return Err(invalid(&format!(
            "Failed audience check. The right audience is {token_url}"
        )));
    }
    let timely = match (claims.iat, claims.exp) {
        (Some(iat), Some(exp)) if iat >= 0.0 && exp >= 0.0 => {
            // Whole seconds, as Google reads them.
            let (iat, exp) = (iat as u64, exp as u64);
            iat <= now + CLOCK_SKEW_SECS
                && exp > now
                && exp > iat
                && exp - iat <= JWT_MAX_LIFETIME_SECS
        }
        _ => false,
    };
    if !timely {
        return Err(invalid(
            "Token must be a short-lived token (60 minutes) and in a reasonable timeframe. \
             Check your iat and exp values in the JWT claim.",
        ));
    }
    let scoped = claims
        .scope
        .as_deref()
        .is_some_and(|s| s.split_whitespace().any(|scope| scope == CLOUD_PLATFORM));
    if !scoped {
        return Err(Refusal::new(
            "invalid_scope",
            "Invalid OAuth scope or ID token audience provided.",
        ));
    }
    Ok(())
}

fn decode_part<T: for<'de> Deserialize<'de>>(part: &str) -> Option<T> {
    serde_json::from_slice(&decode_base64url(part)?).ok()
}

/// base64url, with or without its `=` padding.
fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .ok()
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use serde_json::{json, Value};

    use super::{check_jwt, google, Form, CLOUD_PLATFORM};

    const URL: &str = "http://127.0.0.1:1/token";
    const NOW: u64 = 1_796_638_210;

    fn jwt(header: &Value, claims: &Value) -> String {
        let b64 = |v: &Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
        };
        format!("{}.{}.c2lnbmF0dXJl", b64(header), b64(claims))
    }

    fn claims() -> Value {
        json!({"iss": "sa@p.iam.gserviceaccount.com", "scope": CLOUD_PLATFORM,
               "aud": URL, "iat": NOW, "exp": NOW + 3600})
    }

    fn refusal(claims: &Value) -> (&'static str, String) {
        let e = check_jwt(
            &jwt(&json!({"alg": "RS256", "typ": "JWT"}), claims),
            URL,
            NOW,
        )
        .expect_err("refused");
        (e.error, e.description)
    }

    #[test]
    fn a_service_accounts_jwt_is_taken_when_its_claims_are_right() {
        let assertion = jwt(
            &json!({"alg": "RS256", "typ": "JWT", "kid": "k"}),
            &claims(),
        );
        assert!(check_jwt(&assertion, URL, NOW).is_ok());
        // google-auth's audience is Google's endpoint whatever the token URL.
        let mut google = claims();
        google["aud"] = json!("https://oauth2.googleapis.com/token");
        assert!(check_jwt(&jwt(&json!({"alg": "RS256"}), &google), URL, NOW).is_ok());
        // Several scopes, one of them Cloud Platform.
        let mut c = claims();
        c["scope"] = json!(format!("openid {CLOUD_PLATFORM}"));
        assert!(check_jwt(&jwt(&json!({"alg": "RS256"}), &c), URL, NOW).is_ok());
    }

    #[test]
    fn a_jwt_with_wrong_claims_is_refused_as_google_refuses_it() {
        let with = |key: &str, value: Value| {
            let mut c = claims();
            c[key] = value;
            c
        };
        let (error, text) = refusal(&with("aud", json!("https://example.com/token")));
        assert_eq!(error, "invalid_grant");
        assert!(text.contains("Failed audience check"), "{text}");
        assert!(text.contains(URL), "{text}");
        for late in [with("exp", json!(NOW - 1)), with("exp", json!(NOW + 3601))] {
            let (error, text) = refusal(&late);
            assert_eq!(error, "invalid_grant");
            assert!(text.contains("short-lived token (60 minutes)"), "{text}");
        }
        assert_eq!(refusal(&with("iss", json!(""))).0, "invalid_grant");
        let (error, _) = refusal(&with(
            "scope",
            json!("https://www.googleapis.com/auth/drive"),
        ));
        assert_eq!(error, "invalid_scope");
        let hs256 = check_jwt(&jwt(&json!({"alg": "HS256"}), &claims()), URL, NOW);
        assert!(hs256.unwrap_err().description.contains("RS256"));
        let garbage = check_jwt("not-a-jwt", URL, NOW).unwrap_err();
        assert_eq!(garbage.error, "invalid_grant");
    }

    #[test]
    fn the_grant_type_decides_what_the_form_must_hold() {
        let form = |text: &str| Form::read(text.as_bytes());
        let err = google(&form("assertion=x"), URL, NOW).unwrap_err();
        assert_eq!(
            (err.error, err.description.as_str()),
            ("invalid_request", "Missing required parameter: grant_type")
        );
        let err = google(&form("grant_type=password"), URL, NOW).unwrap_err();
        assert_eq!(err.error, "unsupported_grant_type");
        let refresh = "grant_type=refresh_token&client_id=c&client_secret=s&refresh_token=r";
        assert!(google(&form(refresh), URL, NOW).is_ok());
        let err = google(&form("grant_type=refresh_token&client_id=c"), URL, NOW).unwrap_err();
        assert_eq!(err.description, "Missing required parameter: client_secret");
        let encoded = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer";
        let err = google(&form(encoded), URL, NOW).unwrap_err();
        assert_eq!(err.description, "Missing required parameter: assertion");
    }
}
