//! The closed set of provider kinds and what each is known to be: where it listens, the
//! dialects it speaks, the models it serves, the quirks the codecs write around.

use crate::dialect::Dialect;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
    DeepSeek,
    OpenAiCompatible,
    Gemini,
}

impl ProviderKind {
    /// The kind a config names (`openai`, `anthropic`, `deepseek`, `openai_compatible`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "openai" => Some(Self::OpenAi),
            "anthropic" => Some(Self::Anthropic),
            "deepseek" => Some(Self::DeepSeek),
            "openai_compatible" => Some(Self::OpenAiCompatible),
            "gemini" => Some(Self::Gemini),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::DeepSeek => "deepseek",
            Self::OpenAiCompatible => "openai_compatible",
            Self::Gemini => "gemini",
        }
    }

    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("https://api.openai.com/v1"),
            Self::Anthropic => Some("https://api.anthropic.com/v1"),
            Self::DeepSeek => Some("https://api.deepseek.com/v1"),
            Self::OpenAiCompatible => None,
            Self::Gemini => Some("https://generativelanguage.googleapis.com/v1beta"),
        }
    }

    pub fn default_anthropic_base_url(self) -> Option<&'static str> {
        match self {
            Self::DeepSeek => Some("https://api.deepseek.com/anthropic/v1"),
            _ => None,
        }
    }

    pub fn default_dialects(self) -> Vec<Dialect> {
        match self {
            Self::OpenAi => vec![Dialect::OpenAiChat, Dialect::OpenAiResponses],
            Self::Anthropic => vec![Dialect::AnthropicMessages],
            Self::DeepSeek => vec![Dialect::OpenAiChat, Dialect::AnthropicMessages],
            Self::OpenAiCompatible => vec![Dialect::OpenAiChat],
            Self::Gemini => vec![Dialect::Gemini],
        }
    }

    /// DeepSeek's chat model takes at most 8K output tokens and refuses a request for
    /// more, which agents written for other models send (Claude Code asks for 128K).
    pub fn default_max_output_tokens(self) -> Option<u64> {
        match self {
            Self::DeepSeek => Some(8192),
            _ => None,
        }
    }

    /// Model-name patterns a provider of this kind serves when the config names no route for it.
    pub fn implicit_patterns(self) -> &'static [&'static str] {
        match self {
            Self::OpenAi => &[
                "gpt-*",
                "chatgpt-*",
                "codex-*",
                "o[0-9]*",
                "text-embedding-*",
            ],
            Self::Anthropic => &["claude-*"],
            Self::DeepSeek => &["deepseek-*"],
            Self::OpenAiCompatible => &[],
            Self::Gemini => &["gemini-*", "gemma-*"],
        }
    }

    pub fn default_models(self) -> &'static [&'static str] {
        match self {
            Self::OpenAi => &["gpt-5.5", "gpt-5.4-mini", "gpt-5.4-nano"],
            Self::Anthropic => &["claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"],
            Self::DeepSeek => &["deepseek-chat", "deepseek-reasoner"],
            Self::OpenAiCompatible => &[],
            Self::Gemini => &["gemini-3-pro-preview", "gemini-2.5-pro", "gemini-2.5-flash"],
        }
    }
}
