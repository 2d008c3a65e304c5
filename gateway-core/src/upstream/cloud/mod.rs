//! The clouds models are bought through: Azure OpenAI, Amazon Bedrock and Google Vertex
//! AI. The gateway speaks their models' own dialects to them (OpenAI's to Azure,
//! Anthropic Messages to Bedrock and Vertex Claude, Gemini to Vertex Gemini); what differs
//! is done here, at the provider edge, after everything else has worked on the body:
//!
//! - [`Client::shape`]: the cloud's path for the endpoint and model (a deployment, a model
//!   id in the path, a publisher's method), and the body edits the cloud wants
//!   (`anthropic_version` instead of `model`, Bedrock's Converse shape);
//! - [`Client::authorize`]: the account's credentials on the request (an Entra ID token,
//!   a SigV4 signature from the AWS credential chain, a Google access token);
//! - [`Client::adapt`]: the answer turned back into the dialect's own wire (Bedrock's
//!   binary event stream into SSE, a Converse answer or a cloud's error into Anthropic's).
//!
//! - `azure`   — Entra ID tokens, from a command or the client-credentials flow.
//! - `aws`     — the AWS credential chain and SigV4.
//! - `betas`   — which of a client's `anthropic-beta` features each cloud's Claude takes.
//! - `google`  — Google access tokens (service-account key or Application Default Credentials).
//! - `shown`   — an Azure answer's model named as the client asked for it, not the deployment.
//! - `token`   — a bearer token kept until shortly before it expires.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;

use crate::config::clouds::{BedrockApi, Cloud};
use crate::config::Provider;
use crate::dialect::{Dialect, Endpoint};
use crate::error::GatewayError;
use crate::secrets::SecretStore;
use crate::upstream::{UpBody, Whole};
use trimgate_wire::bedrock;

mod aws;
mod azure;
pub mod betas;
mod google;
mod shown;
mod token;

/// The largest event-stream frame Bedrock's answer may hold.
const MAX_FRAME: usize = 16 << 20;

/// A cloud provider's credentials and how its requests are shaped; one per provider,
/// made with the upstream clients, credentials fetched on first use.
pub enum Client {
    Azure {
        api_version: Option<String>,
        entra: Option<azure::Entra>,
    },
    Bedrock {
        aws: aws::Aws,
        api: BedrockApi,
    },
    Vertex {
        google: google::Google,
    },
}

/// How a request goes to a cloud, and what its answer needs to be read as the dialect's.
pub struct Shaped {
    /// The path (and query) below the provider's base URL.
    pub path: String,
    pub body: Bytes,
    pub answer: AnswerShape,
}

#[derive(Clone, Debug)]
pub enum AnswerShape {
    /// The dialect's own wire (Vertex Gemini, Azure when the client named the deployment).
    AsIs,
    /// Azure: the client is shown the model it asked for, not the deployment.
    Azure { shown: String, stream: bool },
    /// Claude on Vertex: its answers are Anthropic's, its errors sometimes Google's.
    VertexClaude,
    Bedrock {
        api: bedrock::StreamApi,
        model: String,
    },
}

impl Client {
    pub fn new(provider: &Provider) -> Option<Client> {
        Some(match provider.cloud.as_ref()? {
            Cloud::Azure { api_version, entra } => Client::Azure {
                api_version: api_version.clone(),
                entra: entra.clone().map(azure::Entra::new),
            },
            Cloud::Bedrock {
                region,
                profile,
                api,
            } => Client::Bedrock {
                aws: aws::Aws::new(region.clone(), profile.clone()),
                api: *api,
            },
            Cloud::Vertex {
                credentials_file, ..
            } => Client::Vertex {
                google: google::Google::new(credentials_file.clone()),
            },
        })
    }

    /// Whether the client's headers go on (Azure, Vertex: `anthropic-beta` among them) or
    /// only the configured ones and those AWS needs (Bedrock: every header sent is signed,
    /// none of an SDK's means anything to AWS, and the betas go in the body).
    pub fn forwards_headers(&self) -> bool {
        !matches!(self, Client::Bedrock { .. })
    }

    /// The cloud's path and body for a request the gateway made for `endpoint`. `path`
    /// and `query` are what the dialect alone would use (Gemini's model path, the
    /// client's own query).
    #[allow(clippy::too_many_arguments)]
    pub fn shape(
        &self,
        provider: &Provider,
        endpoint: Endpoint,
        path: Option<&str>,
        query: Option<&str>,
        model: &str,
        shown: &str,
        stream: bool,
        inbound: &HeaderMap,
        body: Bytes,
    ) -> Result<Shaped, GatewayError> {
        let refused = |detail: String| GatewayError::UpstreamUnreachable {
            provider: provider.name.clone(),
            detail,
        };
        match (self, endpoint) {
            (
                Client::Azure { api_version, .. },
                Endpoint::ChatCompletions | Endpoint::Responses,
            ) => {
                let method = if endpoint == Endpoint::Responses {
                    "responses"
                } else {
                    "chat/completions"
                };
                let path = match (api_version, endpoint) {
                    (None, _) => format!("/openai/v1/{method}"),
                    // Classic Responses is not under a deployment: the body names it.
                    (Some(v), Endpoint::Responses) => format!("/openai/responses?api-version={v}"),
                    (Some(v), _) => format!(
                        "/openai/deployments/{}/{method}?api-version={v}",
                        encode_segment(model)
                    ),
                };
                let answer = if shown == model {
                    AnswerShape::AsIs
                } else {
                    AnswerShape::Azure {
                        shown: shown.to_owned(),
                        stream,
                    }
                };
                Ok(Shaped { path, body, answer })
            }
            (Client::Bedrock { api, .. }, Endpoint::Messages) => {
                let converse = uses_converse(*api, model);
                let (method, body, stream_api) = if converse {
                    let body = bedrock::converse_request(&body, model).map_err(|e| {
                        GatewayError::InvalidJson(format!(
                            "cannot make a Bedrock Converse request: {e}"
                        ))
                    })?;
                    (
                        if stream {
                            "converse-stream"
                        } else {
                            "converse"
                        },
                        body,
                        bedrock::StreamApi::Converse,
                    )
                } else {
                    let betas: Vec<&str> = betas::listed(inbound)
                        .filter_map(|b| betas::sent_as(provider, b))
                        .collect();
                    let body = bedrock::invoke_body(&body, &betas).map_err(|e| {
                        GatewayError::InvalidJson(format!(
                            "cannot make a Bedrock InvokeModel request: {e}"
                        ))
                    })?;
                    (
                        if stream {
                            "invoke-with-response-stream"
                        } else {
                            "invoke"
                        },
                        body,
                        bedrock::StreamApi::Invoke,
                    )
                };
                Ok(Shaped {
                    path: format!("/model/{}/{method}", encode_segment(model)),
                    body: Bytes::from(body),
                    answer: AnswerShape::Bedrock {
                        api: stream_api,
                        model: model.to_owned(),
                    },
                })
            }
            (Client::Vertex { .. }, Endpoint::Messages) => {
                let method = if stream {
                    "streamRawPredict"
                } else {
                    "rawPredict"
                };
                let body = bedrock::vertex_body(&body).map_err(|e| {
                    GatewayError::InvalidJson(format!("cannot make a Vertex request: {e}"))
                })?;
                Ok(Shaped {
                    path: format!(
                        "/publishers/anthropic/models/{}:{method}",
                        encode_segment(model)
                    ),
                    body: Bytes::from(body),
                    answer: AnswerShape::VertexClaude,
                })
            }
            (Client::Vertex { .. }, Endpoint::GenerateContent | Endpoint::GeminiCountTokens) => {
                let below = path.ok_or_else(|| refused("no model path for Gemini".into()))?;
                let path = match query {
                    Some(q) => format!("/publishers/google{below}?{q}"),
                    None => format!("/publishers/google{below}"),
                };
                Ok(Shaped {
                    path,
                    body,
                    answer: AnswerShape::AsIs,
                })
            }
            _ => Err(refused(format!(
                "{} has no {} endpoint on this cloud",
                provider.kind.as_str(),
                endpoint.dialect().as_str()
            ))),
        }
    }

    /// The betas of `headers` as the cloud's Claude takes them: Vertex's in the header,
    /// those it does not offer left out (see [`betas`]).
    pub fn keep_offered_betas(&self, provider: &Provider, headers: &mut HeaderMap) {
        if !matches!(self, Client::Vertex { .. }) || !headers.contains_key("anthropic-beta") {
            return;
        }
        let kept: Vec<&str> = betas::listed(headers)
            .filter_map(|b| betas::sent_as(provider, b))
            .collect();
        let kept = kept.join(",");
        headers.remove("anthropic-beta");
        if let Ok(value) = HeaderValue::from_str(&kept) {
            if !kept.is_empty() {
                headers.insert("anthropic-beta", value);
            }
        }
    }

    /// Where the provider lists its models (Azure's resource); `None` for Bedrock and
    /// Vertex, whose runtime APIs list none.
    pub fn models_path(&self) -> Option<String> {
        match self {
            Client::Azure {
                api_version: Some(v),
                ..
            } => Some(format!("/openai/models?api-version={v}")),
            Client::Azure { .. } => Some("/openai/v1/models".to_owned()),
            Client::Bedrock { .. } | Client::Vertex { .. } => None,
        }
    }

    /// That the account's credentials are had, as a request would have them (the
    /// window's test of a provider whose API lists no models): `authorize` on an empty
    /// request to the provider's base URL, sent nowhere.
    pub async fn check_credentials(
        &self,
        provider: &Provider,
        secrets: &dyn SecretStore,
        has_key: bool,
    ) -> Result<(), GatewayError> {
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.uri_mut() = format!("{}/", provider.base_url).parse().map_err(|_| {
            GatewayError::UpstreamUnreachable {
                provider: provider.name.clone(),
                detail: "its base URL does not form a valid URL".into(),
            }
        })?;
        self.authorize(provider, secrets, &mut request, &Bytes::new(), has_key)
            .await
    }

    /// Puts the account's credentials on `request`, whose URI, headers and body are final.
    pub async fn authorize(
        &self,
        provider: &Provider,
        secrets: &dyn SecretStore,
        request: &mut Request<Full<Bytes>>,
        body: &Bytes,
        has_key: bool,
    ) -> Result<(), GatewayError> {
        let missing = |detail: String| GatewayError::CloudCredentials {
            provider: provider.name.clone(),
            detail,
        };
        match self {
            Client::Azure {
                entra: Some(entra), ..
            } => {
                let token = entra.token(secrets).await.map_err(missing)?;
                request.headers_mut().insert(
                    http::header::AUTHORIZATION,
                    bearer(&token).map_err(missing)?,
                );
                Ok(())
            }
            Client::Azure { entra: None, .. } => Ok(()),
            // A Bedrock API key is a bearer token, already on the request.
            Client::Bedrock { .. } if has_key => Ok(()),
            Client::Bedrock { aws, .. } => aws.sign(request, body).await.map_err(missing),
            Client::Vertex { google } => {
                let token = google.token().await.map_err(missing)?;
                request.headers_mut().insert(
                    http::header::AUTHORIZATION,
                    bearer(&token).map_err(missing)?,
                );
                Ok(())
            }
        }
    }

    /// The cloud's answer as the dialect's own: Bedrock's event stream as SSE, its
    /// Converse answers and errors as Anthropic's, Vertex's Google-shaped errors on Claude
    /// as Anthropic's.
    pub fn adapt(
        provider: &Provider,
        shape: &AnswerShape,
        response: Response<Incoming>,
        limit: usize,
    ) -> Response<UpBody> {
        let (mut parts, body) = response.into_parts();
        let success = parts.status.is_success();
        let name = provider.name.clone();
        let body = match shape {
            AnswerShape::AsIs => UpBody::Plain(body),
            AnswerShape::Azure { shown, stream } if success => {
                parts.headers.remove(http::header::CONTENT_LENGTH);
                UpBody::converted(body, Box::new(shown::ShownModel::new(shown, *stream)))
            }
            AnswerShape::Azure { .. } => UpBody::Plain(body),
            AnswerShape::VertexClaude if success => UpBody::Plain(body),
            AnswerShape::VertexClaude => {
                let status = parts.status.as_u16();
                set_json(&mut parts.headers);
                UpBody::converted(
                    body,
                    Box::new(Whole::new(limit, move |b: &[u8]| {
                        Ok(google_error_to_anthropic(&name, status, b))
                    })),
                )
            }
            AnswerShape::Bedrock { api, model } if success => {
                if is_event_stream(&parts.headers) {
                    parts.headers.insert(
                        http::header::CONTENT_TYPE,
                        HeaderValue::from_static("text/event-stream"),
                    );
                    parts.headers.remove(http::header::CONTENT_LENGTH);
                    let sse = bedrock::SseFromEventStream::new(*api, model, MAX_FRAME);
                    UpBody::converted(body, Box::new(EventStream(sse)))
                } else if matches!(api, bedrock::StreamApi::Converse) {
                    set_json(&mut parts.headers);
                    let model = model.clone();
                    UpBody::converted(
                        body,
                        Box::new(Whole::new(limit, move |b: &[u8]| {
                            bedrock::converse_response(b, &model)
                                .map_err(|e| format!("the Converse answer could not be read: {e}"))
                        })),
                    )
                } else {
                    UpBody::Plain(body)
                }
            }
            AnswerShape::Bedrock { .. } => {
                let error_type = parts
                    .headers
                    .get("x-amzn-errortype")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let status = parts.status.as_u16();
                let (mapped, _) =
                    bedrock::error_to_anthropic(&name, status, error_type.as_deref(), b"");
                if let Ok(mapped) = http::StatusCode::from_u16(mapped) {
                    parts.status = mapped;
                }
                set_json(&mut parts.headers);
                UpBody::converted(
                    body,
                    Box::new(Whole::new(limit, move |b: &[u8]| {
                        Ok(bedrock::error_to_anthropic(&name, status, error_type.as_deref(), b).1)
                    })),
                )
            }
        };
        Response::from_parts(parts, body)
    }
}

/// Bedrock's event stream, read frame by frame into Anthropic SSE.
struct EventStream(bedrock::SseFromEventStream);

impl crate::upstream::Convert for EventStream {
    fn push(&mut self, chunk: &[u8]) -> Result<Bytes, String> {
        self.0
            .push(chunk)
            .map(Bytes::from)
            .map_err(|e| format!("Bedrock's event stream is broken: {e}"))
    }

    fn finish(&mut self) -> Result<Bytes, String> {
        self.0
            .finish()
            .map(Bytes::from)
            .map_err(|e| format!("Bedrock's event stream is broken: {e}"))
    }
}

fn set_json(headers: &mut HeaderMap) {
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.remove(http::header::CONTENT_LENGTH);
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/vnd.amazon.eventstream"))
}

fn bearer(token: &crate::secrets::Secret) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        .map_err(|_| "the token holds characters that cannot go in a header".to_owned())?;
    value.set_sensitive(true);
    Ok(value)
}

pub use bedrock::is_anthropic_model;

/// Whether a Bedrock request for `model` goes through Converse (else InvokeModel).
pub fn uses_converse(api: BedrockApi, model: &str) -> bool {
    match api {
        BedrockApi::Invoke => false,
        BedrockApi::Converse => true,
        BedrockApi::Auto => !is_anthropic_model(model),
    }
}

/// A model id as one path segment: a Bedrock id's `:` and an ARN's `/` escaped, as the
/// AWS SDKs send them.
fn encode_segment(model: &str) -> String {
    /// What stays as it is: letters, digits and `-_.~@`.
    const KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b'@');
    percent_encoding::utf8_percent_encode(model, KEPT).to_string()
}

/// Google's error shape (`{"error":{"code","message","status"}}`), which Vertex answers
/// with for its own refusals (a token, a quota) even on Claude's paths, as Anthropic's:
/// read and written by the wire's own error codecs, the provider and Google's status
/// named in the message.
fn google_error_to_anthropic(provider: &str, status: u16, body: &[u8]) -> Vec<u8> {
    use crate::translate::{decode_error, encode_error, ir::ProviderError};
    // Already Anthropic's (the model's own refusal): as it is.
    if decode_error(Dialect::AnthropicMessages, body).is_some() {
        return body.to_vec();
    }
    let message = match decode_error(Dialect::Gemini, body) {
        Some(e) => format!("{provider} ({}): {}", e.kind, e.message),
        None => format!(
            "{provider}: {}",
            String::from_utf8_lossy(&body[..body.len().min(500)])
        ),
    };
    let kind = "api_error".to_owned();
    encode_error(
        Dialect::AnthropicMessages,
        status,
        &ProviderError { kind, message },
    )
}

/// The one dialect `provider` speaks for `model`, when its dialects are per model: Vertex
/// serves Claude in Anthropic's (rawPredict) and its other models in Gemini's. `None`:
/// any dialect the provider speaks.
pub fn dialect_for(provider: &Provider, model: &str) -> Option<Dialect> {
    match provider.cloud {
        Some(Cloud::Vertex { .. }) if model.starts_with("claude") => {
            Some(Dialect::AnthropicMessages)
        }
        Some(Cloud::Vertex { .. }) => Some(Dialect::Gemini),
        _ => None,
    }
}

/// Whether a `count_tokens` request of `dialect` for `model` is answered by the gateway:
/// Bedrock and Vertex Claude have no such endpoint in Anthropic's shape, and Vertex counts
/// Gemini's tokens only for its own models.
pub fn counts_locally(provider: &Provider, model: &str, dialect: Dialect) -> bool {
    match provider.cloud {
        Some(Cloud::Bedrock { .. }) => true,
        Some(Cloud::Vertex { .. }) => {
            dialect != Dialect::Gemini || dialect_for(provider, model) != Some(Dialect::Gemini)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_are_one_path_segment() {
        assert_eq!(
            encode_segment("anthropic.claude-sonnet-4-5-20250929-v1:0"),
            "anthropic.claude-sonnet-4-5-20250929-v1%3A0"
        );
        assert_eq!(
            encode_segment("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.anthropic.x"
        );
        assert_eq!(
            encode_segment("claude-sonnet-4-5@20250929"),
            "claude-sonnet-4-5@20250929"
        );
    }

    #[test]
    fn google_errors_become_anthropic_errors_naming_the_provider() {
        let body =
            br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#;
        let out: serde_json::Value =
            serde_json::from_slice(&google_error_to_anthropic("vertex-east", 429, body)).unwrap();
        assert_eq!(out["type"], "error");
        assert_eq!(out["error"]["type"], "rate_limit_error");
        assert_eq!(
            out["error"]["message"],
            "vertex-east (RESOURCE_EXHAUSTED): Quota exceeded"
        );
        let anthropic =
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"x"}}"#;
        assert_eq!(
            google_error_to_anthropic("v", 400, anthropic),
            anthropic.to_vec()
        );
        let garbage = google_error_to_anthropic("v", 502, b"<html>bad gateway</html>");
        let out: serde_json::Value = serde_json::from_slice(&garbage).unwrap();
        assert_eq!(out["error"]["type"], "api_error");
        assert!(out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bad gateway"));
    }
}
