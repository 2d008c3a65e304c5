//! The Gemini routes, as a client of Google's API sees them.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::tests::{call, eventually, post_json, request, state, Running};
use crate::{router, MockConfig, MockState, StreamStats};

const KEY: (&str, &str) = ("x-goog-api-key", "AIza-mock-gemini");
const FLASH_2: &str = "/v1beta/models/gemini-2.0-flash:generateContent";
const ECHO: &str = "Hello from the mock. You said: hello mock";

/// The documented stand-ins for a real thought signature
/// (https://ai.google.dev/gemini-api/docs/thought-signatures#faqs).
const DUMMY_SIGNATURES: [&str; 2] = [
    "skip_thought_signature_validator",
    "context_engineering_is_the_way_to_go",
];

fn hello() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hello mock"}]}]})
}

fn tools() -> Value {
    json!([{"functionDeclarations": [
        {"name": "edit", "description": "edit a file", "parameters": {
            "type": "OBJECT",
            "properties": {"path": {"type": "STRING"}, "line": {"type": "INTEGER"}, "dry": {"type": "BOOLEAN"}},
            "required": ["path", "line", "dry"]}},
        {"name": "read", "parametersJsonSchema": {
            "type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]}}]}])
}

fn tokens(body: &Value) -> u64 {
    (body.to_string().len() as u64).div_ceil(4)
}

/// The data of each `\r\n`-ended SSE frame, checking the framing on the way.
fn sse_chunks(bytes: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(bytes).unwrap();
    assert!(text.ends_with("\r\n\r\n"), "{text:?}");
    text.trim_end_matches("\r\n\r\n")
        .split("\r\n\r\n")
        .map(|frame| {
            let data = frame
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("{frame:?}"));
            assert!(!data.contains('\n'), "one line per frame: {frame:?}");
            serde_json::from_str(data).unwrap()
        })
        .collect()
}

fn text_of(chunks: &[Value]) -> String {
    chunks
        .iter()
        .flat_map(|c| {
            c["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|p| p.get("thought").is_none())
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect()
}

async fn generate(s: &MockState, model: &str, body: Value) -> (StatusCode, HeaderMap, Value) {
    let path = format!("/v1beta/models/{model}:generateContent");
    post_json(s, &path, &[KEY], body).await
}

#[tokio::test]
async fn generate_content_answers_text_with_googles_usage_in_a_pretty_body() {
    let body = json!({
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [{"role": "user", "parts": [{"text": "reminder"}, {"text": "hello mock"}]}],
        "generationConfig": {"temperature": 0.2, "topP": 0.9, "topK": 5}});
    let input = tokens(&body);
    let (status, headers, bytes) = call(&state(), "POST", FLASH_2, &[KEY], &body.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/json; charset=UTF-8");
    assert_eq!(headers["server"], "scaffolding on HTTPServer2");
    let text = std::str::from_utf8(&bytes).unwrap();
    assert!(text.starts_with("{\n  \"candidates\": [\n"), "{text}");
    let reply: Value = serde_json::from_slice(&bytes).unwrap();
    let id = reply["responseId"].as_str().unwrap();
    assert_eq!(id.len(), 22);
    assert_eq!(
        reply,
        json!({
            "candidates": [{"content": {"parts": [{"text": ECHO}], "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": input, "candidatesTokenCount": 8,
                              "totalTokenCount": input + 8,
                              "promptTokensDetails": [{"modality": "TEXT", "tokenCount": input}]},
            "modelVersion": "gemini-2.0-flash",
            "responseId": id})
    );
}

#[tokio::test]
async fn the_key_may_come_in_the_query_and_v1_serves_the_same() {
    let s = state();
    for path in [
        "/v1/models/gemini-2.5-pro:generateContent?key=AIza-mock-gemini",
        "/v1beta/models/models%2Fgemini-2.5-pro:generateContent?key=AIza-mock-gemini",
    ] {
        let (status, _, reply) = post_json(&s, path, &[], hello()).await;
        assert_eq!(status, StatusCode::OK, "{path}: {reply}");
        assert_eq!(reply["modelVersion"], "gemini-2.5-pro");
        assert_eq!(reply["candidates"][0]["content"]["parts"][0]["text"], ECHO);
    }
}

#[tokio::test]
async fn a_wrong_key_is_a_400_api_key_invalid_as_google_answers() {
    let (status, headers, reply) = post_json(
        &state(),
        FLASH_2,
        &[("x-goog-api-key", "AIza-wrong")],
        hello(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(headers["content-type"], "application/json; charset=UTF-8");
    assert_eq!(
        reply,
        json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT", "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                 "domain": "googleapis.com", "metadata": {"service": "generativelanguage.googleapis.com"}},
                {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US",
                 "message": "API key not valid. Please pass a valid API key."}]}})
    );
}

#[tokio::test]
async fn no_key_is_a_403_and_a_bearer_token_a_401() {
    let s = state();
    let (status, _, reply) = post_json(&s, FLASH_2, &[], hello()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        reply,
        json!({"error": {"code": 403, "message": "Method doesn't allow unregistered callers (callers \
            without established identity). Please use API Key or other form of API consumer identity \
            to call this API.", "status": "PERMISSION_DENIED"}})
    );
    let (status, _, reply) = post_json(
        &s,
        FLASH_2,
        &[("authorization", "Bearer AIza-mock-gemini")],
        hello(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(reply["error"]["status"], "UNAUTHENTICATED");
    assert_eq!(
        reply["error"]["details"][0]["reason"],
        "ACCESS_TOKEN_TYPE_UNSUPPORTED"
    );
}

#[tokio::test]
async fn any_present_key_is_accepted_without_a_configured_one_and_none_is_needed_keyless() {
    let any = MockState::new(MockConfig {
        gemini_key: None,
        ..MockConfig::default()
    });
    let (status, _, _) = post_json(
        &any,
        FLASH_2,
        &[("x-goog-api-key", "AIza-anything")],
        hello(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = post_json(&any, FLASH_2, &[], hello()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let keyless = MockState::new(MockConfig {
        keyless: true,
        ..MockConfig::default()
    });
    let (status, _, _) = post_json(&keyless, FLASH_2, &[], hello()).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_declared_function_is_called_then_its_response_quoted_back() {
    let s = state();
    let ask = json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}], "tools": tools()});
    let (status, _, reply) = generate(&s, "gemini-2.0-flash", ask).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let candidate = &reply["candidates"][0];
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(
        candidate["content"]["parts"],
        json!([{"functionCall": {"name": "edit", "args": {"path": "mock", "line": 1, "dry": true}}}])
    );
    assert_eq!(reply["usageMetadata"]["candidatesTokenCount"], 10);

    let call = candidate["content"].clone();
    let answered = json!({"tools": tools(), "contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        call,
        {"role": "user", "parts": [{"functionResponse": {"name": "edit", "response": {"output": "done"}}}]}]});
    let (status, _, reply) = generate(&s, "gemini-2.0-flash", answered).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(
        reply["candidates"][0]["content"]["parts"],
        json!([{"text": "tool result: done"}])
    );
}

#[tokio::test]
async fn the_calling_config_and_x_mock_tool_choose_the_function() {
    let s = state();
    let with = |config: Value| {
        json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}], "tools": tools(),
               "toolConfig": {"functionCallingConfig": config}})
    };
    let (_, _, reply) = generate(&s, "gemini-2.0-flash", with(json!({"mode": "NONE"}))).await;
    assert_eq!(
        reply["candidates"][0]["content"]["parts"][0]["text"],
        "Hello from the mock. You said: go"
    );
    let (_, _, reply) = generate(
        &s,
        "gemini-2.0-flash",
        with(json!({"mode": "ANY", "allowedFunctionNames": ["read"]})),
    )
    .await;
    assert_eq!(
        reply["candidates"][0]["content"]["parts"][0]["functionCall"],
        json!({"name": "read", "args": {"file": "mock"}})
    );
    let (_, _, reply) = post_json(
        &s,
        FLASH_2,
        &[KEY, ("x-mock-tool", "read")],
        with(json!({"mode": "auto"})),
    )
    .await;
    assert_eq!(
        reply["candidates"][0]["content"]["parts"][0]["functionCall"]["name"],
        "read"
    );
    let (status, _, reply) =
        generate(&s, "gemini-2.0-flash", with(json!({"mode": "SOMETIMES"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply["error"]["message"],
        "Invalid value at 'tool_config.function_calling_config.mode' \
         (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), \"SOMETIMES\""
    );
}

#[tokio::test]
async fn gemini_3_signs_its_call_and_refuses_a_current_turn_call_without_a_signature() {
    let s = state();
    let ask = json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}], "tools": tools()});
    let (_, _, reply) = generate(&s, "gemini-3-pro-preview", ask).await;
    let call = reply["candidates"][0]["content"].clone();
    let part = &call["parts"][0];
    assert_eq!(part["functionCall"]["name"], "edit");
    let signature = part["thoughtSignature"].as_str().unwrap().to_owned();
    assert_eq!(signature.len(), 44, "base64 of 32 bytes: {signature}");
    // Gemini 3 always thinks; without includeThoughts the thoughts are only counted.
    assert_eq!(reply["usageMetadata"]["thoughtsTokenCount"], 3);

    let history = |call: Value| {
        json!({"tools": tools(), "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            call,
            {"role": "user", "parts": [{"functionResponse": {"name": "edit", "response": {"result": "ok"}}}]}]})
    };
    let (status, _, reply) = generate(&s, "gemini-3-pro-preview", history(call.clone())).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(
        reply["candidates"][0]["content"]["parts"][0]["text"],
        "tool result: ok"
    );
    assert!(reply["candidates"][0]["content"]["parts"][0]["thoughtSignature"].is_string());

    let mut unsigned = call.clone();
    unsigned["parts"][0]
        .as_object_mut()
        .unwrap()
        .remove("thoughtSignature");
    let (status, _, reply) = generate(&s, "gemini-3-pro-preview", history(unsigned.clone())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply,
        json!({"error": {"code": 400, "status": "INVALID_ARGUMENT", "message":
            "Function call is missing a thought_signature in functionCall parts. This is required \
             for tools to work correctly, and missing thought_signature may lead to degraded model \
             performance. Additional data, function call `default_api:edit` , position 2. Please \
             refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."}})
    );
    for dummy in DUMMY_SIGNATURES {
        let mut dummied = unsigned.clone();
        dummied["parts"][0]["thoughtSignature"] = json!(dummy);
        let (status, _, reply) = generate(&s, "gemini-3-flash-preview", history(dummied)).await;
        assert_eq!(status, StatusCode::OK, "{dummy}: {reply}");
    }
    // Only the current turn is checked, and only by Gemini 3.
    let older = json!({"tools": tools(), "contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        unsigned.clone(),
        {"role": "user", "parts": [{"functionResponse": {"name": "edit", "response": {"result": "ok"}}}]},
        {"role": "model", "parts": [{"text": "done"}]},
        {"role": "user", "parts": [{"text": "again"}]}]});
    let (status, _, _) = generate(&s, "gemini-3-pro-preview", older).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = generate(&s, "gemini-2.5-flash", history(unsigned.clone())).await;
    assert_eq!(status, StatusCode::OK);
    // A signature must at least be base64, as the proto's bytes field requires.
    let mut broken = unsigned;
    broken["parts"][0]["thoughtSignature"] = json!("not base64!");
    let (status, _, reply) = generate(&s, "gemini-3-pro-preview", history(broken)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Invalid value at 'contents[1].parts[0].thought_signature' (TYPE_BYTES)"));
}

#[tokio::test]
async fn include_thoughts_puts_a_thought_part_first_and_a_zero_budget_turns_thinking_off() {
    let s = state();
    let mut body = hello();
    body["generationConfig"] =
        json!({"thinkingConfig": {"includeThoughts": true, "thinkingBudget": 1024}});
    let input = tokens(&body);
    let (_, _, reply) = generate(&s, "gemini-2.5-flash", body).await;
    assert_eq!(
        reply["candidates"][0]["content"]["parts"],
        json!([{"text": "Thinking about: hello mock", "thought": true}, {"text": ECHO}])
    );
    let usage = &reply["usageMetadata"];
    assert_eq!(usage["thoughtsTokenCount"], 4);
    assert_eq!(usage["candidatesTokenCount"], 8);
    assert_eq!(usage["totalTokenCount"], input + 8 + 4);

    // Thinking without includeThoughts is counted, not shown; a budget of 0 turns it off.
    let mut body = hello();
    body["generationConfig"] = json!({"thinkingConfig": {"thinkingBudget": 0}});
    let (_, _, reply) = generate(&s, "gemini-2.5-flash", body).await;
    assert!(reply["usageMetadata"].get("thoughtsTokenCount").is_none());
    let (_, _, reply) = generate(&s, "gemini-2.5-flash", hello()).await;
    assert_eq!(
        reply["candidates"][0]["content"]["parts"],
        json!([{"text": ECHO}])
    );
    assert_eq!(reply["usageMetadata"]["thoughtsTokenCount"], 4);
}

#[tokio::test]
async fn max_output_tokens_cuts_the_text_with_max_tokens_and_stop_sequences_cut_it_short() {
    let s = state();
    let mut body = hello();
    body["generationConfig"] = json!({"maxOutputTokens": 3});
    let (_, _, reply) = generate(&s, "gemini-2.0-flash", body).await;
    let candidate = &reply["candidates"][0];
    assert_eq!(candidate["finishReason"], "MAX_TOKENS");
    assert_eq!(candidate["content"]["parts"][0]["text"], "Hello from the");
    assert_eq!(reply["usageMetadata"]["candidatesTokenCount"], 3);
    // Thoughts spend the budget first: nothing is left for the answer.
    let mut body = hello();
    body["generationConfig"] = json!({"maxOutputTokens": 4});
    let (_, _, reply) = generate(&s, "gemini-2.5-flash", body).await;
    assert_eq!(reply["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert_eq!(reply["candidates"][0]["content"], json!({"role": "model"}));
    let mut body = hello();
    body["generationConfig"] = json!({"stopSequences": [" said", "mock."]});
    let (_, _, reply) = generate(&s, "gemini-2.0-flash", body).await;
    assert_eq!(reply["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        reply["candidates"][0]["content"]["parts"][0]["text"],
        "Hello from the "
    );
    let mut body = hello();
    body["generationConfig"] = json!({"candidateCount": 2});
    let (_, _, reply) = generate(&s, "gemini-2.0-flash", body).await;
    assert_eq!(reply["candidates"][1]["index"], 1);
    assert_eq!(reply["candidates"][1]["content"]["parts"][0]["text"], ECHO);
    assert_eq!(reply["usageMetadata"]["candidatesTokenCount"], 16);
}

#[tokio::test]
async fn stream_with_alt_sse_sends_crlf_frames_with_usage_on_each_and_the_finish_on_the_last() {
    let s = state();
    let mut body = hello();
    body["generationConfig"] = json!({"thinkingConfig": {"includeThoughts": true}});
    let input = tokens(&body);
    let (status, headers, bytes) = call(
        &s,
        "POST",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        &[KEY],
        &body.to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    let text = std::str::from_utf8(&bytes).unwrap();
    assert!(text.starts_with("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Thinking\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],"), "{text}");
    let chunks = sse_chunks(&bytes);
    assert_eq!(chunks.len(), 4 + 8);
    let id = &chunks[0]["responseId"];
    for (i, chunk) in chunks.iter().enumerate() {
        assert_eq!(&chunk["responseId"], id);
        assert_eq!(chunk["modelVersion"], "gemini-2.5-flash");
        let usage = &chunk["usageMetadata"];
        assert_eq!(usage["promptTokenCount"], input);
        let thoughts = (i as u64 + 1).min(4);
        let answer = (i as u64).saturating_sub(3);
        assert_eq!(usage["thoughtsTokenCount"], thoughts, "{chunk}");
        assert_eq!(
            usage["totalTokenCount"],
            input + thoughts + answer,
            "{chunk}"
        );
        let last = i == chunks.len() - 1;
        assert_eq!(chunk["candidates"][0].get("finishReason").is_some(), last);
    }
    assert_eq!(
        chunks[0]["candidates"][0]["content"]["parts"][0]["thought"],
        true
    );
    assert_eq!(text_of(&chunks), ECHO);
    assert_eq!(chunks[11]["usageMetadata"]["candidatesTokenCount"], 8);
    assert_eq!(chunks[11]["candidates"][0]["finishReason"], "STOP");
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
async fn stream_without_alt_sse_is_a_json_array_sent_a_response_at_a_time() {
    let s = state();
    let response = router(s.clone())
        .oneshot(request(
            "POST",
            "/v1beta/models/gemini-2.0-flash:streamGenerateContent",
            &[KEY],
            &hello().to_string(),
        ))
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "application/json; charset=UTF-8"
    );
    let mut body = response.into_body();
    let mut pieces = Vec::new();
    while let Some(frame) = body.frame().await {
        pieces.push(frame.unwrap().into_data().unwrap());
    }
    assert_eq!(pieces.len(), 8);
    assert!(pieces[0].starts_with(b"[{\n  \"candidates\""));
    assert!(pieces[1].starts_with(b"\r\n,{\n"));
    assert!(pieces[7].ends_with(b"}\r\n]"));
    let whole: Vec<u8> = pieces.concat();
    let array: Vec<Value> = serde_json::from_slice(&whole).unwrap();
    assert_eq!(array.len(), 8);
    assert_eq!(text_of(&array), ECHO);
    assert_eq!(array[7]["candidates"][0]["finishReason"], "STOP");
    assert_eq!(array[7]["usageMetadata"]["candidatesTokenCount"], 8);

    // A function call streams whole, in one response, signed by Gemini 3.
    let ask = json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}], "tools": tools()});
    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
        &[KEY],
        &ask.to_string(),
    )
    .await;
    let chunks = sse_chunks(&bytes);
    assert_eq!(chunks.len(), 1);
    let part = &chunks[0]["candidates"][0]["content"]["parts"][0];
    assert_eq!(part["functionCall"]["name"], "edit");
    assert!(part["thoughtSignature"].is_string());
}

#[tokio::test]
async fn count_tokens_counts_the_body_or_the_wrapped_request() {
    let s = state();
    let body = hello();
    let (status, _, reply) = post_json(
        &s,
        "/v1beta/models/gemini-2.5-pro:countTokens",
        &[KEY],
        body.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let n = tokens(&body);
    assert_eq!(
        reply,
        json!({"totalTokens": n, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": n}]})
    );
    let mut inner = hello();
    inner["model"] = json!("models/gemini-2.5-pro");
    let wrapped = json!({"generateContentRequest": inner});
    let (status, _, reply) =
        post_json(&s, "/v1/models/gemini-2.5-pro:countTokens", &[KEY], wrapped).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(reply["totalTokens"], tokens(&inner));
    let (status, _, reply) =
        post_json(&s, "/v1beta/models/nope:countTokens", &[KEY], hello()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .ends_with("or is not supported for countTokens. Call ListModels to see the list of available models and their supported methods."));
}

#[tokio::test]
async fn models_are_listed_paged_and_got_in_googles_shape() {
    let s = state();
    let (status, _, bytes) = call(&s, "GET", "/v1beta/models", &[KEY], "").await;
    assert_eq!(status, StatusCode::OK);
    let list: Value = serde_json::from_slice(&bytes).unwrap();
    let models = list["models"].as_array().unwrap();
    assert!(list.get("nextPageToken").is_none());
    let pro = models
        .iter()
        .find(|m| m["name"] == "models/gemini-2.5-pro")
        .unwrap();
    assert_eq!(
        pro,
        &json!({"name": "models/gemini-2.5-pro", "version": "2.5", "displayName": "Gemini 2.5 Pro",
            "description": "Stable release (June 17th, 2025) of Gemini 2.5 Pro",
            "inputTokenLimit": 1_048_576, "outputTokenLimit": 65_536,
            "supportedGenerationMethods": ["generateContent", "countTokens", "createCachedContent", "batchGenerateContent"],
            "temperature": 1.0, "topP": 0.95, "topK": 64, "maxTemperature": 2.0, "thinking": true})
    );
    let (_, _, bytes) = call(
        &s,
        "GET",
        "/v1beta/models?pageSize=2&key=AIza-mock-gemini",
        &[],
        "",
    )
    .await;
    let page: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(page["models"].as_array().unwrap().len(), 2);
    let token = page["nextPageToken"].as_str().unwrap();
    let (_, _, bytes) = call(
        &s,
        "GET",
        &format!("/v1beta/models?pageSize=2&pageToken={token}"),
        &[KEY],
        "",
    )
    .await;
    let next: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(next["models"][0], models[2]);

    let (status, _, bytes) = call(&s, "GET", "/v1beta/models/gemini-2.5-pro", &[KEY], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&serde_json::from_slice::<Value>(&bytes).unwrap(), pro);
    let (status, _, bytes) = call(&s, "GET", "/v1beta/models/gemini-9-ultra", &[KEY], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).unwrap()["name"],
        "models/gemini-9-ultra"
    );
    let (status, _, bytes) = call(&s, "GET", "/v1beta/models/gpt-5", &[KEY], "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).unwrap(),
        json!({"error": {"code": 404, "message": "Model is not found: models/gpt-5 for api version v1beta", "status": "NOT_FOUND"}})
    );

    // `/v1/models` is Gemini's for a client with a Gemini key, OpenAI's otherwise.
    let (_, _, bytes) = call(&s, "GET", "/v1/models", &[KEY], "").await;
    assert!(serde_json::from_slice::<Value>(&bytes).unwrap()["models"].is_array());
    let (_, _, bytes) = call(
        &s,
        "GET",
        "/v1/models",
        &[("authorization", "Bearer sk-mock-openai")],
        "",
    )
    .await;
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).unwrap()["object"],
        "list"
    );
    let (status, _, bytes) = call(
        &s,
        "GET",
        "/v1/models/gpt-5",
        &[("authorization", "Bearer sk-mock-openai")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        serde_json::from_slice::<Value>(&bytes).unwrap()["error"]["type"],
        "invalid_request_error"
    );
}

#[tokio::test]
async fn a_body_google_cannot_read_is_a_400_naming_the_field() {
    let s = state();
    let mut body = hello();
    body["foo"] = json!(1);
    body["generationConfig"] = json!({"max_tokens": 5});
    let (status, _, reply) = generate(&s, "gemini-2.5-pro", body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let first = "Invalid JSON payload received. Unknown name \"foo\": Cannot find field.";
    let second = "Invalid JSON payload received. Unknown name \"max_tokens\" at 'generation_config': Cannot find field.";
    assert_eq!(
        reply,
        json!({"error": {"code": 400, "message": format!("{first}\n{second}"), "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [
                {"description": first}, {"field": "generation_config", "description": second}]}]}})
    );
    let (status, _, bytes) = call(&s, "POST", FLASH_2, &[KEY], "{not json").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let reply: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Invalid JSON payload received."));
    let (status, _, reply) = generate(&s, "gemini-2.5-pro", json!({"contents": []})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply,
        json!({"error": {"code": 400, "message": "* GenerateContentRequest.contents: contents is not specified\n",
                         "status": "INVALID_ARGUMENT"}})
    );
    let (_, _, reply) = generate(
        &s,
        "gemini-2.5-pro",
        json!({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}),
    )
    .await;
    assert_eq!(
        reply["error"]["message"],
        "Please use a valid role: user, model."
    );
    let orphan = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "edit", "response": {}}}]}]});
    let (status, _, reply) = generate(&s, "gemini-2.5-pro", orphan).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply["error"]["message"],
        "Please ensure that function response turn comes immediately after a function call turn."
    );
}

#[tokio::test]
async fn an_unknown_model_is_a_404_for_the_api_version_and_method_asked() {
    let s = state();
    let (status, _, reply) =
        post_json(&s, "/v1beta/models/gpt-4o:generateContent", &[KEY], hello()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        reply,
        json!({"error": {"code": 404, "status": "NOT_FOUND", "message":
            "models/gpt-4o is not found for API version v1beta, or is not supported for \
             generateContent. Call ListModels to see the list of available models and their \
             supported methods."}})
    );
    // The array stream sends even its errors as an array.
    let (status, _, bytes) = call(
        &s,
        "POST",
        "/v1/models/gpt-4o:streamGenerateContent",
        &[KEY],
        &hello().to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(bytes.starts_with(b"[{\n  \"error\""));
    let array: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(array[0]["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("models/gpt-4o is not found for API version v1, or is not supported for streamGenerateContent."));
    // Tuned models and any `gemini-*` or `gemma-*` name are served.
    for path in [
        "/v1beta/tunedModels/my-tune:generateContent",
        "/v1beta/models/gemma-3-4b-it:generateContent",
    ] {
        let (status, _, _) = post_json(&s, path, &[KEY], hello()).await;
        assert_eq!(status, StatusCode::OK, "{path}");
    }
    let (status, _, reply) = post_json(
        &s,
        "/v1beta/models/gemini-2.5-pro:embedContent",
        &[KEY],
        hello(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(reply["error"]["status"], "NOT_FOUND");
    let (status, _, reply) = post_json(&s, "/v1beta/files", &[KEY], hello()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(reply["error"]["code"], 404);
}

#[tokio::test]
async fn error_status_header_answers_in_googles_shape_with_retry_info_on_429() {
    let s = state();
    for (status, name, message) in [
        (400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
        (401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."),
        (403, "PERMISSION_DENIED", "The caller does not have permission"),
        (404, "NOT_FOUND", "models/gemini-2.0-flash is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."),
        (500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"),
        (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        (504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
    ] {
        let code = status.to_string();
        let (got, headers, reply) = post_json(&s, FLASH_2, &[KEY, ("x-mock-error-status", &code)], hello()).await;
        assert_eq!(got.as_u16(), status);
        assert_eq!(reply, json!({"error": {"code": status, "message": message, "status": name}}));
        assert!(!headers.contains_key("retry-after"));
    }
    let (got, headers, reply) = post_json(
        &s,
        FLASH_2,
        &[
            KEY,
            ("x-mock-error-status", "429"),
            ("x-mock-retry-after", "41"),
        ],
        hello(),
    )
    .await;
    assert_eq!(got, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(headers["retry-after"], "41");
    let error = &reply["error"];
    assert_eq!(error["status"], "RESOURCE_EXHAUSTED");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .starts_with("You exceeded your current quota"));
    let details = error["details"].as_array().unwrap();
    assert_eq!(
        details[0]["@type"],
        "type.googleapis.com/google.rpc.QuotaFailure"
    );
    assert_eq!(
        details[0]["violations"][0]["quotaDimensions"]["model"],
        "gemini-2.0-flash"
    );
    assert_eq!(
        details[2],
        json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "41s"})
    );
    // A wrong key is refused before any injected error.
    let (got, _, _) = post_json(
        &s,
        FLASH_2,
        &[("x-goog-api-key", "x"), ("x-mock-error-status", "503")],
        hello(),
    )
    .await;
    assert_eq!(got, StatusCode::BAD_REQUEST);
    assert_eq!(
        s.faults().injected,
        [
            (400, 1),
            (401, 1),
            (403, 1),
            (404, 1),
            (429, 1),
            (500, 1),
            (503, 1),
            (504, 1)
        ]
        .into()
    );
}

#[tokio::test]
async fn stream_error_header_ends_each_stream_form_with_a_google_error_after_n_responses() {
    let s = state();
    let error_after = ("x-mock-stream-error-after", "2");
    let (status, _, bytes) = call(
        &s,
        "POST",
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
        &[KEY, error_after],
        &hello().to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let text = std::str::from_utf8(&bytes).unwrap();
    assert!(text.ends_with("data: {\"error\": {\"code\": 503,\"message\": \"The model is overloaded. Please try again later.\",\"status\": \"UNAVAILABLE\"}}\r\n\r\n"), "{text}");
    let chunks = sse_chunks(&bytes);
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[2]["error"]["status"], "UNAVAILABLE");

    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent",
        &[KEY, error_after],
        &hello().to_string(),
    )
    .await;
    let array: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(array.len(), 3);
    assert_eq!(array[2]["error"]["code"], 503);
    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent",
        &[KEY, ("x-mock-stream-error-after", "0")],
        &hello().to_string(),
    )
    .await;
    let array: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(array.len(), 1);
    assert_eq!(s.faults().stream_errors, 3);
}

#[tokio::test]
async fn malformed_header_breaks_one_piece_of_either_stream_form() {
    let s = state();
    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
        &[KEY, ("x-mock-malformed-after", "1")],
        &hello().to_string(),
    )
    .await;
    let text = std::str::from_utf8(&bytes).unwrap();
    let frames: Vec<&str> = text
        .trim_end_matches("\r\n\r\n")
        .split("\r\n\r\n")
        .collect();
    assert_eq!(frames.len(), 9);
    let broken = frames[1].strip_prefix("data: ").unwrap();
    assert!(serde_json::from_str::<Value>(broken).is_err(), "{broken}");
    assert!(frames[2].starts_with(frames[1]));

    let (_, _, bytes) = call(
        &s,
        "POST",
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent",
        &[KEY, ("x-mock-malformed-after", "1")],
        &hello().to_string(),
    )
    .await;
    assert!(serde_json::from_slice::<Value>(&bytes).is_err());
    assert!(!String::from_utf8_lossy(&bytes).contains("data: "));
    assert_eq!(s.faults().malformed, 2);
}

#[tokio::test]
async fn reset_drop_and_fail_every_reach_the_gemini_routes() {
    let s = MockState::new(MockConfig {
        fail_status: Some(StatusCode::SERVICE_UNAVAILABLE),
        fail_every: 3,
        ..MockConfig::default()
    });
    let mock = Running::start(&s).await;
    let response = mock
        .send(
            "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
            &[KEY, ("x-mock-reset-after", "2")],
            hello(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let mut seen = Vec::new();
    loop {
        match body.frame().await {
            Some(Ok(frame)) => seen.extend_from_slice(&frame.into_data().unwrap()),
            Some(Err(_)) => break,
            None => panic!("clean end after {seen:?}"),
        }
    }
    assert_eq!(sse_chunks(&seen).len(), 2);
    let error = mock
        .send(FLASH_2, &[KEY, ("x-mock-drop", "1")], hello())
        .await
        .unwrap_err();
    assert!(error.is_incomplete_message(), "{error:?}");
    let response = mock.send(FLASH_2, &[KEY], hello()).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let reply: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(reply["error"]["status"], "UNAVAILABLE");
    eventually(&s, |f| f.reset == 1 && f.dropped == 1).await;
    mock.stop().await;
}

#[tokio::test]
async fn frame_interval_and_delay_apply_to_gemini_streams() {
    let s = state();
    let started = std::time::Instant::now();
    let (status, headers, bytes) = call(
        &s,
        "POST",
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
        &[
            KEY,
            ("x-mock-frame-interval-ms", "5"),
            ("x-mock-delay-ms", "20"),
        ],
        &hello().to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(sse_chunks(&bytes).len(), 8);
    assert!(started.elapsed() >= Duration::from_millis(20 + 7 * 5));
    assert_eq!(headers["server-timing"], "gfet4t7; dur=20");
}

#[tokio::test]
async fn gemini_requests_are_captured_with_their_query() {
    let s = state();
    post_json(
        &s,
        "/v1beta/models/gemini-2.5-pro:generateContent?key=AIza-mock-gemini",
        &[("x-trace", "g")],
        hello(),
    )
    .await;
    let (_, _, bytes) = call(&s, "GET", "/_mock/requests", &[], "").await;
    let listed: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let first = &listed[0];
    assert_eq!(first["method"], "POST");
    assert_eq!(
        first["path"],
        "/v1beta/models/gemini-2.5-pro:generateContent"
    );
    assert_eq!(
        first["path_and_query"],
        "/v1beta/models/gemini-2.5-pro:generateContent?key=AIza-mock-gemini"
    );
    assert_eq!(first["headers"]["x-trace"], "g");
    assert_eq!(first["body"], hello().to_string());
    assert_eq!(s.faults().statuses, [(200, 1)].into());
}

#[tokio::test]
async fn cached_tokens_come_from_the_header_or_the_played_implicit_cache() {
    let (_, _, reply) = post_json(
        &state(),
        FLASH_2,
        &[KEY, ("x-mock-cached-tokens", "3")],
        hello(),
    )
    .await;
    let usage = &reply["usageMetadata"];
    assert_eq!(usage["cachedContentTokenCount"], 3);
    assert_eq!(
        usage["cacheTokensDetails"],
        json!([{"modality": "TEXT", "tokenCount": 3}])
    );

    let s = MockState::new(MockConfig {
        prompt_cache: true,
        ..MockConfig::default()
    });
    let system = json!({"parts": [{"text": "s".repeat(6000)}]});
    let first = json!({"systemInstruction": system, "contents": [{"role": "user", "parts": [{"text": "q1"}]}]});
    let (_, _, reply) = post_json(&s, FLASH_2, &[KEY], first.clone()).await;
    assert!(reply["usageMetadata"]
        .get("cachedContentTokenCount")
        .is_none());
    let mut second = first.clone();
    second["contents"].as_array_mut().unwrap().extend([
        json!({"role": "model", "parts": [{"text": "a1"}]}),
        json!({"role": "user", "parts": [{"text": "q2"}]}),
    ]);
    let (_, _, reply) = post_json(&s, FLASH_2, &[KEY], second).await;
    let cached = reply["usageMetadata"]["cachedContentTokenCount"]
        .as_u64()
        .unwrap();
    assert!(cached > 1500 && cached < tokens(&first), "{cached}");
}

#[test]
fn responses_are_compact_with_googles_spacing_in_sse_and_pretty_elsewhere() {
    let frame = super::sse_frame(&json!({"a": [1, {"b": "c"}]}));
    assert_eq!(&frame[..], b"data: {\"a\": [1,{\"b\": \"c\"}]}\r\n\r\n");
    let pieces = super::array_frames(&[json!({"a": 1}), json!({"a": 2})]);
    assert_eq!(
        pieces,
        [
            Bytes::from("[{\n  \"a\": 1\n}"),
            Bytes::from("\r\n,{\n  \"a\": 2\n}\r\n]")
        ]
    );
    assert_eq!(crate::percent_decode("a%2Fb+c%zz"), "a/b c%zz");
}

#[tokio::test]
async fn asked_for_json_the_answer_is_json_of_the_schema() {
    let s = MockState::new(MockConfig::default());
    let mut body = hello();
    body["generationConfig"] = json!({"responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object", "properties": {
            "reasoning": {"type": "string"}, "model_choice": {"type": "string", "enum": ["flash", "pro"]},
            "extra": {"type": "integer"}}, "required": ["reasoning", "model_choice"]}});
    let (status, _, answer) = generate(&s, "gemini-2.5-flash", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let text = answer["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["thought"] != true)
        .filter_map(|p| p["text"].as_str())
        .collect::<String>();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["model_choice"], "flash");
    assert!(value["reasoning"].is_string());
    assert!(value.get("extra").is_none(), "only what is required");
}
