//! Google's Gemini API (`generativelanguage.googleapis.com`), under `/v1beta` and `/v1`:
//! `models/{model}:generateContent`, `:streamGenerateContent` (server-sent events with
//! `alt=sse`, else one JSON array streamed a response at a time), `:countTokens`, `models`
//! and `models/{model}`; the same actions on `tunedModels/{model}`. The key comes in
//! `x-goog-api-key` or `?key=`; errors are `google.rpc.Status` objects
//! (`{"error": {code, message, status, details}}`), pretty-printed as Google's front end
//! prints every whole JSON body.
//!
//! Vertex AI's `publishers/google` routes reuse all of this behind their own auth
//! (`vertex_post`), with Vertex's 401, 404 and quota errors.
//!
//! Stages, as for the other dialects: admission (key, then an injected error), the body read
//! as Google reads it (`request`), the model looked up, the conversation checked (function
//! responses in place, Gemini 3's thought signatures), then the reply.

mod request;
#[cfg(test)]
mod tests;

use std::io;

use axum::extract::{Path, State};
use axum::response::Response;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use self::request::{Data, GenerateRequest, Mode, Rejection, Role};
use super::reply::{
    input_tokens, thought_signature, Answer, Conversation, Reasoning, Split, ToolDecl, Usage,
};
use super::{
    answer, bytes_response, header_str, query_param, random_id, sse, Controls, EmptyObject,
    MockState,
};

/// The header Google reads the API key from (the `key` query parameter is the other place).
pub(super) const API_KEY_HEADER: &str = "x-goog-api-key";
const SERVICE: &str = "generativelanguage.googleapis.com";
const VERTEX_SERVICE: &str = "aiplatform.googleapis.com";
const JSON: &str = "application/json; charset=UTF-8";

const KEY_INVALID: &str = "API key not valid. Please pass a valid API key.";
const UNREGISTERED: &str = "Method doesn't allow unregistered callers (callers without \
    established identity). Please use API Key or other form of API consumer identity to call \
    this API.";
const UNAUTHENTICATED: &str = "Request had invalid authentication credentials. Expected OAuth \
    2 access token, login cookie or other valid authentication credential. See \
    https://developers.google.com/identity/sign-in/web/devconsole-project.";
const CREDENTIALS_MISSING: &str = "Request is missing required authentication credential. \
    Expected OAuth 2 access token, login cookie or other valid authentication credential. See \
    https://developers.google.com/identity/sign-in/web/devconsole-project.";
const INTERNAL: &str = "An internal error has occurred. Please retry or report in \
    https://developers.generativeai.google/guide/troubleshooting";
const OVERLOADED: &str = "The model is overloaded. Please try again later.";
const DEADLINE: &str = "Deadline expired before operation could complete.";
const METHOD_NOT_FOUND: &str = "Method not found.";

const ERROR_INFO: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const LOCALIZED_MESSAGE: &str = "type.googleapis.com/google.rpc.LocalizedMessage";
const BAD_REQUEST: &str = "type.googleapis.com/google.rpc.BadRequest";
const QUOTA_FAILURE: &str = "type.googleapis.com/google.rpc.QuotaFailure";
const HELP: &str = "type.googleapis.com/google.rpc.Help";
const RETRY_INFO: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// What `GET /v1beta/models` lists, as the API describes these models.
const MODELS: &[ModelInfo] = &[
    ModelInfo {
        id: "gemini-2.5-pro",
        version: "2.5",
        display_name: "Gemini 2.5 Pro",
        description: "Stable release (June 17th, 2025) of Gemini 2.5 Pro",
        output_token_limit: 65_536,
        ..ModelInfo::GEMINI
    },
    ModelInfo {
        id: "gemini-2.5-flash",
        version: "001",
        display_name: "Gemini 2.5 Flash",
        description: "Stable version of Gemini 2.5 Flash, our mid-size multimodal model that \
            supports up to 1 million tokens, released in June of 2025.",
        output_token_limit: 65_536,
        ..ModelInfo::GEMINI
    },
    ModelInfo {
        id: "gemini-2.5-flash-lite",
        version: "001",
        display_name: "Gemini 2.5 Flash-Lite",
        description: "Stable version of Gemini 2.5 Flash-Lite, released in July of 2025",
        output_token_limit: 65_536,
        ..ModelInfo::GEMINI
    },
    ModelInfo {
        id: "gemini-3-pro-preview",
        version: "3-pro-preview-11-2025",
        display_name: "Gemini 3 Pro Preview",
        description: "Gemini 3 Pro Preview",
        output_token_limit: 65_536,
        ..ModelInfo::GEMINI
    },
    ModelInfo {
        id: "gemini-3-flash-preview",
        version: "3-flash-preview-12-2025",
        display_name: "Gemini 3 Flash Preview",
        description: "Gemini 3 Flash Preview",
        output_token_limit: 65_536,
        ..ModelInfo::GEMINI
    },
    ModelInfo {
        id: "gemini-2.0-flash",
        version: "2.0",
        display_name: "Gemini 2.0 Flash",
        description: "Gemini 2.0 Flash",
        output_token_limit: 8_192,
        top_k: 40,
        thinking: false,
        ..ModelInfo::GEMINI
    },
    ModelInfo {
        id: "gemma-3-27b-it",
        version: "001",
        display_name: "Gemma 3 27B",
        description: "",
        input_token_limit: 131_072,
        output_token_limit: 8_192,
        methods: &["generateContent", "countTokens"],
        max_temperature: None,
        thinking: false,
        ..ModelInfo::GEMINI
    },
];

struct ModelInfo {
    id: &'static str,
    version: &'static str,
    display_name: &'static str,
    description: &'static str,
    input_token_limit: u64,
    output_token_limit: u64,
    methods: &'static [&'static str],
    top_k: u32,
    max_temperature: Option<f64>,
    thinking: bool,
}

impl ModelInfo {
    /// What the Gemini models share.
    const GEMINI: Self = Self {
        id: "",
        version: "",
        display_name: "",
        description: "",
        input_token_limit: 1_048_576,
        output_token_limit: 65_536,
        methods: &[
            "generateContent",
            "countTokens",
            "createCachedContent",
            "batchGenerateContent",
        ],
        top_k: 64,
        max_temperature: Some(2.0),
        thinking: true,
    };
}

fn find_model(id: &str) -> Option<&'static ModelInfo> {
    MODELS.iter().find(|m| m.id == id)
}

/// Gemini 3 validates thought signatures and signs its text too.
fn is_gemini_3(model: &str) -> bool {
    model.starts_with("gemini-3")
}

/// Thinking models think unless a budget of 0 turns it off (Gemini 3 cannot be turned off).
fn thinks(model: &str, request: &GenerateRequest) -> bool {
    let thinking = find_model(model).map_or_else(
        || model.starts_with("gemini-2.5") || is_gemini_3(model),
        |m| m.thinking,
    );
    thinking && (is_gemini_3(model) || request.thinking_budget != Some(0))
}

/// A request that names a Gemini key: `GET /v1/models` and friends are Gemini's then.
pub(super) fn speaks_gemini(headers: &HeaderMap, uri: &Uri) -> bool {
    headers.contains_key(API_KEY_HEADER) || query_param(uri, "key").is_some()
}

/// Whether a path nobody serves should be answered in Google's shape.
pub(super) fn claims(uri: &Uri, headers: &HeaderMap) -> bool {
    let path = uri.path();
    path == "/v1beta" || path.starts_with("/v1beta/") || speaks_gemini(headers, uri)
}

fn version(uri: &Uri) -> &'static str {
    let path = uri.path();
    if path == "/v1beta" || path.starts_with("/v1beta/") {
        "v1beta"
    } else {
        "v1"
    }
}

/// `GET /v1beta/models`.
pub(super) async fn handle_list(
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        list_models(&state, controls, &uri, &headers)
    })
    .await
}

/// `GET /{ver}/models/{model}`; on `/v1` only for clients that send a Gemini key.
pub(super) async fn handle_get(
    State(state): State<MockState>,
    Path(segment): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        if version(&uri) == "v1" && !speaks_gemini(&headers, &uri) {
            return super::unknown_route(controls, &method, &uri, &headers);
        }
        let mut response = get_model(&state, controls, &uri, &headers, &segment);
        add_headers(&mut response, controls);
        response
    })
    .await
}

/// `POST /{ver}/models/{model}:{action}` and `POST /{ver}/tunedModels/{model}:{action}`.
pub(super) async fn handle_post(
    State(state): State<MockState>,
    Path(segment): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        let target = Target::parse(&uri, &segment);
        if target.action.is_none() && target.ver == "v1" && !speaks_gemini(&headers, &uri) {
            return super::unknown_route(controls, &method, &uri, &headers);
        }
        let mut response = post(&state, controls, &target, &uri, &headers, &body);
        add_headers(&mut response, controls);
        response
    })
    .await
}

/// Google's answer to a path it does not serve.
pub(super) fn not_found(controls: &Controls) -> Response {
    let mut response = method_not_found(false);
    add_headers(&mut response, controls);
    response
}

/// The model and action a POST names.
struct Target {
    ver: &'static str,
    tuned: bool,
    model: String,
    action: Option<String>,
    /// On Vertex AI, the model's resource name
    /// (`projects/{p}/locations/{l}/publishers/google/models/{m}`).
    vertex: Option<String>,
}

impl Target {
    /// `segment` is the last path segment: `gemini-2.5-pro:generateContent`.
    fn parse(uri: &Uri, segment: &str) -> Self {
        let (model, action) = match segment.rsplit_once(':') {
            Some((model, action)) => (model, Some(action.to_owned())),
            None => (segment, None),
        };
        Self {
            ver: version(uri),
            tuned: uri.path().contains("/tunedModels/"),
            model: model.strip_prefix("models/").unwrap_or(model).to_owned(),
            action,
            vertex: None,
        }
    }

    /// A tuned model is taken to exist: the mock cannot know what was tuned.
    fn known(&self) -> bool {
        self.tuned
            || find_model(&self.model).is_some()
            || self.model.starts_with("gemini-")
            || self.model.starts_with("gemma-")
    }

    fn not_found_message(&self, method: &str) -> String {
        if let Some(resource) = &self.vertex {
            return format!(
                "Publisher Model `{resource}` was not found or your project does not have \
                 access to it. Please ensure you are using a valid model version. For more \
                 information, see: \
                 https://cloud.google.com/vertex-ai/generative-ai/docs/learn/model-versions"
            );
        }
        let collection = if self.tuned { "tunedModels" } else { "models" };
        format!(
            "{collection}/{} is not found for API version {}, or is not supported for {method}. \
             Call ListModels to see the list of available models and their supported methods.",
            self.model, self.ver
        )
    }

    fn not_found(&self, method: &str, array: bool) -> Response {
        let message = self.not_found_message(method);
        error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            &message,
            Vec::new(),
            array,
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    /// `alt=sse`: `data: {...}` frames.
    Sse,
    /// Without `alt=sse`: `[{...}`, `,{...}`, …, `]`.
    Array,
}

fn post(
    state: &MockState,
    controls: &Controls,
    target: &Target,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response {
    let stream = stream_mode(target, uri);
    let method = target.action.as_deref().unwrap_or_default();
    let refusal = Refusal {
        model: &target.model,
        not_found: target.not_found_message(method),
        array: stream == Some(Stream::Array),
    };
    if let Some(response) = admission(state, controls, headers, uri, &refusal) {
        return response;
    }
    act(state, controls, target, body, stream)
}

/// `streamGenerateContent` streams SSE with `alt=sse`, a JSON array without.
fn stream_mode(target: &Target, uri: &Uri) -> Option<Stream> {
    match target.action.as_deref() {
        Some("streamGenerateContent") if query_param(uri, "alt").as_deref() == Some("sse") => {
            Some(Stream::Sse)
        }
        Some("streamGenerateContent") => Some(Stream::Array),
        _ => None,
    }
}

/// The action, for an admitted request.
fn act(
    state: &MockState,
    controls: &Controls,
    target: &Target,
    body: &Bytes,
    stream: Option<Stream>,
) -> Response {
    match target.action.as_deref().unwrap_or_default() {
        "generateContent" | "streamGenerateContent" => {
            generate(state, controls, target, body, stream)
        }
        "countTokens" => count_tokens(target, body),
        _ => method_not_found(false),
    }
}

/// Vertex AI's `…/publishers/google/models/{model}:{action}` (`segment` is the last path
/// segment), for a caller Vertex has authenticated: an injected error (a 429 as Vertex
/// words its quota), else the action as Google's API answers it.
pub(super) fn vertex_post(
    state: &MockState,
    controls: &Controls,
    resource: String,
    segment: &str,
    uri: &Uri,
    body: &Bytes,
) -> Response {
    let mut target = Target::parse(uri, segment);
    target.vertex = Some(resource);
    let stream = stream_mode(&target, uri);
    let array = stream == Some(Stream::Array);
    match controls.error_status {
        Some(StatusCode::TOO_MANY_REQUESTS) => {
            vertex_quota_exceeded(VERTEX_GEMINI_QUOTA, &target.model, array)
        }
        Some(status) => {
            let method = target.action.as_deref().unwrap_or_default();
            let refusal = Refusal {
                model: &target.model,
                not_found: target.not_found_message(method),
                array,
            };
            injected_error(status, controls, &refusal)
        }
        None => act(state, controls, &target, body, stream),
    }
}

/// The quota Vertex AI counts Gemini requests against.
const VERTEX_GEMINI_QUOTA: &str =
    "aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model";

/// Vertex AI's 429: the quota and the base model it was counted for.
pub(super) fn vertex_quota_exceeded(metric: &str, base_model: &str, array: bool) -> Response {
    let message = format!(
        "Quota exceeded for {metric} with base model: {base_model}. Please submit a quota \
         increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai."
    );
    error(
        StatusCode::TOO_MANY_REQUESTS,
        "RESOURCE_EXHAUSTED",
        &message,
        Vec::new(),
        array,
    )
}

/// Why Vertex AI refuses a caller's credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum VertexAuth {
    /// No `Authorization` at all.
    Missing,
    /// A token this mock issued, expired.
    Expired,
    /// Anything else.
    Invalid,
}

/// Vertex AI's 401, with the `ErrorInfo` reason Google gives for each case.
pub(super) fn vertex_unauthenticated(why: VertexAuth, array: bool) -> Response {
    let (message, reason) = match why {
        VertexAuth::Missing => (CREDENTIALS_MISSING, "CREDENTIALS_MISSING"),
        VertexAuth::Expired => (UNAUTHENTICATED, "ACCESS_TOKEN_EXPIRED"),
        VertexAuth::Invalid => (UNAUTHENTICATED, "ACCESS_TOKEN_TYPE_UNSUPPORTED"),
    };
    error(
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
        message,
        vec![Detail::ErrorInfo {
            kind: ERROR_INFO,
            reason,
            domain: "googleapis.com",
            metadata: Metadata {
                service: VERTEX_SERVICE,
            },
        }],
        array,
    )
}

/// Vertex AI's answer to a publisher or method it does not serve.
pub(super) fn vertex_not_found(resource: &str) -> Response {
    let target = Target {
        ver: "v1",
        tuned: false,
        model: String::new(),
        action: None,
        vertex: Some(resource.to_owned()),
    };
    target.not_found("", false)
}

/// What an injected error says about the request it refuses.
struct Refusal<'a> {
    /// The model asked for (`""` when none is), for a 429's quota dimensions.
    model: &'a str,
    /// The endpoint's 404 message.
    not_found: String,
    /// The body is a streamed JSON array, errors included.
    array: bool,
}

/// The key (header or query), then any error the test asked for. `Some` is the rejection.
fn admission(
    state: &MockState,
    controls: &Controls,
    headers: &HeaderMap,
    uri: &Uri,
    refusal: &Refusal<'_>,
) -> Option<Response> {
    let array = refusal.array;
    if !state.config().keyless {
        let key = header_str(headers, API_KEY_HEADER)
            .map(str::to_owned)
            .or_else(|| query_param(uri, "key"))
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty());
        match (key, state.config().gemini_key.as_deref()) {
            (None, _) if headers.contains_key(AUTHORIZATION) => {
                return Some(unauthenticated(array));
            }
            (None, _) => {
                return Some(error(
                    StatusCode::FORBIDDEN,
                    "PERMISSION_DENIED",
                    UNREGISTERED,
                    Vec::new(),
                    array,
                ));
            }
            (Some(key), Some(expected)) if key != expected => return Some(key_invalid(array)),
            _ => {}
        }
    }
    controls
        .error_status
        .map(|status| injected_error(status, controls, refusal))
}

fn key_invalid(array: bool) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "INVALID_ARGUMENT",
        KEY_INVALID,
        vec![
            Detail::ErrorInfo {
                kind: ERROR_INFO,
                reason: "API_KEY_INVALID",
                domain: "googleapis.com",
                metadata: Metadata { service: SERVICE },
            },
            Detail::Localized {
                kind: LOCALIZED_MESSAGE,
                locale: "en-US",
                message: KEY_INVALID,
            },
        ],
        array,
    )
}

/// A bearer token instead of a key: Google tries it as an OAuth token and refuses it.
fn unauthenticated(array: bool) -> Response {
    error(
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
        UNAUTHENTICATED,
        vec![Detail::ErrorInfo {
            kind: ERROR_INFO,
            reason: "ACCESS_TOKEN_TYPE_UNSUPPORTED",
            domain: "googleapis.com",
            metadata: Metadata { service: SERVICE },
        }],
        array,
    )
}

/// The canonical code Google pairs with each HTTP status.
fn status_name(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "UNAUTHENTICATED",
        402 | 429 => "RESOURCE_EXHAUSTED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 | 529 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        s if s >= 500 => "INTERNAL",
        _ => "INVALID_ARGUMENT",
    }
}

/// The error Google answers with for each status `x-mock-error-status` may ask for.
fn injected_error(status: StatusCode, controls: &Controls, refusal: &Refusal<'_>) -> Response {
    let name = status_name(status);
    let (message, details): (String, Vec<Detail<'_>>) = match status.as_u16() {
        401 => (UNAUTHENTICATED.to_owned(), Vec::new()),
        403 => ("The caller does not have permission".to_owned(), Vec::new()),
        404 => (refusal.not_found.clone(), Vec::new()),
        429 => {
            let secs = controls.retry_after.unwrap_or(1);
            let model = if refusal.model.is_empty() {
                "gemini-2.5-pro"
            } else {
                refusal.model
            };
            (
                format!(
                    "You exceeded your current quota, please check your plan and billing \
                     details. For more information on this error, head to: \
                     https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current \
                     usage, head to: https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded \
                     for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, \
                     limit: 10, model: {model}\nPlease retry in {secs}s."
                ),
                vec![
                    Detail::QuotaFailure {
                        kind: QUOTA_FAILURE,
                        violations: [QuotaViolation {
                            quota_metric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                            quota_id: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                            quota_dimensions: QuotaDimensions {
                                location: "global",
                                model: model.to_owned(),
                            },
                            quota_value: "10",
                        }],
                    },
                    Detail::Help {
                        kind: HELP,
                        links: [Link {
                            description: "Learn more about Gemini API quotas",
                            url: "https://ai.google.dev/gemini-api/docs/rate-limits",
                        }],
                    },
                    Detail::RetryInfo {
                        kind: RETRY_INFO,
                        retry_delay: format!("{secs}s"),
                    },
                ],
            )
        }
        503 | 529 => (OVERLOADED.to_owned(), Vec::new()),
        504 => (DEADLINE.to_owned(), Vec::new()),
        s if s >= 500 => (INTERNAL.to_owned(), Vec::new()),
        _ => (
            "Request contains an invalid argument.".to_owned(),
            Vec::new(),
        ),
    };
    error(status, name, &message, details, refusal.array)
}

fn method_not_found(array: bool) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
        METHOD_NOT_FOUND,
        Vec::new(),
        array,
    )
}

/// A 400 for a body Google would not read: with the `BadRequest` details when the complaint
/// is about the JSON itself, as Google sends them.
fn invalid_argument(rejection: &Rejection, array: bool) -> Response {
    let details = if rejection.message.starts_with("Invalid") {
        vec![Detail::BadRequest {
            kind: BAD_REQUEST,
            field_violations: rejection
                .violations
                .iter()
                .map(|v| FieldViolation {
                    field: v.field.as_deref(),
                    description: &v.description,
                })
                .collect(),
        }]
    } else {
        Vec::new()
    };
    error(
        StatusCode::BAD_REQUEST,
        "INVALID_ARGUMENT",
        &rejection.message,
        details,
        array,
    )
}

fn generate(
    state: &MockState,
    controls: &Controls,
    target: &Target,
    body: &Bytes,
    stream: Option<Stream>,
) -> Response {
    let array = stream == Some(Stream::Array);
    let method = if stream.is_some() {
        "streamGenerateContent"
    } else {
        "generateContent"
    };
    let request = match request::generate(body, target.ver) {
        Ok(request) => request,
        Err(rejection) => return invalid_argument(&rejection, array),
    };
    if !target.known() {
        return target.not_found(method, array);
    }
    let bad_request = |message: &str| {
        error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            message,
            Vec::new(),
            array,
        )
    };
    if let Some(message) = request.misplaced_response() {
        return bad_request(message);
    }
    let model = target.model.as_str();
    if is_gemini_3(model) {
        if let Some((name, position)) = request.unsigned_call() {
            let name = if name.contains(':') {
                name.to_owned()
            } else {
                format!("default_api:{name}")
            };
            return bad_request(&format!(
                "Function call is missing a thought_signature in functionCall parts. This is \
                 required for tools to work correctly, and missing thought_signature may lead \
                 to degraded model performance. Additional data, function call `{name}` , \
                 position {position}. Please refer to \
                 https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
            ));
        }
    }
    let conversation = conversation(&request, controls.tool.as_deref());
    let reasoning = thinks(model, &request).then(|| Reasoning::about(&conversation));
    let thought_tokens = reasoning.as_ref().map_or(0, Reasoning::tokens);
    let (answer, finish) = shape(
        Answer::decide(conversation, controls),
        &request,
        thought_tokens,
    );
    // Asked for JSON, the model answers JSON: the reply's text where the schema has room
    // for a string, the first of an enum's values.
    let answer = match (answer, &request.json) {
        (Answer::Text(text), Some(schema)) => {
            let value = schema
                .as_ref()
                .map_or_else(|| json!({"text": text}), |s| instance(s, &text));
            Answer::Text(value.to_string())
        }
        (answer, _) => answer,
    };
    let usage = Usage::new(body.len(), controls.cached_tokens, answer.output_tokens())
        .with_prompt_cache(state.implicit_cache(&request.cache_blocks))
        .with_reasoning(reasoning.as_ref());
    // Gemini 3 signs every answer; 2.5 signs a function call it thought about.
    let signed = is_gemini_3(model) || matches!(answer, Answer::Tool(_));
    let signature = reasoning
        .as_ref()
        .filter(|_| signed)
        .map(|r| thought_signature(&r.text));
    let args = match &answer {
        Answer::Tool(call) => serde_json::from_str::<&RawValue>(&call.arguments).ok(),
        Answer::Text(_) => None,
    };
    let id = random_id("", 22);
    let reply = Reply {
        model,
        id: &id,
        thought: reasoning.as_ref().filter(|_| request.include_thoughts),
        answer: &answer,
        args,
        finish,
        signature: signature.as_deref(),
        candidates: request.candidate_count,
        usage,
    };
    match stream {
        None => bytes_response(StatusCode::OK, JSON, Bytes::from(pretty(&reply.whole()))),
        Some(mode) => streamed(state, controls, &reply, mode),
    }
}

/// A value of `schema` (JSON Schema, or Gemini's OpenAPI subset with types in capitals):
/// an object with its required properties (all of them when none is required), the first
/// value of an enum, `text` for a string.
fn instance(schema: &Value, text: &str) -> Value {
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.to_ascii_lowercase(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string")
            .to_ascii_lowercase(),
        _ if schema.get("properties").is_some() => "object".to_owned(),
        _ => "string".to_owned(),
    };
    match kind.as_str() {
        "object" => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = serde_json::Map::new();
            for (name, property) in properties.into_iter().flatten() {
                if required.is_empty() || required.contains(&name.as_str()) {
                    out.insert(name.clone(), instance(property, text));
                }
            }
            Value::Object(out)
        }
        "array" => json!([]),
        "integer" | "number" => json!(0),
        "boolean" => json!(false),
        _ => json!(text),
    }
}

/// The stop sequences, then `maxOutputTokens` (thoughts spend it first), applied to a text
/// answer; the finish reason that results.
fn shape(answer: Answer, request: &GenerateRequest, thought_tokens: u64) -> (Answer, &'static str) {
    let Answer::Text(mut text) = answer else {
        return (answer, "STOP");
    };
    if let Some(at) = request
        .stop_sequences
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| text.find(s.as_str()))
        .min()
    {
        text.truncate(at);
    }
    let whole = Answer::Text(text);
    let Some(max) = request.max_output_tokens else {
        return (whole, "STOP");
    };
    let room = usize::try_from(max.saturating_sub(thought_tokens)).unwrap_or(usize::MAX);
    // Tokens are words, however the stream is cut.
    let pieces = whole.pieces(Split::Words);
    if pieces.len() <= room {
        return (whole, "STOP");
    }
    let cut = pieces[..room].concat();
    (Answer::Text(cut), "MAX_TOKENS")
}

/// The last turn's function response is a tool result; otherwise the declared function is
/// called (unless `mode` is `NONE`); the echo quotes the user's last text.
fn conversation(request: &GenerateRequest, wanted: Option<&str>) -> Conversation {
    let tool = (request.mode != Mode::None)
        .then(|| {
            request
                .declarations
                .iter()
                .filter(|d| request.allowed.is_empty() || request.allowed.contains(&d.name))
                .find(|d| wanted.is_none_or(|w| w == d.name))
        })
        .flatten()
        .map(|d| ToolDecl {
            name: d.name.clone(),
            schema: d.schema.clone(),
        });
    if let Some(last) = request.contents.last().filter(|c| c.has_response()) {
        let tool_result = last.parts.iter().rev().find_map(|p| match &p.data {
            Data::Response { response } => Some(response_text(response)),
            _ => None,
        });
        return Conversation {
            tool_result,
            tool,
            user_text: None,
        };
    }
    let user_text = request
        .contents
        .iter()
        .rev()
        .filter(|c| c.role == Role::User)
        .find_map(|c| c.last_text().map(str::to_owned));
    Conversation {
        tool_result: None,
        tool,
        user_text,
    }
}

/// A function response as text: its strings, one a line, or its JSON when it has none.
fn response_text(response: &Value) -> String {
    fn strings<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
        match value {
            Value::String(text) => out.push(text),
            Value::Array(values) => values.iter().for_each(|v| strings(v, out)),
            Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut texts = Vec::new();
    strings(response, &mut texts);
    if texts.is_empty() {
        response.to_string()
    } else {
        texts.join("\n")
    }
}

fn count_tokens(target: &Target, body: &Bytes) -> Response {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Count {
        total_tokens: u64,
        prompt_tokens_details: [ModalityCount; 1],
    }
    let len = match request::count(body, target.ver) {
        Ok(len) => len,
        Err(rejection) => return invalid_argument(&rejection, false),
    };
    if !target.known() {
        return target.not_found("countTokens", false);
    }
    let total_tokens = input_tokens(len);
    let count = Count {
        total_tokens,
        prompt_tokens_details: [ModalityCount::text(total_tokens)],
    };
    bytes_response(StatusCode::OK, JSON, Bytes::from(pretty(&count)))
}

/// `GET /{ver}/models`, paged by `pageSize` (50 by default) and the `nextPageToken` given.
pub(super) fn list_models(
    state: &MockState,
    controls: &Controls,
    uri: &Uri,
    headers: &HeaderMap,
) -> Response {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct List<'a> {
        models: Vec<ModelOut<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        next_page_token: Option<String>,
    }
    let refusal = Refusal {
        model: "",
        not_found: METHOD_NOT_FOUND.to_owned(),
        array: false,
    };
    let mut response = if let Some(response) = admission(state, controls, headers, uri, &refusal) {
        response
    } else {
        let size = query_param(uri, "pageSize")
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .map_or(50, |n| n.min(1000));
        let start = query_param(uri, "pageToken")
            .and_then(|t| t.parse::<usize>().ok())
            .unwrap_or(0);
        let end = start.saturating_add(size);
        let list = List {
            models: MODELS
                .iter()
                .skip(start)
                .take(size)
                .map(ModelOut::from)
                .collect(),
            next_page_token: (end < MODELS.len()).then(|| end.to_string()),
        };
        bytes_response(StatusCode::OK, JSON, Bytes::from(pretty(&list)))
    };
    add_headers(&mut response, controls);
    response
}

/// `GET /{ver}/models/{model}`: a listed model, or one made up for any `gemini-*`/`gemma-*`
/// name (the ones `generateContent` takes).
fn get_model(
    state: &MockState,
    controls: &Controls,
    uri: &Uri,
    headers: &HeaderMap,
    segment: &str,
) -> Response {
    let id = segment.strip_prefix("models/").unwrap_or(segment);
    let not_found = format!(
        "Model is not found: models/{id} for api version {}",
        version(uri)
    );
    let refusal = Refusal {
        model: id,
        not_found: not_found.clone(),
        array: false,
    };
    if let Some(response) = admission(state, controls, headers, uri, &refusal) {
        return response;
    }
    if id.contains(':') {
        return method_not_found(false);
    }
    let model = match find_model(id) {
        Some(info) => ModelOut::from(info),
        None if id.starts_with("gemini-") || id.starts_with("gemma-") => ModelOut {
            name: format!("models/{id}"),
            version: "001",
            display_name: id,
            description: id,
            input_token_limit: ModelInfo::GEMINI.input_token_limit,
            output_token_limit: ModelInfo::GEMINI.output_token_limit,
            supported_generation_methods: ModelInfo::GEMINI.methods,
            temperature: 1.0,
            top_p: 0.95,
            top_k: ModelInfo::GEMINI.top_k,
            max_temperature: ModelInfo::GEMINI.max_temperature,
            thinking: id.starts_with("gemini-2.5") || is_gemini_3(id),
        },
        None => {
            return error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                &not_found,
                Vec::new(),
                false,
            );
        }
    };
    bytes_response(StatusCode::OK, JSON, Bytes::from(pretty(&model)))
}

/// A model as `models.list` and `models.get` describe it, keys in the API's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ModelOut<'a> {
    name: String,
    version: &'a str,
    display_name: &'a str,
    description: &'a str,
    input_token_limit: u64,
    output_token_limit: u64,
    supported_generation_methods: &'a [&'a str],
    temperature: f64,
    top_p: f64,
    top_k: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_temperature: Option<f64>,
    #[serde(skip_serializing_if = "is_false")]
    thinking: bool,
}

impl From<&'static ModelInfo> for ModelOut<'static> {
    fn from(info: &'static ModelInfo) -> Self {
        Self {
            name: format!("models/{}", info.id),
            version: info.version,
            display_name: info.display_name,
            description: info.description,
            input_token_limit: info.input_token_limit,
            output_token_limit: info.output_token_limit,
            supported_generation_methods: info.methods,
            temperature: 1.0,
            top_p: 0.95,
            top_k: info.top_k,
            max_temperature: info.max_temperature,
            thinking: info.thinking,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What one reply holds, whole or streamed.
struct Reply<'a> {
    model: &'a str,
    id: &'a str,
    /// The reasoning shown as a `thought` part (`includeThoughts`).
    thought: Option<&'a Reasoning>,
    answer: &'a Answer,
    args: Option<&'a RawValue>,
    finish: &'static str,
    signature: Option<&'a str>,
    candidates: u32,
    usage: Usage,
}

impl<'a> Reply<'a> {
    fn whole(&self) -> ResponseOut<'a> {
        let mut parts = Vec::with_capacity(2);
        if let Some(thought) = self.thought {
            parts.push(PartOut::Thought {
                text: &thought.text,
                thought: true,
            });
        }
        match self.answer {
            Answer::Text(text) if text.is_empty() => {}
            Answer::Text(text) => parts.push(PartOut::Text {
                text,
                signature: self.signature,
            }),
            Answer::Tool(call) => parts.push(self.call(&call.name)),
        }
        let answer_tokens = self.usage.output - self.usage.reasoning;
        self.response(
            parts,
            Some(self.finish),
            self.usage_out(answer_tokens, self.usage.reasoning),
        )
    }

    /// One response per thought delta, then per text delta (or one for the whole call), each
    /// with the usage so far; the finish reason on the last.
    fn chunks(&self, split: Split) -> Vec<ResponseOut<'a>> {
        let mut out = Vec::new();
        if let Some(thought) = self.thought {
            for (i, text) in thought.pieces().into_iter().enumerate() {
                let part = PartOut::Thought {
                    text,
                    thought: true,
                };
                out.push(self.response(vec![part], None, self.usage_out(0, i as u64 + 1)));
            }
        }
        // Thoughts not shown are counted whole from the first answer chunk.
        let thoughts = self.usage.reasoning;
        match self.answer {
            Answer::Tool(call) => {
                let tokens = self.usage.output - self.usage.reasoning;
                let part = self.call(&call.name);
                out.push(self.response(
                    vec![part],
                    Some(self.finish),
                    self.usage_out(tokens, thoughts),
                ));
            }
            Answer::Text(_) => {
                let pieces = self.answer.pieces(split);
                if pieces.is_empty() {
                    let part = PartOut::Text {
                        text: "",
                        signature: self.signature,
                    };
                    out.push(self.response(
                        vec![part],
                        Some(self.finish),
                        self.usage_out(0, thoughts),
                    ));
                }
                let count = pieces.len();
                for (i, text) in pieces.into_iter().enumerate() {
                    let last = i + 1 == count;
                    let part = PartOut::Text {
                        text,
                        signature: self.signature.filter(|_| last),
                    };
                    out.push(self.response(
                        vec![part],
                        last.then_some(self.finish),
                        self.usage_out(i as u64 + 1, thoughts),
                    ));
                }
            }
        }
        out
    }

    fn call(&self, name: &'a str) -> PartOut<'a> {
        PartOut::Call {
            call: CallOut {
                name,
                args: self.args.map_or(Args::Empty(EmptyObject), Args::Raw),
            },
            signature: self.signature,
        }
    }

    fn response(
        &self,
        parts: Vec<PartOut<'a>>,
        finish: Option<&'static str>,
        usage: UsageOut,
    ) -> ResponseOut<'a> {
        ResponseOut {
            candidates: (0..self.candidates)
                .map(|index| CandidateOut {
                    content: ContentOut {
                        parts: parts.clone(),
                        role: "model",
                    },
                    finish_reason: finish,
                    index,
                })
                .collect(),
            usage_metadata: usage,
            model_version: self.model,
            response_id: self.id,
        }
    }

    /// Usage with `answer` tokens per candidate and `thoughts` so far: `promptTokenCount`
    /// includes the cached tokens, `totalTokenCount` the thoughts.
    fn usage_out(&self, answer: u64, thoughts: u64) -> UsageOut {
        let candidates = answer * u64::from(self.candidates);
        UsageOut {
            prompt_token_count: self.usage.input,
            candidates_token_count: candidates,
            total_token_count: self.usage.input + candidates + thoughts,
            cached_content_token_count: self.usage.cached,
            prompt_tokens_details: [ModalityCount::text(self.usage.input)],
            cache_tokens_details: (self.usage.cached > 0)
                .then(|| [ModalityCount::text(self.usage.cached)]),
            thoughts_token_count: thoughts,
        }
    }
}

/// A `GenerateContentResponse`, keys in the API's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    candidates: Vec<CandidateOut<'a>>,
    usage_metadata: UsageOut,
    model_version: &'a str,
    response_id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CandidateOut<'a> {
    content: ContentOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<&'static str>,
    index: u32,
}

#[derive(Serialize)]
struct ContentOut<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    parts: Vec<PartOut<'a>>,
    role: &'static str,
}

#[derive(Clone, Serialize)]
#[serde(untagged)]
enum PartOut<'a> {
    Thought {
        text: &'a str,
        thought: bool,
    },
    Text {
        text: &'a str,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        signature: Option<&'a str>,
    },
    Call {
        #[serde(rename = "functionCall")]
        call: CallOut<'a>,
        #[serde(rename = "thoughtSignature", skip_serializing_if = "Option::is_none")]
        signature: Option<&'a str>,
    },
}

#[derive(Clone, Serialize)]
struct CallOut<'a> {
    name: &'a str,
    args: Args<'a>,
}

#[derive(Clone, Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Raw(&'a RawValue),
    Empty(EmptyObject),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageOut {
    prompt_token_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    candidates_token_count: u64,
    total_token_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    cached_content_token_count: u64,
    prompt_tokens_details: [ModalityCount; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_tokens_details: Option<[ModalityCount; 1]>,
    #[serde(skip_serializing_if = "is_zero")]
    thoughts_token_count: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ModalityCount {
    modality: &'static str,
    token_count: u64,
}

impl ModalityCount {
    fn text(token_count: u64) -> Self {
        Self {
            modality: "TEXT",
            token_count,
        }
    }
}

/// The streamed body: SSE frames, or the pieces of one JSON array; an in-stream error is
/// the last frame, or the array's last element.
fn streamed(state: &MockState, controls: &Controls, reply: &Reply<'_>, mode: Stream) -> Response {
    let chunks = reply.chunks(controls.split);
    let mut frames = match mode {
        Stream::Sse => chunks.iter().map(sse_frame).collect(),
        Stream::Array => array_frames(&chunks),
    };
    sse::inject_error(state, &mut frames, controls.stream_error_after, |after| {
        let error = ErrorEnvelope {
            error: Status {
                code: StatusCode::SERVICE_UNAVAILABLE.as_u16(),
                message: OVERLOADED,
                status: "UNAVAILABLE",
                details: Vec::new(),
            },
        };
        let frame = match mode {
            Stream::Sse => sse_frame(&error),
            Stream::Array => {
                let open: &[u8] = if after == 0 { b"[" } else { b"\r\n," };
                Bytes::from([open, &pretty(&error), b"\r\n]"].concat())
            }
        };
        vec![frame]
    });
    let mut response = sse::response(state, frames, controls);
    let headers = response.headers_mut();
    match mode {
        Stream::Sse => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(
                HeaderName::from_static("content-disposition"),
                HeaderValue::from_static("attachment"),
            );
        }
        Stream::Array => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
        }
    }
    response
}

/// `data: {...}` and a blank line, `\r\n` ended, the JSON on one line with `": "` after each
/// key, as Google's servers write it.
fn sse_frame(value: &impl Serialize) -> Bytes {
    let mut buf = b"data: ".to_vec();
    {
        let mut serializer = serde_json::Serializer::with_formatter(&mut buf, GoogleCompact);
        // Writing into a Vec cannot fail and the payloads have string keys only.
        let _ = value.serialize(&mut serializer);
    }
    buf.extend_from_slice(b"\r\n\r\n");
    Bytes::from(buf)
}

/// The array stream's pieces: `[` and the first response, then `\r\n,` and each next one;
/// the last piece closes the array with `\r\n]`.
fn array_frames(values: &[impl Serialize]) -> Vec<Bytes> {
    let count = values.len();
    values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let open: &[u8] = if i == 0 { b"[" } else { b"\r\n," };
            let close: &[u8] = if i + 1 == count { b"\r\n]" } else { b"" };
            Bytes::from([open, &pretty(value), close].concat())
        })
        .collect()
}

/// Compact JSON with a space after each key's colon (`{"text": "Hi"}`).
struct GoogleCompact;

impl serde_json::ser::Formatter for GoogleCompact {
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

/// Two-space indented JSON, as Google's front end prints whole bodies.
fn pretty(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec_pretty(value).unwrap_or_default()
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    error: Status<'a>,
}

/// A `google.rpc.Status`.
#[derive(Serialize)]
struct Status<'a> {
    code: u16,
    message: &'a str,
    status: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    details: Vec<Detail<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Detail<'a> {
    ErrorInfo {
        #[serde(rename = "@type")]
        kind: &'static str,
        reason: &'static str,
        domain: &'static str,
        metadata: Metadata,
    },
    Localized {
        #[serde(rename = "@type")]
        kind: &'static str,
        locale: &'static str,
        message: &'static str,
    },
    BadRequest {
        #[serde(rename = "@type")]
        kind: &'static str,
        #[serde(rename = "fieldViolations")]
        field_violations: Vec<FieldViolation<'a>>,
    },
    QuotaFailure {
        #[serde(rename = "@type")]
        kind: &'static str,
        violations: [QuotaViolation; 1],
    },
    Help {
        #[serde(rename = "@type")]
        kind: &'static str,
        links: [Link; 1],
    },
    RetryInfo {
        #[serde(rename = "@type")]
        kind: &'static str,
        #[serde(rename = "retryDelay")]
        retry_delay: String,
    },
}

#[derive(Serialize)]
struct Metadata {
    service: &'static str,
}

#[derive(Serialize)]
struct FieldViolation<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    description: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QuotaViolation {
    quota_metric: &'static str,
    quota_id: &'static str,
    quota_dimensions: QuotaDimensions,
    quota_value: &'static str,
}

#[derive(Serialize)]
struct QuotaDimensions {
    location: &'static str,
    model: String,
}

#[derive(Serialize)]
struct Link {
    description: &'static str,
    url: &'static str,
}

/// An error response; the array stream sends even its errors as an array.
fn error(
    status: StatusCode,
    name: &str,
    message: &str,
    details: Vec<Detail<'_>>,
    array: bool,
) -> Response {
    let envelope = ErrorEnvelope {
        error: Status {
            code: status.as_u16(),
            message,
            status: name,
            details,
        },
    };
    let body = pretty(&envelope);
    let body = if array {
        [&b"["[..], &body, b"\n]"].concat()
    } else {
        body
    };
    bytes_response(status, JSON, Bytes::from(body))
}

/// The headers Google's front end puts on every response; on an injected error with a
/// retry-after, `retry-after` (a 429's body says it too, in `RetryInfo`).
pub(super) fn add_headers(response: &mut Response, controls: &Controls) {
    let status = response.status();
    let headers = response.headers_mut();
    super::insert_static(
        headers,
        &[
            ("server", "scaffolding on HTTPServer2"),
            ("vary", "Origin, X-Origin, Referer"),
            ("x-xss-protection", "0"),
            ("x-frame-options", "SAMEORIGIN"),
            ("x-content-type-options", "nosniff"),
        ],
    );
    let millis = u64::try_from(controls.delay.as_millis()).unwrap_or(u64::MAX);
    if let Ok(timing) = HeaderValue::from_str(&format!("gfet4t7; dur={millis}")) {
        headers.insert(HeaderName::from_static("server-timing"), timing);
    }
    if let Some(secs) = controls
        .retry_after
        .filter(|_| controls.error_status == Some(status))
    {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    }
}
