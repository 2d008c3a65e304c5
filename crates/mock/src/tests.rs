use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::{router, serve, MockConfig, MockState, StreamStats};

mod azure;
mod bedrock;
mod cloud;
mod tokens;
mod vertex;

const OPENAI: (&str, &str) = ("authorization", "Bearer sk-mock-openai");
const ANTHROPIC_KEY: (&str, &str) = ("x-api-key", "sk-ant-mock");
const ANTHROPIC_VERSION: (&str, &str) = ("anthropic-version", "2023-06-01");

pub(crate) fn state() -> MockState {
    MockState::new(MockConfig::default())
}

pub(crate) fn request(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::from(body.to_owned())).unwrap()
}

pub(crate) async fn call(
    state: &MockState,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, HeaderMap, Bytes) {
    let response = router(state.clone())
        .oneshot(request(method, path, headers, body))
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    (
        parts.status,
        parts.headers,
        body.collect().await.unwrap().to_bytes(),
    )
}

pub(crate) async fn post_json(
    state: &MockState,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (StatusCode, HeaderMap, Value) {
    let (status, headers, bytes) = call(state, "POST", path, headers, &body.to_string()).await;
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, headers, json)
}

/// `(event name, data)` for each SSE frame, checking the framing on the way.
fn sse_frames(bytes: &[u8]) -> Vec<(Option<String>, String)> {
    let text = std::str::from_utf8(bytes).unwrap();
    assert!(
        text.ends_with("\n\n"),
        "stream must end on a frame boundary: {text:?}"
    );
    text.trim_end_matches("\n\n")
        .split("\n\n")
        .map(|frame| {
            let mut event = None;
            let mut data = None;
            for line in frame.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_owned());
                } else if let Some(payload) = line.strip_prefix("data: ") {
                    assert!(data.is_none(), "one data line per frame: {frame:?}");
                    data = Some(payload.to_owned());
                } else {
                    panic!("unexpected line {line:?}");
                }
            }
            (event, data.unwrap())
        })
        .collect()
}

fn data_json(frames: &[(Option<String>, String)]) -> Vec<Value> {
    frames
        .iter()
        .filter(|(_, data)| data != "[DONE]")
        .map(|(_, data)| serde_json::from_str(data).unwrap())
        .collect()
}

fn chat_tools() -> Value {
    json!([{"type": "function", "function": {"name": "edit", "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "line": {"type": "integer"}, "dry": {"type": "boolean"}},
        "required": ["path", "line", "dry"]}}}])
}

fn expected_args() -> Value {
    json!({"path": "mock", "line": 1, "dry": true})
}

#[tokio::test]
async fn openai_rejects_a_wrong_key_with_invalid_api_key_and_the_key_masked() {
    let (status, headers, body) = post_json(
        &state(),
        "/v1/chat/completions",
        &[("authorization", "Bearer sk-wrong-0123456789")],
        json!({"model": "gpt-4o", "messages": []}),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers["x-request-id"]
        .to_str()
        .unwrap()
        .starts_with("req_"));
    let error = &body["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["code"], "invalid_api_key");
    assert_eq!(error["param"], Value::Null);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("Incorrect API key provided: sk-************6789."),
        "{message}"
    );
}

#[tokio::test]
async fn openai_without_a_key_says_none_was_provided() {
    let (status, _, body) = post_json(
        &state(),
        "/v1/responses",
        &[],
        json!({"model": "gpt-5", "input": "x"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("You didn't provide an API key."));
    assert_eq!(body["error"]["code"], Value::Null);
}

#[tokio::test]
async fn any_present_key_is_accepted_when_none_is_configured() {
    let state = MockState::new(MockConfig {
        openai_key: None,
        anthropic_key: None,
        ..MockConfig::default()
    });
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
    let (status, _, _) = post_json(
        &state,
        "/v1/chat/completions",
        &[("authorization", "Bearer anything")],
        chat,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let messages =
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]});
    let (status, _, _) = post_json(
        &state,
        "/v1/messages",
        &[("x-api-key", "whatever"), ANTHROPIC_VERSION],
        messages,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn anthropic_rejects_a_wrong_key_in_its_error_shape_with_the_request_id() {
    let (status, headers, body) = post_json(
        &state(),
        "/v1/messages",
        &[("x-api-key", "nope"), ANTHROPIC_VERSION],
        json!({"model": "c", "max_tokens": 1, "messages": []}),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let request_id = headers["request-id"].to_str().unwrap();
    assert!(request_id.starts_with("req_"));
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"},
               "request_id": request_id})
    );
}

#[tokio::test]
async fn anthropic_accepts_a_bearer_key_and_requires_the_version_header() {
    let body =
        json!({"model": "c", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]});
    let bearer = ("authorization", "Bearer sk-ant-mock");
    let (status, _, _) = post_json(
        &state(),
        "/v1/messages",
        &[bearer, ANTHROPIC_VERSION],
        body.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, error) = post_json(&state(), "/v1/messages", &[bearer], body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error["error"]["message"],
        "anthropic-version: header is required"
    );
}

#[tokio::test]
async fn each_dialect_rejects_a_malformed_request_with_400_in_its_own_shape() {
    let s = state();
    let (status, _, body) = call(&s, "POST", "/v1/chat/completions", &[OPENAI], "{not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("We could not parse the JSON body"));
    let (status, _, body) =
        post_json(&s, "/v1/chat/completions", &[OPENAI], json!({"model": "m"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["param"], "messages");
    assert_eq!(body["error"]["code"], "missing_required_parameter");
    let (status, _, body) = post_json(&s, "/v1/responses", &[OPENAI], json!({"input": "x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["param"], "model");
    let (status, _, body) = post_json(&s, "/v1/responses", &[OPENAI], json!({"model": "m"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["param"], "input");
    let anthropic = [ANTHROPIC_KEY, ANTHROPIC_VERSION];
    let (status, _, body) = post_json(
        &s,
        "/v1/messages",
        &anthropic,
        json!({"model": "c", "messages": []}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["message"], "max_tokens: Field required");
    let (status, _, body) = post_json(
        &s,
        "/v1/messages",
        &anthropic,
        json!({"max_tokens": 1, "messages": []}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["message"], "model: Field required");
}

#[tokio::test]
async fn chat_answers_text_with_the_user_words_and_full_usage() {
    let request = json!({"model": "gpt-4o", "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "reminder"}, {"type": "text", "text": "hello mock"}]}]});
    let body_len = request.to_string().len() as u64;
    let (status, headers, body) = post_json(
        &state(),
        "/v1/chat/completions",
        &[OPENAI, ("x-mock-cached-tokens", "4")],
        request,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/json");
    assert!(headers.contains_key("x-ratelimit-remaining-tokens"));
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-4o");
    let choice = &body["choices"][0];
    assert_eq!(
        choice["message"]["content"],
        "Hello from the mock. You said: hello mock"
    );
    assert_eq!(choice["finish_reason"], "stop");
    let input = body_len.div_ceil(4);
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": input, "completion_tokens": 8, "total_tokens": input + 8,
               "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0},
               "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                   "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}})
    );
}

#[tokio::test]
async fn chat_calls_the_first_tool_until_the_last_message_is_its_result() {
    let s = state();
    let (_, _, body) = post_json(
        &s,
        "/v1/chat/completions",
        &[OPENAI],
        json!({
        "model": "m", "tools": chat_tools(), "messages": [{"role": "user", "content": "go"}]}),
    )
    .await;
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    let call = &choice["message"]["tool_calls"][0];
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(call["function"]["name"], "edit");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, expected_args());
    assert_eq!(body["usage"]["completion_tokens"], 10);

    let (_, _, body) = post_json(&s, "/v1/chat/completions", &[OPENAI], json!({
        "model": "m", "tools": chat_tools(), "messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "done"}]}]})).await;
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "tool result: done"
    );
}

#[tokio::test]
async fn chat_stream_with_include_usage_nulls_usage_until_a_final_usage_chunk_before_done() {
    let (status, headers, bytes) = call(
        &state(),
        "POST",
        "/v1/chat/completions",
        &[OPENAI],
        &json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
                "tools": chat_tools(), "messages": [{"role": "user", "content": "go"}]})
        .to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream; charset=utf-8");
    let frames = sse_frames(&bytes);
    assert!(frames.iter().all(|(event, _)| event.is_none()));
    assert_eq!(frames.last().unwrap().1, "[DONE]");
    let chunks = data_json(&frames);
    let (usage_chunk, rest) = chunks.split_last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 10);
    for chunk in rest {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["usage"], Value::Null);
        // `usage` is the last key of every chunk, as OpenAI sends it.
        assert!(frames[0].1.ends_with(r#""usage":null}"#));
    }
    let first = &rest[0]["choices"][0]["delta"];
    assert_eq!(first["role"], "assistant");
    assert_eq!(first["tool_calls"][0]["function"]["name"], "edit");
    let fragments: Vec<&str> = rest
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert!(fragments.len() >= 4, "{fragments:?}");
    let args: Value = serde_json::from_str(&fragments.concat()).unwrap();
    assert_eq!(args, expected_args());
    assert_eq!(
        rest.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[tokio::test]
async fn chat_stream_without_include_usage_has_no_usage_field_and_no_usage_chunk() {
    let (_, _, bytes) = call(
        &state(),
        "POST",
        "/v1/chat/completions",
        &[OPENAI, ("x-mock-reply", "one two three")],
        &json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "go"}]})
            .to_string(),
    )
    .await;
    let frames = sse_frames(&bytes);
    let chunks = data_json(&frames);
    assert!(chunks
        .iter()
        .all(|c| c.get("usage").is_none() && c["choices"].as_array().unwrap().len() == 1));
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "one two three");
    let deltas = chunks
        .iter()
        .filter(|c| c["choices"][0]["delta"]["content"].is_string())
        .count();
    assert_eq!(
        deltas, 4,
        "role chunk with empty content, then one chunk per word"
    );
}

#[tokio::test]
async fn responses_answers_a_function_call_item_with_a_call_id() {
    let (status, _, body) = post_json(&state(), "/v1/responses", &[OPENAI], json!({
        "model": "gpt-5", "instructions": "be nice",
        "tools": [{"type": "web_search"}, {"type": "function", "name": "edit", "parameters": chat_tools()[0]["function"]["parameters"]}],
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "go"}]}]})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["instructions"], "be nice");
    let item = &body["output"][0];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "edit");
    assert!(item["call_id"].as_str().unwrap().starts_with("call_"));
    assert!(item["id"].as_str().unwrap().starts_with("fc_"));
    let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, expected_args());
    let usage = &body["usage"];
    assert_eq!(usage["output_tokens"], 10);
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
    assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 0);
    assert_eq!(
        usage["total_tokens"],
        usage["input_tokens"].as_u64().unwrap() + 10
    );
}

#[tokio::test]
async fn responses_quotes_a_function_call_output_back_as_text() {
    let (_, _, body) = post_json(
        &state(),
        "/v1/responses",
        &[OPENAI],
        json!({
        "model": "gpt-5", "tools": [{"type": "function", "name": "edit", "parameters": {}}],
        "input": [{"type": "function_call_output", "call_id": "call_1", "output": "ok"}]}),
    )
    .await;
    assert_eq!(body["output"][0]["type"], "message");
    assert_eq!(body["output"][0]["content"][0]["text"], "tool result: ok");
}

#[tokio::test]
async fn responses_stream_names_every_event_and_numbers_it_in_sequence() {
    let (_, _, bytes) = call(
        &state(),
        "POST",
        "/v1/responses",
        &[OPENAI],
        &json!({"model": "gpt-5", "stream": true, "input": "a",
                "tools": [{"type": "function", "name": "edit", "parameters": chat_tools()[0]["function"]["parameters"]}]})
        .to_string(),
    )
    .await;
    let frames = sse_frames(&bytes);
    let events = data_json(&frames);
    for (i, ((name, _), event)) in frames.iter().zip(&events).enumerate() {
        assert_eq!(name.as_deref(), event["type"].as_str());
        assert_eq!(event["sequence_number"], i);
    }
    let names: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        names[..3],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added"
        ]
    );
    assert_eq!(
        names[names.len() - 3..],
        [
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let added = &events[2]["item"];
    assert_eq!(
        (added["type"].as_str(), added["arguments"].as_str()),
        (Some("function_call"), Some(""))
    );
    let arguments: String = events
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        expected_args()
    );
    let done = &events[names.len() - 3];
    assert_eq!(done["arguments"], arguments.as_str());
    assert_eq!(
        events.last().unwrap()["response"]["usage"]["output_tokens"],
        10
    );
}

#[tokio::test]
async fn anthropic_answers_tool_use_then_quotes_the_tool_result() {
    let s = state();
    let tools = json!([{"name": "Read", "input_schema": {"type": "object",
        "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}]);
    let (status, headers, body) = post_json(
        &s,
        "/v1/messages?beta=true",
        &[ANTHROPIC_KEY, ANTHROPIC_VERSION],
        json!({
        "model": "claude-x", "max_tokens": 100, "tools": tools,
        "messages": [{"role": "user", "content": "read"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["anthropic-ratelimit-requests-limit"], "4000");
    assert_eq!(body["type"], "message");
    assert_eq!(body["stop_reason"], "tool_use");
    let block = &body["content"][0];
    assert_eq!(block["type"], "tool_use");
    assert!(block["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(block["input"], json!({"file_path": "mock"}));
    assert_eq!(body["usage"]["output_tokens"], 10);
    assert_eq!(body["usage"]["cache_read_input_tokens"], 0);
    assert_eq!(body["usage"]["cache_creation_input_tokens"], 0);

    let (_, _, body) = post_json(&s, "/v1/messages", &[ANTHROPIC_KEY, ANTHROPIC_VERSION], json!({
        "model": "claude-x", "max_tokens": 100, "tools": tools, "messages": [
            {"role": "user", "content": "read"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents"}]}]})).await;
    assert_eq!(body["stop_reason"], "end_turn");
    assert_eq!(
        body["content"][0],
        json!({"type": "text", "text": "tool result: contents"})
    );
    assert_eq!(s.requests()[0].path_and_query, "/v1/messages?beta=true");
}

#[tokio::test]
async fn anthropic_reports_cached_tokens_as_cache_reads_outside_input_tokens() {
    let request =
        json!({"model": "c", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]});
    let input = (request.to_string().len() as u64).div_ceil(4);
    let (_, _, body) = post_json(
        &state(),
        "/v1/messages",
        &[
            ANTHROPIC_KEY,
            ANTHROPIC_VERSION,
            ("x-mock-cached-tokens", "5"),
        ],
        request,
    )
    .await;
    assert_eq!(body["usage"]["cache_read_input_tokens"], 5);
    assert_eq!(body["usage"]["input_tokens"], input - 5);
}

#[tokio::test]
async fn anthropic_stream_sends_the_documented_events_with_partial_json_that_concatenates() {
    let (_, _, bytes) = call(
        &state(),
        "POST",
        "/v1/messages",
        &[ANTHROPIC_KEY, ANTHROPIC_VERSION],
        &json!({"model": "c", "max_tokens": 9, "stream": true, "messages": [{"role": "user", "content": "r"}],
                "tools": [{"name": "edit", "input_schema": chat_tools()[0]["function"]["parameters"]}]})
        .to_string(),
    )
    .await;
    let frames = sse_frames(&bytes);
    let events = data_json(&frames);
    for ((name, _), event) in frames.iter().zip(&events) {
        assert_eq!(name.as_deref(), event["type"].as_str());
    }
    let names: Vec<&str> = frames.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(names[..3], ["message_start", "content_block_start", "ping"]);
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    assert_eq!(events[0]["message"]["usage"]["output_tokens"], 1);
    assert_eq!(events[1]["content_block"]["type"], "tool_use");
    assert_eq!(events[1]["content_block"]["input"], json!({}));
    let partial: String = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta")
        .map(|e| {
            assert_eq!(e["delta"]["type"], "input_json_delta");
            e["delta"]["partial_json"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        expected_args()
    );
    let delta = &events[events.len() - 2];
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 10);
}

#[tokio::test]
async fn count_tokens_reports_a_quarter_of_the_body_bytes_rounded_up() {
    let request =
        json!({"model": "c", "messages": [{"role": "user", "content": "count these bytes"}]});
    let expected = (request.to_string().len() as u64).div_ceil(4);
    let (status, _, body) = post_json(
        &state(),
        "/v1/messages/count_tokens",
        &[ANTHROPIC_KEY, ANTHROPIC_VERSION],
        request,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"input_tokens": expected}));
}

#[tokio::test]
async fn models_answer_in_anthropic_shape_only_for_anthropic_clients() {
    let (_, _, body) = call(&state(), "GET", "/v1/models", &[OPENAI], "").await;
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][0]["object"], "model");
    let (_, _, body) = call(
        &state(),
        "GET",
        "/v1/models",
        &[ANTHROPIC_KEY, ANTHROPIC_VERSION],
        "",
    )
    .await;
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["has_more"], false);
    assert_eq!(body["data"][0]["type"], "model");
    assert_eq!(body["first_id"], body["data"][0]["id"]);
}

#[tokio::test]
async fn error_status_header_answers_in_each_dialect_with_retry_after_on_429() {
    let s = state();
    let chat = json!({"model": "gpt-4o", "messages": []});
    for (status, code) in [
        (400, Value::Null),
        (404, json!("model_not_found")),
        (429, json!("rate_limit_exceeded")),
        (500, Value::Null),
    ] {
        let status_text = status.to_string();
        let (got, headers, body) = post_json(
            &s,
            "/v1/chat/completions",
            &[OPENAI, ("x-mock-error-status", &status_text)],
            chat.clone(),
        )
        .await;
        assert_eq!(got.as_u16(), status);
        assert_eq!(body["error"]["code"], code, "{body}");
        assert_eq!(headers.contains_key("retry-after"), status == 429);
    }
    let messages = json!({"model": "c", "max_tokens": 1, "messages": []});
    for (status, kind) in [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (503, "overloaded_error"),
        (529, "overloaded_error"),
    ] {
        let status_text = status.to_string();
        let (got, headers, body) = post_json(
            &s,
            "/v1/messages",
            &[
                ANTHROPIC_KEY,
                ANTHROPIC_VERSION,
                ("x-mock-error-status", &status_text),
            ],
            messages.clone(),
        )
        .await;
        assert_eq!(got.as_u16(), status);
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], kind);
        assert_eq!(headers.contains_key("retry-after"), status == 429);
    }
}

#[tokio::test]
async fn stream_error_header_ends_each_stream_with_the_dialect_error_after_n_frames() {
    let s = state();
    let error_after = ("x-mock-stream-error-after", "2");
    let (_, _, bytes) = call(&s, "POST", "/v1/chat/completions", &[OPENAI, error_after],
        &json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "a b c d"}]}).to_string()).await;
    let frames = sse_frames(&bytes);
    assert_eq!(frames.len(), 3);
    let last: Value = serde_json::from_str(&frames[2].1).unwrap();
    assert_eq!(last["error"]["type"], "server_error");

    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1/responses",
        &[OPENAI, error_after],
        &json!({"model": "m", "stream": true, "input": "a b c d"}).to_string(),
    )
    .await;
    let events = data_json(&sse_frames(&bytes));
    assert_eq!(events.len(), 4);
    assert_eq!(events[2]["type"], "error");
    assert_eq!(events[2]["sequence_number"], 2);
    assert_eq!(events[3]["type"], "response.failed");
    assert_eq!(events[3]["response"]["status"], "failed");
    assert_eq!(events[3]["response"]["error"]["code"], "server_error");

    let (_, _, bytes) = call(&s, "POST", "/v1/messages", &[ANTHROPIC_KEY, ANTHROPIC_VERSION, error_after],
        &json!({"model": "c", "max_tokens": 1, "stream": true, "messages": [{"role": "user", "content": "a b"}]}).to_string()).await;
    let frames = sse_frames(&bytes);
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[2].0.as_deref(), Some("error"));
    assert_eq!(
        serde_json::from_str::<Value>(&frames[2].1).unwrap(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    assert_eq!(
        s.stats(),
        StreamStats {
            started: 3,
            completed: 3,
            cancelled: 0
        }
    );
}

#[tokio::test]
async fn each_sse_frame_is_its_own_body_chunk_separated_by_the_frame_interval() {
    let s = state();
    let response = router(s.clone())
        .oneshot(request(
            "POST",
            "/v1/messages",
            &[ANTHROPIC_KEY, ANTHROPIC_VERSION, ("x-mock-frame-interval-ms", "30")],
            &json!({"model": "c", "max_tokens": 1, "stream": true, "messages": [{"role": "user", "content": "x"}]}).to_string(),
        ))
        .await
        .unwrap();
    let mut body = response.into_body();
    let mut arrivals = Vec::new();
    while let Some(frame) = body.frame().await {
        let data = frame.unwrap().into_data().unwrap();
        arrivals.push(Instant::now());
        assert_eq!(sse_frames(&data).len(), 1, "{data:?}");
    }
    assert!(arrivals.len() > 5);
    for pair in arrivals.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(25),
            "{:?}",
            pair[1] - pair[0]
        );
    }
    assert_eq!(
        s.stats(),
        StreamStats {
            started: 1,
            completed: 1,
            cancelled: 0
        }
    );
}

#[tokio::test]
async fn a_stream_dropped_before_its_last_frame_counts_as_cancelled() {
    let s = state();
    let response = router(s.clone())
        .oneshot(request(
            "POST",
            "/v1/chat/completions",
            &[OPENAI],
            &json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "x"}]})
                .to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(
        s.stats(),
        StreamStats {
            started: 1,
            completed: 0,
            cancelled: 0
        }
    );
    let mut body = response.into_body();
    body.frame().await.unwrap().unwrap();
    drop(body);
    assert_eq!(
        s.stats(),
        StreamStats {
            started: 1,
            completed: 0,
            cancelled: 1
        }
    );
}

#[tokio::test]
async fn a_client_that_disconnects_mid_stream_is_counted_as_cancelled_by_the_server() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let s = state();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, s.clone(), async {
        let _ = stopped.await;
    }));
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "x"}]})
            .to_string();
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: mock\r\nauthorization: Bearer sk-mock-openai\r\n\
         x-mock-frame-interval-ms: 20\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("data: ") {
        let n = socket.read(&mut buf).await.unwrap();
        assert!(n > 0);
        seen.extend_from_slice(&buf[..n]);
    }
    drop(socket);
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.stats().cancelled == 0 {
        assert!(
            Instant::now() < deadline,
            "server never noticed the client left: {:?}",
            s.stats()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        s.stats(),
        StreamStats {
            started: 1,
            completed: 0,
            cancelled: 1
        }
    );
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn delay_header_holds_back_the_response_headers() {
    let started = Instant::now();
    let (status, headers, _) = call(
        &state(),
        "GET",
        "/v1/models",
        &[OPENAI, ("x-mock-delay-ms", "60")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(started.elapsed() >= Duration::from_millis(60));
    assert_eq!(headers["openai-processing-ms"], "60");
}

#[tokio::test]
async fn captured_requests_are_listed_and_cleared_over_http() {
    let s = state();
    post_json(
        &s,
        "/v1/chat/completions?x=1",
        &[OPENAI, ("X-Trace", "abc")],
        json!({"model": "m", "messages": []}),
    )
    .await;
    let (status, _, body) = call(&s, "GET", "/_mock/requests", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    let listed: Value = serde_json::from_slice(&body).unwrap();
    let first = &listed[0];
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "helper requests are not captured"
    );
    assert_eq!(first["method"], "POST");
    assert_eq!(first["path"], "/v1/chat/completions");
    assert_eq!(first["path_and_query"], "/v1/chat/completions?x=1");
    assert_eq!(first["headers"]["x-trace"], "abc");
    assert_eq!(first["body"], r#"{"messages":[],"model":"m"}"#);
    let (status, _, _) = call(&s, "DELETE", "/_mock/requests", &[], "").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(s.requests().is_empty());
    let (_, _, stats) = call(&s, "GET", "/_mock/stats", &[], "").await;
    assert_eq!(
        serde_json::from_slice::<Value>(&stats).unwrap(),
        json!({"started": 0, "completed": 0, "cancelled": 0})
    );
}

#[test]
fn the_capture_keeps_only_the_most_recent_ten_thousand_requests() {
    let s = state();
    let uri: http::Uri = "/v1/x".parse().unwrap();
    for i in 0..10_005u32 {
        s.capture(
            &http::Method::POST,
            &uri,
            &HeaderMap::new(),
            &Bytes::from(i.to_string()),
        );
    }
    let requests = s.requests();
    assert_eq!(requests.len(), 10_000);
    assert_eq!(requests[0].body, "5");
    assert_eq!(requests.last().unwrap().body, "10004");
}

// Reasoning: emitted first, only when the request asks for it.

const REASONING_OF_HELLO: &str = "Thinking about: hello mock";

/// The raw body's `a` key comes before its `b` key.
fn key_before(bytes: &[u8], a: &str, b: &str) -> bool {
    let text = std::str::from_utf8(bytes).unwrap();
    let (a, b) = (format!("\"{a}\":"), format!("\"{b}\":"));
    matches!((text.find(&a), text.find(&b)), (Some(i), Some(j)) if i < j)
}

#[tokio::test]
async fn chat_with_reasoning_effort_answers_reasoning_content_before_content() {
    let s = state();
    let request = json!({"model": "deepseek-reasoner", "reasoning_effort": "low",
        "messages": [{"role": "user", "content": "hello mock"}]});
    let (status, _, bytes) = call(
        &s,
        "POST",
        "/v1/chat/completions",
        &[OPENAI],
        &request.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(key_before(&bytes, "reasoning_content", "content"));
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    let message = &body["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], REASONING_OF_HELLO);
    assert_eq!(
        message["content"],
        "Hello from the mock. You said: hello mock"
    );
    let usage = &body["usage"];
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 4);
    assert_eq!(usage["completion_tokens"], 8 + 4);

    // A tool call thinks about the user's words; `"none"` and no effort at all do not think.
    let (_, _, body) = post_json(
        &s,
        "/v1/chat/completions",
        &[OPENAI],
        json!({
        "model": "m", "reasoning_effort": "high", "tools": chat_tools(),
        "messages": [{"role": "user", "content": "hello mock"}]}),
    )
    .await;
    let message = &body["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], REASONING_OF_HELLO);
    assert_eq!(message["tool_calls"][0]["function"]["name"], "edit");
    assert_eq!(body["usage"]["completion_tokens"], 10 + 4);
    for effort in [json!("none"), Value::Null] {
        let (_, _, body) = post_json(
            &s,
            "/v1/chat/completions",
            &[OPENAI],
            json!({
            "model": "m", "reasoning_effort": effort,
            "messages": [{"role": "user", "content": "hello mock"}]}),
        )
        .await;
        assert!(body["choices"][0]["message"]
            .get("reasoning_content")
            .is_none());
        assert_eq!(
            body["usage"]["completion_tokens_details"]["reasoning_tokens"],
            0
        );
    }
}

#[tokio::test]
async fn chat_stream_sends_reasoning_content_chunks_before_the_text() {
    let (_, _, bytes) = call(
        &state(),
        "POST",
        "/v1/chat/completions",
        &[OPENAI],
        &json!({"model": "m", "stream": true, "reasoning_effort": "medium",
                "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "hello mock"}]})
        .to_string(),
    )
    .await;
    let chunks = data_json(&sse_frames(&bytes));
    let (usage_chunk, rest) = chunks.split_last().unwrap();
    let deltas: Vec<&Value> = rest.iter().map(|c| &c["choices"][0]["delta"]).collect();
    let thinking = deltas
        .iter()
        .take_while(|d| d.get("reasoning_content").is_some())
        .count();
    assert_eq!(thinking, 4, "{deltas:?}");
    assert_eq!(
        deltas[0],
        &json!({"role": "assistant", "reasoning_content": "Thinking"})
    );
    for delta in &deltas[1..thinking] {
        let keys: Vec<&String> = delta.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["reasoning_content"]);
    }
    let reasoning: String = deltas[..thinking]
        .iter()
        .map(|d| d["reasoning_content"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, REASONING_OF_HELLO);
    assert!(deltas[thinking..]
        .iter()
        .all(|d| d.get("reasoning_content").is_none() && d.get("role").is_none()));
    let text: String = deltas[thinking..]
        .iter()
        .filter_map(|d| d["content"].as_str())
        .collect();
    assert_eq!(text, "Hello from the mock. You said: hello mock");
    let usage = &usage_chunk["usage"];
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 4);
    assert_eq!(usage["completion_tokens"], 8 + 4);
}

#[tokio::test]
async fn chat_stream_reasons_about_a_tool_result_before_the_tool_call_chunks_too() {
    let s = state();
    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1/chat/completions",
        &[OPENAI],
        &json!({"model": "m", "stream": true, "reasoning_effort": "low", "tools": chat_tools(),
                "messages": [{"role": "user", "content": "go"}]})
        .to_string(),
    )
    .await;
    let chunks = data_json(&sse_frames(&bytes));
    let deltas: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["delta"]).collect();
    assert_eq!(deltas[0]["role"], "assistant");
    let first_call = deltas
        .iter()
        .position(|d| d.get("tool_calls").is_some())
        .unwrap();
    let reasoning: String = deltas[..first_call]
        .iter()
        .map(|d| d["reasoning_content"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "Thinking about: go");
    assert_eq!(
        deltas[first_call]["tool_calls"][0]["function"]["name"],
        "edit"
    );
    assert!(deltas[first_call..]
        .iter()
        .all(|d| d.get("reasoning_content").is_none()));

    let (_, _, body) = post_json(
        &s,
        "/v1/chat/completions",
        &[OPENAI],
        json!({
        "model": "m", "reasoning_effort": "low", "tools": chat_tools(), "messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "call_1", "content": "done"}]}),
    )
    .await;
    let message = &body["choices"][0]["message"];
    assert_eq!(
        message["reasoning_content"],
        "Thinking about the tool result."
    );
    assert_eq!(message["content"], "tool result: done");
}

#[tokio::test]
async fn responses_with_reasoning_puts_a_reasoning_item_first() {
    let (status, _, body) = post_json(
        &state(),
        "/v1/responses",
        &[OPENAI],
        json!({"model": "gpt-5", "reasoning": {"effort": "low", "summary": "auto"},
               "input": [{"role": "user", "content": "hello mock"}]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 2);
    let reasoning = &output[0];
    assert!(reasoning["id"].as_str().unwrap().starts_with("rs_"));
    assert_eq!(
        reasoning,
        &json!({"id": reasoning["id"], "type": "reasoning",
                "summary": [{"type": "summary_text", "text": REASONING_OF_HELLO}]})
    );
    assert_eq!(output[1]["type"], "message");
    assert_eq!(
        output[1]["content"][0]["text"],
        "Hello from the mock. You said: hello mock"
    );
    assert_eq!(
        body["reasoning"],
        json!({"effort": "low", "summary": "auto"})
    );
    let usage = &body["usage"];
    assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 4);
    assert_eq!(usage["output_tokens"], 8 + 4);

    let (_, _, body) = post_json(
        &state(),
        "/v1/responses",
        &[OPENAI],
        json!({"model": "gpt-5", "input": "hello mock"}),
    )
    .await;
    assert_eq!(body["output"].as_array().unwrap().len(), 1);
    assert_eq!(body["output"][0]["type"], "message");
    assert_eq!(body["reasoning"], json!({"effort": null, "summary": null}));
    assert_eq!(
        body["usage"]["output_tokens_details"]["reasoning_tokens"],
        0
    );
}

#[tokio::test]
async fn responses_stream_sends_the_reasoning_summary_events_at_index_0_then_the_answer_at_1() {
    let (_, _, bytes) = call(
        &state(),
        "POST",
        "/v1/responses",
        &[OPENAI],
        &json!({"model": "gpt-5", "stream": true, "reasoning": {"effort": "low"}, "input": "hello mock",
                "tools": [{"type": "function", "name": "edit", "parameters": chat_tools()[0]["function"]["parameters"]}]})
        .to_string(),
    )
    .await;
    let frames = sse_frames(&bytes);
    let events = data_json(&frames);
    for (i, ((name, _), event)) in frames.iter().zip(&events).enumerate() {
        assert_eq!(name.as_deref(), event["type"].as_str());
        assert_eq!(event["sequence_number"], i);
    }
    let names: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let delta = "response.reasoning_summary_text.delta";
    assert_eq!(
        names[..4],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
        ]
    );
    assert_eq!(names[4..8], [delta; 4]);
    assert_eq!(
        names[8..12],
        [
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
        ]
    );
    let added = &events[2];
    let rs_id = added["item"]["id"].as_str().unwrap();
    assert!(rs_id.starts_with("rs_"));
    assert_eq!(
        added["item"],
        json!({"id": rs_id, "type": "reasoning", "summary": []})
    );
    assert_eq!(added["output_index"], 0);
    assert_eq!(
        events[3],
        json!({"type": "response.reasoning_summary_part.added", "item_id": rs_id, "output_index": 0,
               "part": {"type": "summary_text", "text": ""}, "sequence_number": 3, "summary_index": 0})
    );
    let mut reasoning = String::new();
    for event in &events[4..8] {
        assert_eq!(event["item_id"], rs_id);
        assert_eq!(event["output_index"], 0);
        assert_eq!(event["summary_index"], 0);
        reasoning.push_str(event["delta"].as_str().unwrap());
    }
    assert_eq!(reasoning, REASONING_OF_HELLO);
    let summary = json!({"type": "summary_text", "text": REASONING_OF_HELLO});
    assert_eq!(events[8]["text"], REASONING_OF_HELLO);
    assert_eq!(
        (&events[8]["item_id"], &events[8]["summary_index"]),
        (&json!(rs_id), &json!(0))
    );
    assert_eq!(events[9]["part"], summary);
    assert_eq!(events[9]["summary_index"], 0);
    assert_eq!(
        events[10]["item"],
        json!({"id": rs_id, "type": "reasoning", "summary": [summary]})
    );
    assert_eq!(events[10]["output_index"], 0);
    // The function call: index 1 on every event that carries one.
    assert_eq!(events[11]["item"]["type"], "function_call");
    for event in &events[11..events.len() - 1] {
        assert_eq!(event["output_index"], 1, "{event}");
        assert_ne!(event["item_id"], rs_id);
    }
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["output"][0]["type"], "reasoning");
    assert_eq!(
        completed["output"][0]["summary"][0]["text"],
        REASONING_OF_HELLO
    );
    assert_eq!(completed["output"][1]["type"], "function_call");
    assert_eq!(completed["usage"]["output_tokens"], 10 + 4);
    assert_eq!(
        completed["usage"]["output_tokens_details"]["reasoning_tokens"],
        4
    );
}

fn thinking_request(messages: Value) -> Value {
    json!({"model": "claude-x", "max_tokens": 2048,
           "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": messages})
}

#[tokio::test]
async fn anthropic_with_thinking_answers_a_signed_thinking_block_first() {
    let s = state();
    let anthropic = [ANTHROPIC_KEY, ANTHROPIC_VERSION];
    let (status, _, body) = post_json(
        &s,
        "/v1/messages",
        &anthropic,
        thinking_request(json!([{"role": "user", "content": "hello mock"}])),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let content = body["content"].as_array().unwrap();
    assert_eq!(content.len(), 2);
    let signature = content[0]["signature"].as_str().unwrap();
    assert!(
        signature.starts_with("sig-") && signature.len() > 20,
        "{signature}"
    );
    assert_eq!(
        content[0],
        json!({"type": "thinking", "thinking": REASONING_OF_HELLO, "signature": signature})
    );
    assert_eq!(
        content[1],
        json!({"type": "text", "text": "Hello from the mock. You said: hello mock"})
    );
    assert_eq!(body["usage"]["output_tokens"], 8 + 4);

    // The same thinking gets the same signature; other thinking another one.
    let (_, _, again) = post_json(
        &s,
        "/v1/messages",
        &anthropic,
        thinking_request(json!([{"role": "user", "content": "hello mock"}])),
    )
    .await;
    assert_eq!(again["content"][0]["signature"], signature);
    let (_, _, other) = post_json(
        &s,
        "/v1/messages",
        &anthropic,
        thinking_request(json!([{"role": "user", "content": "hello there"}])),
    )
    .await;
    assert_ne!(other["content"][0]["signature"], signature);

    let (_, _, plain) = post_json(
        &s,
        "/v1/messages",
        &anthropic,
        json!({"model": "c", "max_tokens": 5, "thinking": {"type": "disabled"},
               "messages": [{"role": "user", "content": "hello mock"}]}),
    )
    .await;
    assert_eq!(plain["content"].as_array().unwrap().len(), 1);
    assert_eq!(plain["content"][0]["type"], "text");
}

#[tokio::test]
async fn anthropic_stream_sends_the_thinking_block_then_its_signature_then_the_answer_at_index_1() {
    let s = state();
    let anthropic = [ANTHROPIC_KEY, ANTHROPIC_VERSION];
    let mut request = thinking_request(json!([{"role": "user", "content": "hello mock"}]));
    request["tools"] =
        json!([{"name": "edit", "input_schema": chat_tools()[0]["function"]["parameters"]}]);
    let (_, _, whole) = post_json(&s, "/v1/messages", &anthropic, request.clone()).await;
    request["stream"] = json!(true);
    let (_, _, bytes) = call(&s, "POST", "/v1/messages", &anthropic, &request.to_string()).await;
    let frames = sse_frames(&bytes);
    let events = data_json(&frames);
    for ((name, _), event) in frames.iter().zip(&events) {
        assert_eq!(name.as_deref(), event["type"].as_str());
    }
    let names: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(names[..3], ["message_start", "content_block_start", "ping"]);
    assert_eq!(
        events[1],
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
    );
    let deltas: Vec<&Value> = events[3..]
        .iter()
        .take_while(|e| e["type"] == "content_block_delta")
        .collect();
    assert!(deltas.iter().all(|e| e["index"] == 0));
    let (signature, thinking) = deltas.split_last().unwrap();
    assert_eq!(thinking.len(), 4);
    let text: String = thinking
        .iter()
        .map(|e| {
            assert_eq!(e["delta"]["type"], "thinking_delta");
            e["delta"]["thinking"].as_str().unwrap()
        })
        .collect();
    assert_eq!(text, REASONING_OF_HELLO);
    assert_eq!(
        signature["delta"],
        json!({"type": "signature_delta", "signature": whole["content"][0]["signature"]})
    );
    let after = 3 + deltas.len();
    assert_eq!(
        events[after],
        json!({"type": "content_block_stop", "index": 0})
    );
    assert_eq!(events[after + 1]["type"], "content_block_start");
    assert_eq!(events[after + 1]["index"], 1);
    assert_eq!(events[after + 1]["content_block"]["type"], "tool_use");
    assert_eq!(names.iter().filter(|n| **n == "ping").count(), 1);
    let rest = &events[after + 2..];
    let partial: String = rest
        .iter()
        .filter(|e| e["type"] == "content_block_delta")
        .map(|e| {
            assert_eq!(e["index"], 1);
            e["delta"]["partial_json"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        expected_args()
    );
    assert_eq!(
        events[events.len() - 3],
        json!({"type": "content_block_stop", "index": 1})
    );
    assert_eq!(events[events.len() - 2]["usage"]["output_tokens"], 10 + 4);
}

#[tokio::test]
async fn anthropic_accepts_its_own_thinking_signature_back_and_refuses_any_other() {
    let s = state();
    let anthropic = [ANTHROPIC_KEY, ANTHROPIC_VERSION];
    let (_, _, first) = post_json(
        &s,
        "/v1/messages",
        &anthropic,
        thinking_request(json!([{"role": "user", "content": "hello mock"}])),
    )
    .await;
    let thinking = first["content"][0].clone();
    let with_history = |block: Value| {
        thinking_request(json!([
            {"role": "user", "content": "hello mock"},
            {"role": "assistant", "content": [block, {"type": "text", "text": "hi"}]},
            {"role": "user", "content": "again"}]))
    };
    let (status, _, body) = post_json(
        &s,
        "/v1/messages",
        &anthropic,
        with_history(thinking.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["content"][0]["thinking"], "Thinking about: again");

    let mut tampered_signature = thinking.clone();
    tampered_signature["signature"] = json!("sig-AAAA");
    let mut tampered_text = thinking.clone();
    tampered_text["thinking"] = json!("Thinking about: something else");
    let mut empty = thinking.clone();
    empty["signature"] = json!("");
    let mut unsigned = thinking.clone();
    unsigned.as_object_mut().unwrap().remove("signature");
    for bad in [tampered_signature, tampered_text, empty, unsigned] {
        let (status, _, body) =
            post_json(&s, "/v1/messages", &anthropic, with_history(bad.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(
            body["error"]["message"],
            "messages.1.content.0: Invalid `signature` in `thinking` block"
        );
    }

    // Without thinking requested, history is not checked (the passthrough tests send foreign
    // signatures), as before reasoning existed.
    let mut plain = with_history(json!({"type": "thinking", "thinking": "t", "signature": "x"}));
    plain.as_object_mut().unwrap().remove("thinking");
    let (status, _, _) = post_json(&s, "/v1/messages", &anthropic, plain).await;
    assert_eq!(status, StatusCode::OK);
}

/// A mock served on a loopback socket, stopped by `stop`.
pub(crate) struct Running {
    addr: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    pub(crate) async fn start(state: &MockState) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, state.clone(), async {
            let _ = stopped.await;
        }));
        Self { addr, stop, server }
    }

    /// One request on a fresh connection: the response head, or the client's error.
    pub(crate) async fn send(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Value,
    ) -> Result<http::Response<hyper::body::Incoming>, hyper::Error> {
        let tcp = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .unwrap();
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut builder = Request::builder()
            .method("POST")
            .uri(path)
            .header("host", "mock")
            .header("content-type", "application/json");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder
            .body(http_body_util::Full::new(Bytes::from(body.to_string())))
            .unwrap();
        sender.send_request(request).await
    }

    pub(crate) async fn stop(self) {
        self.stop.send(()).unwrap();
        self.server.await.unwrap().unwrap();
    }
}

fn chat_stream() -> Value {
    json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "a b c d"}]})
}

fn messages_body() -> Value {
    json!({"model": "c", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]})
}

/// Waits until `done` holds of the fault counts, for what the server notices after the client.
pub(crate) async fn eventually(state: &MockState, done: impl Fn(&super::FaultStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done(&state.faults()) {
        assert!(Instant::now() < deadline, "{:?}", state.faults());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn retry_after_header_adds_retry_after_and_on_a_429_the_dialects_reset_headers() {
    let s = state();
    let (status, headers, _) = post_json(
        &s,
        "/v1/chat/completions",
        &[
            OPENAI,
            ("x-mock-error-status", "429"),
            ("x-mock-retry-after", "360"),
        ],
        json!({"model": "gpt-4o", "messages": []}),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "360");
    assert_eq!(headers["x-ratelimit-remaining-requests"], "0");
    assert_eq!(headers["x-ratelimit-reset-requests"], "6m0s");
    assert_eq!(headers["x-ratelimit-reset-tokens"], "6m0s");

    let (status, headers, _) = post_json(
        &s,
        "/v1/responses",
        &[
            OPENAI,
            ("x-mock-error-status", "503"),
            ("x-mock-retry-after", "2"),
        ],
        json!({"model": "gpt-5", "input": "x"}),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers["retry-after"], "2");
    assert_eq!(headers["x-ratelimit-reset-requests"], "6ms");

    let (status, headers, _) = post_json(
        &s,
        "/v1/messages",
        &[
            ANTHROPIC_KEY,
            ANTHROPIC_VERSION,
            ("x-mock-error-status", "429"),
            ("x-mock-retry-after", "5"),
        ],
        messages_body(),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "5");
    assert_eq!(headers["anthropic-ratelimit-requests-remaining"], "0");
    let reset = headers["anthropic-ratelimit-requests-reset"]
        .to_str()
        .unwrap();
    assert_eq!(reset.len(), "2025-10-25T12:00:00Z".len(), "{reset}");
    assert!(reset.ends_with('Z') && &reset[10..11] == "T", "{reset}");

    // Without the header a 429 keeps its one second; a rejected key gets no retry-after.
    let (_, headers, _) = post_json(
        &s,
        "/v1/messages",
        &[
            ("x-api-key", "sk-wrong"),
            ANTHROPIC_VERSION,
            ("x-mock-error-status", "529"),
            ("x-mock-retry-after", "5"),
        ],
        messages_body(),
    )
    .await;
    assert!(!headers.contains_key("retry-after"));
}

#[tokio::test]
async fn server_errors_answer_in_each_providers_documented_shape() {
    let s = state();
    for (status, kind, message) in [
        (500, "api_error", "Internal server error"),
        (504, "timeout_error", "Request timed out"),
        (529, "overloaded_error", "Overloaded"),
    ] {
        let status_text = status.to_string();
        let (got, headers, body) = post_json(
            &s,
            "/v1/messages",
            &[
                ANTHROPIC_KEY,
                ANTHROPIC_VERSION,
                ("x-mock-error-status", &status_text),
            ],
            messages_body(),
        )
        .await;
        assert_eq!(got.as_u16(), status);
        assert_eq!(
            body,
            json!({"type": "error", "error": {"type": kind, "message": message},
                   "request_id": headers["request-id"].to_str().unwrap()})
        );
    }
    let chat = json!({"model": "gpt-4o", "messages": []});
    for (status, message) in [
        (
            500,
            "The server had an error while processing your request. Sorry about that!",
        ),
        (
            503,
            "The engine is currently overloaded, please try again later.",
        ),
    ] {
        let status_text = status.to_string();
        let (got, _, body) = post_json(
            &s,
            "/v1/chat/completions",
            &[OPENAI, ("x-mock-error-status", &status_text)],
            chat.clone(),
        )
        .await;
        assert_eq!(got.as_u16(), status);
        assert_eq!(
            body,
            json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}})
        );
    }
    for (status, body) in [
        (
            "502",
            r#"{"error":{"code":502,"message":"Bad gateway.","param":null,"type":"cf_bad_gateway"}}"#,
        ),
        (
            "504",
            r#"{"error":{"code":504,"message":"Gateway timeout.","param":null,"type":"cf_gateway_timeout"}}"#,
        ),
    ] {
        let (got, _, bytes) = call(
            &s,
            "POST",
            "/v1/responses",
            &[OPENAI, ("x-mock-error-status", status)],
            &chat.to_string(),
        )
        .await;
        assert_eq!(got.as_str(), status);
        assert_eq!(bytes, body.as_bytes());
    }
}

#[tokio::test]
async fn stall_header_sends_n_frames_then_nothing_with_the_connection_open() {
    let s = state();
    let mock = Running::start(&s).await;
    let response = mock
        .send(
            "/v1/chat/completions",
            &[OPENAI, ("x-mock-stall-after", "2")],
            chat_stream(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut seen = Vec::new();
    let silent = tokio::time::timeout(Duration::from_millis(300), async {
        while let Some(frame) = body.frame().await {
            seen.extend_from_slice(&frame.unwrap().into_data().unwrap());
        }
    })
    .await;
    assert!(silent.is_err(), "the stream ended: {seen:?}");
    assert_eq!(sse_frames(&seen).len(), 2);
    assert_eq!(s.faults().stalled, 1);
    drop(body);
    // The client giving up is what ends a stalled stream.
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.stats().cancelled == 0 {
        assert!(Instant::now() < deadline, "{:?}", s.stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    mock.stop().await;
}

#[tokio::test]
async fn reset_header_aborts_the_connection_after_n_frames_without_a_clean_end() {
    let s = state();
    let mock = Running::start(&s).await;
    let response = mock
        .send(
            "/v1/messages",
            &[
                ANTHROPIC_KEY,
                ANTHROPIC_VERSION,
                ("x-mock-reset-after", "3"),
            ],
            json!({"model": "c", "max_tokens": 1, "stream": true,
                   "messages": [{"role": "user", "content": "a b c"}]}),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut seen = Vec::new();
    let error = loop {
        match body.frame().await {
            Some(Ok(frame)) => seen.extend_from_slice(&frame.into_data().unwrap()),
            Some(Err(e)) => break e,
            None => panic!("clean end after {seen:?}"),
        }
    };
    // The chunked body stops mid-way: no terminating chunk, the connection just ends.
    let io = std::error::Error::source(&error)
        .and_then(|e| e.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    assert!(
        matches!(
            io,
            Some(std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset)
        ),
        "{error:?}"
    );
    assert_eq!(sse_frames(&seen).len(), 3);
    assert_eq!(s.faults().reset, 1);
    assert_eq!(s.stats().completed, 0);
    mock.stop().await;
}

#[tokio::test]
async fn malformed_header_inserts_one_unparseable_frame_and_the_stream_goes_on() {
    let s = state();
    let (_, _, plain) = call(
        &s,
        "POST",
        "/v1/chat/completions",
        &[OPENAI],
        &chat_stream().to_string(),
    )
    .await;
    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1/chat/completions",
        &[OPENAI, ("x-mock-malformed-after", "1")],
        &chat_stream().to_string(),
    )
    .await;
    let plain = sse_frames(&plain);
    let frames = sse_frames(&bytes);
    assert_eq!(frames.len(), plain.len() + 1);
    let broken = &frames[1].1;
    assert!(serde_json::from_str::<Value>(broken).is_err(), "{broken}");
    assert!(frames[2].1.starts_with(broken.as_str()), "{broken}");
    assert_eq!(data_json(&[frames[0].clone()]).len(), 1);
    assert_eq!(data_json(&frames[2..]).len(), plain.len() - 2);
    assert_eq!(frames.last().unwrap().1, "[DONE]");
    assert_eq!(s.faults().malformed, 1);
    assert_eq!(s.stats().completed, 2);
}

#[tokio::test]
async fn drip_header_sends_any_body_in_small_pieces_apart() {
    let s = state();
    let response = router(s.clone())
        .oneshot(request(
            "POST",
            "/v1/messages",
            &[ANTHROPIC_KEY, ANTHROPIC_VERSION, ("x-mock-drip-ms", "2")],
            &messages_body().to_string(),
        ))
        .await
        .unwrap();
    let length: usize = response.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut body = response.into_body();
    let mut pieces = Vec::new();
    while let Some(frame) = body.frame().await {
        pieces.push(frame.unwrap().into_data().unwrap());
    }
    assert!(pieces.iter().all(|p| !p.is_empty() && p.len() <= 16));
    assert_eq!(pieces.len(), length.div_ceil(16));
    let whole: Vec<u8> = pieces.concat();
    assert_eq!(whole.len(), length);
    let message: Value = serde_json::from_slice(&whole).unwrap();
    assert_eq!(message["type"], "message");

    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1/chat/completions",
        &[OPENAI, ("x-mock-drip-ms", "1")],
        &chat_stream().to_string(),
    )
    .await;
    assert_eq!(sse_frames(&bytes).last().unwrap().1, "[DONE]");
    assert_eq!(s.faults().dripped, 2);
}

#[tokio::test]
async fn fail_first_fails_the_first_n_requests_of_each_fault_key_then_answers() {
    let s = state();
    let statuses = |key: &'static str| {
        let s = s.clone();
        async move {
            let (status, _, _) = post_json(
                &s,
                "/v1/messages",
                &[
                    ANTHROPIC_KEY,
                    ANTHROPIC_VERSION,
                    ("x-mock-error-status", "529"),
                    ("x-mock-fail-first", "2"),
                    ("x-mock-fault-key", key),
                ],
                messages_body(),
            )
            .await;
            status.as_u16()
        }
    };
    assert_eq!(statuses("a").await, 529);
    assert_eq!(statuses("a").await, 529);
    assert_eq!(statuses("b").await, 529);
    assert_eq!(statuses("a").await, 200);
    assert_eq!(statuses("a").await, 200);
    assert_eq!(statuses("b").await, 529);
    assert_eq!(statuses("b").await, 200);
    let faults = s.faults();
    assert_eq!(faults.statuses, [(200, 3), (529, 4)].into());
    assert_eq!(faults.injected, [(529, 4)].into());

    // Listed over HTTP, and cleared with the key counts.
    let (_, _, body) = call(&s, "GET", "/_mock/faults", &[], "").await;
    let listed: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(listed["statuses"], json!({"200": 3, "529": 4}));
    assert_eq!(listed["dropped"], 0);
    let (status, _, _) = call(&s, "DELETE", "/_mock/faults", &[], "").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(s.faults(), super::FaultStats::default());
    assert_eq!(statuses("a").await, 529);
}

#[tokio::test]
async fn fail_every_fails_every_nth_request_with_the_configured_status_and_retry_after() {
    let s = MockState::new(MockConfig {
        fail_status: Some(StatusCode::from_u16(529).unwrap()),
        fail_every: 3,
        retry_after: Some(7),
        ..MockConfig::default()
    });
    let mut seen = Vec::new();
    for _ in 0..6 {
        let (status, headers, body) = post_json(
            &s,
            "/v1/messages",
            &[ANTHROPIC_KEY, ANTHROPIC_VERSION],
            messages_body(),
        )
        .await;
        if status.as_u16() == 529 {
            assert_eq!(body["error"]["type"], "overloaded_error");
            assert_eq!(headers["retry-after"], "7");
        } else {
            assert!(!headers.contains_key("retry-after"));
        }
        seen.push(status.as_u16());
    }
    assert_eq!(seen, [200, 200, 529, 200, 200, 529]);
    assert_eq!(s.faults().injected, [(529, 2)].into());

    // 1 fails every request, in the dialect of the endpoint asked.
    let s = MockState::new(MockConfig {
        fail_status: Some(StatusCode::SERVICE_UNAVAILABLE),
        fail_every: 1,
        ..MockConfig::default()
    });
    for _ in 0..2 {
        let (status, _, body) = post_json(
            &s,
            "/v1/chat/completions",
            &[OPENAI],
            json!({"model": "gpt-4o", "messages": []}),
        )
        .await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["error"]["type"], "server_error");
    }
}

#[tokio::test]
async fn drop_every_closes_every_nth_connection_before_any_status_line() {
    let s = MockState::new(MockConfig {
        drop_every: 2,
        ..MockConfig::default()
    });
    let mock = Running::start(&s).await;
    let messages = || {
        mock.send(
            "/v1/messages",
            &[ANTHROPIC_KEY, ANTHROPIC_VERSION],
            messages_body(),
        )
    };
    assert_eq!(messages().await.unwrap().status(), StatusCode::OK);
    let error = messages().await.unwrap_err();
    assert!(error.is_incomplete_message(), "{error:?}");
    assert_eq!(messages().await.unwrap().status(), StatusCode::OK);
    assert!(messages().await.unwrap_err().is_incomplete_message());

    // The header drops one request whatever the count says.
    let error = mock
        .send(
            "/v1/chat/completions",
            &[OPENAI, ("x-mock-drop", "1")],
            chat_stream(),
        )
        .await
        .unwrap_err();
    assert!(error.is_incomplete_message(), "{error:?}");
    eventually(&s, |f| f.dropped == 3).await;
    assert_eq!(s.faults().statuses, [(200, 2)].into());
    assert_eq!(s.requests().len(), 5);
    mock.stop().await;
}

// The secrets guard's placeholders (`x-mock-use-secrets`), and text streamed a character
// at a time (`x-mock-split-chars`).

const GEMINI_KEY: (&str, &str) = ("x-goog-api-key", "AIza-mock-gemini");
const GITHUB_PLACEHOLDER: &str = "TRIMGATE_SECRET_GITHUB_TOKEN_0a1b2c3d4e5f";
const DB_PLACEHOLDER: &str = "TRIMGATE_SECRET_DB_PASSWORD_00ff00ff00ff";
const USE_SECRETS: (&str, &str) = ("x-mock-use-secrets", "1");
const SECRETS_FILE: (&str, &str) = ("x-mock-secrets-file", "/tmp/out dir/secrets.txt");
/// The command that writes both placeholders, each once, to SECRETS_FILE's path (quoted:
/// it has a space).
const WRITE_SECRETS: &str = "printf '%s\\n' 'TRIMGATE_SECRET_GITHUB_TOKEN_0a1b2c3d4e5f' \
     'TRIMGATE_SECRET_DB_PASSWORD_00ff00ff00ff' > '/tmp/out dir/secrets.txt'";

/// What `cat .env` printed once the gateway replaced its secrets: two placeholders, one of
/// them twice, and two look-alikes outside the grammar (upper-case id, short id).
fn redacted_env() -> String {
    format!(
        "GITHUB_TOKEN={GITHUB_PLACEHOLDER}\nDATABASE_URL=postgres://app:{DB_PLACEHOLDER}@db:5432/app\n\
         AGAIN={GITHUB_PLACEHOLDER}\nNOT_ONE=TRIMGATE_SECRET_GITHUB_TOKEN_0A1B2C3D4E5F TRIMGATE_SECRET_X_abc\n"
    )
}

fn bash_tool() -> Value {
    json!([{"name": "Bash", "input_schema": {"type": "object", "properties": {
        "command": {"type": "string"}, "description": {"type": "string"}}, "required": ["command"]}}])
}

/// A Messages conversation whose last item is Bash's result `output`.
fn messages_after_bash(output: &str) -> Value {
    json!({"model": "c", "max_tokens": 100, "tools": bash_tool(), "messages": [
        {"role": "user", "content": "read .env"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat .env"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": output}]}]})
}

#[tokio::test]
async fn use_secrets_has_claude_codes_bash_write_the_placeholders_of_a_tool_result_to_the_file() {
    let (status, _, body) = post_json(
        &state(),
        "/v1/messages",
        &[ANTHROPIC_KEY, ANTHROPIC_VERSION, USE_SECRETS, SECRETS_FILE],
        messages_after_bash(&redacted_env()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["stop_reason"], "tool_use");
    let block = &body["content"][0];
    assert_eq!(block["name"], "Bash");
    assert_eq!(
        block["input"],
        json!({"command": WRITE_SECRETS, "description": "Write the secrets to a file"})
    );
}

#[tokio::test]
async fn use_secrets_calls_codexs_exec_command_with_cmd_in_responses() {
    let (_, _, body) = post_json(&state(), "/v1/responses", &[OPENAI, USE_SECRETS, SECRETS_FILE], json!({
        "model": "gpt-5",
        "tools": [{"type": "function", "name": "exec_command", "parameters": {
            "type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}],
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "read .env"}]},
            {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"cat .env\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": redacted_env()}]})).await;
    let item = &body["output"][0];
    assert_eq!(item["type"], "function_call", "{body}");
    assert_eq!(item["name"], "exec_command");
    let arguments: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"cmd": WRITE_SECRETS}));
}

#[tokio::test]
async fn use_secrets_gives_an_argv_shell_tool_bash_lc_in_chat_streamed_in_fragments() {
    let (_, _, bytes) = call(
        &state(),
        "POST",
        "/v1/chat/completions",
        &[OPENAI, USE_SECRETS, SECRETS_FILE],
        &json!({"model": "gpt-5", "stream": true,
            "tools": [{"type": "function", "function": {"name": "shell", "parameters": {
                "type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                "required": ["command"]}}}],
            "messages": [
                {"role": "user", "content": "read .env"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "shell", "arguments": "{\"command\":[\"cat\",\".env\"]}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": redacted_env()}]})
        .to_string(),
    )
    .await;
    let chunks = data_json(&sse_frames(&bytes));
    let fragments: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert!(fragments.len() > 1, "{fragments:?}");
    // The arguments come in pieces that cut placeholders: a client has to join them.
    assert!(
        !fragments.iter().any(|f| f.contains(GITHUB_PLACEHOLDER)),
        "{fragments:?}"
    );
    let arguments: Value = serde_json::from_str(&fragments.concat()).unwrap();
    assert_eq!(
        arguments,
        json!({"command": ["bash", "-lc", WRITE_SECRETS]})
    );
}

#[tokio::test]
async fn use_secrets_calls_gemini_clis_run_shell_command_with_a_command_string() {
    let (status, _, body) = post_json(&state(), "/v1beta/models/gemini-2.5-pro:generateContent",
        &[GEMINI_KEY, USE_SECRETS, SECRETS_FILE], json!({
        "tools": [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {
            "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]}],
        "contents": [
            {"role": "user", "parts": [{"text": "read .env"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {"command": "cat .env"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command",
                "response": {"output": redacted_env()}}}]}]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["candidates"][0]["content"]["parts"][0]["functionCall"],
        json!({"name": "run_shell_command", "args": {"command": WRITE_SECRETS}})
    );
}

#[tokio::test]
async fn use_secrets_writes_to_secrets_txt_when_no_file_is_named() {
    let (_, _, body) = post_json(
        &state(),
        "/v1/messages",
        &[ANTHROPIC_KEY, ANTHROPIC_VERSION, USE_SECRETS],
        messages_after_bash(&format!("TOKEN={GITHUB_PLACEHOLDER}")),
    )
    .await;
    assert_eq!(
        body["content"][0]["input"]["command"],
        format!("printf '%s\\n' '{GITHUB_PLACEHOLDER}' > secrets.txt")
    );
}

#[tokio::test]
async fn after_a_tool_result_without_placeholders_use_secrets_quotes_it_as_usual() {
    let s = state();
    let headers = [ANTHROPIC_KEY, ANTHROPIC_VERSION, USE_SECRETS, SECRETS_FILE];
    // The printf's empty output, and a look-alike outside the grammar.
    for output in ["", "TRIMGATE_SECRET_GITHUB_TOKEN_0A1B2C3D4E5F"] {
        let (_, _, body) =
            post_json(&s, "/v1/messages", &headers, messages_after_bash(output)).await;
        assert_eq!(body["stop_reason"], "end_turn", "{body}");
        assert_eq!(body["content"][0]["text"], format!("tool result: {output}"));
    }
    // Without the header, placeholders are quoted back like any text.
    let (_, _, body) = post_json(
        &s,
        "/v1/messages",
        &[ANTHROPIC_KEY, ANTHROPIC_VERSION],
        messages_after_bash(&format!("TOKEN={GITHUB_PLACEHOLDER}")),
    )
    .await;
    assert_eq!(
        body["content"][0]["text"],
        format!("tool result: TOKEN={GITHUB_PLACEHOLDER}")
    );
    // With no tool declared there is nothing to call: quoted back too.
    let mut request = messages_after_bash(&format!("TOKEN={GITHUB_PLACEHOLDER}"));
    request.as_object_mut().unwrap().remove("tools");
    let (_, _, body) = post_json(&s, "/v1/messages", &headers, request).await;
    assert_eq!(body["stop_reason"], "end_turn", "{body}");
}

/// The text deltas of a streamed answer, in each dialect's events.
fn text_deltas(path: &str, bytes: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(bytes).unwrap();
    if path.starts_with("/v1beta/") {
        return text
            .split("\r\n\r\n")
            .filter_map(|frame| frame.strip_prefix("data: "))
            .map(|data| serde_json::from_str::<Value>(data).unwrap())
            .filter_map(|c| {
                c["candidates"][0]["content"]["parts"][0]["text"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
    }
    let events = data_json(&sse_frames(bytes));
    let delta = |e: &Value| -> Option<String> {
        let found = match path {
            "/v1/chat/completions" => e["choices"][0]["delta"]["content"].as_str(),
            "/v1/messages" => e["delta"]["text"].as_str(),
            _ if e["type"] == "response.output_text.delta" => e["delta"].as_str(),
            _ => None,
        };
        found.map(str::to_owned)
    };
    // Chat opens with the role and an empty content.
    events
        .iter()
        .filter_map(delta)
        .filter(|d| !d.is_empty())
        .collect()
}

#[tokio::test]
async fn split_chars_streams_a_text_answer_one_character_per_delta_in_every_dialect() {
    let reply = format!("Your token: {GITHUB_PLACEHOLDER} (é)");
    let cases = [
        (
            "/v1/chat/completions",
            vec![OPENAI],
            json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1/responses",
            vec![OPENAI],
            json!({"model": "m", "stream": true, "input": "hi"}),
        ),
        (
            "/v1/messages",
            vec![ANTHROPIC_KEY, ANTHROPIC_VERSION],
            json!({"model": "m", "max_tokens": 100, "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            vec![GEMINI_KEY],
            json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
        ),
    ];
    for (path, headers, body) in cases {
        let mut split = headers.clone();
        split.extend([
            ("x-mock-reply", reply.as_str()),
            ("x-mock-split-chars", "1"),
        ]);
        let (status, _, bytes) = call(&state(), "POST", path, &split, &body.to_string()).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let deltas = text_deltas(path, &bytes);
        assert_eq!(deltas.concat(), reply, "{path}");
        assert!(
            deltas.iter().all(|d| d.chars().count() == 1),
            "{path}: {deltas:?}"
        );

        // Without it, words: the placeholder is one delta.
        let mut words = headers.clone();
        words.push(("x-mock-reply", reply.as_str()));
        let (_, _, bytes) = call(&state(), "POST", path, &words, &body.to_string()).await;
        let deltas = text_deltas(path, &bytes);
        assert_eq!(deltas.concat(), reply, "{path}");
        assert!(
            deltas.contains(&format!(" {GITHUB_PLACEHOLDER}")),
            "{path}: {deltas:?}"
        );
    }
}
