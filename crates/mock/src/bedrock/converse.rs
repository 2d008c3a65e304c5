//! Bedrock's Converse API: the request read and checked as Bedrock checks it, the reply
//! written whole (`converse`) or as the events of `converse-stream`.
//!
//! The request (<https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html>):
//! `messages[{role, content: [ContentBlock]}]`, `system[SystemContentBlock]`,
//! `inferenceConfig`, `toolConfig{tools[{toolSpec}|{cachePoint}], toolChoice}`,
//! `additionalModelRequestFields`. Every union (a content block, a tool, a tool choice) must
//! set exactly one member it knows. A request that breaks the API's constraints is refused
//! with its violations named by path, as AWS names them (`messages.1.member.role`, lists
//! counted from 1); one that breaks the conversation's rules with Bedrock's own sentences
//! (messages counted from 0).

use std::collections::HashSet;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::super::reply::{signature, Answer, Conversation, Reasoning, Split, ToolDecl, Usage};
use super::super::EmptyObject;

const BLOCK_MEMBERS: &[&str] = &[
    "text",
    "image",
    "document",
    "video",
    "toolUse",
    "toolResult",
    "guardContent",
    "cachePoint",
    "reasoningContent",
    "citationsContent",
    "searchResult",
];
const SYSTEM_MEMBERS: &[&str] = &["text", "guardContent", "cachePoint"];
const RESULT_MEMBERS: &[&str] = &["text", "json", "image", "document", "video", "searchResult"];
const TOOL_MEMBERS: &[&str] = &["toolSpec", "cachePoint", "systemTool"];
const CHOICE_MEMBERS: &[&str] = &["auto", "any", "tool"];
const REASONING_MEMBERS: &[&str] = &["reasoningText", "redactedContent"];
const SOURCE_MEMBERS: &[&str] = &["bytes", "s3Location"];
const SCHEMA_MEMBERS: &[&str] = &["json"];
const IMAGE_FORMATS: &[&str] = &["png", "jpeg", "gif", "webp"];
const ROLES: &[&str] = &["user", "assistant"];
const RESULT_STATUSES: &[&str] = &["success", "error"];
const CACHE_POINT_TYPES: &[&str] = &["default"];
/// Tool names and tool-use ids: `[a-zA-Z0-9_-]+`, 1 to 64 characters.
const NAME_MAX: usize = 64;

/// What the reply needs of a Converse request.
pub(crate) struct ConverseRequest {
    pub conversation: Conversation,
    /// `additionalModelRequestFields.thinking` asks for reasoning.
    pub thinks: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

enum BlockIn {
    Text(String),
    ToolUse {
        id: String,
    },
    ToolResult {
        id: String,
        text: String,
    },
    Reasoning {
        text: String,
        signed: Option<String>,
    },
    Other,
}

struct MessageIn {
    role: Role,
    blocks: Vec<BlockIn>,
}

/// Reads a Converse body; `Err` is the `ValidationException` message. `wanted` is the tool
/// `x-mock-tool` names.
pub(crate) fn read(body: &[u8], wanted: Option<&str>) -> Result<ConverseRequest, String> {
    let root: Value = serde_json::from_slice(body).map_err(|e| {
        format!("Malformed input request: {e}, please reformat your input and try again.")
    })?;
    let Value::Object(root) = root else {
        return Err(
            "Malformed input request: #: expected type: JSONObject, please reformat \
                    your input and try again."
                .to_owned(),
        );
    };
    let mut check = Check::default();
    let mut messages = Vec::new();
    if let Some(list) = check.list(root.get("messages"), "messages", true) {
        for (i, message) in list.iter().enumerate() {
            let path = format!("messages.{}.member", i + 1);
            messages.push(check.message(message, &path));
        }
    }
    if let Some(list) = check.list(root.get("system"), "system", false) {
        for (i, block) in list.iter().enumerate() {
            check.system_block(block, &format!("system.{}.member", i + 1));
        }
    }
    if let Some(config) = check.object(root.get("inferenceConfig"), "inferenceConfig", false) {
        check.inference_config(config);
    }
    let tools = check
        .object(root.get("toolConfig"), "toolConfig", false)
        .map(|config| check.tool_config(config));
    let extra = check.object(
        root.get("additionalModelRequestFields"),
        "additionalModelRequestFields",
        false,
    );
    if !check.violations.is_empty() {
        let n = check.violations.len();
        let plural = if n == 1 { "" } else { "s" };
        return Err(format!(
            "{n} validation error{plural} detected: {}",
            check.violations.join("; ")
        ));
    }
    // Every message passed the checks above, so each is `Some`.
    let messages: Vec<MessageIn> = messages.into_iter().flatten().collect();
    let thinks = extra
        .and_then(|fields| fields.get("thinking"))
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|kind| kind == "enabled" || kind == "adaptive");
    conversation_rules(&messages, tools.is_some(), thinks)?;
    let (specs, chosen) = tools.unwrap_or_default();
    let wanted = wanted.or(chosen.as_deref());
    let tool = specs
        .into_iter()
        .find(|spec| wanted.is_none_or(|w| w == spec.name));
    Ok(ConverseRequest {
        conversation: conversation(&messages, tool),
        thinks,
    })
}

/// The rules Bedrock states in sentences: who speaks first and in turn, no empty content
/// or blank text, tools declared when tools are used, each tool use answered by a result.
fn conversation_rules(messages: &[MessageIn], has_tools: bool, thinks: bool) -> Result<(), String> {
    if messages.first().is_none_or(|m| m.role != Role::User) {
        return Err(
            "A conversation must start with a user message. Try again with a \
                    conversation that starts with a user message."
                .to_owned(),
        );
    }
    if messages.windows(2).any(|pair| pair[0].role == pair[1].role) {
        return Err(
            "A conversation must alternate between user and assistant roles. Make \
                    sure the conversation alternates between user and assistant roles and try \
                    again."
                .to_owned(),
        );
    }
    for (i, message) in messages.iter().enumerate() {
        if message.blocks.is_empty() {
            return Err(format!(
                "The content field in the Message object at messages.{i} is empty. Add a \
                 ContentBlock object to the content field and try again."
            ));
        }
        for (j, block) in message.blocks.iter().enumerate() {
            if matches!(block, BlockIn::Text(text) if text.trim().is_empty()) {
                return Err(format!(
                    "The text field in the ContentBlock object at messages.{i}.content.{j} is \
                     blank. Add text to the text field, and try again."
                ));
            }
        }
    }
    let uses_tools = messages
        .iter()
        .flat_map(|m| &m.blocks)
        .any(|b| matches!(b, BlockIn::ToolUse { .. } | BlockIn::ToolResult { .. }));
    if uses_tools && !has_tools {
        return Err(
            "The toolConfig field must be defined when using toolUse and toolResult \
                    content blocks."
                .to_owned(),
        );
    }
    let mut asked: Vec<&str> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let ids = message.blocks.iter().filter_map(|b| match b {
            BlockIn::ToolUse { id } if message.role == Role::Assistant => Some(id.as_str()),
            BlockIn::ToolResult { id, .. } if message.role == Role::User => Some(id.as_str()),
            _ => None,
        });
        if message.role == Role::Assistant {
            asked = ids.collect();
            continue;
        }
        let answered: HashSet<&str> = ids.collect();
        if answered.len() > asked.len() {
            return Err(format!(
                "The number of toolResult blocks at messages.{i}.content exceeds the number of \
                 toolUse blocks of previous turn."
            ));
        }
        let missing: Vec<&str> = asked
            .iter()
            .copied()
            .filter(|id| !answered.contains(id))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "Expected toolResult blocks at messages.{i}.content for the following Ids: {}",
                missing.join(", ")
            ));
        }
        asked.clear();
    }
    if thinks {
        for (i, message) in messages.iter().enumerate() {
            for (j, block) in message.blocks.iter().enumerate() {
                if let BlockIn::Reasoning { text, signed } = block {
                    if signed.as_deref() != Some(signature(text).as_str()) {
                        return Err(format!(
                            "The model returned the following errors: messages.{i}.content.{j}: \
                             Invalid `signature` in `thinking` block"
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The last message's tool result, else the declared tool, else the user's last words.
fn conversation(messages: &[MessageIn], tool: Option<ToolDecl>) -> Conversation {
    let last = messages.last();
    let result = last.filter(|m| m.role == Role::User).and_then(|m| {
        m.blocks.iter().rev().find_map(|b| match b {
            BlockIn::ToolResult { text, .. } => Some(text.clone()),
            _ => None,
        })
    });
    if let Some(result) = result {
        return Conversation {
            tool_result: Some(result),
            tool,
            user_text: None,
        };
    }
    let user_text = messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::User)
        .find_map(|m| {
            m.blocks.iter().rev().find_map(|b| match b {
                BlockIn::Text(text) => Some(text.clone()),
                _ => None,
            })
        });
    Conversation {
        tool_result: None,
        tool,
        user_text,
    }
}

/// The constraint violations found so far, in AWS's words.
#[derive(Default)]
struct Check {
    violations: Vec<String>,
}

impl Check {
    fn fail(&mut self, value: Option<&Value>, path: &str, constraint: &str) {
        let shown = match value {
            None | Some(Value::Null) => "null".to_owned(),
            Some(Value::String(s)) => format!("'{s}'"),
            Some(v) => format!("'{v}'"),
        };
        self.violations.push(format!(
            "Value {shown} at '{path}' failed to satisfy constraint: {constraint}"
        ));
    }

    /// A member that must be present (`required`) or may be absent; `None` when absent or
    /// refused.
    fn present<'v>(
        &mut self,
        value: Option<&'v Value>,
        path: &str,
        required: bool,
    ) -> Option<&'v Value> {
        match value {
            None | Some(Value::Null) => {
                if required {
                    self.fail(None, path, "Member must not be null");
                }
                None
            }
            Some(v) => Some(v),
        }
    }

    fn list<'v>(
        &mut self,
        value: Option<&'v Value>,
        path: &str,
        required: bool,
    ) -> Option<&'v [Value]> {
        match self.present(value, path, required)? {
            Value::Array(items) => Some(items),
            other => {
                self.fail(Some(other), path, "Member must be a list");
                None
            }
        }
    }

    fn object<'v>(
        &mut self,
        value: Option<&'v Value>,
        path: &str,
        required: bool,
    ) -> Option<&'v Map<String, Value>> {
        match self.present(value, path, required)? {
            Value::Object(map) => Some(map),
            other => {
                self.fail(Some(other), path, "Member must be a structure");
                None
            }
        }
    }

    fn string<'v>(
        &mut self,
        value: Option<&'v Value>,
        path: &str,
        required: bool,
    ) -> Option<&'v str> {
        match self.present(value, path, required)? {
            Value::String(text) => Some(text),
            other => {
                self.fail(Some(other), path, "Member must be a string");
                None
            }
        }
    }

    fn one_of(&mut self, value: Option<&Value>, path: &str, allowed: &[&str], required: bool) {
        if let Some(text) = self.string(value, path, required) {
            if !allowed.contains(&text) {
                let set = allowed.join(", ");
                self.fail(
                    value,
                    path,
                    &format!("Member must satisfy enum value set: [{set}]"),
                );
            }
        }
    }

    /// A name or id: `[a-zA-Z0-9_-]+`, at most 64 characters.
    fn name(&mut self, value: Option<&Value>, path: &str) -> Option<String> {
        let text = self.string(value, path, true)?;
        if text.is_empty() || text.chars().count() > NAME_MAX {
            self.fail(
                value,
                path,
                "Member must have length between 1 and 64, inclusive",
            );
            return None;
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            self.fail(
                value,
                path,
                "Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+",
            );
            return None;
        }
        Some(text.to_owned())
    }

    /// A union: an object with exactly one member set, a member it knows. The one set.
    fn union<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
        members: &[&str],
    ) -> Option<(&'v str, &'v Value)> {
        let Value::Object(map) = value else {
            self.fail(Some(value), path, "Member must be a structure");
            return None;
        };
        let set: Vec<(&String, &Value)> = map.iter().filter(|(_, v)| !v.is_null()).collect();
        let known = set.iter().all(|(key, _)| members.contains(&key.as_str()));
        match set[..] {
            [(key, member)] if known => Some((key.as_str(), member)),
            _ => {
                let keys: Vec<&str> = set.iter().map(|(k, _)| k.as_str()).collect();
                self.violations.push(format!(
                    "Value '[{}]' at '{path}' failed to satisfy constraint: Member must set \
                     exactly one of: {}",
                    keys.join(", "),
                    members.join(", ")
                ));
                None
            }
        }
    }

    fn message(&mut self, value: &Value, path: &str) -> Option<MessageIn> {
        let map = self.object(Some(value), path, true)?;
        let role_path = format!("{path}.role");
        self.one_of(map.get("role"), &role_path, ROLES, true);
        let role = match map.get("role").and_then(Value::as_str) {
            Some("user") => Some(Role::User),
            Some("assistant") => Some(Role::Assistant),
            _ => None,
        };
        let content_path = format!("{path}.content");
        let mut blocks = Vec::new();
        if let Some(list) = self.list(map.get("content"), &content_path, true) {
            for (j, block) in list.iter().enumerate() {
                let block_path = format!("{content_path}.{}.member", j + 1);
                blocks.push(self.block(block, &block_path));
            }
        }
        let blocks: Option<Vec<BlockIn>> = blocks.into_iter().collect();
        Some(MessageIn {
            role: role?,
            blocks: blocks?,
        })
    }

    fn block(&mut self, value: &Value, path: &str) -> Option<BlockIn> {
        let (member, inner) = self.union(value, path, BLOCK_MEMBERS)?;
        let path = format!("{path}.{member}");
        match member {
            "text" => self
                .string(Some(inner), &path, true)
                .map(|t| BlockIn::Text(t.to_owned())),
            "image" => {
                self.image(inner, &path);
                Some(BlockIn::Other)
            }
            "toolUse" => {
                let map = self.object(Some(inner), &path, true)?;
                let id = self.name(map.get("toolUseId"), &format!("{path}.toolUseId"));
                let name = self.name(map.get("name"), &format!("{path}.name"));
                self.present(map.get("input"), &format!("{path}.input"), true);
                name?;
                Some(BlockIn::ToolUse { id: id? })
            }
            "toolResult" => self.tool_result(inner, &path),
            "reasoningContent" => {
                let (kind, reasoning) = self.union(inner, &path, REASONING_MEMBERS)?;
                let path = format!("{path}.{kind}");
                if kind == "redactedContent" {
                    self.string(Some(reasoning), &path, true)?;
                    return Some(BlockIn::Other);
                }
                let map = self.object(Some(reasoning), &path, true)?;
                let text = self.string(map.get("text"), &format!("{path}.text"), true);
                let signed = self.string(map.get("signature"), &format!("{path}.signature"), false);
                Some(BlockIn::Reasoning {
                    text: text?.to_owned(),
                    signed: signed.map(str::to_owned),
                })
            }
            "cachePoint" => {
                self.cache_point(inner, &path);
                Some(BlockIn::Other)
            }
            _ => self
                .object(Some(inner), &path, true)
                .map(|_| BlockIn::Other),
        }
    }

    fn image(&mut self, value: &Value, path: &str) {
        let Some(map) = self.object(Some(value), path, true) else {
            return;
        };
        self.one_of(
            map.get("format"),
            &format!("{path}.format"),
            IMAGE_FORMATS,
            true,
        );
        let source_path = format!("{path}.source");
        if let Some(source) = self.present(map.get("source"), &source_path, true) {
            if let Some(("bytes", bytes)) = self.union(source, &source_path, SOURCE_MEMBERS) {
                self.string(Some(bytes), &format!("{source_path}.bytes"), true);
            }
        }
    }

    fn cache_point(&mut self, value: &Value, path: &str) {
        if let Some(map) = self.object(Some(value), path, true) {
            self.one_of(
                map.get("type"),
                &format!("{path}.type"),
                CACHE_POINT_TYPES,
                true,
            );
        }
    }

    fn tool_result(&mut self, value: &Value, path: &str) -> Option<BlockIn> {
        let map = self.object(Some(value), path, true)?;
        let id = self.name(map.get("toolUseId"), &format!("{path}.toolUseId"));
        self.one_of(
            map.get("status"),
            &format!("{path}.status"),
            RESULT_STATUSES,
            false,
        );
        let content_path = format!("{path}.content");
        let mut text = String::new();
        if let Some(items) = self.list(map.get("content"), &content_path, true) {
            for (k, item) in items.iter().enumerate() {
                let item_path = format!("{content_path}.{}.member", k + 1);
                match self.union(item, &item_path, RESULT_MEMBERS) {
                    Some(("text", value)) => {
                        if let Some(t) =
                            self.string(Some(value), &format!("{item_path}.text"), true)
                        {
                            text.push_str(t);
                        }
                    }
                    Some(("json", value)) => text.push_str(&value.to_string()),
                    Some(("image", value)) => self.image(value, &format!("{item_path}.image")),
                    _ => {}
                }
            }
        }
        Some(BlockIn::ToolResult { id: id?, text })
    }

    fn system_block(&mut self, value: &Value, path: &str) {
        match self.union(value, path, SYSTEM_MEMBERS) {
            Some(("text", text)) => {
                self.string(Some(text), &format!("{path}.text"), true);
            }
            Some(("cachePoint", point)) => self.cache_point(point, &format!("{path}.cachePoint")),
            Some((member, other)) => {
                self.object(Some(other), &format!("{path}.{member}"), true);
            }
            None => {}
        }
    }

    fn inference_config(&mut self, config: &Map<String, Value>) {
        let path = "inferenceConfig.maxTokens";
        match config.get("maxTokens") {
            None | Some(Value::Null) => {}
            Some(value) => match value.as_i64() {
                Some(n) if n >= 1 => {}
                Some(_) => self.fail(
                    Some(value),
                    path,
                    "Member must have value greater than or equal to 1",
                ),
                None => self.fail(Some(value), path, "Member must be an integer"),
            },
        }
        for name in ["temperature", "topP"] {
            let path = format!("inferenceConfig.{name}");
            match config.get(name) {
                None | Some(Value::Null) => {}
                Some(value) => match value.as_f64() {
                    Some(x) if x < 0.0 => self.fail(
                        Some(value),
                        &path,
                        "Member must have value greater than or equal to 0",
                    ),
                    Some(x) if x > 1.0 => self.fail(
                        Some(value),
                        &path,
                        "Member must have value less than or equal to 1",
                    ),
                    Some(_) => {}
                    None => self.fail(Some(value), &path, "Member must be a number"),
                },
            }
        }
        let path = "inferenceConfig.stopSequences";
        if let Some(stops) = self.list(config.get("stopSequences"), path, false) {
            for (i, stop) in stops.iter().enumerate() {
                self.string(Some(stop), &format!("{path}.{}.member", i + 1), true);
            }
        }
    }

    /// The declared tools (in order) and the one `toolChoice` names.
    fn tool_config(&mut self, config: &Map<String, Value>) -> (Vec<ToolDecl>, Option<String>) {
        let mut specs = Vec::new();
        if let Some(tools) = self.list(config.get("tools"), "toolConfig.tools", true) {
            if tools.is_empty() {
                self.fail(
                    Some(&Value::Array(Vec::new())),
                    "toolConfig.tools",
                    "Member must have length greater than or equal to 1",
                );
            }
            for (i, tool) in tools.iter().enumerate() {
                let path = format!("toolConfig.tools.{}.member", i + 1);
                match self.union(tool, &path, TOOL_MEMBERS) {
                    Some(("toolSpec", spec)) => {
                        if let Some(decl) = self.tool_spec(spec, &format!("{path}.toolSpec")) {
                            specs.push(decl);
                        }
                    }
                    Some(("cachePoint", point)) => {
                        self.cache_point(point, &format!("{path}.cachePoint"));
                    }
                    Some((member, other)) => {
                        self.object(Some(other), &format!("{path}.{member}"), true);
                    }
                    None => {}
                }
            }
        }
        let mut chosen = None;
        let path = "toolConfig.toolChoice";
        if let Some(choice) = self.present(config.get("toolChoice"), path, false) {
            match self.union(choice, path, CHOICE_MEMBERS) {
                Some(("tool", tool)) => {
                    let tool_path = format!("{path}.tool");
                    if let Some(map) = self.object(Some(tool), &tool_path, true) {
                        chosen = self.name(map.get("name"), &format!("{tool_path}.name"));
                    }
                }
                Some((member, other)) => {
                    self.object(Some(other), &format!("{path}.{member}"), true);
                }
                None => {}
            }
        }
        (specs, chosen)
    }

    fn tool_spec(&mut self, value: &Value, path: &str) -> Option<ToolDecl> {
        let map = self.object(Some(value), path, true)?;
        let name = self.name(map.get("name"), &format!("{path}.name"));
        self.string(
            map.get("description"),
            &format!("{path}.description"),
            false,
        );
        let schema_path = format!("{path}.inputSchema");
        let mut schema = None;
        if let Some(input) = self.present(map.get("inputSchema"), &schema_path, true) {
            if let Some((_, json)) = self.union(input, &schema_path, SCHEMA_MEMBERS) {
                schema = self
                    .object(Some(json), &format!("{schema_path}.json"), true)
                    .map(|m| Value::Object(m.clone()));
            }
        }
        Some(ToolDecl {
            name: name?,
            schema: Some(schema?),
        })
    }
}

/// What one Converse reply holds: the optional reasoning, then the answer.
pub(crate) struct Reply<'a> {
    pub reasoning: Option<&'a Reasoning>,
    pub answer: &'a Answer,
    pub tool_use_id: &'a str,
    pub usage: Usage,
    pub latency_ms: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConverseOut<'a> {
    output: OutputOut<'a>,
    stop_reason: &'static str,
    usage: UsageOut,
    metrics: Metrics,
}

#[derive(Serialize)]
struct OutputOut<'a> {
    message: MessageOut<'a>,
}

#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'static str,
    content: Vec<BlockOut<'a>>,
}

#[derive(Serialize)]
enum BlockOut<'a> {
    #[serde(rename = "reasoningContent")]
    Reasoning {
        #[serde(rename = "reasoningText")]
        reasoning_text: ReasoningText<'a>,
    },
    #[serde(rename = "text")]
    Text(&'a str),
    #[serde(rename = "toolUse")]
    ToolUse(ToolUseOut<'a>),
}

#[derive(Serialize)]
struct ReasoningText<'a> {
    text: &'a str,
    signature: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseOut<'a> {
    tool_use_id: &'a str,
    name: &'a str,
    input: Input<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Raw(&'a RawValue),
    Empty(EmptyObject),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageOut {
    input_tokens: u64,
    output_tokens: u64,
    total_tokens: u64,
    cache_read_input_tokens: u64,
    cache_write_input_tokens: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Metrics {
    latency_ms: u64,
}

/// The stream's events, each the JSON of its `:event-type`'s structure.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageStart {
    role: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart<'a> {
    content_block_index: u32,
    start: StartOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StartOut<'a> {
    tool_use: ToolStart<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolStart<'a> {
    tool_use_id: &'a str,
    name: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta<'a> {
    content_block_index: u32,
    delta: DeltaOut<'a>,
}

#[derive(Serialize)]
enum DeltaOut<'a> {
    #[serde(rename = "text")]
    Text(&'a str),
    #[serde(rename = "toolUse")]
    ToolUse { input: &'a str },
    #[serde(rename = "reasoningContent")]
    Reasoning(ReasoningDelta<'a>),
}

#[derive(Serialize)]
enum ReasoningDelta<'a> {
    #[serde(rename = "text")]
    Text(&'a str),
    #[serde(rename = "signature")]
    Signature(&'a str),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BlockStop {
    content_block_index: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    stop_reason: &'static str,
}

#[derive(Serialize)]
struct Metadata {
    usage: UsageOut,
    metrics: Metrics,
}

impl Reply<'_> {
    fn stop_reason(&self) -> &'static str {
        match self.answer {
            Answer::Text(_) => "end_turn",
            Answer::Tool(_) => "tool_use",
        }
    }

    /// Converse's `inputTokens` leave out the cache's reads, reported beside them.
    fn usage_out(&self) -> UsageOut {
        let input = self.usage.input.saturating_sub(self.usage.cached);
        UsageOut {
            input_tokens: input,
            output_tokens: self.usage.output,
            total_tokens: self.usage.input + self.usage.output,
            cache_read_input_tokens: self.usage.cached,
            cache_write_input_tokens: 0,
        }
    }

    fn tool_input(&self) -> Input<'_> {
        match self.answer {
            Answer::Tool(call) => {
                serde_json::from_str(&call.arguments).map_or(Input::Empty(EmptyObject), Input::Raw)
            }
            Answer::Text(_) => Input::Empty(EmptyObject),
        }
    }

    /// The `converse` answer, as JSON.
    pub fn whole(&self) -> Vec<u8> {
        let mut content = Vec::with_capacity(2);
        if let Some(reasoning) = self.reasoning {
            content.push(BlockOut::Reasoning {
                reasoning_text: ReasoningText {
                    text: &reasoning.text,
                    signature: reasoning.signature(),
                },
            });
        }
        content.push(match self.answer {
            Answer::Text(text) => BlockOut::Text(text),
            Answer::Tool(call) => BlockOut::ToolUse(ToolUseOut {
                tool_use_id: self.tool_use_id,
                name: &call.name,
                input: self.tool_input(),
            }),
        });
        super::super::to_json(&ConverseOut {
            output: OutputOut {
                message: MessageOut {
                    role: "assistant",
                    content,
                },
            },
            stop_reason: self.stop_reason(),
            usage: self.usage_out(),
            metrics: Metrics {
                latency_ms: self.latency_ms,
            },
        })
    }

    /// The `converse-stream` events, `(event type, payload JSON)`, each payload padded as
    /// Bedrock pads them: messageStart; the reasoning's deltas and signature at index 0
    /// when there is reasoning; the answer's block (a toolUse opens with contentBlockStart);
    /// messageStop; metadata.
    pub fn events(&self, split: Split) -> Vec<(&'static str, Vec<u8>)> {
        let mut events = Vec::new();
        let mut push = |kind: &'static str, payload: Vec<u8>| events.push((kind, payload));
        let mut padder = Padder::default();
        let mut pad = |value: &dyn Padded| padder.pad(value);
        push("messageStart", pad(&MessageStart { role: "assistant" }));
        let mut index = 0;
        if let Some(reasoning) = self.reasoning {
            for piece in reasoning.pieces() {
                let delta = BlockDelta {
                    content_block_index: index,
                    delta: DeltaOut::Reasoning(ReasoningDelta::Text(piece)),
                };
                push("contentBlockDelta", pad(&delta));
            }
            let signature = reasoning.signature();
            let delta = BlockDelta {
                content_block_index: index,
                delta: DeltaOut::Reasoning(ReasoningDelta::Signature(&signature)),
            };
            push("contentBlockDelta", pad(&delta));
            push(
                "contentBlockStop",
                pad(&BlockStop {
                    content_block_index: index,
                }),
            );
            index += 1;
        }
        match self.answer {
            Answer::Text(_) => {
                for piece in self.answer.pieces(split) {
                    let delta = BlockDelta {
                        content_block_index: index,
                        delta: DeltaOut::Text(piece),
                    };
                    push("contentBlockDelta", pad(&delta));
                }
            }
            Answer::Tool(call) => {
                let start = BlockStart {
                    content_block_index: index,
                    start: StartOut {
                        tool_use: ToolStart {
                            tool_use_id: self.tool_use_id,
                            name: &call.name,
                        },
                    },
                };
                push("contentBlockStart", pad(&start));
                for input in self.answer.pieces(split) {
                    let delta = BlockDelta {
                        content_block_index: index,
                        delta: DeltaOut::ToolUse { input },
                    };
                    push("contentBlockDelta", pad(&delta));
                }
            }
        }
        push(
            "contentBlockStop",
            pad(&BlockStop {
                content_block_index: index,
            }),
        );
        push(
            "messageStop",
            pad(&MessageStop {
                stop_reason: self.stop_reason(),
            }),
        );
        let metadata = Metadata {
            usage: self.usage_out(),
            metrics: Metrics {
                latency_ms: self.latency_ms,
            },
        };
        push("metadata", pad(&metadata));
        events
    }
}

/// An event's structure, padded as Bedrock pads it.
trait Padded {
    fn padded(&self, salt: usize) -> Vec<u8>;
}

impl<T: Serialize> Padded for T {
    fn padded(&self, salt: usize) -> Vec<u8> {
        super::eventstream::padded(self, salt)
    }
}

/// Pads a stream's events one after the other, each to another length.
#[derive(Default)]
struct Padder {
    sent: usize,
}

impl Padder {
    fn pad(&mut self, value: &dyn Padded) -> Vec<u8> {
        self.sent += 1;
        value.padded(self.sent)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::read;

    fn refusal(body: serde_json::Value) -> String {
        match read(body.to_string().as_bytes(), None) {
            Ok(_) => panic!("taken: {body}"),
            Err(message) => message,
        }
    }

    #[test]
    fn constraint_violations_are_named_by_path_counted_from_one() {
        let message = refusal(json!({"messages": [
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "system", "content": [{"type": "text", "text": "x"}]}
        ], "inferenceConfig": {"maxTokens": 0}}));
        assert!(
            message.starts_with("3 validation errors detected: "),
            "{message}"
        );
        assert!(
            message.contains(
                "Value 'system' at 'messages.2.member.role' failed to satisfy constraint: Member \
             must satisfy enum value set: [user, assistant]"
            ),
            "{message}"
        );
        assert!(
            message.contains("Value '[text, type]' at 'messages.2.member.content.1.member'"),
            "{message}"
        );
        assert!(message.contains(
            "Value '0' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must \
             have value greater than or equal to 1"
        ), "{message}");
        assert_eq!(
            refusal(json!({})),
            "1 validation error detected: Value null at 'messages' failed to satisfy \
             constraint: Member must not be null"
        );
        let message = refusal(
            json!({"messages": [{"role": "user", "content": [{"text": "x"}]}],
            "toolConfig": {"tools": [{"toolSpec": {"name": "read file", "inputSchema": {}}}]}}),
        );
        assert!(
            message.contains("'toolConfig.tools.1.member.toolSpec.name'"),
            "{message}"
        );
        assert!(
            message.contains("'toolConfig.tools.1.member.toolSpec.inputSchema'"),
            "{message}"
        );
    }

    #[test]
    fn the_conversation_rules_are_stated_as_bedrock_states_them() {
        let text = |role: &str, text: &str| json!({"role": role, "content": [{"text": text}]});
        assert!(refusal(json!({"messages": [text("assistant", "x")]}))
            .starts_with("A conversation must start with a user message."));
        assert!(
            refusal(json!({"messages": [text("user", "x"), text("user", "y")]}))
                .starts_with("A conversation must alternate between user and assistant roles.")
        );
        assert_eq!(
            refusal(json!({"messages": [text("user", " ")]})),
            "The text field in the ContentBlock object at messages.0.content.0 is blank. Add \
             text to the text field, and try again."
        );
        let tool_use = json!({"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "tooluse_a", "name": "t", "input": {}}},
            {"toolUse": {"toolUseId": "tooluse_b", "name": "t", "input": {}}}]});
        let one_result = json!({"role": "user", "content": [
            {"toolResult": {"toolUseId": "tooluse_a", "content": [{"text": "ok"}]}}]});
        assert_eq!(
            refusal(json!({"messages": [text("user", "x"), tool_use, one_result]})),
            "The toolConfig field must be defined when using toolUse and toolResult content \
             blocks."
        );
        let tools = json!({"tools": [{"toolSpec": {"name": "t", "inputSchema": {"json": {"type": "object"}}}}]});
        assert_eq!(
            refusal(
                json!({"messages": [text("user", "x"), tool_use, one_result], "toolConfig": tools})
            ),
            "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_b"
        );
    }
}
