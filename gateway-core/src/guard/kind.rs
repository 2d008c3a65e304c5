//! The closed set of secret kinds the guard tells apart.

use serde::Deserialize;

/// What a secret is. The rules name it (`type = "openai_key"` in their TOML), a finding
/// carries it, and its placeholder spells it (`TRIMGATE_SECRET_OPENAI_KEY_…`), so the
/// model knows what stood there without seeing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    OpenaiKey,
    AnthropicKey,
    GoogleApiKey,
    AwsAccessKey,
    AwsSecretKey,
    GithubToken,
    GitlabToken,
    SlackToken,
    SlackWebhook,
    StripeKey,
    NpmToken,
    PypiToken,
    HuggingfaceToken,
    /// An `sk-` key of another OpenAI-compatible provider (DeepSeek, Moonshot, …): no
    /// vendor marker, so only a long random tail after `sk-` gives it away.
    SkKey,
    PrivateKey,
    Jwt,
    /// The password of a database URL (`postgres://user:PASSWORD@host`).
    DbPassword,
    /// The password of another URL with credentials (`https://user:PASSWORD@host`).
    UrlPassword,
    /// The credential of an `Authorization`-like header (`Bearer …`, `x-api-key: …`).
    AuthHeader,
    /// The value of an assignment whose name says it is secret (`DB_PASSWORD=…`,
    /// `"client_secret": "…"`), when no more specific rule knows its shape.
    EnvSecret,
    /// Found by a pattern of the user's own (`[[guard.patterns]]`).
    Custom,
}

impl SecretKind {
    pub const ALL: [SecretKind; 21] = [
        SecretKind::OpenaiKey,
        SecretKind::AnthropicKey,
        SecretKind::GoogleApiKey,
        SecretKind::AwsAccessKey,
        SecretKind::AwsSecretKey,
        SecretKind::GithubToken,
        SecretKind::GitlabToken,
        SecretKind::SlackToken,
        SecretKind::SlackWebhook,
        SecretKind::StripeKey,
        SecretKind::NpmToken,
        SecretKind::PypiToken,
        SecretKind::HuggingfaceToken,
        SecretKind::SkKey,
        SecretKind::PrivateKey,
        SecretKind::Jwt,
        SecretKind::DbPassword,
        SecretKind::UrlPassword,
        SecretKind::AuthHeader,
        SecretKind::EnvSecret,
        SecretKind::Custom,
    ];

    /// The kind of a snake-case name, as [`SecretKind::as_str`] writes it.
    pub fn from_name(name: &str) -> Option<SecretKind> {
        SecretKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The snake-case name the rules and the labelled set use.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::OpenaiKey => "openai_key",
            SecretKind::AnthropicKey => "anthropic_key",
            SecretKind::GoogleApiKey => "google_api_key",
            SecretKind::AwsAccessKey => "aws_access_key",
            SecretKind::AwsSecretKey => "aws_secret_key",
            SecretKind::GithubToken => "github_token",
            SecretKind::GitlabToken => "gitlab_token",
            SecretKind::SlackToken => "slack_token",
            SecretKind::SlackWebhook => "slack_webhook",
            SecretKind::StripeKey => "stripe_key",
            SecretKind::NpmToken => "npm_token",
            SecretKind::PypiToken => "pypi_token",
            SecretKind::HuggingfaceToken => "huggingface_token",
            SecretKind::SkKey => "sk_key",
            SecretKind::PrivateKey => "private_key",
            SecretKind::Jwt => "jwt",
            SecretKind::DbPassword => "db_password",
            SecretKind::UrlPassword => "url_password",
            SecretKind::AuthHeader => "auth_header",
            SecretKind::EnvSecret => "env_secret",
            SecretKind::Custom => "custom",
        }
    }

    /// The name in a placeholder: upper-case letters and underscores only, so the
    /// placeholder's grammar can tell it from the lower-case hex id that follows.
    pub fn tag(self) -> &'static str {
        match self {
            SecretKind::OpenaiKey => "OPENAI_KEY",
            SecretKind::AnthropicKey => "ANTHROPIC_KEY",
            SecretKind::GoogleApiKey => "GOOGLE_API_KEY",
            SecretKind::AwsAccessKey => "AWS_ACCESS_KEY",
            SecretKind::AwsSecretKey => "AWS_SECRET_KEY",
            SecretKind::GithubToken => "GITHUB_TOKEN",
            SecretKind::GitlabToken => "GITLAB_TOKEN",
            SecretKind::SlackToken => "SLACK_TOKEN",
            SecretKind::SlackWebhook => "SLACK_WEBHOOK",
            SecretKind::StripeKey => "STRIPE_KEY",
            SecretKind::NpmToken => "NPM_TOKEN",
            SecretKind::PypiToken => "PYPI_TOKEN",
            SecretKind::HuggingfaceToken => "HUGGINGFACE_TOKEN",
            SecretKind::SkKey => "SK_KEY",
            SecretKind::PrivateKey => "PRIVATE_KEY",
            SecretKind::Jwt => "JWT",
            SecretKind::DbPassword => "DB_PASSWORD",
            SecretKind::UrlPassword => "URL_PASSWORD",
            SecretKind::AuthHeader => "AUTH_HEADER",
            SecretKind::EnvSecret => "ENV_SECRET",
            SecretKind::Custom => "CUSTOM",
        }
    }

    /// Which kind names a span that several rules found: the one that knows the
    /// secret's shape best. A vendor's key format beats a key found only by where it
    /// stands (`x-api-key: sk-ant-…` is an Anthropic key, not just a header's value),
    /// and an assignment's name is the weakest evidence of all.
    pub(crate) fn priority(self) -> u8 {
        match self {
            SecretKind::EnvSecret => 0,
            SecretKind::AuthHeader => 1,
            SecretKind::UrlPassword | SecretKind::SkKey => 2,
            SecretKind::DbPassword | SecretKind::AwsSecretKey | SecretKind::Jwt => 3,
            _ => 4,
        }
    }
}

impl std::fmt::Display for SecretKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tag is the name upper-cased, and uses only the letters the placeholder
    /// grammar allows in a kind.
    #[test]
    fn tags_are_upper_case_names() {
        for kind in SecretKind::ALL {
            assert_eq!(kind.tag(), kind.as_str().to_ascii_uppercase());
            assert!(kind
                .tag()
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'_'));
            assert!(!kind.tag().starts_with('_') && !kind.tag().ends_with('_'));
            assert!(!kind.tag().contains("__"));
        }
    }

    /// The TOML name reads back into the kind it came from.
    #[test]
    fn names_deserialize() {
        #[derive(Deserialize)]
        struct Row {
            kind: SecretKind,
        }
        for kind in SecretKind::ALL {
            let row: Row = toml::from_str(&format!("kind = \"{}\"", kind.as_str())).unwrap();
            assert_eq!(row.kind, kind);
        }
    }
}
