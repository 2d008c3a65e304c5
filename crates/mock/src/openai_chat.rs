//! `POST /v1/chat/completions`: OpenAI Chat Completions, whole or streamed as
//! `chat.completion.chunk`s ending in `data: [DONE]`.

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::openai::{self, ErrorBody};
use super::reply::{
    joined_text, last_text, Answer, Conversation, Reasoning, Split, ToolDecl, Usage,
};
use super::{answer, json_response, random_id, sse, unix_now, Controls, EmptyArray, MockState};

const FINGERPRINT: &str = "fp_mock0c0ffee";

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

#[derive(Deserialize)]
struct ChatRequest<'a> {
    model: Option<String>,
    #[serde(borrow)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    tools: Option<Vec<&'a RawValue>>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    /// Any effort but `"none"` gets reasoning, DeepSeek-style in `reasoning_content`.
    #[serde(borrow)]
    reasoning_effort: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct StreamOptions {
    include_usage: Option<bool>,
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
    function: Option<FunctionIn>,
}

#[derive(Deserialize)]
struct FunctionIn {
    name: String,
    parameters: Option<Value>,
}

fn respond(state: &MockState, controls: &Controls, headers: &HeaderMap, body: &Bytes) -> Response {
    if let Some(response) = openai::check_auth(state, headers) {
        return response;
    }
    if let Some(status) = controls.error_status {
        return openai::injected_error(status, &openai::model_of(body));
    }
    complete(state, controls, body, None)
}

/// The completion for an admitted request (its key checked, no error injected). An Azure
/// deployment, when given, names the model whatever the body says.
pub(super) fn complete(
    state: &MockState,
    controls: &Controls,
    body: &Bytes,
    deployment: Option<&str>,
) -> Response {
    let request: ChatRequest<'_> = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(_) => return openai::invalid_request(openai::BAD_JSON, None, None),
    };
    let Some(model) = deployment.or(request.model.as_deref().filter(|m| !m.is_empty())) else {
        return openai::invalid_request("you must provide a model parameter", None, None);
    };
    let Some(messages) = request.messages.as_deref() else {
        return openai::missing_parameter("messages");
    };
    let conversation = conversation(messages, request.tools.as_deref(), controls.tool.as_deref());
    let reasoning = request
        .reasoning_effort
        .is_some_and(|effort| effort.get() != r#""none""#)
        .then(|| Reasoning::about(&conversation));
    let answer = Answer::decide(conversation, controls);
    let usage = Usage::new(body.len(), controls.cached_tokens, answer.output_tokens())
        .with_reasoning(reasoning.as_ref());
    let id = random_id("chatcmpl-", 29);
    let call_id = random_id("call_", 24);
    if request.stream == Some(true) {
        let include_usage = request
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let reply = Reply {
            reasoning: reasoning.as_ref(),
            answer: &answer,
            call_id: &call_id,
        };
        let mut frames = chunks(&id, model, &reply, usage, include_usage, controls.split);
        sse::inject_error(state, &mut frames, controls.stream_error_after, |_| {
            vec![sse::frame(
                None,
                &StreamError {
                    error: openai::stream_error_body(),
                },
            )]
        });
        sse::response(state, frames, controls)
    } else {
        let reply = Reply {
            reasoning: reasoning.as_ref(),
            answer: &answer,
            call_id: &call_id,
        };
        json_response(StatusCode::OK, &completion(&id, model, &reply, usage))
    }
}

/// Reads only as far back as the decision needs: the last message, then tools and the user.
fn conversation(
    messages: &[&RawValue],
    tools: Option<&[&RawValue]>,
    wanted: Option<&str>,
) -> Conversation {
    let last = messages
        .last()
        .and_then(|m| serde_json::from_str::<MessageIn>(m.get()).ok());
    if let Some(last) = last.filter(|m| m.role.as_deref() == Some("tool")) {
        return Conversation {
            tool_result: Some(joined_text(last.content.as_ref(), &["text"])),
            tool: function_tool(tools.unwrap_or(&[]), wanted),
            ..Conversation::default()
        };
    }
    let tool = function_tool(tools.unwrap_or(&[]), wanted);
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

/// The first function tool, or the one `x-mock-tool` names.
fn function_tool(tools: &[&RawValue], wanted: Option<&str>) -> Option<ToolDecl> {
    tools.iter().find_map(|raw| {
        let tool = serde_json::from_str::<ToolIn>(raw.get()).ok()?;
        if tool.kind.as_deref().is_some_and(|k| k != "function") {
            return None;
        }
        let function = tool.function?;
        wanted
            .is_none_or(|w| w == function.name)
            .then_some(ToolDecl {
                name: function.name,
                schema: function.parameters,
            })
    })
}

#[derive(Serialize)]
struct Completion<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [Choice<'a>; 1],
    usage: ChatUsage,
    service_tier: &'static str,
    system_fingerprint: &'static str,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    message: Message<'a>,
    logprobs: (),
    finish_reason: &'static str,
}

/// What one reply holds: the optional reasoning, then the answer.
struct Reply<'a> {
    reasoning: Option<&'a Reasoning>,
    answer: &'a Answer,
    call_id: &'a str,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[ToolCallOut<'a>; 1]>,
    refusal: (),
    annotations: EmptyArray,
}

#[derive(Serialize)]
struct ToolCallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct ChatUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: PromptDetails,
    completion_tokens_details: CompletionDetails,
}

#[derive(Serialize)]
struct PromptDetails {
    cached_tokens: u64,
    audio_tokens: u64,
}

#[derive(Serialize)]
struct CompletionDetails {
    reasoning_tokens: u64,
    audio_tokens: u64,
    accepted_prediction_tokens: u64,
    rejected_prediction_tokens: u64,
}

impl From<Usage> for ChatUsage {
    fn from(usage: Usage) -> Self {
        Self {
            prompt_tokens: usage.input,
            completion_tokens: usage.output,
            total_tokens: usage.input + usage.output,
            prompt_tokens_details: PromptDetails {
                cached_tokens: usage.cached,
                audio_tokens: 0,
            },
            completion_tokens_details: CompletionDetails {
                reasoning_tokens: usage.reasoning,
                audio_tokens: 0,
                accepted_prediction_tokens: 0,
                rejected_prediction_tokens: 0,
            },
        }
    }
}

fn completion<'a>(id: &'a str, model: &'a str, reply: &Reply<'a>, usage: Usage) -> Completion<'a> {
    let reasoning_content = reply.reasoning.map(|r| r.text.as_str());
    let (message, finish_reason) = match reply.answer {
        Answer::Text(text) => (
            Message {
                role: "assistant",
                reasoning_content,
                content: Some(text),
                tool_calls: None,
                refusal: (),
                annotations: EmptyArray,
            },
            "stop",
        ),
        Answer::Tool(call) => (
            Message {
                role: "assistant",
                reasoning_content,
                content: None,
                tool_calls: Some([ToolCallOut {
                    id: reply.call_id,
                    kind: "function",
                    function: FunctionOut {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                }]),
                refusal: (),
                annotations: EmptyArray,
            },
            "tool_calls",
        ),
    };
    Completion {
        id,
        object: "chat.completion",
        created: unix_now(),
        model,
        choices: [Choice {
            index: 0,
            message,
            logprobs: (),
            finish_reason,
        }],
        usage: usage.into(),
        service_tier: "default",
        system_fingerprint: FINGERPRINT,
    }
}

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    service_tier: &'static str,
    system_fingerprint: &'static str,
    choices: &'a [ChunkChoice<'a>],
    // Absent without `include_usage`; `null` on every chunk but the last one with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<ChatUsage>>,
}

#[derive(Serialize)]
struct ChunkChoice<'a> {
    index: u32,
    delta: Delta<'a>,
    logprobs: (),
    finish_reason: Option<&'static str>,
}

#[derive(Serialize, Default)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    // `Some(None)` is the explicit `"content":null` of a tool call's first chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[DeltaToolCall<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<()>,
}

#[derive(Serialize)]
struct DeltaToolCall<'a> {
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    function: DeltaFunction<'a>,
}

#[derive(Serialize)]
struct DeltaFunction<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    arguments: &'a str,
}

#[derive(Serialize)]
struct StreamError {
    error: ErrorBody<'static>,
}

/// The chunks OpenAI streams: a role chunk, one chunk per delta, the finish chunk, the usage
/// chunk when asked for, then `[DONE]`. Reasoning comes first, one `reasoning_content` chunk
/// per delta as DeepSeek streams it, the first of them carrying the role instead.
fn chunks(
    id: &str,
    model: &str,
    reply: &Reply<'_>,
    usage: Usage,
    include_usage: bool,
    split: Split,
) -> Vec<Bytes> {
    let (answer, call_id) = (reply.answer, reply.call_id);
    let created = unix_now();
    let chunk = |delta: Delta<'_>, finish_reason: Option<&'static str>| {
        let choices = [ChunkChoice {
            index: 0,
            delta,
            logprobs: (),
            finish_reason,
        }];
        sse::frame(
            None,
            &Chunk {
                id,
                object: "chat.completion.chunk",
                created,
                model,
                service_tier: "default",
                system_fingerprint: FINGERPRINT,
                choices: &choices,
                usage: include_usage.then_some(None),
            },
        )
    };
    let pieces = answer.pieces(split);
    let thoughts = reply.reasoning.map(Reasoning::pieces).unwrap_or_default();
    let mut frames = Vec::with_capacity(thoughts.len() + pieces.len() + 4);
    for (i, thought) in thoughts.iter().enumerate() {
        frames.push(chunk(
            Delta {
                role: (i == 0).then_some("assistant"),
                reasoning_content: Some(thought),
                ..Delta::default()
            },
            None,
        ));
    }
    let role = thoughts.is_empty().then_some("assistant");
    match answer {
        Answer::Text(_) => {
            frames.push(chunk(
                Delta {
                    role,
                    content: Some(Some("")),
                    refusal: Some(()),
                    ..Delta::default()
                },
                None,
            ));
            for piece in pieces {
                frames.push(chunk(
                    Delta {
                        content: Some(Some(piece)),
                        ..Delta::default()
                    },
                    None,
                ));
            }
            frames.push(chunk(Delta::default(), Some("stop")));
        }
        Answer::Tool(call) => {
            frames.push(chunk(
                Delta {
                    role,
                    reasoning_content: None,
                    content: Some(None),
                    tool_calls: Some([DeltaToolCall {
                        index: 0,
                        id: Some(call_id),
                        kind: Some("function"),
                        function: DeltaFunction {
                            name: Some(&call.name),
                            arguments: "",
                        },
                    }]),
                    refusal: Some(()),
                },
                None,
            ));
            for piece in pieces {
                frames.push(chunk(
                    Delta {
                        tool_calls: Some([DeltaToolCall {
                            index: 0,
                            id: None,
                            kind: None,
                            function: DeltaFunction {
                                name: None,
                                arguments: piece,
                            },
                        }]),
                        ..Delta::default()
                    },
                    None,
                ));
            }
            frames.push(chunk(Delta::default(), Some("tool_calls")));
        }
    }
    if include_usage {
        frames.push(sse::frame(
            None,
            &Chunk {
                id,
                object: "chat.completion.chunk",
                created,
                model,
                service_tier: "default",
                system_fingerprint: FINGERPRINT,
                choices: &[],
                usage: Some(Some(usage.into())),
            },
        ));
    }
    frames.push(sse::raw_frame(None, "[DONE]"));
    frames
}
