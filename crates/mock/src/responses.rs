//! `POST /v1/responses`: OpenAI Responses, whole or streamed as the documented sequence of
//! `event:`-named frames, each with its `sequence_number`.

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::openai::{self, STREAM_ERROR_MESSAGE};
use super::reply::{
    joined_text, last_text, Answer, Conversation, Reasoning, Split, ToolDecl, Usage,
};
use super::{
    answer, json_response, random_id, sse, unix_now, Controls, EmptyArray, EmptyObject, MockState,
};

pub(super) async fn handle(
    State(state): State<MockState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&state, &method, &uri, &headers, &body, |controls| {
        let mut response = respond(&state, controls, &headers, &body);
        openai::add_headers(&mut response, controls);
        response
    })
    .await
}

/// The request fields the reply reads, and those the response object echoes back.
#[derive(Deserialize)]
struct ResponsesRequest<'a> {
    model: Option<String>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    tools: Option<Vec<&'a RawValue>>,
    stream: Option<bool>,
    #[serde(borrow)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow)]
    max_output_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    previous_response_id: Option<&'a RawValue>,
    #[serde(borrow)]
    prompt_cache_key: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_choice: Option<&'a RawValue>,
    #[serde(borrow)]
    temperature: Option<&'a RawValue>,
    #[serde(borrow)]
    top_p: Option<&'a RawValue>,
    #[serde(borrow)]
    metadata: Option<&'a RawValue>,
    store: Option<bool>,
    parallel_tool_calls: Option<bool>,
    /// An object asks for reasoning (unless its effort is `"none"`); echoed back.
    #[serde(borrow)]
    reasoning: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct ReasoningIn<'a> {
    #[serde(borrow)]
    effort: Option<&'a RawValue>,
    #[serde(borrow)]
    summary: Option<&'a RawValue>,
}

impl<'a> ResponsesRequest<'a> {
    /// The `reasoning` object, when there is one.
    fn reasoning(&self) -> Option<ReasoningIn<'a>> {
        let raw = self.reasoning?;
        if !raw.get().trim_start().starts_with('{') {
            return None;
        }
        Some(serde_json::from_str(raw.get()).unwrap_or_default())
    }
}

#[derive(Deserialize)]
struct ItemIn {
    #[serde(rename = "type")]
    kind: Option<String>,
    role: Option<String>,
    content: Option<Value>,
    output: Option<Value>,
}

#[derive(Deserialize)]
struct ToolIn {
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    parameters: Option<Value>,
}

const TEXT_PARTS: &[&str] = &["input_text", "output_text", "text"];

fn respond(state: &MockState, controls: &Controls, headers: &HeaderMap, body: &Bytes) -> Response {
    if let Some(response) = openai::check_auth(state, headers) {
        return response;
    }
    if let Some(status) = controls.error_status {
        return openai::injected_error(status, &openai::model_of(body));
    }
    complete(state, controls, body)
}

/// The response to an admitted request (its key checked, no error injected).
pub(super) fn complete(state: &MockState, controls: &Controls, body: &Bytes) -> Response {
    let request: ResponsesRequest<'_> = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(_) => return openai::invalid_request(openai::BAD_JSON, None, None),
    };
    let Some(model) = request.model.as_deref().filter(|m| !m.is_empty()) else {
        return openai::missing_parameter("model");
    };
    let Some(input) = request.input else {
        return openai::missing_parameter("input");
    };
    let conversation = conversation(
        input,
        request.tools.as_deref().unwrap_or(&[]),
        controls.tool.as_deref(),
    );
    let settings = request.reasoning();
    let reasoning = settings
        .as_ref()
        .filter(|r| r.effort.is_none_or(|effort| effort.get() != r#""none""#))
        .map(|_| Reasoning::about(&conversation));
    let answer = Answer::decide(conversation, controls);
    let usage = Usage::new(body.len(), controls.cached_tokens, answer.output_tokens())
        .with_reasoning(reasoning.as_ref());
    let ids = Ids {
        response: random_id("resp_", 48),
        reasoning: reasoning.as_ref().map(|_| random_id("rs_", 48)),
        item: match answer {
            Answer::Text(_) => random_id("msg_", 48),
            Answer::Tool(_) => random_id("fc_", 48),
        },
        call: random_id("call_", 24),
    };
    let echo = Echo {
        model,
        created_at: unix_now(),
        request: &request,
        reasoning: settings,
    };
    let reply = Reply {
        reasoning: reasoning.as_ref().zip(ids.reasoning.as_deref()),
        answer: &answer,
    };
    if request.stream == Some(true) {
        let mut frames = events(&echo, &ids, &reply, usage, controls.split);
        sse::inject_error(state, &mut frames, controls.stream_error_after, |sent| {
            failure_frames(&echo, &ids, sent)
        });
        sse::response(state, frames, controls)
    } else {
        let content = text_parts(&answer);
        let summary = summary_parts(&reply);
        let output = done_items(&reply, &ids, &content, &summary);
        let object = echo.object(&ids, Status::Completed, &output, Some(usage.into()));
        json_response(StatusCode::OK, &object)
    }
}

/// Only the last input item decides whether tools get called; the user text is read last.
fn conversation(input: &RawValue, tools: &[&RawValue], wanted: Option<&str>) -> Conversation {
    let items: Vec<&RawValue> = if input.get().trim_start().starts_with('[') {
        serde_json::from_str(input.get()).unwrap_or_default()
    } else {
        return Conversation {
            tool_result: None,
            tool: function_tool(tools, wanted),
            user_text: serde_json::from_str::<String>(input.get()).ok(),
        };
    };
    let last = items
        .last()
        .and_then(|item| serde_json::from_str::<ItemIn>(item.get()).ok());
    if let Some(last) = last.filter(|i| i.kind.as_deref() == Some("function_call_output")) {
        return Conversation {
            tool_result: Some(joined_text(last.output.as_ref(), TEXT_PARTS)),
            tool: function_tool(tools, wanted),
            ..Conversation::default()
        };
    }
    let tool = function_tool(tools, wanted);
    let user_text = items.iter().rev().find_map(|raw| {
        let item = serde_json::from_str::<ItemIn>(raw.get()).ok()?;
        (item.role.as_deref() == Some("user"))
            .then(|| last_text(item.content.as_ref(), TEXT_PARTS))
            .flatten()
    });
    Conversation {
        tool_result: None,
        tool,
        user_text,
    }
}

/// The first function tool, or the one `x-mock-tool` names.
fn function_tool(tools: &[&RawValue], wanted: Option<&str>) -> Option<ToolDecl> {
    tools.iter().find_map(|raw| {
        let tool = serde_json::from_str::<ToolIn>(raw.get()).ok()?;
        if tool.kind.as_deref() != Some("function") {
            return None;
        }
        let name = tool.name?;
        wanted.is_none_or(|w| w == name).then_some(ToolDecl {
            name,
            schema: tool.parameters,
        })
    })
}

struct Ids {
    response: String,
    /// The reasoning item's, when there is one.
    reasoning: Option<String>,
    item: String,
    call: String,
}

/// What one reply holds: the optional reasoning (with its item id), then the answer.
struct Reply<'a> {
    reasoning: Option<(&'a Reasoning, &'a str)>,
    answer: &'a Answer,
}

impl Reply<'_> {
    /// The answer's item comes after the reasoning item.
    fn answer_index(&self) -> u32 {
        u32::from(self.reasoning.is_some())
    }
}

/// What every copy of the response object in one reply has in common.
struct Echo<'a> {
    model: &'a str,
    created_at: u64,
    request: &'a ResponsesRequest<'a>,
    reasoning: Option<ReasoningIn<'a>>,
}

#[derive(Clone, Copy)]
enum Status {
    InProgress,
    Completed,
    Failed,
}

impl Echo<'_> {
    fn object<'o>(
        &'o self,
        ids: &'o Ids,
        status: Status,
        output: &'o [OutputItem<'o>],
        usage: Option<ResponsesUsage>,
    ) -> ResponseObject<'o> {
        let r = self.request;
        let (status, completed_at, error) = match status {
            Status::InProgress => ("in_progress", None, None),
            Status::Completed => ("completed", Some(unix_now()), None),
            Status::Failed => (
                "failed",
                None,
                Some(FailedError {
                    code: "server_error",
                    message: STREAM_ERROR_MESSAGE,
                }),
            ),
        };
        ResponseObject {
            id: &ids.response,
            object: "response",
            created_at: self.created_at,
            status,
            background: false,
            completed_at,
            error,
            frequency_penalty: 0.0,
            incomplete_details: (),
            instructions: r.instructions,
            max_output_tokens: r.max_output_tokens,
            max_tool_calls: (),
            model: self.model,
            output,
            parallel_tool_calls: r.parallel_tool_calls.unwrap_or(true),
            presence_penalty: 0.0,
            previous_response_id: r.previous_response_id,
            prompt_cache_key: r.prompt_cache_key,
            prompt_cache_retention: (),
            reasoning: ReasoningEcho {
                effort: self.reasoning.as_ref().and_then(|r| r.effort),
                summary: self.reasoning.as_ref().and_then(|r| r.summary),
            },
            safety_identifier: (),
            service_tier: if matches!(status, "completed") {
                "default"
            } else {
                "auto"
            },
            store: r.store.unwrap_or(true),
            temperature: r.temperature.map_or(Echoed::Number(1.0), Echoed::Raw),
            text: TextConfig {
                format: TextFormat { kind: "text" },
                verbosity: "medium",
            },
            tool_choice: r.tool_choice.map_or(Echoed::Str("auto"), Echoed::Raw),
            tools: RawList(r.tools.as_deref()),
            top_logprobs: 0,
            top_p: r.top_p.map_or(Echoed::Number(1.0), Echoed::Raw),
            truncation: "disabled",
            usage,
            user: (),
            metadata: r
                .metadata
                .map_or(Echoed::EmptyObject(EmptyObject), Echoed::Raw),
        }
    }
}

/// The response object, keys in the order the API sends them.
#[derive(Serialize)]
struct ResponseObject<'a> {
    id: &'a str,
    object: &'static str,
    created_at: u64,
    status: &'static str,
    background: bool,
    completed_at: Option<u64>,
    error: Option<FailedError>,
    frequency_penalty: f64,
    incomplete_details: (),
    instructions: Option<&'a RawValue>,
    max_output_tokens: Option<&'a RawValue>,
    max_tool_calls: (),
    model: &'a str,
    output: &'a [OutputItem<'a>],
    parallel_tool_calls: bool,
    presence_penalty: f64,
    previous_response_id: Option<&'a RawValue>,
    prompt_cache_key: Option<&'a RawValue>,
    prompt_cache_retention: (),
    reasoning: ReasoningEcho<'a>,
    safety_identifier: (),
    service_tier: &'static str,
    store: bool,
    temperature: Echoed<'a>,
    text: TextConfig,
    tool_choice: Echoed<'a>,
    tools: RawList<'a>,
    top_logprobs: u32,
    top_p: Echoed<'a>,
    truncation: &'static str,
    usage: Option<ResponsesUsage>,
    user: (),
    metadata: Echoed<'a>,
}

/// A request value echoed verbatim, or the default the API reports when it was not sent.
#[derive(Serialize)]
#[serde(untagged)]
enum Echoed<'a> {
    Raw(&'a RawValue),
    Str(&'static str),
    Number(f64),
    EmptyObject(EmptyObject),
}

/// The declared tools echoed back, `[]` when there were none.
struct RawList<'a>(Option<&'a [&'a RawValue]>);

impl Serialize for RawList<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.unwrap_or(&[]).serialize(serializer)
    }
}

#[derive(Serialize)]
struct FailedError {
    code: &'static str,
    message: &'static str,
}

/// The request's reasoning settings, `null`s when it had none.
#[derive(Serialize)]
struct ReasoningEcho<'a> {
    effort: Option<&'a RawValue>,
    summary: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct TextConfig {
    format: TextFormat,
    verbosity: &'static str,
}

#[derive(Serialize)]
struct TextFormat {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct ResponsesUsage {
    input_tokens: u64,
    input_tokens_details: InputDetails,
    output_tokens: u64,
    output_tokens_details: OutputDetails,
    total_tokens: u64,
}

#[derive(Serialize)]
struct InputDetails {
    cached_tokens: u64,
}

#[derive(Serialize)]
struct OutputDetails {
    reasoning_tokens: u64,
}

impl From<Usage> for ResponsesUsage {
    fn from(usage: Usage) -> Self {
        Self {
            input_tokens: usage.input,
            input_tokens_details: InputDetails {
                cached_tokens: usage.cached,
            },
            output_tokens: usage.output,
            output_tokens_details: OutputDetails {
                reasoning_tokens: usage.reasoning,
            },
            total_tokens: usage.input + usage.output,
        }
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum OutputItem<'a> {
    Message {
        id: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
        status: &'static str,
        content: &'a [OutputText<'a>],
        role: &'static str,
    },
    FunctionCall {
        id: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
        status: &'static str,
        arguments: &'a str,
        call_id: &'a str,
        name: &'a str,
    },
    Reasoning {
        id: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
        summary: &'a [SummaryText<'a>],
    },
}

#[derive(Serialize)]
struct SummaryText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

fn summary_text(text: &str) -> SummaryText<'_> {
    SummaryText {
        kind: "summary_text",
        text,
    }
}

/// The summary of a finished reasoning item; empty without reasoning.
fn summary_parts<'a>(reply: &Reply<'a>) -> Vec<SummaryText<'a>> {
    reply
        .reasoning
        .map(|(reasoning, _)| summary_text(&reasoning.text))
        .into_iter()
        .collect()
}

/// The finished output: the reasoning item when there is one, then the answer's item.
fn done_items<'a>(
    reply: &Reply<'a>,
    ids: &'a Ids,
    content: &'a [OutputText<'a>],
    summary: &'a [SummaryText<'a>],
) -> Vec<OutputItem<'a>> {
    let mut output = Vec::with_capacity(2);
    if let Some((_, id)) = reply.reasoning {
        output.push(reasoning_item(id, summary));
    }
    output.push(done_item(reply.answer, ids, content));
    output
}

fn reasoning_item<'a>(id: &'a str, summary: &'a [SummaryText<'a>]) -> OutputItem<'a> {
    OutputItem::Reasoning {
        id,
        kind: "reasoning",
        summary,
    }
}

#[derive(Serialize)]
struct OutputText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    annotations: EmptyArray,
    logprobs: EmptyArray,
    text: &'a str,
}

fn output_text(text: &str) -> OutputText<'_> {
    OutputText {
        kind: "output_text",
        annotations: EmptyArray,
        logprobs: EmptyArray,
        text,
    }
}

/// The content of a finished message item; empty for a function call.
fn text_parts(answer: &Answer) -> Vec<OutputText<'_>> {
    match answer {
        Answer::Text(text) => vec![output_text(text)],
        Answer::Tool(_) => Vec::new(),
    }
}

fn done_item<'a>(
    answer: &'a Answer,
    ids: &'a Ids,
    content: &'a [OutputText<'a>],
) -> OutputItem<'a> {
    item(answer, ids, "completed", content, true)
}

fn item<'a>(
    answer: &'a Answer,
    ids: &'a Ids,
    status: &'static str,
    content: &'a [OutputText<'a>],
    with_arguments: bool,
) -> OutputItem<'a> {
    match answer {
        Answer::Text(_) => OutputItem::Message {
            id: &ids.item,
            kind: "message",
            status,
            content,
            role: "assistant",
        },
        Answer::Tool(call) => OutputItem::FunctionCall {
            id: &ids.item,
            kind: "function_call",
            status,
            arguments: if with_arguments { &call.arguments } else { "" },
            call_id: &ids.call,
            name: &call.name,
        },
    }
}

// Each event: `type` first, then the other keys in alphabetical order, as the API sends them.

#[derive(Serialize)]
struct ResponseEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    response: ResponseObject<'a>,
    sequence_number: u64,
}

#[derive(Serialize)]
struct ItemEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    item: OutputItem<'a>,
    output_index: u32,
    sequence_number: u64,
}

#[derive(Serialize)]
struct PartEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    content_index: u32,
    item_id: &'a str,
    output_index: u32,
    part: OutputText<'a>,
    sequence_number: u64,
}

#[derive(Serialize)]
struct TextDeltaEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    content_index: u32,
    delta: &'a str,
    item_id: &'a str,
    logprobs: EmptyArray,
    output_index: u32,
    sequence_number: u64,
}

#[derive(Serialize)]
struct TextDoneEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    content_index: u32,
    item_id: &'a str,
    logprobs: EmptyArray,
    output_index: u32,
    sequence_number: u64,
    text: &'a str,
}

#[derive(Serialize)]
struct ArgumentsDeltaEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    delta: &'a str,
    item_id: &'a str,
    output_index: u32,
    sequence_number: u64,
}

#[derive(Serialize)]
struct ArgumentsDoneEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    arguments: &'a str,
    item_id: &'a str,
    output_index: u32,
    sequence_number: u64,
}

#[derive(Serialize)]
struct SummaryPartEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    item_id: &'a str,
    output_index: u32,
    part: SummaryText<'a>,
    sequence_number: u64,
    summary_index: u32,
}

#[derive(Serialize)]
struct SummaryDeltaEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    delta: &'a str,
    item_id: &'a str,
    output_index: u32,
    sequence_number: u64,
    summary_index: u32,
}

#[derive(Serialize)]
struct SummaryDoneEvent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    item_id: &'a str,
    output_index: u32,
    sequence_number: u64,
    summary_index: u32,
    text: &'a str,
}

#[derive(Serialize)]
struct ErrorEvent {
    #[serde(rename = "type")]
    kind: &'static str,
    code: &'static str,
    message: &'static str,
    param: (),
    sequence_number: u64,
}

fn named(kind: &'static str, payload: &impl Serialize) -> Bytes {
    sse::frame(Some(kind), payload)
}

/// The full event sequence: the reasoning item's events when there is reasoning, then the
/// answer's item; `sequence_number` counts from 0.
fn events(echo: &Echo<'_>, ids: &Ids, reply: &Reply<'_>, usage: Usage, split: Split) -> Vec<Bytes> {
    let answer = reply.answer;
    let pieces = answer.pieces(split);
    let thoughts = reply
        .reasoning
        .map(|(reasoning, _)| reasoning.pieces())
        .unwrap_or_default();
    let mut frames = Vec::with_capacity(thoughts.len() + pieces.len() + 15);
    let mut seq = 0u64..;
    let mut next = || seq.next().unwrap_or_default();
    for (kind, status) in [
        ("response.created", Status::InProgress),
        ("response.in_progress", Status::InProgress),
    ] {
        let response = echo.object(ids, status, &[], None);
        frames.push(named(
            kind,
            &ResponseEvent {
                kind,
                response,
                sequence_number: next(),
            },
        ));
    }
    if let Some((reasoning, item_id)) = reply.reasoning {
        reasoning_events(&mut frames, &mut next, reasoning, item_id, &thoughts);
    }
    let index = reply.answer_index();
    let kind = "response.output_item.added";
    let item_added = item(answer, ids, "in_progress", &[], false);
    frames.push(named(
        kind,
        &ItemEvent {
            kind,
            item: item_added,
            output_index: index,
            sequence_number: next(),
        },
    ));
    match answer {
        Answer::Text(text) => {
            let kind = "response.content_part.added";
            frames.push(named(
                kind,
                &PartEvent {
                    kind,
                    content_index: 0,
                    item_id: &ids.item,
                    output_index: index,
                    part: output_text(""),
                    sequence_number: next(),
                },
            ));
            let kind = "response.output_text.delta";
            for delta in pieces {
                frames.push(named(
                    kind,
                    &TextDeltaEvent {
                        kind,
                        content_index: 0,
                        delta,
                        item_id: &ids.item,
                        logprobs: EmptyArray,
                        output_index: index,
                        sequence_number: next(),
                    },
                ));
            }
            let kind = "response.output_text.done";
            frames.push(named(
                kind,
                &TextDoneEvent {
                    kind,
                    content_index: 0,
                    item_id: &ids.item,
                    logprobs: EmptyArray,
                    output_index: index,
                    sequence_number: next(),
                    text,
                },
            ));
            let kind = "response.content_part.done";
            frames.push(named(
                kind,
                &PartEvent {
                    kind,
                    content_index: 0,
                    item_id: &ids.item,
                    output_index: index,
                    part: output_text(text),
                    sequence_number: next(),
                },
            ));
        }
        Answer::Tool(call) => {
            let kind = "response.function_call_arguments.delta";
            for delta in pieces {
                frames.push(named(
                    kind,
                    &ArgumentsDeltaEvent {
                        kind,
                        delta,
                        item_id: &ids.item,
                        output_index: index,
                        sequence_number: next(),
                    },
                ));
            }
            let kind = "response.function_call_arguments.done";
            frames.push(named(
                kind,
                &ArgumentsDoneEvent {
                    kind,
                    arguments: &call.arguments,
                    item_id: &ids.item,
                    output_index: index,
                    sequence_number: next(),
                },
            ));
        }
    }
    let content = text_parts(answer);
    let kind = "response.output_item.done";
    let item_done = done_item(answer, ids, &content);
    frames.push(named(
        kind,
        &ItemEvent {
            kind,
            item: item_done,
            output_index: index,
            sequence_number: next(),
        },
    ));
    let summary = summary_parts(reply);
    let output = done_items(reply, ids, &content, &summary);
    let kind = "response.completed";
    let response = echo.object(ids, Status::Completed, &output, Some(usage.into()));
    frames.push(named(
        kind,
        &ResponseEvent {
            kind,
            response,
            sequence_number: next(),
        },
    ));
    frames
}

/// The reasoning item at output index 0: added with an empty summary, one summary part
/// streamed in word-sized deltas, then everything done.
fn reasoning_events(
    frames: &mut Vec<Bytes>,
    next: &mut impl FnMut() -> u64,
    reasoning: &Reasoning,
    item_id: &str,
    thoughts: &[&str],
) {
    let text = reasoning.text.as_str();
    let kind = "response.output_item.added";
    frames.push(named(
        kind,
        &ItemEvent {
            kind,
            item: reasoning_item(item_id, &[]),
            output_index: 0,
            sequence_number: next(),
        },
    ));
    let kind = "response.reasoning_summary_part.added";
    frames.push(named(
        kind,
        &SummaryPartEvent {
            kind,
            item_id,
            output_index: 0,
            part: summary_text(""),
            sequence_number: next(),
            summary_index: 0,
        },
    ));
    let kind = "response.reasoning_summary_text.delta";
    for delta in thoughts {
        frames.push(named(
            kind,
            &SummaryDeltaEvent {
                kind,
                delta,
                item_id,
                output_index: 0,
                sequence_number: next(),
                summary_index: 0,
            },
        ));
    }
    let kind = "response.reasoning_summary_text.done";
    frames.push(named(
        kind,
        &SummaryDoneEvent {
            kind,
            item_id,
            output_index: 0,
            sequence_number: next(),
            summary_index: 0,
            text,
        },
    ));
    let kind = "response.reasoning_summary_part.done";
    frames.push(named(
        kind,
        &SummaryPartEvent {
            kind,
            item_id,
            output_index: 0,
            part: summary_text(text),
            sequence_number: next(),
            summary_index: 0,
        },
    ));
    let summary = [summary_text(text)];
    let kind = "response.output_item.done";
    frames.push(named(
        kind,
        &ItemEvent {
            kind,
            item: reasoning_item(item_id, &summary),
            output_index: 0,
            sequence_number: next(),
        },
    ));
}

/// A mid-stream failure: the `error` event, then `response.failed`, numbered after the
/// `sent` events that went out before it.
fn failure_frames(echo: &Echo<'_>, ids: &Ids, sent: usize) -> Vec<Bytes> {
    let first = sent as u64;
    let kind = "error";
    let error = named(
        kind,
        &ErrorEvent {
            kind,
            code: "server_error",
            message: STREAM_ERROR_MESSAGE,
            param: (),
            sequence_number: first,
        },
    );
    let kind = "response.failed";
    let response = echo.object(ids, Status::Failed, &[], None);
    let failed = named(
        kind,
        &ResponseEvent {
            kind,
            response,
            sequence_number: first + 1,
        },
    );
    vec![error, failed]
}
