//! Google Vertex AI: Claude and Gemini under a project's location,
//! `POST /v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{action}`
//! (also under `/v1beta1`; the location may be `global`).
//!
//! - `publishers/anthropic`: `:rawPredict` and `:streamRawPredict` take a Messages body with
//!   `"anthropic_version": "vertex-2023-10-16"` and no `model` (the path names it); the
//!   anthropic handler answers, JSON or SSE as the body's `stream` says, ids `msg_vrtx_…`.
//! - `publishers/google`: `:generateContent`, `:streamGenerateContent` (`?alt=sse` for SSE,
//!   else a JSON array) and `:countTokens`, answered by the gemini handler.
//!
//! The caller sends `Authorization: Bearer <token>`, a token from the mock's Google token
//! endpoint (`cloud_auth`), alive; Google's `UNAUTHENTICATED` refuses anything else. An
//! injected 429 is Vertex's quota error on both publishers; other injected errors are in
//! the publisher's own shape.

use axum::extract::{Path, State};
use axum::response::Response;
use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Map, Value};

use super::anthropic::{self, Host};
use super::cloud_auth::{self, Issuer, TokenCheck};
use super::gemini::{self, VertexAuth};
use super::{answer, query_param, Controls, MockState};

pub(super) const ROUTE: &str =
    "/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model_action}";
pub(super) const ROUTE_V1BETA1: &str =
    "/v1beta1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model_action}";

/// The Messages API version Vertex wants in the body.
const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";
/// The quota Vertex AI counts Claude requests against.
const CLAUDE_QUOTA: &str = "aiplatform.googleapis.com/online_prediction_requests_per_base_model";

/// The path's parts: project, location, publisher, `{model}:{action}`.
type VertexPath = (String, String, String, String);

pub(super) async fn handle(
    State(state): State<MockState>,
    Path(path): Path<VertexPath>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        let mut response = respond(&state, controls, &path, &uri, &headers, &body);
        gemini::add_headers(&mut response, controls);
        response
    })
    .await
}

/// The stages: the publisher, the caller's token, then the publisher's handler (which
/// answers an injected error first).
fn respond(
    state: &MockState,
    controls: &Controls,
    (project, location, publisher, model_action): &VertexPath,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let (model, action) = model_action
        .rsplit_once(':')
        .unwrap_or((model_action.as_str(), ""));
    let resource =
        format!("projects/{project}/locations/{location}/publishers/{publisher}/models/{model}");
    let claude = match publisher.as_str() {
        "anthropic" => true,
        "google" => false,
        _ => return gemini::vertex_not_found(&resource),
    };
    let array = !claude
        && action == "streamGenerateContent"
        && query_param(uri, "alt").as_deref() != Some("sse");
    if let Some(why) = authenticate(state, headers) {
        return gemini::vertex_unauthenticated(why, array);
    }
    if !claude {
        return gemini::vertex_post(state, controls, resource, model_action, uri, body);
    }
    match action {
        "rawPredict" | "streamRawPredict" => claude_messages(state, controls, model, body),
        _ => gemini::vertex_not_found(&resource),
    }
}

/// A token this mock's Google endpoint issued, alive. `Some` is why the caller is refused.
fn authenticate(state: &MockState, headers: &HeaderMap) -> Option<VertexAuth> {
    if state.config().keyless {
        return None;
    }
    if !headers.contains_key(AUTHORIZATION) {
        return Some(VertexAuth::Missing);
    }
    match cloud_auth::bearer(headers).map(|token| state.check_token(token, Issuer::Google)) {
        Some(TokenCheck::Valid) => None,
        Some(TokenCheck::Expired) => Some(VertexAuth::Expired),
        Some(TokenCheck::Unknown) | None => Some(VertexAuth::Invalid),
    }
}

/// Claude on Vertex: `model` is the path's (`claude-sonnet-4-5@20250929`).
fn claude_messages(state: &MockState, controls: &Controls, model: &str, body: &Bytes) -> Response {
    let request_id = anthropic::request_id();
    match controls.error_status {
        Some(StatusCode::TOO_MANY_REQUESTS) => {
            let base = model.split('@').next().unwrap_or(model);
            return gemini::vertex_quota_exceeded(
                CLAUDE_QUOTA,
                &format!("anthropic-{base}"),
                false,
            );
        }
        Some(status) => return anthropic::injected_error(status, body, &request_id),
        None => {}
    }
    let map: Map<String, Value> = match serde_json::from_slice(body) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            return anthropic::invalid_request("Input should be a valid dictionary", &request_id)
        }
        Err(e) => {
            return anthropic::invalid_request(
                &format!("Request body is not valid JSON: {e}"),
                &request_id,
            )
        }
    };
    if map.contains_key("model") {
        return anthropic::invalid_request("model: Extra inputs are not permitted", &request_id);
    }
    match map.get("anthropic_version") {
        None => {
            return anthropic::invalid_request("anthropic_version: Field required", &request_id)
        }
        Some(Value::String(v)) if v == ANTHROPIC_VERSION => {}
        Some(_) => {
            return anthropic::invalid_request(
                &format!("anthropic_version: Input should be '{ANTHROPIC_VERSION}'"),
                &request_id,
            )
        }
    }
    let stream = map.get("stream") == Some(&Value::Bool(true));
    // The model's name as the answer gives it: `claude-sonnet-4-5-20250929`.
    let name = model.replace('@', "-");
    match anthropic::cloud_reply(state, controls, body, &name, Host::Vertex, stream) {
        Ok(generated) => anthropic::respond(state, controls, generated),
        Err(message) => anthropic::invalid_request(&message, &request_id),
    }
}
