//! The wire dialects the gateway speaks. A closed set: the inbound path decides
//! the client's dialect, a provider's kind decides which dialects it serves.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenAI Chat Completions: `POST /v1/chat/completions`.
    OpenAiChat,
    /// OpenAI Responses: `POST /v1/responses`.
    OpenAiResponses,
    /// Anthropic Messages: `POST /v1/messages` (and `/count_tokens`).
    AnthropicMessages,
}

impl Dialect {
    /// The dialect to answer in when the path does not say: Anthropic clients send
    /// `anthropic-version`.
    pub fn guess(headers: &http::HeaderMap, path: &str) -> Dialect {
        if headers.contains_key("anthropic-version") || path.contains("/messages") {
            Dialect::AnthropicMessages
        } else {
            Dialect::OpenAiChat
        }
    }
}

/// What an inbound request asks for: a dialect and, within it, an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    ChatCompletions,
    Responses,
    Messages,
    CountTokens,
}

impl Endpoint {
    pub fn dialect(self) -> Dialect {
        match self {
            Endpoint::ChatCompletions => Dialect::OpenAiChat,
            Endpoint::Responses => Dialect::OpenAiResponses,
            Endpoint::Messages | Endpoint::CountTokens => Dialect::AnthropicMessages,
        }
    }

    /// The main endpoint of a dialect.
    pub fn for_dialect(dialect: Dialect) -> Endpoint {
        match dialect {
            Dialect::OpenAiChat => Endpoint::ChatCompletions,
            Dialect::OpenAiResponses => Endpoint::Responses,
            Dialect::AnthropicMessages => Endpoint::Messages,
        }
    }

    /// The path below a provider's base URL (which ends in its API version, e.g. `/v1`).
    pub fn upstream_path(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "/chat/completions",
            Endpoint::Responses => "/responses",
            Endpoint::Messages => "/messages",
            Endpoint::CountTokens => "/messages/count_tokens",
        }
    }

    /// Whether the request may ask for a stream.
    pub fn can_stream(self) -> bool {
        !matches!(self, Endpoint::CountTokens)
    }
}

impl Dialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::OpenAiChat => "openai_chat",
            Dialect::OpenAiResponses => "openai_responses",
            Dialect::AnthropicMessages => "anthropic_messages",
        }
    }

    /// Errors go back in one of two families of shapes.
    pub fn is_anthropic(self) -> bool {
        matches!(self, Dialect::AnthropicMessages)
    }

    pub fn parse(name: &str) -> Option<Dialect> {
        match name {
            "openai_chat" | "chat" => Some(Dialect::OpenAiChat),
            "openai_responses" | "responses" => Some(Dialect::OpenAiResponses),
            "anthropic_messages" | "messages" => Some(Dialect::AnthropicMessages),
            _ => None,
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
