//! `POST /v1/messages` (whole or streamed) and `POST /v1/messages/count_tokens`: Anthropic
//! Messages, with its `x-api-key` + `anthropic-version` checks and `{"type":"error"}` errors.

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use http::header::{AUTHORIZATION, RETRY_AFTER};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::reply::{
    input_tokens, joined_text, last_text, signature, Answer, Conversation, Reasoning, Split,
    ToolDecl, Usage,
};
use super::{
    answer, bytes_response, dates, header_str, json_response, random_id, sse, Controls, MockState,
};

pub(super) const VERSION_HEADER: &str = "anthropic-version";

/// Static answer to `GET /v1/models` in Anthropic's paginated list shape.
const MODELS: &str = concat!(
    r#"{"data":["#,
    r#"{"type":"model","id":"claude-opus-4-1-20250805","display_name":"Claude Opus 4.1","created_at":"2025-08-05T00:00:00Z"},"#,
    r#"{"type":"model","id":"claude-sonnet-4-5-20250929","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"},"#,
    r#"{"type":"model","id":"claude-haiku-4-5-20251001","display_name":"Claude Haiku 4.5","created_at":"2025-10-01T00:00:00Z"}"#,
    r#"],"has_more":false,"first_id":"claude-opus-4-1-20250805","last_id":"claude-haiku-4-5-20251001"}"#
);

pub(super) async fn handle_messages(
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        let request_id = request_id();
        let mut response = messages(&state, controls, &headers, &body, &request_id);
        add_headers(&mut response, controls, &request_id);
        response
    })
    .await
}

pub(super) async fn handle_count_tokens(
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        let request_id = request_id();
        let mut response = count_tokens(&state, controls, &headers, &body, &request_id);
        add_headers(&mut response, controls, &request_id);
        response
    })
    .await
}

pub(super) fn models(state: &MockState, controls: &Controls, headers: &HeaderMap) -> Response {
    let request_id = request_id();
    let mut response = admission(state, controls, headers, &[], &request_id).unwrap_or_else(|| {
        bytes_response(
            StatusCode::OK,
            "application/json",
            Bytes::from_static(MODELS.as_bytes()),
        )
    });
    add_headers(&mut response, controls, &request_id);
    response
}

pub(super) fn not_found(controls: &Controls) -> Response {
    let request_id = request_id();
    let mut response = error(
        StatusCode::NOT_FOUND,
        "not_found_error",
        "Not found",
        &request_id,
    );
    add_headers(&mut response, controls, &request_id);
    response
}

#[derive(Deserialize)]
struct MessagesRequest<'a> {
    model: Option<String>,
    #[serde(borrow)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    tools: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    max_tokens: Option<&'a RawValue>,
    stream: Option<bool>,
    #[serde(borrow)]
    thinking: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ThinkingIn {
    #[serde(rename = "type")]
    kind: Option<String>,
}

impl MessagesRequest<'_> {
    /// `thinking: {"type": "enabled"}` (or `"adaptive"`) asks for a thinking block.
    fn thinks(&self) -> bool {
        self.thinking
            .and_then(|raw| serde_json::from_str::<ThinkingIn>(raw.get()).ok())
            .and_then(|t| t.kind)
            .is_some_and(|kind| kind == "enabled" || kind == "adaptive")
    }
}

#[derive(Deserialize)]
struct MessageIn {
    role: Option<String>,
    content: Option<Value>,
}

#[derive(Deserialize)]
struct ToolIn {
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    input_schema: Option<Value>,
}

#[derive(Deserialize)]
struct ModelOnly {
    model: Option<Value>,
}

/// Claude's subscription logins are OAuth access tokens with this prefix.
const OAUTH_TOKEN_PREFIX: &str = "sk-ant-oat";

/// Auth, the version header, then any error the test asked for: what every endpoint checks
/// before it reads the body. `Some` is the rejection to send.
fn admission(
    state: &MockState,
    controls: &Controls,
    headers: &HeaderMap,
    body: &[u8],
    request_id: &str,
) -> Option<Response> {
    if state.config().keyless {
        return None;
    }
    let bearer = || {
        header_str(headers, AUTHORIZATION.as_str()).and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
    };
    let unauthorized = |message: &str| {
        error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            message,
            request_id,
        )
    };
    // A subscription login: an OAuth access token, valid only with the OAuth beta.
    if let Some(token) = bearer().filter(|t| t.starts_with(OAUTH_TOKEN_PREFIX)) {
        let oauth_beta = header_str(headers, "anthropic-beta")
            .is_some_and(|b| b.split(',').any(|v| v.trim().starts_with("oauth-")));
        if !oauth_beta {
            return Some(unauthorized(
                "OAuth authentication is currently not supported.",
            ));
        }
        if state.config().anthropic_oauth_token.as_deref() != Some(token) {
            return Some(unauthorized("Invalid bearer token"));
        }
    } else {
        let key = header_str(headers, "x-api-key")
            .or_else(bearer)
            .map(str::trim)
            .filter(|k| !k.is_empty());
        match (key, state.config().anthropic_key.as_deref()) {
            (None, _) => return Some(unauthorized("x-api-key header is required")),
            (Some(key), Some(expected)) if key != expected => {
                return Some(unauthorized("invalid x-api-key"))
            }
            _ => {}
        }
    }
    if !headers.contains_key(VERSION_HEADER) {
        return Some(invalid_request(
            "anthropic-version: header is required",
            request_id,
        ));
    }
    controls
        .error_status
        .map(|status| injected_error(status, body, request_id))
}

fn messages(
    state: &MockState,
    controls: &Controls,
    headers: &HeaderMap,
    body: &Bytes,
    request_id: &str,
) -> Response {
    if let Some(response) = admission(state, controls, headers, body, request_id) {
        return response;
    }
    let request: MessagesRequest<'_> = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(e) => {
            return invalid_request(&format!("Request body is not valid JSON: {e}"), request_id)
        }
    };
    let Some(model) = request.model.as_deref().filter(|m| !m.is_empty()) else {
        return invalid_request("model: Field required", request_id);
    };
    let stream = request.stream == Some(true);
    match reply(
        state,
        controls,
        body,
        &request,
        model,
        Host::Anthropic,
        stream,
    ) {
        Ok(generated) => respond(state, controls, generated),
        Err(message) => invalid_request(&message, request_id),
    }
}

/// Where a Messages request is served: Anthropic's API, or a cloud that hosts Claude (the
/// message ids say which, as the real ones do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Host {
    Anthropic,
    Bedrock,
    Vertex,
}

impl Host {
    fn id_prefix(self) -> &'static str {
        match self {
            Self::Anthropic => "msg_01",
            Self::Bedrock => "msg_bdrk_01",
            Self::Vertex => "msg_vrtx_01",
        }
    }
}

/// A Messages reply before it is framed: the message's JSON, or the stream's events.
pub(super) struct Generated {
    pub reply: Generation,
    pub tokens: TokenCounts,
}

pub(super) enum Generation {
    Whole(Bytes),
    Events(Vec<Event>),
}

/// One stream event: its name and its JSON (what an SSE frame's `data:` line carries).
pub(super) struct Event {
    pub name: &'static str,
    pub json: String,
}

/// The usage a reply reports, as the Messages API counts it: `input` leaves out the cache's
/// reads and writes.
#[derive(Clone, Copy, Debug)]
pub(super) struct TokenCounts {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// A Messages body as the clouds take it (Bedrock's `invoke`, Vertex's `rawPredict`): the
/// model named by the path, the body's `anthropic_version` checked by the caller. `Err` is
/// the API's `invalid_request_error` message.
pub(super) fn cloud_reply(
    state: &MockState,
    controls: &Controls,
    body: &Bytes,
    model: &str,
    host: Host,
    stream: bool,
) -> Result<Generated, String> {
    let request: MessagesRequest<'_> =
        serde_json::from_slice(body).map_err(|e| format!("Request body is not valid JSON: {e}"))?;
    reply(state, controls, body, &request, model, host, stream)
}

/// The reply to a request whose model is known: its required fields and thinking
/// signatures checked, then the answer decided and written whole or as stream events.
fn reply(
    state: &MockState,
    controls: &Controls,
    body: &Bytes,
    request: &MessagesRequest<'_>,
    model: &str,
    host: Host,
    stream: bool,
) -> Result<Generated, String> {
    let Some(messages) = request.messages.as_deref() else {
        return Err("messages: Field required".to_owned());
    };
    if request.max_tokens.is_none() {
        return Err("max_tokens: Field required".to_owned());
    }
    let thinks = request.thinks();
    if thinks {
        if let Some(message) = unsigned_thinking(messages) {
            return Err(message);
        }
    }
    let conversation = conversation(
        messages,
        request.tools.as_deref().unwrap_or(&[]),
        controls.tool.as_deref(),
    );
    let reasoning = thinks.then(|| Reasoning::about(&conversation));
    let answer = Answer::decide(conversation, controls);
    let usage = Usage::new(body.len(), controls.cached_tokens, answer.output_tokens())
        .with_prompt_cache(state.prompt_cache(body))
        .with_reasoning(reasoning.as_ref());
    let id = random_id(host.id_prefix(), 22);
    let tool_id = random_id("toolu_01", 22);
    let signature = reasoning.as_ref().map(Reasoning::signature);
    let thinking = reasoning.as_ref().zip(signature.as_deref());
    let whole = MessageUsage::new(usage, usage.output);
    let tokens = TokenCounts {
        input: whole.input_tokens,
        output: whole.output_tokens,
        cache_read: whole.cache_read_input_tokens,
        cache_write: whole.cache_creation_input_tokens,
    };
    if stream {
        let events = events(
            model,
            &id,
            &tool_id,
            thinking,
            &answer,
            usage,
            controls.split,
        );
        return Ok(Generated {
            reply: Generation::Events(events),
            tokens,
        });
    }
    let arguments = tool_input(&answer);
    let mut content = Vec::with_capacity(2);
    if let Some((reasoning, signature)) = thinking {
        content.push(Block::Thinking {
            kind: "thinking",
            thinking: &reasoning.text,
            signature,
        });
    }
    content.push(block(&answer, &tool_id, arguments));
    let message = MessageOut {
        model,
        id: &id,
        kind: "message",
        role: "assistant",
        content: &content,
        stop_reason: Some(stop_reason(&answer)),
        stop_sequence: (),
        usage: whole,
    };
    Ok(Generated {
        reply: Generation::Whole(Bytes::from(super::to_json(&message))),
        tokens,
    })
}

/// A reply as Anthropic's API sends it: the message as JSON, or the events as SSE frames
/// (an `overloaded_error` event where `x-mock-stream-error-after` cuts the stream).
pub(super) fn respond(state: &MockState, controls: &Controls, generated: Generated) -> Response {
    let events = match generated.reply {
        Generation::Whole(json) => return bytes_response(StatusCode::OK, "application/json", json),
        Generation::Events(events) => events,
    };
    let mut frames: Vec<Bytes> = events
        .iter()
        .map(|event| sse::raw_frame(Some(event.name), &event.json))
        .collect();
    sse::inject_error(state, &mut frames, controls.stream_error_after, |_| {
        vec![sse::frame(
            Some("error"),
            &ErrorEnvelope {
                kind: "error",
                error: ErrorBody {
                    kind: "overloaded_error",
                    message: "Overloaded",
                },
                request_id: None,
            },
        )]
    });
    sse::response(state, frames, controls)
}

fn count_tokens(
    state: &MockState,
    controls: &Controls,
    headers: &HeaderMap,
    body: &Bytes,
    request_id: &str,
) -> Response {
    #[derive(Deserialize)]
    struct CountRequest<'a> {
        model: Option<String>,
        #[serde(borrow)]
        messages: Option<&'a RawValue>,
    }
    #[derive(Serialize)]
    struct Count {
        input_tokens: u64,
    }
    if let Some(response) = admission(state, controls, headers, body, request_id) {
        return response;
    }
    let request: CountRequest<'_> = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(e) => {
            return invalid_request(&format!("Request body is not valid JSON: {e}"), request_id)
        }
    };
    if request.model.as_deref().is_none_or(str::is_empty) {
        return invalid_request("model: Field required", request_id);
    }
    if request.messages.is_none() {
        return invalid_request("messages: Field required", request_id);
    }
    json_response(
        StatusCode::OK,
        &Count {
            input_tokens: input_tokens(body.len()),
        },
    )
}

/// Where the first `thinking` block of an assistant turn lacks the signature the mock would
/// have given its text, the API's complaint about it.
fn unsigned_thinking(messages: &[&RawValue]) -> Option<String> {
    messages.iter().enumerate().find_map(|(i, raw)| {
        let message = serde_json::from_str::<MessageIn>(raw.get()).ok()?;
        if message.role.as_deref() != Some("assistant") {
            return None;
        }
        let Some(Value::Array(blocks)) = message.content else {
            return None;
        };
        blocks.iter().enumerate().find_map(|(j, block)| {
            if block.get("type").and_then(Value::as_str) != Some("thinking") {
                return None;
            }
            let text = block.get("thinking").and_then(Value::as_str).unwrap_or("");
            let signed = block.get("signature").and_then(Value::as_str);
            (signed != Some(signature(text).as_str())).then(|| {
                format!("messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
            })
        })
    })
}

/// A user turn carrying a `tool_result` block is a tool result; otherwise tools get called.
fn conversation(messages: &[&RawValue], tools: &[&RawValue], wanted: Option<&str>) -> Conversation {
    let last = messages
        .last()
        .and_then(|m| serde_json::from_str::<MessageIn>(m.get()).ok());
    if let Some(result) = last
        .as_ref()
        .filter(|m| m.role.as_deref() == Some("user"))
        .and_then(|m| last_tool_result(m.content.as_ref()))
    {
        return Conversation {
            tool_result: Some(result),
            tool: custom_tool(tools, wanted),
            ..Conversation::default()
        };
    }
    let tool = custom_tool(tools, wanted);
    let user_text = messages.iter().rev().find_map(|m| {
        let message = serde_json::from_str::<MessageIn>(m.get()).ok()?;
        (message.role.as_deref() == Some("user"))
            .then(|| last_text(message.content.as_ref(), &["text"]))
            .flatten()
    });
    Conversation {
        tool_result: None,
        tool,
        user_text,
    }
}

fn last_tool_result(content: Option<&Value>) -> Option<String> {
    let blocks = content?.as_array()?;
    let result = blocks
        .iter()
        .rev()
        .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))?;
    Some(joined_text(result.get("content"), &["text"]))
}

/// The first client tool, or the one `x-mock-tool` names. Server tools (`web_search_…`,
/// `bash_…`) have no `input_schema`; only client tools are called.
fn custom_tool(tools: &[&RawValue], wanted: Option<&str>) -> Option<ToolDecl> {
    tools.iter().find_map(|raw| {
        let tool = serde_json::from_str::<ToolIn>(raw.get()).ok()?;
        if tool.kind.as_deref().is_some_and(|k| k != "custom") {
            return None;
        }
        let schema = tool.input_schema?;
        let name = tool.name?;
        wanted.is_none_or(|w| w == name).then_some(ToolDecl {
            name,
            schema: Some(schema),
        })
    })
}

fn stop_reason(answer: &Answer) -> &'static str {
    match answer {
        Answer::Text(_) => "end_turn",
        Answer::Tool(_) => "tool_use",
    }
}

fn tool_input(answer: &Answer) -> Option<&RawValue> {
    match answer {
        Answer::Tool(call) => serde_json::from_str(&call.arguments).ok(),
        Answer::Text(_) => None,
    }
}

fn block<'a>(answer: &'a Answer, tool_id: &'a str, input: Option<&'a RawValue>) -> Block<'a> {
    match answer {
        Answer::Text(text) => Block::Text { kind: "text", text },
        Answer::Tool(call) => Block::ToolUse {
            kind: "tool_use",
            id: tool_id,
            name: &call.name,
            input: input.map_or(Input::Empty(super::EmptyObject), Input::Raw),
        },
    }
}

/// A message, keys in the order the API sends them.
#[derive(Serialize)]
struct MessageOut<'a> {
    model: &'a str,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: &'a [Block<'a>],
    stop_reason: Option<&'static str>,
    stop_sequence: (),
    usage: MessageUsage,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Thinking {
        #[serde(rename = "type")]
        kind: &'static str,
        thinking: &'a str,
        signature: &'a str,
    },
    Text {
        #[serde(rename = "type")]
        kind: &'static str,
        text: &'a str,
    },
    ToolUse {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Raw(&'a RawValue),
    Empty(super::EmptyObject),
}

/// Anthropic's `input_tokens` leave out cache reads, which are reported beside them.
#[derive(Serialize)]
struct MessageUsage {
    input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
    cache_creation: CacheCreation,
    output_tokens: u64,
    service_tier: &'static str,
}

#[derive(Serialize)]
struct CacheCreation {
    ephemeral_5m_input_tokens: u64,
    ephemeral_1h_input_tokens: u64,
}

impl MessageUsage {
    fn new(usage: Usage, output_tokens: u64) -> Self {
        Self {
            input_tokens: usage.input.saturating_sub(usage.cached + usage.written),
            cache_creation_input_tokens: usage.written,
            cache_read_input_tokens: usage.cached,
            cache_creation: CacheCreation {
                ephemeral_5m_input_tokens: usage.written,
                ephemeral_1h_input_tokens: 0,
            },
            output_tokens,
            service_tier: "standard",
        }
    }
}

#[derive(Serialize)]
struct MessageStart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    message: MessageOut<'a>,
}

#[derive(Serialize)]
struct BlockStart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    index: u32,
    content_block: Block<'a>,
}

#[derive(Serialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    index: u32,
    delta: Delta<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Delta<'a> {
    Thinking {
        #[serde(rename = "type")]
        kind: &'static str,
        thinking: &'a str,
    },
    Signature {
        #[serde(rename = "type")]
        kind: &'static str,
        signature: &'a str,
    },
    Text {
        #[serde(rename = "type")]
        kind: &'static str,
        text: &'a str,
    },
    InputJson {
        #[serde(rename = "type")]
        kind: &'static str,
        partial_json: &'a str,
    },
}

#[derive(Serialize)]
struct BlockStop {
    #[serde(rename = "type")]
    kind: &'static str,
    index: u32,
}

#[derive(Serialize)]
struct MessageDelta {
    #[serde(rename = "type")]
    kind: &'static str,
    delta: StopDelta,
    usage: DeltaUsage,
}

#[derive(Serialize)]
struct StopDelta {
    stop_reason: &'static str,
    stop_sequence: (),
}

#[derive(Serialize)]
struct DeltaUsage {
    input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
    output_tokens: u64,
}

#[derive(Serialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// message_start, content_block_start, ping, the deltas, content_block_stop, message_delta,
/// message_stop: the sequence the Messages API streams for one content block. A thinking
/// block, when there is one, comes first (its deltas, then its signature), the answer's
/// block after it at index 1.
fn events(
    model: &str,
    id: &str,
    tool_id: &str,
    thinking: Option<(&Reasoning, &str)>,
    answer: &Answer,
    usage: Usage,
    split: Split,
) -> Vec<Event> {
    let pieces = answer.pieces(split);
    let thoughts = thinking
        .map(|(reasoning, _)| reasoning.pieces())
        .unwrap_or_default();
    let mut frames = Vec::with_capacity(thoughts.len() + pieces.len() + 12);
    let start = MessageStart {
        kind: "message_start",
        message: MessageOut {
            model,
            id,
            kind: "message",
            role: "assistant",
            content: &[],
            stop_reason: None,
            stop_sequence: (),
            usage: MessageUsage::new(usage, 1),
        },
    };
    frames.push(event("message_start", &start));
    let block_start = |index: u32, content_block: Block<'_>| {
        event(
            "content_block_start",
            &BlockStart {
                kind: "content_block_start",
                index,
                content_block,
            },
        )
    };
    let delta = |index: u32, delta: Delta<'_>| {
        event(
            "content_block_delta",
            &BlockDelta {
                kind: "content_block_delta",
                index,
                delta,
            },
        )
    };
    let block_stop = |index: u32| {
        event(
            "content_block_stop",
            &BlockStop {
                kind: "content_block_stop",
                index,
            },
        )
    };
    // The API's ping carries a space after the colon; clients must accept any JSON spacing.
    let ping = || Event {
        name: "ping",
        json: r#"{"type": "ping"}"#.to_owned(),
    };
    let mut index = 0;
    if let Some((_, signature)) = thinking {
        frames.push(block_start(
            index,
            Block::Thinking {
                kind: "thinking",
                thinking: "",
                signature: "",
            },
        ));
        frames.push(ping());
        for thinking in thoughts {
            frames.push(delta(
                index,
                Delta::Thinking {
                    kind: "thinking_delta",
                    thinking,
                },
            ));
        }
        frames.push(delta(
            index,
            Delta::Signature {
                kind: "signature_delta",
                signature,
            },
        ));
        frames.push(block_stop(index));
        index += 1;
    }
    let content_block = match answer {
        Answer::Text(_) => Block::Text {
            kind: "text",
            text: "",
        },
        Answer::Tool(call) => Block::ToolUse {
            kind: "tool_use",
            id: tool_id,
            name: &call.name,
            input: Input::Empty(super::EmptyObject),
        },
    };
    frames.push(block_start(index, content_block));
    if thinking.is_none() {
        frames.push(ping());
    }
    match answer {
        Answer::Text(_) => {
            for text in pieces {
                frames.push(delta(
                    index,
                    Delta::Text {
                        kind: "text_delta",
                        text,
                    },
                ));
            }
        }
        Answer::Tool(_) => {
            // The API opens every tool input with an empty fragment.
            for partial_json in std::iter::once("").chain(pieces) {
                frames.push(delta(
                    index,
                    Delta::InputJson {
                        kind: "input_json_delta",
                        partial_json,
                    },
                ));
            }
        }
    }
    frames.push(block_stop(index));
    let start_usage = MessageUsage::new(usage, usage.output);
    frames.push(event(
        "message_delta",
        &MessageDelta {
            kind: "message_delta",
            delta: StopDelta {
                stop_reason: stop_reason(answer),
                stop_sequence: (),
            },
            usage: DeltaUsage {
                input_tokens: start_usage.input_tokens,
                cache_creation_input_tokens: start_usage.cache_creation_input_tokens,
                cache_read_input_tokens: start_usage.cache_read_input_tokens,
                output_tokens: start_usage.output_tokens,
            },
        },
    ));
    frames.push(event(
        "message_stop",
        &TypeOnly {
            kind: "message_stop",
        },
    ));
    frames
}

fn event(name: &'static str, payload: &impl Serialize) -> Event {
    Event {
        name,
        json: String::from_utf8(super::to_json(payload)).unwrap_or_default(),
    }
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    error: ErrorBody<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<&'a str>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    message: &'a str,
}

fn error(status: StatusCode, kind: &str, message: &str, request_id: &str) -> Response {
    let mut response = json_response(
        status,
        &ErrorEnvelope {
            kind: "error",
            error: ErrorBody { kind, message },
            request_id: Some(request_id),
        },
    );
    if status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

pub(super) fn invalid_request(message: &str, request_id: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        message,
        request_id,
    )
}

/// The error Anthropic answers with for each status `x-mock-error-status` may ask for.
pub(super) fn injected_error(status: StatusCode, body: &[u8], request_id: &str) -> Response {
    let owned;
    let (kind, message): (&str, &str) = match status.as_u16() {
        401 => ("authentication_error", "invalid x-api-key"),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => {
            let model = serde_json::from_slice::<ModelOnly>(body)
                .ok()
                .and_then(|m| m.model)
                .and_then(|m| m.as_str().map(str::to_owned))
                .unwrap_or_default();
            owned = format!("model: {model}");
            ("not_found_error", &owned)
        }
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
        ),
        429 => (
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests \
             per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You \
             can see the response headers for current usage. Please reduce the prompt length or \
             the maximum tokens requested, or try again later.",
        ),
        503 | 529 => ("overloaded_error", "Overloaded"),
        504 => ("timeout_error", "Request timed out"),
        s if s >= 500 => ("api_error", "Internal server error"),
        _ => (
            "invalid_request_error",
            "Invalid request: rejected by x-mock-error-status.",
        ),
    };
    error(status, kind, message, request_id)
}

pub(super) fn request_id() -> String {
    random_id("req_011C", 20)
}

/// The request-id and rate-limit headers Anthropic puts on every response; on an injected
/// error with a retry-after, `retry-after` and, on a 429, the exhausted limit's reset time.
fn add_headers(response: &mut Response, controls: &Controls, request_id: &str) {
    let status = response.status();
    let headers = response.headers_mut();
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert(HeaderName::from_static("request-id"), id);
    }
    super::insert_static(
        headers,
        &[
            (
                "anthropic-organization-id",
                "00000000-0000-4000-8000-00000000c0de",
            ),
            ("anthropic-ratelimit-requests-limit", "4000"),
            ("anthropic-ratelimit-requests-remaining", "3999"),
            ("anthropic-ratelimit-input-tokens-limit", "2000000"),
            ("anthropic-ratelimit-input-tokens-remaining", "1999000"),
            ("anthropic-ratelimit-output-tokens-limit", "400000"),
            ("anthropic-ratelimit-output-tokens-remaining", "400000"),
            ("anthropic-ratelimit-tokens-limit", "2400000"),
            ("anthropic-ratelimit-tokens-remaining", "2399000"),
        ],
    );
    let Some(secs) = controls
        .retry_after
        .filter(|_| controls.error_status == Some(status))
    else {
        return;
    };
    headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    if status == StatusCode::TOO_MANY_REQUESTS {
        headers.insert(
            HeaderName::from_static("anthropic-ratelimit-requests-remaining"),
            HeaderValue::from_static("0"),
        );
        if let Ok(reset) = HeaderValue::from_str(&dates::rfc3339_in(secs)) {
            for name in [
                "anthropic-ratelimit-requests-reset",
                "anthropic-ratelimit-tokens-reset",
            ] {
                headers.insert(HeaderName::from_static(name), reset.clone());
            }
        }
    }
}
