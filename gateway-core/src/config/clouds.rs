//! What a cloud provider (`azure_openai`, `bedrock`, `vertex`) needs beyond a base URL and
//! a key: the resource's API version and Entra ID token source, the AWS region and profile,
//! the Google project, location and credentials file. Read with the provider's table and
//! checked here, once; `crate::upstream::cloud` acts on them.

use std::path::PathBuf;

use serde::Deserialize;

use super::providers::{check_url, key_source, KeySourceConfig, ProviderKind};
use super::ConfigProblem;
use crate::secrets::KeySource;

/// The cloud fields of a `[providers.*]` table, flattened into it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloudConfig {
    /// Azure: the `api-version` of the classic `/openai/deployments/…` paths; without it
    /// the v1 paths (`/openai/v1/…`), which take none.
    pub api_version: Option<String>,
    /// Azure: a Microsoft Entra ID bearer token instead of the `api-key`.
    pub entra: Option<EntraConfig>,
    /// Bedrock: the AWS region (else `AWS_REGION` or the profile's).
    pub region: Option<String>,
    /// Bedrock: the shared-config profile the AWS credential chain reads.
    pub aws_profile: Option<String>,
    /// Bedrock: `auto` (InvokeModel for Anthropic models, Converse for the rest),
    /// `invoke` or `converse`.
    pub bedrock_api: Option<String>,
    /// Vertex: the Google Cloud project.
    pub project: Option<String>,
    /// Vertex: the location (`us-east5`, `europe-west1`, `global`).
    pub location: Option<String>,
    /// Vertex: a service-account key file; without it, Application Default Credentials.
    pub credentials_file: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntraConfig {
    /// A command that prints a token (`az account get-access-token … -o tsv`), run again
    /// before the last one expires.
    pub command: Option<String>,
    /// The client-credentials flow: a tenant, an app registration and its secret.
    pub tenant_id: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<KeySourceConfig>,
    /// The authority the flow asks (`https://login.microsoftonline.com`, or a sovereign
    /// cloud's).
    pub authority: Option<String>,
    /// The scope asked for; Azure OpenAI's by default.
    pub scope: Option<String>,
}

/// A cloud provider's settings, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Cloud {
    Azure {
        /// `None`: the v1 paths.
        api_version: Option<String>,
        entra: Option<Entra>,
    },
    Bedrock {
        region: String,
        profile: Option<String>,
        api: BedrockApi,
    },
    Vertex {
        project: String,
        location: String,
        credentials_file: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Entra {
    Command(String),
    ClientCredentials {
        /// The token URL: `{authority}/{tenant}/oauth2/v2.0/token`.
        token_url: String,
        client_id: String,
        secret: KeySource,
        scope: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BedrockApi {
    Auto,
    Invoke,
    Converse,
}

pub const ENTRA_AUTHORITY: &str = "https://login.microsoftonline.com";
pub const AZURE_OPENAI_SCOPE: &str = "https://cognitiveservices.azure.com/.default";

impl Cloud {
    /// The base URL a provider of this cloud uses when the config gives none.
    pub fn default_base_url(&self) -> Option<String> {
        match self {
            Cloud::Azure { .. } => None,
            Cloud::Bedrock { region, .. } => {
                Some(format!("https://bedrock-runtime.{region}.amazonaws.com"))
            }
            Cloud::Vertex {
                project, location, ..
            } => {
                let host = if location == "global" {
                    "aiplatform.googleapis.com".to_owned()
                } else {
                    format!("{location}-aiplatform.googleapis.com")
                };
                Some(format!(
                    "https://{host}/v1/projects/{project}/locations/{location}"
                ))
            }
        }
    }
}

impl Cloud {
    /// Where this provider's credentials come from, for `trimgate check` and the window:
    /// names and places, never a value.
    pub fn credentials(&self, key: &KeySource) -> String {
        let key_set = !matches!(key, KeySource::None);
        match self {
            Cloud::Azure {
                entra: Some(Entra::Command(_)),
                ..
            } => "a Microsoft Entra ID token from a command".into(),
            Cloud::Azure {
                entra:
                    Some(Entra::ClientCredentials {
                        client_id, secret, ..
                    }),
                ..
            } => {
                format!("a Microsoft Entra ID token for app {client_id}, its secret from {secret}")
            }
            Cloud::Azure { entra: None, .. } => format!("the api-key from {key}"),
            Cloud::Bedrock { .. } if key_set => format!("a Bedrock API key from {key}"),
            Cloud::Bedrock {
                region, profile, ..
            } => match profile {
                Some(p) => format!("the AWS credential chain, profile {p:?}, SigV4 in {region}"),
                None => format!("the AWS credential chain, SigV4 in {region}"),
            },
            Cloud::Vertex {
                credentials_file: Some(file),
                project,
                location,
                ..
            } => format!(
                "the service-account key file {} (project {project}, {location})",
                file.display()
            ),
            Cloud::Vertex {
                project, location, ..
            } => format!("Application Default Credentials (project {project}, {location})"),
        }
    }
}

impl Cloud {
    /// What the price table knows a request to this cloud for `model` (the route's model:
    /// a deployment, a Bedrock id, a Vertex model) by: see [`crate::pricing::cloud_key`].
    pub fn price_key(&self, model: &str) -> String {
        let site = match self {
            Cloud::Azure { .. } => crate::pricing::Site::Azure,
            Cloud::Bedrock { .. } => crate::pricing::Site::Bedrock,
            Cloud::Vertex { location, .. } => crate::pricing::Site::Vertex {
                global: location == "global",
            },
        };
        crate::pricing::cloud_key(site, model)
    }
}

/// A name that goes into a URL's host or path as it is.
fn plain(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The cloud settings of provider `name` of `kind`; fields of another cloud are refused
/// rather than ignored, so a typo'd kind does not silently send requests elsewhere.
pub(super) fn validate(
    name: &str,
    kind: ProviderKind,
    config: CloudConfig,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Cloud> {
    let at = |field: &str| format!("providers.{name}.{field}");
    let CloudConfig {
        api_version,
        entra,
        region,
        aws_profile,
        bedrock_api,
        project,
        location,
        credentials_file,
    } = config;
    let mut stray = |field: &str, set: bool, owner: &str| {
        if set {
            problems.push(ConfigProblem {
                path: at(field),
                message: format!("only a provider of kind {owner} takes it"),
            });
        }
    };
    if kind != ProviderKind::AzureOpenAi {
        stray("api_version", api_version.is_some(), "azure_openai");
        stray("entra", entra.is_some(), "azure_openai");
    }
    if kind != ProviderKind::Bedrock {
        stray("region", region.is_some(), "bedrock");
        stray("aws_profile", aws_profile.is_some(), "bedrock");
        stray("bedrock_api", bedrock_api.is_some(), "bedrock");
    }
    if kind != ProviderKind::Vertex {
        stray("project", project.is_some(), "vertex");
        stray("location", location.is_some(), "vertex");
        stray("credentials_file", credentials_file.is_some(), "vertex");
    }
    let mut named = |field: &str, value: Option<String>, example: &str| -> Option<String> {
        match value {
            Some(v) if plain(&v) => Some(v),
            Some(v) => {
                problems.push(ConfigProblem {
                    path: at(field),
                    message: format!("{v:?} is not a plain name (letters, digits, '-', '_', '.')"),
                });
                None
            }
            None => {
                problems.push(ConfigProblem {
                    path: at(field),
                    message: format!("is required (e.g. {example})"),
                });
                None
            }
        }
    };
    match kind {
        ProviderKind::AzureOpenAi => {
            let api_version = match api_version {
                Some(v) if plain(&v) => Some(v),
                Some(v) => {
                    problems.push(ConfigProblem {
                        path: at("api_version"),
                        message: format!("{v:?} is not an API version such as \"2024-10-21\""),
                    });
                    None
                }
                None => None,
            };
            let entra = entra.and_then(|e| validate_entra(&at("entra"), e, problems));
            Some(Cloud::Azure { api_version, entra })
        }
        ProviderKind::Bedrock => {
            let region = region
                .or_else(|| std::env::var("AWS_REGION").ok())
                .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok());
            let region = named("region", region, "\"us-east-1\"")?;
            let api = match bedrock_api.as_deref() {
                None | Some("auto") => BedrockApi::Auto,
                Some("invoke") => BedrockApi::Invoke,
                Some("converse") => BedrockApi::Converse,
                Some(other) => {
                    problems.push(ConfigProblem {
                        path: at("bedrock_api"),
                        message: format!(
                            "unknown value {other:?}; expected auto, invoke or converse"
                        ),
                    });
                    BedrockApi::Auto
                }
            };
            Some(Cloud::Bedrock {
                region,
                profile: aws_profile.filter(|p| !p.is_empty()),
                api,
            })
        }
        ProviderKind::Vertex => {
            let project = named("project", project, "\"my-project\"");
            let location = named("location", location, "\"us-east5\" or \"global\"");
            Some(Cloud::Vertex {
                project: project?,
                location: location?,
                credentials_file,
            })
        }
        _ => None,
    }
}

fn validate_entra(
    path: &str,
    entra: EntraConfig,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Entra> {
    let EntraConfig {
        command,
        tenant_id,
        client_id,
        client_secret,
        authority,
        scope,
    } = entra;
    let flow = tenant_id.is_some() || client_id.is_some() || client_secret.is_some();
    match (command, flow) {
        (Some(command), false) if !command.trim().is_empty() => Some(Entra::Command(command)),
        (None, true) => {
            let (Some(tenant), Some(client_id), Some(secret)) =
                (tenant_id, client_id, client_secret)
            else {
                problems.push(ConfigProblem {
                    path: path.to_owned(),
                    message: "the client-credentials flow needs tenant_id, client_id and client_secret ({ env = … }, { file = … } or { keychain = … })".into(),
                });
                return None;
            };
            if !plain(&tenant) {
                problems.push(ConfigProblem {
                    path: format!("{path}.tenant_id"),
                    message: format!("{tenant:?} is not a tenant id or domain"),
                });
                return None;
            }
            let secret = key_source(Some(secret), &format!("{path}.client_secret"), problems)?;
            let authority = check_url(
                authority.as_deref().unwrap_or(ENTRA_AUTHORITY),
                format!("{path}.authority"),
                problems,
            );
            Some(Entra::ClientCredentials {
                token_url: format!("{authority}/{tenant}/oauth2/v2.0/token"),
                client_id,
                secret,
                scope: scope.unwrap_or_else(|| AZURE_OPENAI_SCOPE.to_owned()),
            })
        }
        _ => {
            problems.push(ConfigProblem {
                path: path.to_owned(),
                message: "give either command = \"…\" or tenant_id, client_id and client_secret"
                    .into(),
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, ConfigError};

    fn problems(toml: &str) -> Vec<String> {
        match Config::from_toml(toml, "test") {
            Ok(_) => Vec::new(),
            Err(ConfigError::Invalid { problems, .. }) => problems
                .into_iter()
                .map(|p| format!("{}: {}", p.path, p.message))
                .collect(),
            Err(other) => vec![other.to_string()],
        }
    }

    fn cloud(toml: &str, name: &str) -> (Cloud, String, KeySource) {
        let config = Config::from_toml(toml, "test").unwrap();
        let p = config.providers.iter().find(|p| p.name == name).unwrap();
        (p.cloud.clone().unwrap(), p.base_url.clone(), p.key.clone())
    }

    #[test]
    fn each_cloud_is_read_with_its_defaults() {
        let (azure, url, key) = cloud(
            "[providers.az]\nkind = \"azure_openai\"\nbase_url = \"https://r.openai.azure.com/\"\napi_version = \"2024-10-21\"\n",
            "az",
        );
        assert_eq!(
            azure,
            Cloud::Azure {
                api_version: Some("2024-10-21".into()),
                entra: None
            }
        );
        assert_eq!(url, "https://r.openai.azure.com");
        assert_eq!(key, KeySource::Env("AZURE_OPENAI_API_KEY".into()));

        let (entra, _, key) = cloud(
            "[providers.az]\nkind = \"azure_openai\"\nbase_url = \"https://r.openai.azure.com\"\nentra = { tenant_id = \"contoso.onmicrosoft.com\", client_id = \"app\", client_secret = { keychain = \"az-secret\" } }\n",
            "az",
        );
        assert_eq!(key, KeySource::None, "an Entra token needs no api-key");
        assert_eq!(
            entra,
            Cloud::Azure {
                api_version: None,
                entra: Some(Entra::ClientCredentials {
                    token_url: "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token".into(),
                    client_id: "app".into(),
                    secret: KeySource::Keychain("az-secret".into()),
                    scope: AZURE_OPENAI_SCOPE.into(),
                })
            }
        );

        let (bedrock, url, key) = cloud(
            "[providers.br]\nkind = \"bedrock\"\nregion = \"eu-west-1\"\naws_profile = \"work\"\n",
            "br",
        );
        assert_eq!(url, "https://bedrock-runtime.eu-west-1.amazonaws.com");
        assert_eq!(
            key,
            KeySource::None,
            "signed with the AWS chain's credentials"
        );
        assert_eq!(
            bedrock,
            Cloud::Bedrock {
                region: "eu-west-1".into(),
                profile: Some("work".into()),
                api: BedrockApi::Auto
            }
        );

        let (_, url, _) = cloud(
            "[providers.vx]\nkind = \"vertex\"\nproject = \"p-1\"\nlocation = \"us-east5\"\n",
            "vx",
        );
        assert_eq!(
            url,
            "https://us-east5-aiplatform.googleapis.com/v1/projects/p-1/locations/us-east5"
        );
        let (_, url, _) = cloud(
            "[providers.vx]\nkind = \"vertex\"\nproject = \"p-1\"\nlocation = \"global\"\n",
            "vx",
        );
        assert_eq!(
            url,
            "https://aiplatform.googleapis.com/v1/projects/p-1/locations/global"
        );
    }

    #[test]
    fn wrong_cloud_fields_are_named_with_their_paths() {
        let found = problems(
            "[providers.v]\nkind = \"vertex\"\nregion = \"us-east-1\"\nlocation = \"us east\"\n",
        );
        assert!(
            found
                .iter()
                .any(|p| p == "providers.v.region: only a provider of kind bedrock takes it"),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("providers.v.project: is required")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("providers.v.location: \"us east\" is not a plain name")),
            "{found:?}"
        );

        let found = problems("[providers.a]\nkind = \"azure_openai\"\n");
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("providers.a.base_url: is required for kind azure_openai")),
            "{found:?}"
        );

        let found = problems(
            "[providers.a]\nkind = \"azure_openai\"\nbase_url = \"https://r\"\nentra = { command = \"x\", client_id = \"c\" }\n",
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("providers.a.entra: give either command")),
            "{found:?}"
        );
        let found = problems(
            "[providers.a]\nkind = \"azure_openai\"\nbase_url = \"https://r\"\nentra = { tenant_id = \"t\", client_id = \"c\" }\n",
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("providers.a.entra: the client-credentials flow needs")),
            "{found:?}"
        );

        let found = problems(
            "[providers.b]\nkind = \"bedrock\"\nregion = \"us-east-1\"\nbedrock_api = \"rest\"\nclient_auth = \"forward\"\n",
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("providers.b.bedrock_api: unknown value \"rest\"")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("providers.b.client_auth: must be never for kind bedrock")),
            "{found:?}"
        );

        let found =
            problems("[providers.o]\nkind = \"openai\"\nproject = \"p\"\napi_version = \"x\"\n");
        assert!(
            found
                .iter()
                .any(|p| p == "providers.o.project: only a provider of kind vertex takes it"),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p
                    == "providers.o.api_version: only a provider of kind azure_openai takes it"),
            "{found:?}"
        );
    }

    #[test]
    fn where_the_credentials_come_from_names_no_value() {
        let (cloud, _, key) = cloud(
            "[providers.br]\nkind = \"bedrock\"\nregion = \"us-east-1\"\napi_key = { keychain = \"bedrock\" }\n",
            "br",
        );
        assert_eq!(
            cloud.credentials(&key),
            "a Bedrock API key from keychain entry bedrock"
        );
    }
}
