//! Which of a client's `anthropic-beta` features a cloud's Claude takes. Bedrock and Vertex
//! refuse a request naming one they do not offer ("invalid beta flag"), and Claude Code
//! names several on every request (`claude-code-20250219`, `oauth-2025-04-20`, …): those are
//! left out, and the client is told which (`x-trimgate-dropped`, the ledger's `dropped`).
//! The lists follow the features each cloud documents for Claude, as LiteLLM's maintained
//! table of them gives them; one feature is renamed on both (`advanced-tool-use` is
//! offered as `tool-search-tool`).

use crate::config::clouds::Cloud;
use crate::config::Provider;

const TOOL_SEARCH: &str = "tool-search-tool-2025-10-19";

const BEDROCK_INVOKE: &[&str] = &[
    "compact-2026-01-12",
    "computer-use-2025-01-24",
    "computer-use-2025-11-24",
    "context-1m-2025-08-07",
    "context-management-2025-06-27",
    "dangerous-tool-use-2026-09-03",
    "effort-2025-11-24",
    "fine-grained-tool-streaming-2025-05-14",
    "mid-conversation-output-config-2026-07-01",
    "mid-conversation-tool-changes-2026-07-01",
    "thinking-binding-controls-2026-08-01",
    "thinking-display-updates-2026-08-18",
    TOOL_SEARCH,
];

const VERTEX: &[&str] = &[
    "compact-2026-01-12",
    "compact-2026-09-04",
    "computer-use-2025-01-24",
    "computer-use-2025-11-24",
    "context-1m-2025-08-07",
    "context-management-2025-06-27",
    "dangerous-tool-use-2026-09-03",
    "interleaved-thinking-2025-05-14",
    "per-turn-control-2026-07-01",
    "thinking-binding-controls-2026-08-01",
    "thinking-display-updates-2026-08-18",
    TOOL_SEARCH,
    "web-search-2025-03-05",
];

/// What a beta is sent as to `provider`'s Claude: itself, its cloud's name for it, or
/// `None` when the cloud does not offer it; every beta passes to a provider not a cloud.
pub fn sent_as<'a>(provider: &Provider, beta: &'a str) -> Option<&'a str> {
    let offered = match &provider.cloud {
        Some(Cloud::Bedrock { .. }) => BEDROCK_INVOKE,
        Some(Cloud::Vertex { .. }) => VERTEX,
        _ => return Some(beta),
    };
    let name = if beta == "advanced-tool-use-2025-11-20" {
        TOOL_SEARCH
    } else {
        beta
    };
    offered.contains(&name).then_some(name)
}

/// Whether `model` at `provider` is a cloud's Claude taking betas (InvokeModel, rawPredict);
/// a Converse request carries none.
pub fn is_claude_edge(provider: &Provider, model: &str) -> bool {
    match &provider.cloud {
        Some(Cloud::Bedrock { api, .. }) => !super::uses_converse(*api, model),
        Some(Cloud::Vertex { .. }) => model.starts_with("claude"),
        _ => false,
    }
}

/// The client's betas `provider` will not be sent for `model`, for the client to be told.
pub fn left_out(provider: &Provider, model: &str, headers: &http::HeaderMap) -> Vec<String> {
    if provider.cloud.is_none() || matches!(provider.cloud, Some(Cloud::Azure { .. })) {
        return Vec::new();
    }
    let claude = is_claude_edge(provider, model);
    listed(headers)
        .filter(|beta| !claude || sent_as(provider, beta).is_none())
        .map(str::to_owned)
        .collect()
}

/// The betas a request names, one per feature, in its `anthropic-beta` headers.
pub fn listed(headers: &http::HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all("anthropic-beta")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn provider(toml: &str) -> std::sync::Arc<Provider> {
        Config::from_toml(toml, "t").unwrap().providers[0].clone()
    }

    #[test]
    fn claude_codes_own_betas_are_left_out_for_the_clouds_and_offered_ones_kept() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "anthropic-beta",
            "claude-code-20250219,interleaved-thinking-2025-05-14, context-1m-2025-08-07"
                .parse()
                .unwrap(),
        );
        headers.append(
            "anthropic-beta",
            "advanced-tool-use-2025-11-20".parse().unwrap(),
        );
        let bedrock = provider("[providers.b]\nkind = \"bedrock\"\nregion = \"us-east-1\"\n");
        let claude = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
        assert_eq!(
            left_out(&bedrock, claude, &headers),
            ["claude-code-20250219", "interleaved-thinking-2025-05-14"]
        );
        assert_eq!(
            sent_as(&bedrock, "advanced-tool-use-2025-11-20"),
            Some(TOOL_SEARCH)
        );
        // A Converse model takes none of them.
        assert_eq!(
            left_out(&bedrock, "amazon.nova-pro-v1:0", &headers).len(),
            4
        );
        let vertex =
            provider("[providers.v]\nkind = \"vertex\"\nproject = \"p\"\nlocation = \"global\"\n");
        assert_eq!(
            left_out(&vertex, "claude-sonnet-4-5@20250929", &headers),
            ["claude-code-20250219"]
        );
        let azure = provider(
            "[providers.a]\nkind = \"azure_openai\"\nbase_url = \"https://r.openai.azure.com\"\n",
        );
        assert!(left_out(&azure, "dep", &headers).is_empty());
    }
}
