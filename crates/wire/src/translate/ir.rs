//! The canonical form every dialect decodes to and encodes from (hub and spoke): a
//! request, a response, and what each can carry. Fields a dialect has no place for are
//! either mapped, refused with a 400 that names them, or — where the provider documents
//! them as optional and dropping cannot change the answer — listed in the docs as dropped.

use serde_json::Value;

use crate::usage::Usage;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    pub model: String,
    /// System and developer prompts, in order.
    pub system: Vec<TextBlock>,
    pub messages: Vec<Message>,
    pub tools: Vec<Tool>,
    pub tool_choice: Option<ToolChoice>,
    pub parallel_tool_calls: Option<bool>,
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub stop: Vec<String>,
    pub stream: bool,
    /// A Chat client asked for the usage chunk at the end of its stream.
    pub stream_usage: bool,
    /// An end-user id (OpenAI `user`, Anthropic `metadata.user_id`).
    pub user: Option<String>,
    pub reasoning: Option<Reasoning>,
    /// How long the answer should be, where the target has a knob for it (OpenAI's
    /// `verbosity`: low, medium, high).
    pub verbosity: Option<String>,
    /// The client's key for the provider's prompt cache (OpenAI's `prompt_cache_key`).
    pub prompt_cache_key: Option<String>,
    /// The client asked for reasoning back as opaque content it can return next turn
    /// (Responses `include: ["reasoning.encrypted_content"]`).
    pub encrypted_reasoning: bool,
    /// The answer must be JSON (Gemini's `responseMimeType: application/json`, which Gemini
    /// CLI's model router sends), of a schema when one is given.
    pub response_format: Option<ResponseFormat>,
}

/// What shape the answer must take, where the client asks for one.
#[derive(Clone, Debug, PartialEq)]
pub enum ResponseFormat {
    /// Any JSON.
    Json,
    /// JSON that validates against this JSON Schema.
    JsonSchema(Value),
}

impl ResponseFormat {
    /// The name OpenAI requires a schema to have.
    pub const SCHEMA_NAME: &'static str = "response";
}

#[derive(Clone, Debug, PartialEq)]
pub struct TextBlock {
    pub text: String,
    /// Anthropic prompt-cache marker, kept so it survives a round trip through the IR.
    pub cache_control: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

/// Where an image's or a document's bytes are.
#[derive(Clone, Debug, PartialEq)]
pub enum MediaSource {
    Url(String),
    Base64 {
        media_type: String,
        data: String,
    },
    /// A plain-text document given inline (Anthropic's `text` source).
    Text(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Text(TextBlock),
    Image {
        source: MediaSource,
        cache_control: Option<Value>,
    },
    /// A file for the model to read (a PDF, say).
    Document {
        source: MediaSource,
        filename: Option<String>,
        cache_control: Option<Value>,
    },
    /// A call the assistant made; `arguments` is the JSON text as the model wrote it.
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    ToolResult {
        call_id: String,
        content: Vec<Part>,
        is_error: bool,
        cache_control: Option<Value>,
    },
    Thinking {
        text: String,
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub schema: Value,
    pub cache_control: Option<Value>,
    /// A tool whose input is free text (a Responses `custom` tool, such as Codex's
    /// `apply_patch`): other dialects call it as a function of one string, `input`.
    pub freeform: bool,
}

/// The argument a freeform tool's text travels in, for dialects that only have functions.
pub const FREEFORM_ARGUMENT: &str = "input";

impl Request {
    /// The names of the freeform tools the client offered, whose calls go back to it as
    /// freeform calls.
    pub fn freeform_tools(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter(|t| t.freeform)
            .map(|t| t.name.clone())
            .collect()
    }
}

/// A freeform call's text from the function arguments it travelled in; arguments that are
/// not that object are the text themselves.
pub fn freeform_input(arguments: &str) -> String {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|v| v.get(FREEFORM_ARGUMENT)?.as_str().map(str::to_owned))
        .unwrap_or_else(|| arguments.to_owned())
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    Named(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reasoning {
    /// An effort: OpenAI's `reasoning_effort` (none … xhigh), Anthropic's
    /// `output_config.effort` (low … max).
    Effort(String),
    /// Anthropic's extended thinking budget in tokens.
    Budget(u64),
    /// Thinking on, as deep as the model judges (Anthropic's adaptive thinking with no
    /// effort named).
    Adaptive,
}

impl Reasoning {
    /// Anthropic needs a token budget; OpenAI's efforts map to budgets in this ratio.
    pub fn budget(&self) -> u64 {
        match self {
            Reasoning::Budget(b) => *b,
            Reasoning::Effort(e) => match e.as_str() {
                "none" | "minimal" | "low" => 1024,
                "medium" => 4096,
                "high" => 16384,
                _ => 32768,
            },
            Reasoning::Adaptive => 4096,
        }
    }

    /// OpenAI needs an effort; budgets map back to the nearest one, Anthropic's `max`
    /// to OpenAI's highest.
    pub fn effort(&self) -> &str {
        match self {
            Reasoning::Effort(e) if e == "max" => "xhigh",
            Reasoning::Effort(e) => e,
            Reasoning::Adaptive => "medium",
            Reasoning::Budget(b) if *b <= 2048 => "low",
            Reasoning::Budget(b) if *b <= 8192 => "medium",
            Reasoning::Budget(_) => "high",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    StopSequence(Option<String>),
    ToolUse,
    ContentFilter,
    /// Anything else, by the provider's own name.
    Other(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub id: String,
    pub model: String,
    pub parts: Vec<Part>,
    pub stop: StopReason,
    pub usage: Usage,
}

/// A provider's error, read from its own shape, to be written in the client's.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderError {
    pub kind: String,
    pub message: String,
}
