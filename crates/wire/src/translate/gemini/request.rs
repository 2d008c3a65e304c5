//! Gemini `generateContent` requests: read into the IR, written from it.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::{camel, get, get_str, signature_of, Generation, DUMMY_SIGNATURE};
use crate::error::WireError;
use crate::translate::compat::{Carried, Field, Policy, Report};
use crate::translate::ir::{
    MediaSource, Part, Reasoning, Request, ResponseFormat, Role, TextBlock, Tool, ToolChoice,
};
use crate::translate::{bad, cannot, parse_object, push_message, str_field};

/// What happens to each Gemini request field when the provider speaks another dialect
/// (see [`crate::translate::compat`]); keys are read in either spelling
/// (`system_instruction` is `systemInstruction`). The model and the stream are the URL's,
/// not the body's. `generationConfig`'s own fields are [`GENERATION_FIELDS`].
pub const FIELDS: &[(&str, Field)] = &[
    ("model", Field::Carried),
    ("contents", Field::Carried),
    ("systemInstruction", Field::Carried),
    ("tools", Field::Carried),
    ("toolConfig", Field::Carried),
    ("generationConfig", Field::Carried),
    ("safetySettings", Field::Dropped),
    ("labels", Field::Dropped),
    (
        "cachedContent",
        Field::Refused("cached content lives at Google; route this model to a Gemini provider"),
    ),
];

/// The fields of `generationConfig`, reported as `generationConfig.<field>`.
pub const GENERATION_FIELDS: &[(&str, Field)] = &[
    ("maxOutputTokens", Field::Carried),
    ("temperature", Field::Carried),
    ("topP", Field::Carried),
    ("stopSequences", Field::Carried),
    ("thinkingConfig", Field::Carried),
    ("candidateCount", Field::Carried),
    ("responseMimeType", Field::Carried),
    ("responseModalities", Field::Carried),
    ("topK", Field::Dropped),
    ("seed", Field::Dropped),
    ("presencePenalty", Field::Dropped),
    ("frequencyPenalty", Field::Dropped),
    ("responseLogprobs", Field::Dropped),
    ("logprobs", Field::Dropped),
    ("enableEnhancedCivicAnswers", Field::Dropped),
    ("mediaResolution", Field::Dropped),
    ("speechConfig", Field::Dropped),
    ("imageConfig", Field::Dropped),
    ("responseSchema", Field::Carried),
    ("responseJsonSchema", Field::Carried),
];

/// Function declaration fields the IR carries; the others (`response`, `behavior`) are
/// reported as `tools.functionDeclarations.<field>` when dropped.
const FUNCTION_FIELDS: &[&str] = &["name", "description", "parameters", "parametersJsonSchema"];

/// Thinking levels Gemini 3 documents (Pro takes low and high; Flash all four).
const LEVELS: &[&str] = &["minimal", "low", "medium", "high"];

/// The ids of function calls, which Gemini may leave out: a call without one gets
/// `<prefix><n>`, counted through the conversation so the same history gets the same ids,
/// and a response without one answers the first open call of its name.
pub(super) struct CallIds {
    prefix: String,
    next: usize,
    /// The latest model turn's calls: id, name, answered.
    open: Vec<(String, String, bool)>,
    /// A model turn began: its first call replaces the open ones.
    new_turn: bool,
}

impl CallIds {
    pub(super) fn new(prefix: String) -> Self {
        CallIds {
            prefix,
            next: 0,
            open: Vec::new(),
            new_turn: true,
        }
    }

    fn fresh(&mut self) -> String {
        let id = format!("{}{}", self.prefix, self.next);
        self.next += 1;
        id
    }

    fn turn(&mut self) {
        self.new_turn = true;
    }

    fn call(&mut self, id: Option<&str>, name: &str) -> String {
        if std::mem::take(&mut self.new_turn) {
            self.open.clear();
        }
        let id = match id.filter(|id| !id.is_empty()) {
            Some(id) => id.to_owned(),
            None => self.fresh(),
        };
        self.open.push((id.clone(), name.to_owned(), false));
        id
    }

    fn answer(&mut self, id: Option<&str>, name: &str) -> String {
        let slot = match id.filter(|id| !id.is_empty()) {
            Some(id) => self.open.iter_mut().find(|(open, _, _)| open == id),
            None => self
                .open
                .iter_mut()
                .find(|(_, open, answered)| open == name && !answered),
        };
        match (slot, id.filter(|id| !id.is_empty())) {
            (Some(slot), _) => {
                slot.2 = true;
                slot.0.clone()
            }
            (None, Some(id)) => id.to_owned(),
            // A response to no call this request holds: it needs an id all the same.
            (None, None) => self.fresh(),
        }
    }
}

/// Puts a signature on the thinking just before a signed part, or on a `Thinking` of its
/// own when none is waiting for one.
fn attach_signature(out: &mut Vec<Part>, sig: &str) {
    if let Some(Part::Thinking {
        signature: slot @ None,
        ..
    }) = out.last_mut()
    {
        *slot = Some(sig.to_owned());
    } else {
        out.push(Part::Thinking {
            text: String::new(),
            signature: Some(sig.to_owned()),
        });
    }
}

/// A media type from a URL's extension, where the URL names one.
fn guess_mime(uri: &str) -> Option<&'static str> {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "heic" => "image/heic",
        "heif" => "image/heif",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

/// An image or a document from its media type; audio and video have no place in the IR.
fn media(mime: Option<&str>, source: MediaSource, name: Option<&str>) -> Result<Part, WireError> {
    match mime {
        Some(m) if m.starts_with("image/") => Ok(Part::Image {
            source,
            cache_control: None,
        }),
        Some(m) if m.starts_with("audio/") || m.starts_with("video/") => Err(cannot(
            format!("`{m}` media"),
            "only images and documents translate; route this model to a Gemini provider",
        )),
        _ => Ok(Part::Document {
            source,
            filename: name.map(str::to_owned),
            cache_control: None,
        }),
    }
}

fn inline_media(d: &Value) -> Result<Part, WireError> {
    let mime = get_str(d, "mimeType", "mime_type")
        .ok_or_else(|| bad("contents", "`inlineData` needs a `mimeType`"))?;
    let data = str_field(d, "data").unwrap_or_default();
    media(
        Some(mime),
        MediaSource::Base64 {
            media_type: mime.to_owned(),
            data: data.to_owned(),
        },
        get_str(d, "displayName", "display_name"),
    )
}

fn file_media(d: &Value) -> Result<Part, WireError> {
    let uri = get_str(d, "fileUri", "file_uri")
        .ok_or_else(|| bad("contents", "`fileData` needs a `fileUri`"))?;
    if uri.starts_with("https://generativelanguage.googleapis.com/") {
        return Err(cannot(
            "a file in Google's Files API (`fileData.fileUri`)",
            "send it inline as `inlineData`, or route this model to a Gemini provider",
        ));
    }
    if uri.starts_with("gs://") {
        return Err(cannot(
            "a Cloud Storage file (`gs://`)",
            "send it inline as `inlineData`, or route this model to a Gemini provider",
        ));
    }
    let mime = get_str(d, "mimeType", "mime_type").or_else(|| guess_mime(uri));
    media(
        mime,
        MediaSource::Url(uri.to_owned()),
        get_str(d, "displayName", "display_name"),
    )
}

/// A value as the text of a tool result: a string as it is, anything else as JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// A function response's `response` as a tool result's text and error flag: the text
/// under its one key `output`, `content` or `result` (an `error` alone marks a failure),
/// else the whole object as JSON.
fn result_of(response: Option<&Value>) -> (String, bool) {
    match response {
        None | Some(Value::Null) => (String::new(), false),
        Some(Value::Object(o)) if o.len() == 1 => match o.iter().next() {
            Some((key, v)) if matches!(key.as_str(), "output" | "content" | "result") => {
                (text_of(v), false)
            }
            Some((key, v)) if key == "error" => (text_of(v), true),
            _ => (text_of(&Value::Object(o.clone())), false),
        },
        Some(other) => (text_of(other), false),
    }
}

/// Keys a part may carry beside its data, which say nothing the IR keeps.
const PART_METADATA: &[&str] = &[
    "thought",
    "thoughtSignature",
    "thought_signature",
    "videoMetadata",
    "video_metadata",
    "partMetadata",
    "part_metadata",
    "mediaResolution",
    "media_resolution",
];

/// Which thought signatures a part's reading keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Signatures {
    /// The user's own parts: a signature there signs nothing the IR keeps.
    None,
    /// A Gemini client's model turns, read only to go to another provider, which cannot
    /// check Gemini's own signatures: only another provider's (they went out wrapped).
    Foreign,
    /// A Gemini provider's answer: every signature, for the client to send back.
    All,
}

/// Reads one part into `out` (a signed part of the model's may add a `Thinking` before
/// itself).
pub(super) fn decode_part(
    p: &Value,
    keep: Signatures,
    out: &mut Vec<Part>,
    ids: &mut CallIds,
) -> Result<(), WireError> {
    if !p.is_object() {
        return Err(bad("contents", "each part must be an object"));
    }
    let sig = signature_of(p).filter(|_| match keep {
        Signatures::None => false,
        Signatures::Foreign => super::signed_by_another(p),
        Signatures::All => true,
    });
    if p.get("thought").and_then(Value::as_bool) == Some(true) {
        out.push(Part::Thinking {
            text: str_field(p, "text").unwrap_or_default().to_owned(),
            signature: sig.map(std::borrow::Cow::into_owned),
        });
        return Ok(());
    }
    if let Some(sig) = sig {
        // A signature whose thinking the client did not keep (Gemini CLI keeps signatures,
        // not thoughts) signs nothing its provider could check: left out.
        let waiting = matches!(
            out.last(),
            Some(Part::Thinking {
                signature: None,
                ..
            })
        );
        if waiting || keep == Signatures::All {
            attach_signature(out, &sig);
        }
    }
    if let Some(text) = p.get("text") {
        let text = text
            .as_str()
            .ok_or_else(|| bad("contents", "a part's `text` must be a string"))?;
        if !text.is_empty() {
            out.push(Part::Text(TextBlock {
                text: text.to_owned(),
                cache_control: None,
            }));
        }
    } else if let Some(d) = get(p, "inlineData", "inline_data") {
        out.push(inline_media(d)?);
    } else if let Some(d) = get(p, "fileData", "file_data") {
        out.push(file_media(d)?);
    } else if let Some(call) = get(p, "functionCall", "function_call") {
        let name = str_field(call, "name").unwrap_or_default();
        out.push(Part::ToolCall {
            id: ids.call(str_field(call, "id"), name),
            name: name.to_owned(),
            arguments: match call.get("args") {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(args) => serde_json::to_string(args).unwrap_or_else(|_| "{}".into()),
            },
        });
    } else if let Some(r) = get(p, "functionResponse", "function_response") {
        let name = str_field(r, "name").unwrap_or_default();
        let (text, is_error) = result_of(r.get("response"));
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(Part::Text(TextBlock {
                text,
                cache_control: None,
            }));
        }
        // Gemini 3's multimodal function responses carry media beside the response.
        for media in r
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(d) = get(media, "inlineData", "inline_data") {
                content.push(inline_media(d)?);
            } else if let Some(d) = get(media, "fileData", "file_data") {
                content.push(file_media(d)?);
            }
        }
        out.push(Part::ToolResult {
            call_id: ids.answer(str_field(r, "id"), name),
            content,
            is_error,
            cache_control: None,
        });
    } else if let Some(key) = p
        .as_object()
        .and_then(|o| o.keys().find(|k| !PART_METADATA.contains(&k.as_str())))
    {
        return Err(cannot(
            format!("a Gemini `{}` part", camel(key)),
            "send text, inline data, files, function calls and function responses",
        ));
    }
    Ok(())
}

/// The parts of a `Content`.
fn parts_of<'a>(content: &'a Value, param: &'static str) -> Result<&'a [Value], WireError> {
    match content.get("parts") {
        Some(Value::Array(parts)) => Ok(parts),
        None | Some(Value::Null) => Ok(&[]),
        Some(_) => Err(bad(param, "`parts` must be an array")),
    }
}

/// Gemini's OpenAPI schema (`parameters`: `type: OBJECT`, `nullable`) as the JSON Schema
/// the other dialects take.
fn json_schema(schema: &Value) -> Value {
    let Value::Object(o) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    let nullable = o.get("nullable").and_then(Value::as_bool) == Some(true);
    for (key, v) in o {
        let v = match key.as_str() {
            "nullable" | "propertyOrdering" => continue,
            "type" => match v.as_str() {
                Some("TYPE_UNSPECIFIED") => continue,
                Some(t) => {
                    let t = json!(t.to_ascii_lowercase());
                    if nullable {
                        json!([t, "null"])
                    } else {
                        t
                    }
                }
                None => v.clone(),
            },
            "properties" => match v {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, s)| (name.clone(), json_schema(s)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" => json_schema(v),
            "anyOf" => match v {
                Value::Array(items) => Value::Array(items.iter().map(json_schema).collect()),
                other => other.clone(),
            },
            _ => v.clone(),
        };
        out.insert(key.clone(), v);
    }
    Value::Object(out)
}

fn decode_tools(
    tools: &Value,
    policy: Policy,
    report: &mut Report,
    req: &mut Request,
) -> Result<(), WireError> {
    let tools = match tools {
        Value::Null => return Ok(()),
        Value::Array(tools) => tools,
        _ => return Err(bad("tools", "`tools` must be an array")),
    };
    for t in tools {
        let Some(t) = t.as_object() else {
            return Err(bad("tools", "each tool must be an object"));
        };
        for (key, value) in t {
            let key = camel(key);
            if key != "functionDeclarations" {
                // A server tool (Google Search, code execution) only offered is left out:
                // the model answers without it, and the client is told.
                if policy.strict {
                    return Err(cannot(
                        format!("the Gemini tool `{key}`"),
                        "only function declarations translate",
                    ));
                }
                report.drop_field(format!("tools[{key}]"));
                continue;
            }
            for d in value.as_array().into_iter().flatten() {
                if let Some(o) = d.as_object() {
                    for key in o.keys().map(|k| camel(k)) {
                        if !FUNCTION_FIELDS.contains(&key.as_ref()) {
                            report.drop_field(format!("tools.functionDeclarations.{key}"));
                        }
                    }
                }
                let schema = match (
                    get(d, "parametersJsonSchema", "parameters_json_schema"),
                    d.get("parameters"),
                ) {
                    (Some(s), _) if !s.is_null() => s.clone(),
                    (_, Some(s)) if !s.is_null() => json_schema(s),
                    _ => json!({"type": "object", "properties": {}}),
                };
                req.tools.push(Tool {
                    name: str_field(d, "name").unwrap_or_default().to_owned(),
                    description: str_field(d, "description").map(str::to_owned),
                    schema,
                    cache_control: None,
                    freeform: false,
                });
            }
        }
    }
    Ok(())
}

fn decode_tool_config(
    config: &Value,
    report: &mut Report,
) -> Result<Option<ToolChoice>, WireError> {
    let Some(o) = config.as_object() else {
        return Ok(None);
    };
    let mut choice = None;
    for (key, value) in o {
        let key = camel(key);
        if key != "functionCallingConfig" {
            // Retrieval settings belong to Google's own tools.
            if !value.is_null() {
                report.drop_field(format!("toolConfig.{key}"));
            }
            continue;
        }
        let mode = str_field(value, "mode").map(str::to_ascii_uppercase);
        let allowed: Vec<&str> = get(value, "allowedFunctionNames", "allowed_function_names")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        choice = match mode.as_deref() {
            None | Some("MODE_UNSPECIFIED") => None,
            Some("AUTO") | Some("VALIDATED") => Some(ToolChoice::Auto),
            Some("NONE") => Some(ToolChoice::None),
            Some("ANY") => Some(match allowed.as_slice() {
                [one] => ToolChoice::Named((*one).to_owned()),
                [] => ToolChoice::Required,
                _ => {
                    // The IR cannot hold a subset: any of the tools may be called.
                    report.drop_field("toolConfig.functionCallingConfig.allowedFunctionNames");
                    ToolChoice::Required
                }
            }),
            Some(other) => {
                return Err(bad(
                    "toolConfig.functionCallingConfig.mode",
                    format!("`toolConfig.functionCallingConfig.mode` must be AUTO, ANY, NONE or VALIDATED, not {other}"),
                ))
            }
        };
    }
    Ok(choice)
}

fn decode_thinking(t: &Value, req: &mut Request) -> Result<(), WireError> {
    let include =
        get(t, "includeThoughts", "include_thoughts").and_then(Value::as_bool) == Some(true);
    let level = get_str(t, "thinkingLevel", "thinking_level")
        .map(str::to_ascii_lowercase)
        .filter(|l| l != "thinking_level_unspecified");
    let budget = match get(t, "thinkingBudget", "thinking_budget") {
        None | Some(Value::Null) => None,
        Some(b) => Some(b.as_i64().ok_or_else(|| {
            bad(
                "generationConfig.thinkingConfig.thinkingBudget",
                "`generationConfig.thinkingConfig.thinkingBudget` must be a whole number",
            )
        })?),
    };
    req.reasoning = match (level, budget) {
        (Some(level), _) if LEVELS.contains(&level.as_str()) => Some(Reasoning::Effort(level)),
        (Some(level), _) => {
            return Err(bad(
                "generationConfig.thinkingConfig.thinkingLevel",
                format!("`generationConfig.thinkingConfig.thinkingLevel` must be one of {}, not {level}", LEVELS.join(", ")),
            ))
        }
        (None, Some(-1)) => Some(Reasoning::Adaptive),
        (None, Some(0)) => None,
        (None, Some(n)) => Some(Reasoning::Budget(u64::try_from(n).map_err(|_| {
            bad(
                "generationConfig.thinkingConfig.thinkingBudget",
                "`generationConfig.thinkingConfig.thinkingBudget` must be -1, 0 or a positive number",
            )
        })?)),
        // Thought summaries asked for, the depth left to the model.
        (None, None) if include => Some(Reasoning::Adaptive),
        (None, None) => None,
    };
    Ok(())
}

fn decode_generation(
    g: &Value,
    policy: Policy,
    report: &mut Report,
    req: &mut Request,
) -> Result<(), WireError> {
    let o = match g {
        Value::Null => return Ok(()),
        Value::Object(o) => o,
        _ => {
            return Err(bad(
                "generationConfig",
                "`generationConfig` must be an object",
            ))
        }
    };
    policy.check_fields(
        o.iter().map(|(k, v)| (camel(k), v)),
        GENERATION_FIELDS,
        "Gemini",
        "generationConfig.",
        report,
    )?;
    if get(g, "candidateCount", "candidate_count")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 1)
    {
        return Err(cannot(
            "`generationConfig.candidateCount` > 1",
            "ask for one candidate",
        ));
    }
    let mime = get_str(g, "responseMimeType", "response_mime_type").unwrap_or_default();
    if !matches!(mime, "" | "text/plain" | "application/json") {
        return Err(cannot(
            format!("`generationConfig.responseMimeType` {mime}"),
            "only text and JSON answers translate; route this model to a Gemini provider",
        ));
    }
    let schema = get(g, "responseJsonSchema", "response_json_schema")
        .filter(|s| !s.is_null())
        .or_else(|| get(g, "responseSchema", "response_schema").filter(|s| !s.is_null()));
    req.response_format = match (mime, schema) {
        // Gemini CLI writes Gemini's upper-case types even in `responseJsonSchema`.
        (_, Some(schema)) => Some(ResponseFormat::JsonSchema(json_schema(schema))),
        ("application/json", None) => Some(ResponseFormat::Json),
        _ => None,
    };
    let modalities = get(g, "responseModalities", "response_modalities").and_then(Value::as_array);
    if modalities.is_some_and(|m| {
        m.iter()
            .any(|m| !m.as_str().is_some_and(|m| m.eq_ignore_ascii_case("text")))
    }) {
        return Err(cannot(
            "`generationConfig.responseModalities` other than TEXT",
            "image and audio output need a Gemini provider",
        ));
    }
    req.max_tokens = get(g, "maxOutputTokens", "max_output_tokens").and_then(Value::as_u64);
    req.temperature = g.get("temperature").and_then(Value::as_f64);
    req.top_p = get(g, "topP", "top_p").and_then(Value::as_f64);
    req.stop = match get(g, "stopSequences", "stop_sequences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(_) => {
            return Err(bad(
                "generationConfig.stopSequences",
                "`generationConfig.stopSequences` must be an array of strings",
            ))
        }
    };
    if let Some(t) = get(g, "thinkingConfig", "thinking_config").filter(|t| !t.is_null()) {
        decode_thinking(t, req)?;
    }
    Ok(())
}

/// Reads a Gemini client's request into the IR. The model and the stream are the URL's:
/// `model` is left empty and `stream` false, for the caller to set.
pub fn decode_request(
    body: &[u8],
    policy: Policy,
    report: &mut Report,
) -> Result<Request, WireError> {
    let obj = parse_object(body)?;
    policy.check_fields(
        obj.iter().map(|(k, v)| (camel(k), v)),
        FIELDS,
        "Gemini",
        "",
        report,
    )?;
    let field = |camel: &str, snake: &str| obj.get(camel).or_else(|| obj.get(snake));
    let mut req = Request::default();
    if let Some(g) = field("generationConfig", "generation_config") {
        decode_generation(g, policy, report, &mut req)?;
    }
    match field("systemInstruction", "system_instruction") {
        None | Some(Value::Null) => {}
        // The SDKs take a plain string and send a `Content`; accept both.
        Some(Value::String(s)) => req.system.push(TextBlock {
            text: s.clone(),
            cache_control: None,
        }),
        Some(system) => {
            for p in parts_of(system, "systemInstruction")? {
                match str_field(p, "text") {
                    Some(text) => req.system.push(TextBlock {
                        text: text.to_owned(),
                        cache_control: None,
                    }),
                    None => {
                        return Err(cannot(
                            "a `systemInstruction` part that is not text",
                            "send the system instruction as text",
                        ))
                    }
                }
            }
        }
    }
    let contents = obj
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("contents", "`contents` must be an array"))?;
    let mut ids = CallIds::new("call_".into());
    for content in contents {
        let role = match str_field(content, "role") {
            // A single-turn request may leave the role out; the old API answered calls
            // in a `function` turn.
            None | Some("user") | Some("function") => Role::User,
            Some("model") => Role::Assistant,
            Some(other) => {
                return Err(bad(
                    "contents",
                    format!("each content's `role` must be `user` or `model`, not `{other}`"),
                ))
            }
        };
        if role == Role::Assistant {
            ids.turn();
        }
        let mut parts = Vec::new();
        for p in parts_of(content, "contents")? {
            let keep = match role {
                Role::Assistant => Signatures::Foreign,
                Role::User => Signatures::None,
            };
            decode_part(p, keep, &mut parts, &mut ids)?;
        }
        if !parts.is_empty() {
            push_message(&mut req.messages, role, parts);
        }
    }
    if let Some(tools) = obj.get("tools") {
        decode_tools(tools, policy, report, &mut req)?;
    }
    if let Some(config) = field("toolConfig", "tool_config") {
        req.tool_choice = decode_tool_config(config, report)?;
    }
    Ok(req)
}

/// `uri` is one Gemini fetches itself: the web, or Cloud Storage.
fn fetchable(uri: &str) -> bool {
    ["https://", "http://", "gs://"].iter().any(|scheme| {
        uri.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    })
}

fn media_part(source: &MediaSource, what: &str) -> Result<Map<String, Value>, WireError> {
    let mut part = Map::new();
    match source {
        MediaSource::Base64 { media_type, data } => {
            part.insert(
                "inlineData".into(),
                json!({"mimeType": media_type, "data": data}),
            );
        }
        MediaSource::Url(url) if fetchable(url) => {
            let mut file = Map::new();
            if let Some(mime) = guess_mime(url) {
                file.insert("mimeType".into(), json!(mime));
            }
            file.insert("fileUri".into(), json!(url));
            part.insert("fileData".into(), Value::Object(file));
        }
        MediaSource::Url(_) => {
            return Err(cannot(
                format!("{what} given by a URL that is not http(s) or gs://"),
                "send it inline as base64",
            ))
        }
        MediaSource::Text(text) => {
            part.insert("text".into(), json!(text));
        }
    }
    Ok(part)
}

fn one(key: &str, v: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.into(), v);
    m
}

/// A call's arguments as the object Gemini takes.
fn args_of(id: &str, arguments: &str) -> Result<Value, WireError> {
    if arguments.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(cannot(
            format!("tool call {id}'s arguments, which are not a JSON object,"),
            "Gemini takes function arguments as a JSON object",
        )),
    }
}

/// One IR part (not thinking) as Gemini parts: a tool result is its function response
/// followed by any media it held.
fn encode_part(
    p: &Part,
    names: &HashMap<&str, &str>,
) -> Result<Vec<Map<String, Value>>, WireError> {
    Ok(match p {
        Part::Text(t) if t.text.is_empty() => Vec::new(),
        Part::Text(t) => vec![one("text", json!(t.text))],
        Part::Image { source, .. } => {
            if matches!(source, MediaSource::Text(_)) {
                return Err(cannot(
                    "an image given as text",
                    "send it as base64 or a URL",
                ));
            }
            vec![media_part(source, "an image")?]
        }
        Part::Document { source, .. } => vec![media_part(source, "a document")?],
        Part::ToolCall {
            id,
            name,
            arguments,
        } => {
            let mut call = Map::new();
            if !id.is_empty() {
                call.insert("id".into(), json!(id));
            }
            call.insert("name".into(), json!(name));
            call.insert("args".into(), args_of(id, arguments)?);
            vec![one("functionCall", Value::Object(call))]
        }
        Part::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => {
            let name = names.get(call_id.as_str()).ok_or_else(|| {
                cannot(
                    format!("the result of tool call {call_id}, whose call is not in the conversation,"),
                    "Gemini names each function response after its call; send the call with its result",
                )
            })?;
            let mut text = String::new();
            let mut media = Vec::new();
            for part in content {
                match part {
                    Part::Text(t) => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&t.text);
                    }
                    Part::Image { .. } | Part::Document { .. } => {
                        media.extend(encode_part(part, names)?);
                    }
                    _ => {
                        return Err(bad(
                            "messages",
                            "a tool result holds text, images and documents only",
                        ))
                    }
                }
            }
            let key = if *is_error { "error" } else { "output" };
            let mut response = Map::new();
            if !call_id.is_empty() {
                response.insert("id".into(), json!(call_id));
            }
            response.insert("name".into(), json!(name));
            response.insert("response".into(), json!({ key: text }));
            let mut parts = vec![one("functionResponse", Value::Object(response))];
            // Media a tool returned goes beside its response, which carries text.
            parts.extend(media);
            parts
        }
        Part::Thinking { .. } | Part::RedactedThinking { .. } => Vec::new(),
    })
}

/// IR parts as Gemini parts. A `Thinking` becomes a thought part (when it has text) and
/// hands its signature to the part that follows it; with nothing after it, the signature
/// stays on its thought part, or on an empty text part of its own. Anthropic's redacted
/// thinking has no place in Gemini and is left out. For a Gemini client (`to_client`),
/// the signatures are other providers' and go wrapped ([`super::wrap_signature`]).
pub(super) fn encode_parts(
    parts: &[Part],
    names: &HashMap<&str, &str>,
    to_client: bool,
) -> Result<Vec<Value>, WireError> {
    let mut out: Vec<Map<String, Value>> = Vec::new();
    let wrapped: Vec<Option<String>> = parts
        .iter()
        .map(|p| match p {
            Part::Thinking {
                signature: Some(sig),
                ..
            } if to_client => Some(super::wrap_signature(sig)),
            _ => None,
        })
        .collect();
    let mut pending: Option<&str> = None;
    let mut thought_at: Option<usize> = None;
    let flush = |out: &mut Vec<Map<String, Value>>,
                 pending: &mut Option<&str>,
                 thought_at: &mut Option<usize>| {
        let at = thought_at.take();
        if let Some(sig) = pending.take() {
            match at.and_then(|i| out.get_mut(i)) {
                Some(thought) => {
                    thought.insert("thoughtSignature".into(), json!(sig));
                }
                None => {
                    let mut part = one("text", json!(""));
                    part.insert("thoughtSignature".into(), json!(sig));
                    out.push(part);
                }
            }
        }
    };
    for (p, wrapped) in parts.iter().zip(&wrapped) {
        match p {
            Part::Thinking { text, signature } => {
                flush(&mut out, &mut pending, &mut thought_at);
                if !text.is_empty() {
                    let mut thought = one("text", json!(text));
                    thought.insert("thought".into(), json!(true));
                    out.push(thought);
                    thought_at = Some(out.len() - 1);
                }
                pending = wrapped.as_deref().or(signature.as_deref());
            }
            other => {
                for mut part in encode_part(other, names)? {
                    if let Some(sig) = pending.take() {
                        part.insert("thoughtSignature".into(), json!(sig));
                        thought_at = None;
                    }
                    out.push(part);
                }
            }
        }
    }
    flush(&mut out, &mut pending, &mut thought_at);
    Ok(out.into_iter().map(Value::Object).collect())
}

/// Gemini 3 refuses a step whose first function call has no thought signature: a call
/// another provider made gets the documented stand-in.
pub(super) fn sign_first_call(parts: &mut [Value]) {
    if let Some(call) = parts
        .iter_mut()
        .find(|p| p.get("functionCall").is_some())
        .and_then(Value::as_object_mut)
    {
        call.entry("thoughtSignature")
            .or_insert_with(|| json!(DUMMY_SIGNATURE));
    }
}

/// The thinking level of an effort: Gemini 3 Pro takes `low` and `high`.
fn level_of(effort: &str) -> &'static str {
    match effort {
        "none" | "minimal" | "low" => "low",
        _ => "high",
    }
}

/// Writes the IR as a Gemini `generateContent` body. Neither the model nor the stream is
/// written (they go in the URL), but `req.model` decides how thinking is asked for and
/// whether function calls need a signature ([`Generation`]).
pub fn encode_request(req: &Request, report: &mut Report) -> Result<Vec<u8>, WireError> {
    let generation = Generation::of(&req.model);
    let names: HashMap<&str, &str> = req
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolCall { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect();
    let mut contents: Vec<(Role, Vec<Value>)> = Vec::new();
    for m in &req.messages {
        let parts = encode_parts(&m.parts, &names, false)?;
        if parts.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some((role, last)) if *role == m.role => last.extend(parts),
            _ => contents.push((m.role, parts)),
        }
    }
    let contents: Vec<Value> = contents
        .into_iter()
        .map(|(role, mut parts)| {
            let role = match role {
                Role::User => "user",
                Role::Assistant => {
                    if generation.needs_signatures() {
                        sign_first_call(&mut parts);
                    }
                    "model"
                }
            };
            json!({"role": role, "parts": parts})
        })
        .collect();
    let mut out = Map::new();
    out.insert("contents".into(), Value::Array(contents));
    if !req.system.is_empty() {
        let parts: Vec<Value> = req.system.iter().map(|t| json!({"text": t.text})).collect();
        out.insert("systemInstruction".into(), json!({"parts": parts}));
    }
    if !req.tools.is_empty() {
        let declarations: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut d = Map::new();
                d.insert("name".into(), json!(t.name));
                if let Some(description) = &t.description {
                    d.insert("description".into(), json!(description));
                }
                // `parametersJsonSchema` takes JSON Schema as the other dialects write it
                // (`parameters` takes only an OpenAPI subset).
                d.insert("parametersJsonSchema".into(), t.schema.clone());
                Value::Object(d)
            })
            .collect();
        out.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
        if let Some(choice) = &req.tool_choice {
            let config = match choice {
                ToolChoice::Auto => json!({"mode": "AUTO"}),
                ToolChoice::None => json!({"mode": "NONE"}),
                ToolChoice::Required => json!({"mode": "ANY"}),
                ToolChoice::Named(name) => {
                    json!({"mode": "ANY", "allowedFunctionNames": [name]})
                }
            };
            out.insert(
                "toolConfig".into(),
                json!({ "functionCallingConfig": config }),
            );
        }
    }
    let mut generation_config = Map::new();
    if let Some(n) = req.max_tokens {
        generation_config.insert("maxOutputTokens".into(), json!(n));
    }
    if let Some(t) = req.temperature {
        generation_config.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        generation_config.insert("topP".into(), json!(p));
    }
    if !req.stop.is_empty() {
        generation_config.insert("stopSequences".into(), json!(req.stop));
    }
    match &req.response_format {
        None => {}
        Some(ResponseFormat::Json) => {
            generation_config.insert("responseMimeType".into(), json!("application/json"));
        }
        Some(ResponseFormat::JsonSchema(schema)) => {
            generation_config.insert("responseMimeType".into(), json!("application/json"));
            generation_config.insert("responseJsonSchema".into(), schema.clone());
        }
    }
    if let Some(r) = &req.reasoning {
        let mut thinking = Map::new();
        match (r, generation) {
            (Reasoning::Budget(b), _) => {
                thinking.insert("thinkingBudget".into(), json!(b));
            }
            (Reasoning::Effort(e), Generation::Three) => {
                thinking.insert("thinkingLevel".into(), json!(level_of(e)));
            }
            (Reasoning::Effort(_), _) => {
                thinking.insert("thinkingBudget".into(), json!(r.budget()));
            }
            // Gemini 3 thinks dynamically unless told a level; 2.5 when told -1.
            (Reasoning::Adaptive, Generation::Three) => {}
            (Reasoning::Adaptive, _) => {
                thinking.insert("thinkingBudget".into(), json!(-1));
            }
        }
        // Thought summaries come back as thinking only when asked for.
        thinking.insert("includeThoughts".into(), json!(true));
        generation_config.insert("thinkingConfig".into(), Value::Object(thinking));
    }
    if !generation_config.is_empty() {
        out.insert("generationConfig".into(), Value::Object(generation_config));
    }
    if req.verbosity.is_some() {
        report.drop_ir(Carried::Verbosity);
    }
    if req.user.is_some() {
        report.drop_ir(Carried::User);
    }
    if req.parallel_tool_calls == Some(false) && !req.tools.is_empty() {
        report.drop_ir(Carried::SequentialToolCalls);
    }
    // A prompt-cache key needs no field: Gemini caches repeated prefixes by itself. And
    // its thought signatures come back whether or not reasoning was asked for again.
    serde_json::to_vec(&Value::Object(out)).map_err(|e| bad("contents", e.to_string()))
}
