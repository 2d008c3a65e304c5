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
    /// Google's Gemini API: `POST /v1beta/models/{model}:generateContent` (and
    /// `:streamGenerateContent`, `:countTokens`). The model is in the path, not the body.
    Gemini,
}

impl Dialect {
    /// The dialect to answer in when the path does not say: Anthropic clients send
    /// `anthropic-version`, Google's send `x-goog-api-key` and call `…:generateContent`.
    pub fn guess(headers: &http::HeaderMap, path: &str) -> Dialect {
        if headers.contains_key("anthropic-version") || path.contains("/messages") {
            Dialect::AnthropicMessages
        } else if headers.contains_key("x-goog-api-key")
            || path.starts_with("/v1beta/")
            || path.contains(":generateContent")
            || path.contains(":streamGenerateContent")
            || path.contains(":countTokens")
        {
            Dialect::Gemini
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
    /// Gemini's `:generateContent` and `:streamGenerateContent` (which one, the request's
    /// stream flag says).
    GenerateContent,
    /// Gemini's `:countTokens`.
    GeminiCountTokens,
}

impl Endpoint {
    pub fn dialect(self) -> Dialect {
        match self {
            Endpoint::ChatCompletions => Dialect::OpenAiChat,
            Endpoint::Responses => Dialect::OpenAiResponses,
            Endpoint::Messages | Endpoint::CountTokens => Dialect::AnthropicMessages,
            Endpoint::GenerateContent | Endpoint::GeminiCountTokens => Dialect::Gemini,
        }
    }

    /// The main endpoint of a dialect.
    pub fn for_dialect(dialect: Dialect) -> Endpoint {
        match dialect {
            Dialect::OpenAiChat => Endpoint::ChatCompletions,
            Dialect::OpenAiResponses => Endpoint::Responses,
            Dialect::AnthropicMessages => Endpoint::Messages,
            Dialect::Gemini => Endpoint::GenerateContent,
        }
    }

    /// The path below a provider's base URL (which ends in its API version, e.g. `/v1`);
    /// `None` for Gemini's, which name the model ([`Endpoint::model_path`]).
    pub fn upstream_path(self) -> Option<&'static str> {
        match self {
            Endpoint::ChatCompletions => Some("/chat/completions"),
            Endpoint::Responses => Some("/responses"),
            Endpoint::Messages => Some("/messages"),
            Endpoint::CountTokens => Some("/messages/count_tokens"),
            Endpoint::GenerateContent | Endpoint::GeminiCountTokens => None,
        }
    }

    /// A Gemini endpoint's path below the base URL, for `model`: the streamed method asks
    /// for server-sent events (`alt=sse`) unless the client's own query says otherwise.
    pub fn model_path(self, model: &str, stream: bool) -> String {
        let method = match (self, stream) {
            (Endpoint::GeminiCountTokens, _) => "countTokens",
            (_, true) => "streamGenerateContent",
            (_, false) => "generateContent",
        };
        format!("/models/{model}:{method}")
    }

    /// Whether the request may ask for a stream.
    pub fn can_stream(self) -> bool {
        !matches!(self, Endpoint::CountTokens | Endpoint::GeminiCountTokens)
    }

    /// Whether the request only counts tokens.
    pub fn counts_tokens(self) -> bool {
        matches!(self, Endpoint::CountTokens | Endpoint::GeminiCountTokens)
    }
}

impl Dialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::OpenAiChat => "openai_chat",
            Dialect::OpenAiResponses => "openai_responses",
            Dialect::AnthropicMessages => "anthropic_messages",
            Dialect::Gemini => "gemini",
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
            "gemini" => Some(Dialect::Gemini),
            _ => None,
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
