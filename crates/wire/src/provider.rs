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
    /// GPT models bought through an Azure subscription: OpenAI's dialects at a resource's
    /// endpoint, the deployment named in the path (classic) or the body (v1).
    AzureOpenAi,
    /// Amazon Bedrock: Claude through InvokeModel, other models through Converse, both
    /// spoken here as Anthropic Messages and turned into Bedrock's wire at the edge.
    Bedrock,
    /// Google Vertex AI: Claude through rawPredict (Anthropic Messages) and Gemini through
    /// generateContent (the Gemini dialect), under a project and location.
    Vertex,
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
            "azure_openai" => Some(Self::AzureOpenAi),
            "bedrock" => Some(Self::Bedrock),
            "vertex" => Some(Self::Vertex),
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
            Self::AzureOpenAi => "azure_openai",
            Self::Bedrock => "bedrock",
            Self::Vertex => "vertex",
        }
    }

    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some("https://api.openai.com/v1"),
            Self::Anthropic => Some("https://api.anthropic.com/v1"),
            Self::DeepSeek => Some("https://api.deepseek.com/v1"),
            Self::Gemini => Some("https://generativelanguage.googleapis.com/v1beta"),
            // Made from the resource, region or project the config names.
            Self::OpenAiCompatible | Self::AzureOpenAi | Self::Bedrock | Self::Vertex => None,
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
            Self::AzureOpenAi => vec![Dialect::OpenAiChat, Dialect::OpenAiResponses],
            Self::Bedrock => vec![Dialect::AnthropicMessages],
            Self::Vertex => vec![Dialect::AnthropicMessages, Dialect::Gemini],
        }
    }

    /// DeepSeek's chat model takes at most 8K output tokens and refuses a request for
    /// more, which agents written for other models send (Claude Code asks for 128K).
    /// Whether this kind speaks OpenAI's own API (its parameter names, its reasoning
    /// fields), not only the Chat shape.
    pub fn is_openai(self) -> bool {
        matches!(self, Self::OpenAi | Self::AzureOpenAi)
    }

    /// Whether this kind serves Claude and takes Anthropic's `cache_control` marks.
    pub fn takes_cache_control(self) -> bool {
        matches!(self, Self::Anthropic | Self::Bedrock | Self::Vertex)
    }

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
            Self::Gemini => &["gemini-*", "gemma-*"],
            // A cloud's model names are its own (deployments, `anthropic.…-v1:0`,
            // `…@date`): routes name them.
            Self::OpenAiCompatible | Self::AzureOpenAi | Self::Bedrock | Self::Vertex => &[],
        }
    }

    pub fn default_models(self) -> &'static [&'static str] {
        match self {
            Self::OpenAi => &["gpt-5.5", "gpt-5.4-mini", "gpt-5.4-nano"],
            Self::Anthropic => &["claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"],
            Self::DeepSeek => &["deepseek-chat", "deepseek-reasoner"],
            Self::Gemini => &["gemini-3-pro-preview", "gemini-2.5-pro", "gemini-2.5-flash"],
            Self::OpenAiCompatible | Self::AzureOpenAi | Self::Bedrock | Self::Vertex => &[],
        }
    }
}
