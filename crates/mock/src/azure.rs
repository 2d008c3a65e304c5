//! Azure OpenAI: the OpenAI dialects behind Azure's paths and auth.
//!
//! - `POST /openai/deployments/{deployment}/chat/completions?api-version=…` (classic): the
//!   deployment names the model, whatever the body says.
//! - `POST /openai/responses?api-version=…` (classic Responses), `POST /openai/v1/chat/completions`
//!   and `POST /openai/v1/responses` (the v1 API, no `api-version`): the body's `model` is
//!   the deployment.
//!
//! - `GET /openai/models?api-version=…` and `GET /openai/v1/models`: the models the
//!   resource offers, in OpenAI's list shape.
//!
//! A classic path without `api-version` is not found. The caller authenticates with
//! `api-key: <key>` or with `Authorization: Bearer <token>`, a token from the mock's Entra
//! endpoint (`cloud_auth`) for Cognitive Services, alive; Azure's `{"error":{"code":"401",
//! …}}` refuses anything else. Past that the replies, and the errors `x-mock-error-status`
//! injects, are the OpenAI handlers'.

use axum::extract::{Path, State};
use axum::response::Response;
use bytes::Bytes;
use http::header::RETRY_AFTER;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use serde::Serialize;

use super::cloud_auth::{self, Issuer, TokenCheck};
use super::{
    answer, bytes_response, header_str, json_response, openai, openai_chat, query_param, responses,
    Controls, MockState,
};

/// The header Azure reads a resource key from.
pub(super) const API_KEY_HEADER: &str = "api-key";

const ACCESS_DENIED: &str = "Access denied due to invalid subscription key or wrong API \
    endpoint. Make sure to provide a valid key for an active subscription and use a correct \
    regional API endpoint for your resource.";
const BAD_TOKEN: &str = "Unauthorized. Access token is missing, invalid, audience is incorrect \
    (https://cognitiveservices.azure.com), or have expired.";

/// Which API a request came to.
#[derive(Clone, Copy)]
pub(super) enum Api<'a> {
    /// Chat Completions on a deployment's path.
    DeploymentChat(&'a str),
    /// Chat Completions, the deployment in the body (v1).
    Chat,
    /// Responses, the deployment in the body; classic paths want `api-version`.
    Responses { classic: bool },
    /// The model list.
    Models { classic: bool },
}

pub(super) async fn chat_deployment(
    state: State<MockState>,
    Path(deployment): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(
        Api::DeploymentChat(&deployment),
        state,
        method,
        uri,
        headers,
        body,
    )
    .await
}

/// Any of Azure's APIs: its auth, then the OpenAI handlers' reply. The paths that name no
/// deployment are routed here with their `api` (see `lib.rs`).
pub(super) async fn serve(
    api: Api<'_>,
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        respond(&state, controls, api, &uri, &headers, &body)
    })
    .await
}

/// Azure's answer to a path it does not serve (and to a classic one without `api-version`).
pub(super) fn not_found(controls: &Controls) -> Response {
    let mut response = error(StatusCode::NOT_FOUND, "404", "Resource not found");
    add_headers(&mut response, controls);
    response
}

/// The stages: the route (a classic path wants `api-version`), the caller, an injected
/// error, then the OpenAI handler's reply.
fn respond(
    state: &MockState,
    controls: &Controls,
    api: Api<'_>,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let classic = matches!(
        api,
        Api::DeploymentChat(_) | Api::Responses { classic: true } | Api::Models { classic: true }
    );
    if classic && query_param(uri, "api-version").is_none_or(|v| v.is_empty()) {
        return not_found(controls);
    }
    let mut response = if let Some(refusal) = authenticate(state, headers) {
        refusal
    } else if let Some(status) = controls.error_status {
        let model = match api {
            Api::DeploymentChat(deployment) => deployment.to_owned(),
            _ => openai::model_of(body),
        };
        openai::injected_error(status, &model)
    } else {
        match api {
            Api::DeploymentChat(deployment) => {
                openai_chat::complete(state, controls, body, Some(deployment))
            }
            Api::Chat => openai_chat::complete(state, controls, body, None),
            Api::Responses { .. } => responses::complete(state, controls, body),
            Api::Models { .. } => bytes_response(
                StatusCode::OK,
                "application/json",
                Bytes::from_static(openai::MODELS.as_bytes()),
            ),
        }
    };
    add_headers(&mut response, controls);
    response
}

/// An `api-key` (the configured one, or any when none is), else an Entra token this mock
/// issued for Cognitive Services and still alive. `Some` is the refusal.
fn authenticate(state: &MockState, headers: &HeaderMap) -> Option<Response> {
    let config = state.config();
    if config.keyless {
        return None;
    }
    if let Some(key) = header_str(headers, API_KEY_HEADER)
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        return match config.azure_key.as_deref() {
            Some(expected) if key != expected => Some(access_denied()),
            _ => None,
        };
    }
    // The v1 API also takes the resource's key as a bearer token, as the plain `OpenAI`
    // client sends it (`OpenAI(api_key=…, base_url=…/openai/v1/)`).
    let bearer = cloud_auth::bearer(headers);
    if bearer.is_some() && bearer == config.azure_key.as_deref() {
        return None;
    }
    match bearer.map(|token| state.check_token(token, Issuer::Entra)) {
        Some(TokenCheck::Valid) => None,
        Some(TokenCheck::Expired | TokenCheck::Unknown) => {
            Some(error(StatusCode::UNAUTHORIZED, "401", BAD_TOKEN))
        }
        None => Some(access_denied()),
    }
}

fn access_denied() -> Response {
    error(StatusCode::UNAUTHORIZED, "401", ACCESS_DENIED)
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    error: ErrorBody<'a>,
}

/// Azure's own errors (its gateway's, before a model is reached): a string `code`.
#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: &'a str,
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    json_response(
        status,
        &ErrorEnvelope {
            error: ErrorBody { code, message },
        },
    )
}

/// The headers Azure's front end puts on every response; on an injected error with a
/// retry-after, `retry-after` and `retry-after-ms`.
fn add_headers(response: &mut Response, controls: &Controls) {
    let status = response.status();
    let headers = response.headers_mut();
    let id = uuid::Uuid::new_v4().to_string();
    if let Ok(id) = HeaderValue::from_str(&id) {
        headers.insert(HeaderName::from_static("apim-request-id"), id.clone());
        headers.insert(HeaderName::from_static("x-request-id"), id);
    }
    super::insert_static(
        headers,
        &[
            ("x-ms-region", "East US"),
            ("x-content-type-options", "nosniff"),
            ("x-ratelimit-limit-requests", "1000"),
            ("x-ratelimit-remaining-requests", "999"),
            ("x-ratelimit-limit-tokens", "1000000"),
            ("x-ratelimit-remaining-tokens", "999000"),
        ],
    );
    let Some(secs) = controls
        .retry_after
        .filter(|_| controls.error_status == Some(status))
    else {
        return;
    };
    headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    headers.insert(
        HeaderName::from_static("retry-after-ms"),
        HeaderValue::from(secs.saturating_mul(1000)),
    );
    if status == StatusCode::TOO_MANY_REQUESTS {
        headers.insert(
            HeaderName::from_static("x-ratelimit-remaining-requests"),
            HeaderValue::from_static("0"),
        );
    }
}
