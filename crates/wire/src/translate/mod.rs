//! Translation between dialects through one canonical IR ([`ir`]): each dialect has a
//! codec that decodes to the IR and encodes from it, so adding a dialect adds one codec,
//! never a converter per pair. Used only when the client's dialect is not one the
//! provider speaks; same-dialect requests stay bytes end to end.
//!
//! All twelve directions between the four dialects — OpenAI Chat, OpenAI Responses,
//! Anthropic Messages and Google's Gemini — whole and streamed ([`stream`]), and provider
//! errors re-shaped for the client.
//!
//! Each dialect is a folder ([`chat`], [`messages`], [`responses`], [`gemini`]) holding its
//! `request`, `response` and `stream` codecs. What is the same for every dialect sits
//! here: the [`ir`], the [`compat`] policy, token [`count`]ing, and the dispatch by dialect
//! (the functions below, and [`stream::Decoder`] / [`stream::Encoder`]). A new dialect is
//! a new folder plus its arm in each dispatching `match`.

pub mod chat;
pub mod compat;
pub mod count;
pub mod gemini;
pub mod ir;
pub mod messages;
pub mod responses;
pub mod stream;

use serde_json::{json, Value};

use crate::dialect::Dialect;
use crate::error::WireError;
pub use compat::{Policy, Report, Target};
use ir::ProviderError;

/// The client-side error for a body whose structure is wrong.
pub(crate) fn bad(param: &'static str, message: impl Into<String>) -> WireError {
    WireError::InvalidField {
        param,
        message: message.into(),
    }
}

/// The refusal of a feature the target cannot carry; [`request_for`] names the target
/// ([`WireError::aimed_at`]).
pub(crate) fn cannot(feature: impl Into<String>, hint: &'static str) -> WireError {
    WireError::Untranslatable {
        feature: feature.into(),
        target: "the provider this model is routed to".into(),
        hint,
    }
}

/// An OpenAI function tool's definition; Chat nests it under `function`, Responses does not.
pub(crate) fn function_tool(def: &Value) -> ir::Tool {
    ir::Tool {
        name: str_field(def, "name").unwrap_or_default().to_owned(),
        description: str_field(def, "description").map(str::to_owned),
        schema: def
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        cache_control: None,
        freeform: false,
    }
}

/// OpenAI's `tool_choice`: a mode string, or an object naming a tool (where the name sits
/// differs between Chat and Responses, hence `name_of`).
pub(crate) fn openai_tool_choice(
    v: Option<&Value>,
    name_of: fn(&Value) -> Option<&str>,
) -> Result<Option<ir::ToolChoice>, WireError> {
    Ok(match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(match s.as_str() {
            "none" => ir::ToolChoice::None,
            "required" => ir::ToolChoice::Required,
            _ => ir::ToolChoice::Auto,
        }),
        Some(v) => Some(ir::ToolChoice::Named(
            name_of(v)
                .ok_or_else(|| bad("tool_choice", "a named tool_choice needs the tool's name"))?
                .to_owned(),
        )),
    })
}

/// A content field that is either a plain string or a list of typed parts.
pub(crate) fn string_or_parts(
    content: &Value,
    param: &'static str,
    part: impl Fn(&Value, &'static str) -> Result<ir::Part, WireError>,
) -> Result<Vec<ir::Part>, WireError> {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![ir::Part::Text(ir::TextBlock {
            text: s.clone(),
            cache_control: None,
        })]),
        Value::Array(items) => items.iter().map(|item| part(item, param)).collect(),
        _ => Err(bad(
            param,
            "`content` must be a string or an array of parts",
        )),
    }
}

/// Appends `parts` to the last message when it has `role`, else starts a new message:
/// the dialects split one turn across messages or items (assistant text, then tool
/// results) that the IR keeps together.
pub(crate) fn push_message(messages: &mut Vec<ir::Message>, role: ir::Role, parts: Vec<ir::Part>) {
    match messages.last_mut() {
        Some(last) if last.role == role => last.parts.extend(parts),
        _ => messages.push(ir::Message { role, parts }),
    }
}

pub(crate) fn parse_object(body: &[u8]) -> Result<serde_json::Map<String, Value>, WireError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(WireError::InvalidJson(
            "expected a JSON object at the top level".into(),
        )),
        Err(e) => Err(WireError::InvalidJson(e.to_string())),
    }
}

pub(crate) fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// What the policy says of each request field of `dialect` (see [`compat`]).
pub fn fields(dialect: Dialect) -> &'static [(&'static str, compat::Field)] {
    match dialect {
        Dialect::OpenAiChat => chat::FIELDS,
        Dialect::OpenAiResponses => responses::FIELDS,
        Dialect::AnthropicMessages => messages::FIELDS,
        Dialect::Gemini => gemini::FIELDS,
    }
}

/// Whether a request can go from one dialect to another through the IR (every pair can;
/// the same dialect needs no translation).
pub fn can_translate(from: Dialect, to: Dialect) -> bool {
    from != to
}

/// Reads a client's request into the IR; what the policy drops goes to `report`.
pub fn decode_request(
    dialect: Dialect,
    body: &[u8],
    policy: Policy,
    report: &mut Report,
) -> Result<ir::Request, WireError> {
    match dialect {
        Dialect::OpenAiChat => chat::decode_request(body, policy, report),
        Dialect::OpenAiResponses => responses::decode_request(body, policy, report),
        Dialect::AnthropicMessages => messages::decode_request(body, policy, report),
        Dialect::Gemini => gemini::decode_request(body, policy, report),
    }
}

/// Writes the IR for a provider; what the target has no place for goes to `report`.
pub fn encode_request(
    dialect: Dialect,
    req: &ir::Request,
    kind: crate::provider::ProviderKind,
    report: &mut Report,
) -> Result<Vec<u8>, WireError> {
    match dialect {
        Dialect::OpenAiChat => chat::encode_request(req, kind, report),
        Dialect::OpenAiResponses => responses::encode_request(req, kind, report),
        Dialect::AnthropicMessages => messages::encode_request(req, report),
        Dialect::Gemini => gemini::encode_request(req, report),
    }
}

/// A client's request as `target` takes it: decoded, the model and the stream set, encoded.
/// `stream` is the client's ask as the gateway read it: from the body, or for Gemini,
/// whose body does not say, from the URL's method. A refusal names the target.
pub fn request_for(
    client: Dialect,
    body: &[u8],
    model: String,
    stream: bool,
    target: &Target<'_>,
) -> Result<(ir::Request, Vec<u8>, Report), WireError> {
    let mut report = Report::new(client);
    let policy = Policy {
        strict: target.strict,
    };
    let aimed = |e: WireError| e.aimed_at(target.describe());
    let mut ir = decode_request(client, body, policy, &mut report).map_err(aimed)?;
    ir.model = model;
    ir.stream = stream;
    if let (Some(asked), Some(cap)) = (ir.max_tokens, target.max_output_tokens) {
        ir.max_tokens = Some(asked.min(cap));
    }
    let bytes = encode_request(target.dialect, &ir, target.kind, &mut report).map_err(aimed)?;
    Ok((ir, bytes, report))
}

pub fn decode_response(dialect: Dialect, body: &[u8]) -> Result<ir::Response, WireError> {
    match dialect {
        Dialect::OpenAiChat => chat::decode_response(body),
        Dialect::OpenAiResponses => responses::decode_response(body),
        Dialect::AnthropicMessages => messages::decode_response(body),
        Dialect::Gemini => gemini::decode_response(body),
    }
}

/// Writes a provider's answer for the client; calls of the client's `freeform` tools go
/// back as freeform calls (Responses).
pub fn encode_response(
    dialect: Dialect,
    resp: &ir::Response,
    created: u64,
    freeform: &[String],
) -> Result<Vec<u8>, WireError> {
    match dialect {
        Dialect::OpenAiChat => Ok(chat::encode_response(resp, created)),
        Dialect::OpenAiResponses => Ok(responses::encode_response(resp, created, freeform)),
        Dialect::AnthropicMessages => messages::encode_response(resp),
        Dialect::Gemini => gemini::encode_response(resp),
    }
}

/// Reads a provider's error body in its own shape; `None` when it is not one.
pub fn decode_error(dialect: Dialect, body: &[u8]) -> Option<ProviderError> {
    let v: Value = serde_json::from_slice(body).ok()?;
    if dialect == Dialect::Gemini {
        return gemini::decode_error(&v);
    }
    let e = v.get("error")?;
    let message = str_field(e, "message")?.to_owned();
    let kind = match dialect {
        Dialect::AnthropicMessages => str_field(e, "type")?.to_owned(),
        _ => str_field(e, "type")
            .or_else(|| str_field(e, "code"))
            .unwrap_or("api_error")
            .to_owned(),
    };
    Some(ProviderError { kind, message })
}

/// Writes a provider's error in the client's shape, keeping its meaning through the
/// HTTP status (which is relayed unchanged).
pub fn encode_error(client: Dialect, status: u16, e: &ProviderError) -> Vec<u8> {
    let body = if client == Dialect::Gemini {
        gemini::error_json(status, &e.message)
    } else if client.is_anthropic() {
        let kind = match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            503 | 529 => "overloaded_error",
            _ => "api_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": e.message}})
    } else {
        let kind = match status {
            400..=499 => "invalid_request_error",
            _ => "api_error",
        };
        json!({"error": {"message": e.message, "type": kind, "param": null, "code": e.kind}})
    };
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::ir::{MediaSource, Part, StopReason};
    use super::*;
    use crate::provider::ProviderKind;
    use serde_json::json;

    fn report() -> Report {
        Report::new(Dialect::OpenAiChat)
    }

    fn bytes(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    const CHAT: &str = r#"{"model":"m","messages":[
        {"role":"system","content":"sys"},
        {"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
        {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"c1","content":"one"},
        {"role":"tool","tool_call_id":"c2","content":"two"}],
        "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
        "tool_choice":{"type":"function","function":{"name":"f"}},"max_tokens":50,"stop":"END","temperature":0.2}"#;

    #[test]
    fn chat_round_trips_through_the_ir() {
        let ir = chat::decode_request(CHAT.as_bytes(), Policy::default(), &mut report()).unwrap();
        let again = chat::decode_request(
            &chat::encode_request(&ir, ProviderKind::OpenAiCompatible, &mut report()).unwrap(),
            Policy::default(),
            &mut report(),
        )
        .unwrap();
        assert_eq!(ir, again);
        // Parallel tool results stay together in one user turn, calls in one assistant turn.
        assert_eq!(ir.messages.len(), 3);
        assert_eq!(ir.messages[2].parts.len(), 2);
    }

    #[test]
    fn chat_becomes_messages_without_losing_images_calls_or_results() {
        let ir = chat::decode_request(CHAT.as_bytes(), Policy::default(), &mut report()).unwrap();
        let out: Value =
            serde_json::from_slice(&messages::encode_request(&ir, &mut report()).unwrap()).unwrap();
        assert_eq!(out["system"][0]["text"], "sys");
        assert_eq!(
            out["messages"][0]["content"][1]["source"],
            json!({"type":"base64","media_type":"image/png","data":"AAAA"})
        );
        assert_eq!(out["messages"][1]["content"][0]["input"], json!({"a": 1}));
        assert_eq!(out["messages"][2]["content"][1]["tool_use_id"], "c2");
        assert_eq!(out["tool_choice"], json!({"type": "tool", "name": "f"}));
        assert_eq!(out["stop_sequences"], json!(["END"]));
        // And back: the Messages decoder reads what the encoder wrote.
        let back = messages::decode_request(
            &serde_json::to_vec(&out).unwrap(),
            Policy::default(),
            &mut report(),
        )
        .unwrap();
        assert_eq!(back.messages, ir.messages);
    }

    #[test]
    fn messages_keep_signatures_cache_control_and_error_flags() {
        let body = json!({"model":"m","max_tokens":9,
            "system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],
            "messages":[
              {"role":"user","content":"q"},
              {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"sig=="},{"type":"tool_use","id":"u1","name":"f","input":{"x":[1]}}]},
              {"role":"user","content":[{"type":"tool_result","tool_use_id":"u1","is_error":true,"content":"boom"}]}]});
        let ir = messages::decode_request(&bytes(body), Policy::default(), &mut report()).unwrap();
        let out: Value =
            serde_json::from_slice(&messages::encode_request(&ir, &mut report()).unwrap()).unwrap();
        assert_eq!(
            out["system"][0]["cache_control"],
            json!({"type":"ephemeral"})
        );
        assert_eq!(
            out["messages"][1]["content"][0],
            json!({"type":"thinking","thinking":"t","signature":"sig=="})
        );
        assert_eq!(out["messages"][2]["content"][0]["is_error"], true);
        // To Chat, the error flag survives as a marker in the tool message's text.
        let chat: Value = serde_json::from_slice(
            &chat::encode_request(&ir, ProviderKind::OpenAi, &mut report()).unwrap(),
        )
        .unwrap();
        let tool = chat["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap();
        assert_eq!(tool["content"], format!("{}boom", chat::TOOL_ERROR_MARKER));
    }

    #[test]
    fn tool_arguments_that_are_not_json_are_refused_not_dropped() {
        let mut ir =
            chat::decode_request(CHAT.as_bytes(), Policy::default(), &mut report()).unwrap();
        if let Part::ToolCall { arguments, .. } = &mut ir.messages[1].parts[0] {
            *arguments = "{not json".into();
        }
        let err = messages::encode_request(&ir, &mut report())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("c1"), "{err}");
    }

    #[test]
    fn images_in_tool_results_cannot_go_to_chat() {
        let mut ir =
            chat::decode_request(CHAT.as_bytes(), Policy::default(), &mut report()).unwrap();
        if let Part::ToolResult { content, .. } = &mut ir.messages[2].parts[0] {
            content.push(Part::Image {
                source: MediaSource::Url("http://x/y.png".into()),
                cache_control: None,
            });
        }
        assert!(chat::encode_request(&ir, ProviderKind::OpenAi, &mut report()).is_err());
    }

    #[test]
    fn responses_carry_usage_buckets_and_stop_reasons_across() {
        let anthropic = json!({"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
            "content":[{"type":"text","text":"hi"}],"stop_reason":"max_tokens","stop_sequence":null,
            "usage":{"input_tokens":10,"cache_read_input_tokens":90,"cache_creation_input_tokens":5,"output_tokens":3}});
        let ir = messages::decode_response(&bytes(anthropic)).unwrap();
        assert_eq!(ir.stop, StopReason::MaxTokens);
        let chat: Value = serde_json::from_slice(&chat::encode_response(&ir, 1)).unwrap();
        assert_eq!(chat["choices"][0]["finish_reason"], "length");
        assert_eq!(chat["usage"]["prompt_tokens"], 105);
        assert_eq!(chat["usage"]["prompt_tokens_details"]["cached_tokens"], 90);
        let back: Value = serde_json::from_slice(
            &messages::encode_response(
                &chat::decode_response(&serde_json::to_vec(&chat).unwrap()).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(back["usage"]["cache_read_input_tokens"], 90);
        assert_eq!(back["usage"]["input_tokens"], 15);
    }

    #[test]
    fn deepseek_reasoning_becomes_thinking_for_anthropic_clients() {
        let chat = json!({"id":"x","model":"deepseek-reasoner","choices":[{"index":0,"message":{"role":"assistant",
            "reasoning_content":"let me think","content":"42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}});
        let ir = chat::decode_response(&bytes(chat)).unwrap();
        let out: Value = serde_json::from_slice(&messages::encode_response(&ir).unwrap()).unwrap();
        assert_eq!(out["content"][0]["type"], "thinking");
        assert_eq!(out["content"][0]["thinking"], "let me think");
        assert_eq!(out["content"][1]["text"], "42");
    }

    #[test]
    fn freeform_tools_travel_as_functions_of_one_string_and_come_back_freeform() {
        let body = json!({"model": "m", "tools": [
                {"type": "custom", "name": "apply_patch", "description": "Edit files.",
                 "format": {"type": "grammar", "syntax": "lark", "definition": "start: line+"}}],
            "input": [
                {"type": "message", "role": "user", "content": "fix it"},
                {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"},
                {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done."}]});
        let ir = responses::decode_request(&bytes(body), Policy::default(), &mut report()).unwrap();
        assert_eq!(ir.freeform_tools(), ["apply_patch"]);
        let chat: Value = serde_json::from_slice(
            &chat::encode_request(&ir, ProviderKind::OpenAi, &mut report()).unwrap(),
        )
        .unwrap();
        let function = &chat["tools"][0]["function"];
        assert_eq!(function["name"], "apply_patch");
        assert_eq!(function["parameters"]["required"], json!(["input"]));
        let about = function["parameters"]["properties"]["input"]["description"]
            .as_str()
            .unwrap();
        assert!(
            about.contains("lark") && about.contains("start: line+"),
            "{about}"
        );
        let call = &chat["messages"][1]["tool_calls"][0]["function"];
        assert_eq!(call["arguments"], r#"{"input":"*** Begin Patch"}"#);
        assert_eq!(chat["messages"][2]["content"], "Done.");

        // The provider's call of it goes back to the client as a freeform call.
        let answer = chat::decode_response(&bytes(json!({"id": "x", "model": "m", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "type": "function",
            "function": {"name": "apply_patch", "arguments": "{\"input\":\"*** Begin Patch\\n\"}"}}]},
            "finish_reason": "tool_calls"}]})))
        .unwrap();
        let out: Value = serde_json::from_slice(&responses::encode_response(
            &answer,
            1,
            &ir.freeform_tools(),
        ))
        .unwrap();
        assert_eq!(
            out["output"][0],
            json!({"type": "custom_tool_call", "id": "fc_c2", "call_id": "c2", "name": "apply_patch",
                   "input": "*** Begin Patch\n", "status": "completed"})
        );
    }

    #[test]
    fn provider_errors_are_reshaped() {
        let e = decode_error(
            Dialect::AnthropicMessages,
            br#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#,
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&encode_error(Dialect::OpenAiChat, 529, &e)).unwrap();
        assert_eq!(v["error"]["message"], "busy");
        let e = decode_error(
            Dialect::OpenAiChat,
            br#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}"#,
        )
        .unwrap();
        let v: Value =
            serde_json::from_slice(&encode_error(Dialect::AnthropicMessages, 429, &e)).unwrap();
        assert_eq!(v["error"]["type"], "rate_limit_error");
    }
}
