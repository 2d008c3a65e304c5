//! The Gemini codec: its own round trip, the other dialects through it and back, what it
//! refuses and reports, thought signatures, streams both ways, errors and usage.

use serde_json::{json, Value};

use super::*;
use crate::dialect::Dialect;
use crate::provider::ProviderKind;
use crate::translate::compat::{Policy, Report};
use crate::translate::ir::{
    MediaSource, Part, Reasoning, Request, ResponseFormat, Role, StopReason, ToolChoice,
};
use crate::translate::stream::{Decoder, Encoder, Event};
use crate::translate::{self as t, chat, messages, responses};
use crate::usage::{StreamUsage, Usage};

fn report() -> Report {
    Report::new(Dialect::Gemini)
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

fn decode(v: &Value) -> Request {
    decode_request(&bytes(v), Policy::default(), &mut report()).unwrap()
}

fn encode(req: &Request) -> Value {
    serde_json::from_slice(&encode_request(req, &mut report()).unwrap()).unwrap()
}

/// A request for a Gemini provider as a Gemini client would send it back: the signatures
/// of another provider it was given wrapped ([`wrap_signature`]), the stand-ins as they are.
fn as_client_sends(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, item)| {
                    let item = match (k.as_str(), item.as_str()) {
                        ("thoughtSignature", Some(sig)) if sig != DUMMY_SIGNATURE => {
                            json!(wrap_signature(sig))
                        }
                        _ => as_client_sends(item),
                    };
                    (k.clone(), item)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(as_client_sends).collect()),
        other => other.clone(),
    }
}

/// `req` for `model` (the gateway sets it from the route before encoding).
fn for_model(req: &Request, model: &str) -> Request {
    Request {
        model: model.into(),
        ..req.clone()
    }
}

fn refusal(v: &Value, policy: Policy) -> String {
    decode_request(&bytes(v), policy, &mut report())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// A Gemini CLI–style request: a system instruction, tools in both schema forms, an image,
/// a signed thinking turn with a call (no id, as Gemini 2.5 sends them), its response,
/// and generation settings.
fn rich() -> Value {
    json!({
        "systemInstruction": {"parts": [{"text": "You are a coding agent."}, {"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [
                {"text": "What fails here?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/spec.pdf"}}]},
            {"role": "model", "parts": [
                {"text": "Run the tests first.", "thought": true},
                {"text": "Running them.", "thoughtSignature": "CiQBsig1"},
                {"functionCall": {"name": "run_tests", "args": {"path": "tests/"}}},
                {"functionCall": {"name": "read_file", "args": {"path": "src/lib.rs"}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "run_tests", "response": {"error": "1 failed"}}},
                {"functionResponse": {"name": "read_file", "response": {"output": "pub fn parse() {}"}}},
                {"text": "Fix it."}]}
        ],
        "tools": [{"functionDeclarations": [
            {"name": "run_tests", "description": "Run the test suite",
             "parametersJsonSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
            {"name": "read_file", "description": "Read a file",
             "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING"}, "limit": {"type": "INTEGER", "nullable": true}}, "required": ["path"]}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"maxOutputTokens": 1024, "temperature": 0.2, "topP": 0.9,
            "stopSequences": ["END"], "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true}}
    })
}

#[test]
fn a_gemini_request_round_trips_through_the_ir() {
    let ir = decode(&rich());
    assert_eq!(ir.model, "", "the model is the URL's");
    assert!(!ir.stream, "the stream is the URL's");
    assert_eq!(ir.system.len(), 2);
    assert_eq!(ir.reasoning, Some(Reasoning::Budget(2048)));
    assert_eq!(ir.stop, ["END"]);
    assert_eq!(ir.max_tokens, Some(1024));
    assert_eq!(ir.tool_choice, Some(ToolChoice::Auto));
    // Gemini's own signature goes to no other provider, which could not check it: the
    // thought stays, unsigned.
    assert_eq!(
        ir.messages[1].parts[0],
        Part::Thinking {
            text: "Run the tests first.".into(),
            signature: None
        }
    );
    for model in ["gemini-2.5-pro", "gemini-3-pro-preview", ""] {
        let out = encode(&for_model(&ir, model));
        assert!(out.get("model").is_none() && out.get("stream").is_none());
        let again = decode(&out);
        assert_eq!(again, ir, "{model}: {out}");
    }
    // The thought and another provider's signature on the part after it (as a Gemini
    // client sends back what it was given) are one signed thinking, and the signature goes
    // back on the part it came on.
    let mut signed = rich();
    signed["contents"][1]["parts"][1]["thoughtSignature"] = json!(wrap_signature("CiQBsig1"));
    let ir = decode(&signed);
    assert_eq!(
        ir.messages[1].parts[0],
        Part::Thinking {
            text: "Run the tests first.".into(),
            signature: Some("CiQBsig1".into())
        }
    );
    let out = encode(&ir);
    assert_eq!(
        out["contents"][1]["parts"][1],
        json!({"text": "Running them.", "thoughtSignature": "CiQBsig1"})
    );
    assert_eq!(
        out["contents"][1]["parts"][0],
        json!({"text": "Run the tests first.", "thought": true})
    );
}

#[test]
fn snake_case_keys_read_as_their_camel_case_twins() {
    let snake = json!({
        "system_instruction": {"parts": [{"text": "sys"}]},
        "contents": [{"role": "user", "parts": [
            {"text": "look"},
            {"inline_data": {"mime_type": "image/jpeg", "data": "AAAA"}}]}],
        "generation_config": {"max_output_tokens": 9, "stop_sequences": ["x"],
            "thinking_config": {"thinking_budget": -1}},
        "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["f"]}},
        "tools": [{"function_declarations": [{"name": "f"}]}]
    });
    let mut r = report();
    let ir = decode_request(&bytes(&snake), Policy { strict: true }, &mut r).unwrap();
    assert!(r.is_empty(), "{:?}", r.dropped());
    assert_eq!(ir.system[0].text, "sys");
    assert_eq!(ir.max_tokens, Some(9));
    assert_eq!(ir.reasoning, Some(Reasoning::Adaptive));
    assert_eq!(ir.tool_choice, Some(ToolChoice::Named("f".into())));
    assert_eq!(
        ir.tools[0].schema,
        json!({"type": "object", "properties": {}})
    );
    assert!(matches!(
        &ir.messages[0].parts[1],
        Part::Image { source: MediaSource::Base64 { media_type, .. }, .. } if media_type == "image/jpeg"
    ));
}

#[test]
fn calls_without_ids_get_stable_ones_and_responses_find_their_call_by_name() {
    let ir = decode(&rich());
    let ids: Vec<&str> = ir.messages[1]
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_0", "call_1"]);
    let results: Vec<(&str, bool, &Vec<Part>)> = ir.messages[2]
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult {
                call_id,
                is_error,
                content,
                ..
            } => Some((call_id.as_str(), *is_error, content)),
            _ => None,
        })
        .collect();
    assert_eq!(results[0].0, "call_0");
    assert!(results[0].1, "an `error` response is a failed call");
    assert_eq!(results[1].0, "call_1");
    assert!(!results[1].1);
    assert!(matches!(&results[1].2[0], Part::Text(t) if t.text == "pub fn parse() {}"));
    // Ids Gemini gave are kept; a response names its call by id before name.
    let with_ids = json!({"contents": [
        {"role": "model", "parts": [
            {"functionCall": {"id": "a", "name": "f", "args": {}}},
            {"functionCall": {"id": "b", "name": "f", "args": {}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "b", "name": "f", "response": {"result": {"n": 1}}}},
            {"functionResponse": {"name": "f", "response": {"x": 1, "y": 2}}}]}]});
    let ir = decode(&with_ids);
    let Part::ToolResult {
        call_id, content, ..
    } = &ir.messages[1].parts[0]
    else {
        panic!("{ir:?}")
    };
    assert_eq!(call_id, "b");
    assert!(matches!(&content[0], Part::Text(t) if t.text == r#"{"n":1}"#));
    let Part::ToolResult {
        call_id, content, ..
    } = &ir.messages[1].parts[1]
    else {
        panic!("{ir:?}")
    };
    assert_eq!(call_id, "a", "the first open call of that name");
    assert!(matches!(&content[0], Part::Text(t) if t.text == r#"{"x":1,"y":2}"#));
}

const CHAT: &str = r#"{"model":"m","messages":[
    {"role":"system","content":"sys"},
    {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
    {"role":"assistant","content":"On it.","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"one"},
    {"role":"tool","tool_call_id":"c2","content":"two"},
    {"role":"user","content":"and?"}],
    "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","additionalProperties":false}}},
             {"type":"function","function":{"name":"g","description":"G","parameters":{"type":"object"}}}],
    "tool_choice":"required","max_tokens":50,"stop":"END","temperature":0.2,"reasoning_effort":"high"}"#;

#[test]
fn chat_reaches_gemini_and_comes_back_with_images_calls_and_results() {
    let ir = chat::decode_request(CHAT.as_bytes(), Policy::default(), &mut report()).unwrap();
    let out = encode(&for_model(&ir, "gemini-2.5-flash"));
    assert_eq!(
        out["systemInstruction"],
        json!({"parts": [{"text": "sys"}]})
    );
    assert_eq!(
        out["contents"][0]["parts"][1],
        json!({"inlineData": {"mimeType": "image/png", "data": "AAAA"}})
    );
    assert_eq!(
        out["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "On it."},
            {"functionCall": {"id": "c1", "name": "f", "args": {"a": 1}}},
            {"functionCall": {"id": "c2", "name": "g", "args": {}}}]})
    );
    // Results are named after their calls; the user's text joins their turn.
    assert_eq!(
        out["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"id": "c1", "name": "f", "response": {"output": "one"}}},
            {"functionResponse": {"id": "c2", "name": "g", "response": {"output": "two"}}},
            {"text": "and?"}]})
    );
    assert_eq!(
        out["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"],
        json!({"type": "object", "additionalProperties": false})
    );
    assert_eq!(
        out["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    assert_eq!(
        out["generationConfig"],
        json!({"maxOutputTokens": 50, "temperature": 0.2, "stopSequences": ["END"],
               "thinkingConfig": {"thinkingBudget": 16384, "includeThoughts": true}})
    );
    let back = decode(&out);
    assert_eq!(back.messages, ir.messages);
    assert_eq!(back.tools, ir.tools);
}

#[test]
fn messages_thinking_signatures_and_error_results_survive_gemini() {
    let body = json!({"model": "m", "max_tokens": 9,
        "messages": [
          {"role": "user", "content": "q"},
          {"role": "assistant", "content": [
              {"type": "thinking", "thinking": "t", "signature": "sig=="},
              {"type": "tool_use", "id": "u1", "name": "f", "input": {"x": [1]}}]},
          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "is_error": true, "content": "boom"}]}]});
    let ir = messages::decode_request(&bytes(&body), Policy::default(), &mut report()).unwrap();
    let out = encode(&for_model(&ir, "gemini-3-pro-preview"));
    // The signature is the call's: no stand-in where a real one is.
    assert_eq!(
        out["contents"][1]["parts"],
        json!([{"text": "t", "thought": true},
               {"functionCall": {"id": "u1", "name": "f", "args": {"x": [1]}}, "thoughtSignature": "sig=="}])
    );
    assert_eq!(
        out["contents"][2]["parts"][0]["functionResponse"]["response"],
        json!({"error": "boom"})
    );
    assert_eq!(decode(&as_client_sends(&out)).messages, ir.messages);
}

#[test]
fn responses_reasoning_and_calls_survive_gemini() {
    let body = json!({"model": "m", "input": [
        {"role": "user", "content": "fix it"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "CiQBenc"},
        {"type": "function_call", "call_id": "c1", "name": "apply_patch", "arguments": "{\"input\":\"*** Begin\"}"},
        {"type": "function_call_output", "call_id": "c1", "output": "Done."},
        {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "https://example.com/a.png"}]}]});
    let ir = responses::decode_request(&bytes(&body), Policy::default(), &mut report()).unwrap();
    let out = encode(&for_model(&ir, "gemini-2.5-pro"));
    assert_eq!(
        out["contents"][1]["parts"][1]["thoughtSignature"],
        "CiQBenc"
    );
    assert_eq!(
        out["contents"][2]["parts"][1],
        json!({"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/a.png"}})
    );
    let sent_back = decode(&as_client_sends(&out));
    assert_eq!(sent_back.messages, ir.messages);
    // And the other way: what a Gemini client sends reaches Responses with its signature.
    let back: Value = serde_json::from_slice(
        &responses::encode_request(&sent_back, ProviderKind::OpenAi, &mut report()).unwrap(),
    )
    .unwrap();
    assert_eq!(back["input"][1]["encrypted_content"], "CiQBenc");
    assert_eq!(back["input"][1]["summary"][0]["text"], "plan");
}

#[test]
fn gemini_3_gets_a_stand_in_signature_on_the_first_call_of_each_step() {
    let ir = chat::decode_request(CHAT.as_bytes(), Policy::default(), &mut report()).unwrap();
    let three = encode(&for_model(&ir, "gemini-3-pro-preview"));
    let parts = &three["contents"][1]["parts"];
    assert!(
        parts[0].get("thoughtSignature").is_none(),
        "text needs none"
    );
    assert_eq!(parts[1]["thoughtSignature"], DUMMY_SIGNATURE);
    assert!(
        parts[2].get("thoughtSignature").is_none(),
        "only the first call"
    );
    // Gemini 3 takes a level, not a budget.
    assert_eq!(
        three["generationConfig"]["thinkingConfig"],
        json!({"thinkingLevel": "high", "includeThoughts": true})
    );
    let two = encode(&for_model(&ir, "models/gemini-2.5-pro"));
    assert!(two["contents"][1]["parts"][1]
        .get("thoughtSignature")
        .is_none());
    // A name without a version is signed too: no Gemini refuses the stand-in.
    let latest = encode(&for_model(&ir, "gemini-flash-latest"));
    assert_eq!(
        latest["contents"][1]["parts"][1]["thoughtSignature"],
        DUMMY_SIGNATURE
    );
    // The stand-in is no signature: it reads back as nothing.
    assert_eq!(decode(&three).messages, ir.messages);
}

#[test]
fn model_names_say_which_gemini() {
    assert_eq!(Generation::of("gemini-3-pro-preview"), Generation::Three);
    assert_eq!(Generation::of("models/gemini-3.1-flash"), Generation::Three);
    assert_eq!(Generation::of("gemini-2.5-flash-lite"), Generation::Legacy);
    assert_eq!(Generation::of("gemma-3-27b-it"), Generation::Legacy);
    assert_eq!(Generation::of("gemini-flash-latest"), Generation::Unknown);
    assert_eq!(Generation::of("any-model"), Generation::Unknown);
}

#[test]
fn thinking_is_asked_for_the_way_each_gemini_takes_it() {
    let thinking = |reasoning: Option<Reasoning>, model: &str| {
        let req = Request {
            model: model.into(),
            reasoning,
            ..Request::default()
        };
        encode(&req)["generationConfig"]["thinkingConfig"].clone()
    };
    assert_eq!(
        thinking(
            Some(Reasoning::Effort("minimal".into())),
            "gemini-3-pro-preview"
        ),
        json!({"thinkingLevel": "low", "includeThoughts": true})
    );
    assert_eq!(
        thinking(Some(Reasoning::Effort("medium".into())), "gemini-2.5-pro"),
        json!({"thinkingBudget": 4096, "includeThoughts": true})
    );
    assert_eq!(
        thinking(Some(Reasoning::Budget(3000)), "gemini-3-pro-preview"),
        json!({"thinkingBudget": 3000, "includeThoughts": true})
    );
    assert_eq!(
        thinking(Some(Reasoning::Adaptive), "gemini-2.5-pro"),
        json!({"thinkingBudget": -1, "includeThoughts": true})
    );
    assert_eq!(
        thinking(Some(Reasoning::Adaptive), "gemini-3-pro-preview"),
        json!({"includeThoughts": true})
    );
    assert_eq!(thinking(None, "gemini-3-pro-preview"), Value::Null);
    // And read back.
    let read = |config: Value| {
        decode(&json!({"contents": [], "generationConfig": {"thinkingConfig": config}})).reasoning
    };
    assert_eq!(read(json!({"thinkingBudget": 0})), None);
    assert_eq!(
        read(json!({"thinkingBudget": -1})),
        Some(Reasoning::Adaptive)
    );
    assert_eq!(
        read(json!({"thinkingBudget": 512})),
        Some(Reasoning::Budget(512))
    );
    assert_eq!(
        read(json!({"thinkingLevel": "HIGH"})),
        Some(Reasoning::Effort("high".into()))
    );
    assert_eq!(
        read(json!({"includeThoughts": true})),
        Some(Reasoning::Adaptive)
    );
    let err = refusal(
        &json!({"contents": [], "generationConfig": {"thinkingConfig": {"thinkingLevel": "extreme"}}}),
        Policy::default(),
    );
    assert!(err.contains("thinkingLevel"), "{err}");
}

#[test]
fn what_cannot_cross_is_refused_by_name_and_what_need_not_is_reported() {
    let base = |extra: Value| {
        let mut v = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
        if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
            o.extend(e);
        }
        v
    };
    for (body, named) in [
        (
            json!({"cachedContent": "cachedContents/abc"}),
            "`cachedContent`",
        ),
        (
            json!({"generationConfig": {"responseMimeType": "text/x.enum"}}),
            "generationConfig.responseMimeType",
        ),
        (
            json!({"generationConfig": {"candidateCount": 2}}),
            "candidateCount",
        ),
        (
            json!({"generationConfig": {"responseModalities": ["TEXT", "IMAGE"]}}),
            "responseModalities",
        ),
    ] {
        let err = refusal(&base(body), Policy::default());
        assert!(err.contains(named), "{named}: {err}");
    }
    for (part, named) in [
        (
            json!({"inlineData": {"mimeType": "audio/mp3", "data": "AAAA"}}),
            "audio/mp3",
        ),
        (
            json!({"fileData": {"fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}}),
            "Files API",
        ),
        (
            json!({"executableCode": {"language": "PYTHON", "code": "1"}}),
            "executableCode",
        ),
    ] {
        let err = refusal(
            &json!({"contents": [{"role": "user", "parts": [part]}]}),
            Policy::default(),
        );
        assert!(err.contains(named), "{named}: {err}");
    }
    // Google's own tools: left out and reported, or refused under `strict`.
    let body = base(json!({
        "tools": [{"googleSearch": {}}, {"codeExecution": {}, "functionDeclarations": [{"name": "f", "behavior": "BLOCKING"}]}],
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "generationConfig": {"topK": 40, "seed": 7, "responseModalities": ["TEXT"], "candidateCount": 1, "brandNew": 1},
        "toolConfig": {"retrievalConfig": {"languageCode": "en"}}
    }));
    let mut r = report();
    let ir = decode_request(&bytes(&body), Policy::default(), &mut r).unwrap();
    assert_eq!(ir.tools.len(), 1);
    let mut dropped = r.dropped().to_vec();
    dropped.sort();
    assert_eq!(
        dropped,
        [
            "generationConfig.brandNew",
            "generationConfig.seed",
            "generationConfig.topK",
            "safetySettings",
            "toolConfig.retrievalConfig",
            "tools.functionDeclarations.behavior",
            "tools[codeExecution]",
            "tools[googleSearch]",
        ]
    );
    let err = refusal(&body, Policy { strict: true });
    assert!(err.contains("generationConfig.brandNew"), "{err}");
    let err = refusal(
        &base(json!({"tools": [{"googleSearch": {}}]})),
        Policy { strict: true },
    );
    assert!(err.contains("googleSearch"), "{err}");
}

#[test]
fn what_gemini_has_no_place_for_is_reported_in_the_clients_words() {
    let body = json!({"model": "m", "user": "u-1", "verbosity": "low", "parallel_tool_calls": false,
        "prompt_cache_key": "k", "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]});
    let ir = chat::decode_request(&bytes(&body), Policy::default(), &mut report()).unwrap();
    let mut r = Report::new(Dialect::OpenAiChat);
    encode_request(&ir, &mut r).unwrap();
    assert_eq!(r.dropped(), ["verbosity", "user", "parallel_tool_calls"]);
    // From Anthropic, the same user id is its `metadata.user_id`.
    let mut r = Report::new(Dialect::AnthropicMessages);
    encode_request(&ir, &mut r).unwrap();
    assert!(r.dropped().contains(&"metadata.user_id".to_owned()));
}

#[test]
fn media_gemini_cannot_fetch_or_results_without_calls_are_refused() {
    let mut ir = decode(&json!({"contents": [{"role": "user", "parts": [{"text": "x"}]}]}));
    ir.messages[0].parts.push(Part::Image {
        source: MediaSource::Url("ftp://host/a.png".into()),
        cache_control: None,
    });
    let err = encode_request(&ir, &mut report())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("URL"), "{err}");
    ir.messages[0].parts[1] = Part::ToolResult {
        call_id: "nowhere".into(),
        content: Vec::new(),
        is_error: false,
        cache_control: None,
    };
    let err = encode_request(&ir, &mut report())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("nowhere"), "{err}");
    // A plain-text document (Anthropic's) goes as its text.
    ir.messages[0].parts[1] = Part::Document {
        source: MediaSource::Text("the spec".into()),
        filename: None,
        cache_control: None,
    };
    assert_eq!(
        encode(&ir)["contents"][0]["parts"][1],
        json!({"text": "the spec"})
    );
}

#[test]
fn openapi_parameters_become_json_schema() {
    let ir = decode(&rich());
    assert_eq!(
        ir.tools[1].schema,
        json!({"type": "object", "properties": {"path": {"type": "string"},
               "limit": {"type": ["integer", "null"]}}, "required": ["path"]})
    );
}

fn gemini_response() -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "The parser rejects empty input.", "thought": true},
            {"text": "I'll read the parser.", "thoughtSignature": "CiQBresp"},
            {"functionCall": {"name": "read_file", "args": {"path": "src/parse.rs"}}}]},
            "finishReason": "STOP", "index": 0, "safetyRatings": []}],
        "usageMetadata": {"promptTokenCount": 1117, "candidatesTokenCount": 34, "totalTokenCount": 1163,
            "cachedContentTokenCount": 1024, "thoughtsTokenCount": 12},
        "modelVersion": "gemini-2.5-pro",
        "responseId": "resp-abc"
    })
}

#[test]
fn a_gemini_response_reads_into_the_ir_and_back() {
    let ir = decode_response(&bytes(&gemini_response())).unwrap();
    assert_eq!(
        (ir.id.as_str(), ir.model.as_str()),
        ("resp-abc", "gemini-2.5-pro")
    );
    assert_eq!(ir.stop, StopReason::ToolUse);
    assert_eq!(
        ir.usage,
        Usage {
            input: 1117,
            output: 46,
            cache_read: 1024,
            cache_write: 0,
            reasoning: 12
        }
    );
    assert_eq!(
        ir.parts[0],
        Part::Thinking {
            text: "The parser rejects empty input.".into(),
            signature: Some("CiQBresp".into())
        }
    );
    assert!(
        matches!(&ir.parts[2], Part::ToolCall { id, .. } if id == "call_resp-abc_0"),
        "{:?}",
        ir.parts
    );
    let out: Value = serde_json::from_slice(&encode_response(&ir).unwrap()).unwrap();
    assert_eq!(out["candidates"][0]["finishReason"], "STOP");
    assert_eq!(out["candidates"][0]["content"]["role"], "model");
    assert_eq!(out["usageMetadata"]["candidatesTokenCount"], 34);
    assert_eq!(out["usageMetadata"]["totalTokenCount"], 1163);
    let again = decode_response(&serde_json::to_vec(&out).unwrap()).unwrap();
    assert_eq!(again, ir);
    // To an Anthropic client: signed thinking, then text, then the call.
    let anthropic: Value =
        serde_json::from_slice(&messages::encode_response(&ir).unwrap()).unwrap();
    assert_eq!(anthropic["content"][0]["signature"], "CiQBresp");
    assert_eq!(anthropic["stop_reason"], "tool_use");
    assert_eq!(anthropic["usage"]["cache_read_input_tokens"], 1024);
}

#[test]
fn another_providers_answer_reaches_a_gemini_client_in_googles_shape() {
    let chat = json!({"id": "chatcmpl-1", "model": "gpt-5", "choices": [{"index": 0, "message": {"role": "assistant",
        "content": "Reading.", "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 2}}});
    let ir = chat::decode_response(&bytes(&chat)).unwrap();
    let out: Value = serde_json::from_slice(&encode_response(&ir).unwrap()).unwrap();
    assert_eq!(
        out,
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"text": "Reading."},
            {"functionCall": {"id": "call_9", "name": "read_file", "args": {"path": "a"}}, "thoughtSignature": DUMMY_SIGNATURE}]},
            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 15,
                "cachedContentTokenCount": 4, "thoughtsTokenCount": 2},
            "modelVersion": "gpt-5", "responseId": "chatcmpl-1"})
    );
    let invalid = t::ir::Response {
        parts: vec![Part::ToolCall {
            id: "c".into(),
            name: "f".into(),
            arguments: "{not json".into(),
        }],
        ..ir
    };
    assert!(encode_response(&invalid).is_err());
}

#[test]
fn finish_reasons_and_blocked_prompts_map_across() {
    let with = |reason: &str| {
        decode_response(&bytes(&json!({"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]})))
            .unwrap()
            .stop
    };
    assert_eq!(with("MAX_TOKENS"), StopReason::MaxTokens);
    assert_eq!(with("RECITATION"), StopReason::ContentFilter);
    assert_eq!(with("PROHIBITED_CONTENT"), StopReason::ContentFilter);
    assert_eq!(
        with("MALFORMED_FUNCTION_CALL"),
        StopReason::Other("MALFORMED_FUNCTION_CALL".into())
    );
    let blocked = decode_response(&bytes(&json!({"promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 3}})))
    .unwrap();
    assert_eq!(blocked.stop, StopReason::ContentFilter);
    assert!(blocked.parts.is_empty());
    assert_eq!(blocked.usage.input, 3);
    assert!(decode_response(b"{}").is_err());
    assert_eq!(
        finish_reason(&StopReason::Other("pause_turn".into())),
        "OTHER"
    );
    assert_eq!(finish_reason(&StopReason::StopSequence(None)), "STOP");
}

/// Runs frames through a decoder and an encoder, closed as the relay closes them.
fn run(from: Dialect, to: Dialect, frames: &[Value]) -> String {
    let mut decoder = Decoder::new(from);
    let mut encoder = Encoder::new(to, true, 1);
    let mut out = Vec::new();
    let mut events = Vec::new();
    for f in frames {
        decoder.decode(&bytes(f), &mut events);
        for e in events.drain(..) {
            encoder.encode(e, &mut out);
        }
    }
    encoder.finish(&mut out);
    String::from_utf8(out).unwrap()
}

fn gemini_stream() -> Vec<Value> {
    let frame = |parts: Value, extra: Value| {
        let mut v = json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
            "usageMetadata": {"promptTokenCount": 1117, "cachedContentTokenCount": 1024},
            "modelVersion": "gemini-2.5-pro", "responseId": "r1"});
        if let (Some(c), Value::Object(e)) = (v["candidates"][0].as_object_mut(), extra) {
            c.extend(e);
        }
        v
    };
    vec![
        frame(
            json!([{"text": "Empty input fails.", "thought": true}]),
            json!({}),
        ),
        frame(
            json!([{"text": "I'll read ", "thoughtSignature": "CiQBstream"}]),
            json!({}),
        ),
        frame(json!([{"text": "the parser."}]), json!({})),
        {
            let mut last = frame(
                json!([{"functionCall": {"name": "read_file", "args": {"path": "src/parse.rs"}}}]),
                json!({"finishReason": "STOP"}),
            );
            last["usageMetadata"] = json!({"promptTokenCount": 1117, "candidatesTokenCount": 34,
                "cachedContentTokenCount": 1024, "thoughtsTokenCount": 12, "totalTokenCount": 1163});
            last
        },
    ]
}

#[test]
fn a_gemini_stream_decodes_to_events_and_ends_with_its_body() {
    let mut d = Decoder::new(Dialect::Gemini);
    let mut events = Vec::new();
    for f in gemini_stream() {
        d.decode(&bytes(&f), &mut events);
    }
    let usage = Usage {
        input: 1117,
        output: 46,
        cache_read: 1024,
        cache_write: 0,
        reasoning: 12,
    };
    let content: Vec<&Event> = events
        .iter()
        .filter(|e| !matches!(e, Event::Usage(_)))
        .collect();
    assert_eq!(
        content,
        [
            &Event::Start {
                id: "r1".into(),
                model: "gemini-2.5-pro".into()
            },
            &Event::Thinking("Empty input fails.".into()),
            &Event::Signature("CiQBstream".into()),
            &Event::Text("I'll read ".into()),
            &Event::Text("the parser.".into()),
            &Event::ToolStart {
                index: 0,
                id: "call_r1_0".into(),
                name: "read_file".into()
            },
            &Event::ToolArgs {
                index: 0,
                json: r#"{"path":"src/parse.rs"}"#.into()
            },
            &Event::Stop(StopReason::ToolUse),
        ]
    );
    assert_eq!(
        events.last(),
        Some(&Event::Usage(usage)),
        "the last usage wins"
    );
    assert!(
        !events.contains(&Event::Done),
        "the body's end is the stream's"
    );
}

#[test]
fn a_gemini_stream_reaches_anthropic_and_chat_clients() {
    let anthropic = run(
        Dialect::Gemini,
        Dialect::AnthropicMessages,
        &gemini_stream(),
    );
    let thinking = anthropic.find("thinking_delta").unwrap();
    let signature = anthropic.find(r#""signature":"CiQBstream""#).unwrap();
    let text = anthropic.find("text_delta").unwrap();
    assert!(thinking < signature && signature < text, "{anthropic}");
    assert!(anthropic.contains(r#""partial_json":"{\"path\":\"src/parse.rs\"}""#));
    assert!(anthropic.contains(r#""stop_reason":"tool_use""#));
    assert!(anthropic.contains(r#""cache_read_input_tokens":1024"#));
    assert!(anthropic.ends_with("data: {\"type\":\"message_stop\"}\n\n"));
    let chat = run(Dialect::Gemini, Dialect::OpenAiChat, &gemini_stream());
    assert!(chat.contains(r#""finish_reason":"tool_calls""#), "{chat}");
    assert!(chat.contains(r#""completion_tokens":46"#));
    assert!(chat.ends_with("data: [DONE]\n\n"));
}

/// The data of each Gemini frame.
fn frames(out: &str) -> Vec<Value> {
    assert!(out.ends_with("\r\n\r\n"), "{out:?}");
    out.split("\r\n\r\n")
        .filter(|f| !f.is_empty())
        .map(|f| serde_json::from_str(f.strip_prefix("data: ").unwrap()).unwrap())
        .collect()
}

#[test]
fn an_anthropic_stream_reaches_a_gemini_client_as_googles_frames() {
    let anthropic = [
        json!({"type":"message_start","message":{"id":"msg_1","model":"claude-x","usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Reading."}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}),
        json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"a\"}"}}),
        json!({"type":"content_block_stop","index":2}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}),
        json!({"type":"message_stop"}),
    ];
    let out = frames(&run(
        Dialect::AnthropicMessages,
        Dialect::Gemini,
        &anthropic,
    ));
    let parts: Vec<&Value> = out
        .iter()
        .filter_map(|f| f["candidates"][0]["content"]["parts"].as_array())
        .flatten()
        .collect();
    assert_eq!(
        parts,
        [
            &json!({"text": "plan", "thought": true}),
            &json!({"text": "Reading.", "thoughtSignature": wrap_signature("sig")}),
            &json!({"functionCall": {"id": "toolu_1", "name": "read_file", "args": {"path": "a"}},
                    "thoughtSignature": DUMMY_SIGNATURE}),
        ]
    );
    for f in &out {
        assert_eq!(f["responseId"], "msg_1");
        assert_eq!(f["modelVersion"], "claude-x");
    }
    let last = out.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 10, "candidatesTokenCount": 12, "totalTokenCount": 22,
               "cachedContentTokenCount": 3})
    );
    // The frames read back as the same answer.
    let mut d = Decoder::new(Dialect::Gemini);
    let mut events = Vec::new();
    for f in &out {
        d.decode(&bytes(f), &mut events);
    }
    assert!(events.contains(&Event::Signature("sig".into())));
    assert!(events.contains(&Event::Stop(StopReason::ToolUse)));
}

#[test]
fn a_signature_with_nothing_after_it_ends_the_gemini_stream_on_an_empty_part() {
    let mut e = Encoder::new(Dialect::Gemini, false, 1);
    let mut out = Vec::new();
    for event in [
        Event::Start {
            id: "1".into(),
            model: "m".into(),
        },
        Event::Thinking("hm".into()),
        Event::Signature("s".into()),
        Event::Stop(StopReason::MaxTokens),
    ] {
        e.encode(event, &mut out);
    }
    e.finish(&mut out);
    let out = frames(&String::from_utf8(out).unwrap());
    let last = out.last().unwrap();
    assert_eq!(
        last["candidates"][0]["content"]["parts"],
        json!([{"text": "", "thoughtSignature": wrap_signature("s")}])
    );
    assert_eq!(last["candidates"][0]["finishReason"], "MAX_TOKENS");
}

#[test]
fn errors_are_googles_shape_for_gemini_clients_and_mapped_for_the_others() {
    let e = t::decode_error(
        Dialect::Gemini,
        br#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#,
    )
    .unwrap();
    assert_eq!(e.kind, "RESOURCE_EXHAUSTED");
    let anthropic: Value =
        serde_json::from_slice(&t::encode_error(Dialect::AnthropicMessages, 429, &e)).unwrap();
    assert_eq!(anthropic["error"]["type"], "rate_limit_error");
    let chat: Value =
        serde_json::from_slice(&t::encode_error(Dialect::OpenAiChat, 429, &e)).unwrap();
    assert_eq!(chat["error"]["code"], "RESOURCE_EXHAUSTED");
    // The array Google answers a stream with, and a status given only as a code.
    let e = t::decode_error(
        Dialect::Gemini,
        br#"[{"error":{"code":503,"message":"busy"}}]"#,
    )
    .unwrap();
    assert_eq!(e.kind, "UNAVAILABLE");
    for (status, name) in [
        (400, "INVALID_ARGUMENT"),
        (401, "UNAUTHENTICATED"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
        (413, "INVALID_ARGUMENT"),
        (429, "RESOURCE_EXHAUSTED"),
        (500, "INTERNAL"),
        (501, "UNIMPLEMENTED"),
        (503, "UNAVAILABLE"),
        (529, "UNAVAILABLE"),
        (504, "DEADLINE_EXCEEDED"),
    ] {
        let v: Value =
            serde_json::from_slice(&t::encode_error(Dialect::Gemini, status, &e)).unwrap();
        assert_eq!(
            v,
            json!({"error": {"code": status, "message": "busy", "status": name}})
        );
    }
    // Mid-stream: a Gemini provider's error, to an Anthropic client, and another's to Gemini.
    let out = run(
        Dialect::Gemini,
        Dialect::AnthropicMessages,
        &[json!({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})],
    );
    assert!(out.contains(r#""type":"rate_limit_error""#), "{out}");
    let out = run(
        Dialect::AnthropicMessages,
        Dialect::Gemini,
        &[json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})],
    );
    assert_eq!(
        frames(&out),
        [json!({"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}})]
    );
}

#[test]
fn usage_is_read_from_whole_answers_and_the_latest_stream_frame() {
    let (u, model) = crate::usage::from_response(Dialect::Gemini, &bytes(&gemini_response()));
    assert_eq!(model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(
        u,
        Some(Usage {
            input: 1117,
            output: 46,
            cache_read: 1024,
            cache_write: 0,
            reasoning: 12
        })
    );
    let (u, _) = crate::usage::from_response(
        Dialect::Gemini,
        br#"{"usageMetadata":{"promptTokenCount":5,"toolUsePromptTokenCount":2,"candidatesTokenCount":1}}"#,
    );
    assert_eq!(u.map(|u| (u.input, u.output)), Some((7, 1)));
    let mut s = StreamUsage::default();
    for f in gemini_stream() {
        assert!(!s.observe(Dialect::Gemini, &bytes(&f)));
    }
    assert_eq!(s.model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(
        s.usage.map(|u| (u.input, u.output, u.reasoning)),
        Some((1117, 46, 12))
    );
}

#[test]
fn a_gemini_client_asks_for_a_stream_through_the_url() {
    let target = t::Target {
        dialect: Dialect::OpenAiChat,
        provider: "p",
        kind: ProviderKind::OpenAi,
        strict: false,
        max_output_tokens: None,
    };
    let body = bytes(&json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}));
    let (ir, out, _) =
        t::request_for(Dialect::Gemini, &body, "gpt-5".into(), true, &target).unwrap();
    assert!(ir.stream);
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out["stream"], true);
    assert_eq!(out["model"], "gpt-5");
    assert_eq!(out["messages"][0], json!({"role": "user", "content": "hi"}));
    // And the other way the stream flag stays out of Gemini's body.
    let target = t::Target {
        dialect: Dialect::Gemini,
        kind: ProviderKind::Gemini,
        ..target
    };
    let chat = br#"{"model":"x","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let (ir, out, _) = t::request_for(
        Dialect::OpenAiChat,
        chat,
        "gemini-2.5-pro".into(),
        true,
        &target,
    )
    .unwrap();
    assert_eq!(ir.model, "gemini-2.5-pro");
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        out,
        json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    );
}

#[test]
fn local_counting_reads_a_gemini_request() {
    let ir = decode(&rich());
    let n = crate::translate::count::count_tokens(&ir);
    assert!(n > 50, "{n}");
    let _ = Role::User;
}

#[test]
fn another_providers_signature_survives_a_gemini_client_that_re_encodes_it() {
    // Anthropic's signed thinking, answered to a Gemini client.
    let anthropic = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "thinking", "thinking": "plan", "signature": "EqQBCk+/YIARgC=="},
                    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}});
    let ir = messages::decode_response(&bytes(&anthropic)).unwrap();
    let out: Value = serde_json::from_slice(&encode_response(&ir).unwrap()).unwrap();
    let sig = out["candidates"][0]["content"]["parts"][1]["thoughtSignature"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(sig, "EqQBCk+/YIARgC==", "a bytes field gets base64");
    // Google's SDKs may send it back in the URL-safe alphabet, without padding.
    let url_safe = sig
        .replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_owned();
    for sent in [sig, url_safe] {
        let history = json!({"contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [
                {"text": "plan", "thought": true},
                {"functionCall": {"id": "toolu_1", "name": "f", "args": {}}, "thoughtSignature": sent}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "toolu_1", "name": "f", "response": {"output": "ok"}}}]}]});
        let ir = decode(&history);
        let back: Value =
            serde_json::from_slice(&messages::encode_request(&ir, &mut report()).unwrap()).unwrap();
        assert_eq!(
            back["messages"][1]["content"][0],
            json!({"type": "thinking", "thinking": "plan", "signature": "EqQBCk+/YIARgC=="})
        );
    }
}

#[test]
fn stand_ins_and_signatures_on_the_users_parts_sign_nothing() {
    let ir = decode(&json!({"contents": [
        {"role": "user", "parts": [{"text": "hi", "thoughtSignature": "context_engineering_is_the_way_to_go"},
                                   {"text": "again", "thoughtSignature": "CiQBuser"}]},
        {"role": "model", "parts": [{"text": "ok", "thoughtSignature": "context_engineering_is_the_way_to_go"}]}]}));
    assert!(
        ir.messages
            .iter()
            .flat_map(|m| &m.parts)
            .all(|p| matches!(p, Part::Text(_))),
        "{ir:?}"
    );
}

/// Gemini CLI's model router asks for JSON of a schema (written with Gemini's upper-case
/// types); every target holds the answer to it in its own way.
#[test]
fn structured_answers_carry_to_every_target() {
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "Score this."}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
            "type": "OBJECT", "properties": {
                "reason": {"type": "STRING"}, "score": {"type": "INTEGER"}},
            "required": ["reason", "score"]}}});
    let mut r = report();
    let ir = decode_request(&bytes(&body), Policy { strict: true }, &mut r).unwrap();
    assert!(r.is_empty());
    let schema = json!({"type": "object", "properties": {"reason": {"type": "string"},
        "score": {"type": "integer"}}, "required": ["reason", "score"]});
    assert_eq!(
        ir.response_format,
        Some(ResponseFormat::JsonSchema(schema.clone()))
    );
    let chat: Value = serde_json::from_slice(
        &chat::encode_request(&ir, ProviderKind::OpenAi, &mut report()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        chat["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "response", "schema": schema}})
    );
    let mut r = Report::new(Dialect::Gemini);
    let deepseek: Value =
        serde_json::from_slice(&chat::encode_request(&ir, ProviderKind::DeepSeek, &mut r).unwrap())
            .unwrap();
    assert_eq!(deepseek["response_format"], json!({"type": "json_object"}));
    assert_eq!(r.dropped(), ["generationConfig.responseJsonSchema"]);
    let responses: Value = serde_json::from_slice(
        &responses::encode_request(&ir, ProviderKind::OpenAi, &mut report()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        responses["text"],
        json!({"format": {"type": "json_schema", "name": "response", "schema": schema}})
    );
    let anthropic: Value =
        serde_json::from_slice(&messages::encode_request(&ir, &mut report()).unwrap()).unwrap();
    assert_eq!(
        anthropic["output_config"]["format"]["schema"]["additionalProperties"], false,
        "Anthropic takes closed objects only"
    );
    let out = encode(&ir);
    assert_eq!(out["generationConfig"]["responseJsonSchema"], schema);
    assert_eq!(decode(&out).response_format, ir.response_format);
    // JSON with no schema: JSON mode where there is one; Anthropic has none.
    let json_mode = Request {
        response_format: Some(ResponseFormat::Json),
        ..ir
    };
    let chat: Value = serde_json::from_slice(
        &chat::encode_request(&json_mode, ProviderKind::OpenAi, &mut report()).unwrap(),
    )
    .unwrap();
    assert_eq!(chat["response_format"], json!({"type": "json_object"}));
    assert!(messages::encode_request(&json_mode, &mut report()).is_err());
}
