//! Bedrock's requests signed with SigV4 by the AWS SDK's own signer, with credentials from
//! the AWS SDK's default chain: environment, shared config and credentials files (a named
//! profile, SSO, `credential_process`), web identity, the container's and the instance's
//! metadata. Credentials are kept until five minutes before they expire.

use std::time::{Duration, SystemTime};

use aws_credential_types::provider::ProvideCredentials as _;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use bytes::Bytes;
use http::Request;
use http_body_util::Full;

/// The signing name of Bedrock's runtime API.
const SERVICE: &str = "bedrock";
/// Credentials without an expiry (static keys) are taken to last this long, so they are
/// read again every five minutes (half of it, see `Kept`): a changed profile or rotated key
/// is picked up.
const STATIC_LASTS: Duration = Duration::from_secs(600);

pub struct Aws {
    region: String,
    profile: Option<String>,
    chain: tokio::sync::OnceCell<aws_credential_types::provider::SharedCredentialsProvider>,
    held: super::token::Kept<Credentials>,
}

impl Aws {
    pub fn new(region: String, profile: Option<String>) -> Aws {
        Aws {
            region,
            profile,
            chain: tokio::sync::OnceCell::new(),
            held: super::token::Kept::new(),
        }
    }

    async fn chain(
        &self,
    ) -> Result<&aws_credential_types::provider::SharedCredentialsProvider, String> {
        self.chain
            .get_or_try_init(|| async {
                // The SDK's HTTP client on ring, as the gateway's own TLS is.
                let http = aws_smithy_http_client::Builder::new()
                    .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                        aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
                    ))
                    .build_https();
                let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
                    .region(aws_config::Region::new(self.region.clone()))
                    .http_client(http);
                if let Some(profile) = &self.profile {
                    loader = loader.profile_name(profile);
                }
                loader
                    .load()
                    .await
                    .credentials_provider()
                    .ok_or_else(|| "the AWS SDK offers no credential chain".to_owned())
            })
            .await
    }

    pub async fn credentials(&self) -> Result<Credentials, String> {
        self.held.get(|| self.fetch()).await
    }

    async fn fetch(&self) -> Result<(Credentials, Duration), String> {
        let chain = self.chain().await?;
        let credentials = chain.provide_credentials().await.map_err(|e| {
            let profile = self
                .profile
                .as_deref()
                .map(|p| format!(" (profile {p:?})"))
                .unwrap_or_default();
            format!(
                "no AWS credentials{profile}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, name a profile with aws_profile, run where a role gives them, or give a Bedrock API key as api_key; the AWS credential chain said: {}",
                chain_text(&e)
            )
        })?;
        let lasts = match credentials.expiry() {
            Some(at) => at.duration_since(SystemTime::now()).unwrap_or_default(),
            None => STATIC_LASTS,
        };
        Ok((credentials, lasts))
    }

    /// Signs `request` (URI, headers and body final) for Bedrock in this region.
    pub async fn sign(
        &self,
        request: &mut Request<Full<Bytes>>,
        body: &Bytes,
    ) -> Result<(), String> {
        let credentials = self.credentials().await?;
        sign_request(request, body, credentials, &self.region, SystemTime::now())
    }
}

/// An error and its causes, each once, without the debug dump the SDK's own display adds.
fn chain_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cause = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}

pub fn sign_request(
    request: &mut Request<Full<Bytes>>,
    body: &Bytes,
    credentials: Credentials,
    region: &str,
    time: SystemTime,
) -> Result<(), String> {
    let identity = credentials.into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(SERVICE)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("cannot sign the request: {e}"))?
        .into();
    let uri = request.uri().to_string();
    let headers: Vec<(&str, &str)> = request
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
        .collect();
    let signable = SignableRequest::new(
        request.method().as_str(),
        uri,
        headers.into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| format!("cannot sign the request: {e}"))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| format!("cannot sign the request: {e}"))?
        .into_parts();
    instructions.apply_to_request_http1x(request);
    // The signature and session token open the account: never logged.
    for name in [http::header::AUTHORIZATION.as_str(), "x-amz-security-token"] {
        if let Some(v) = request.headers_mut().get_mut(name) {
            v.set_sensitive(true);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AWS documentation's own example: the signature of a request must not depend
    /// on anything but its parts, the credentials and the time.
    #[test]
    fn a_request_is_signed_for_bedrock_in_its_region() {
        let mut request = Request::new(Full::new(Bytes::from_static(b"{}")));
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() =
            "https://bedrock-runtime.us-west-2.amazonaws.com/model/anthropic.claude-v2%3A1/invoke"
                .parse()
                .unwrap();
        request.headers_mut().insert(
            "content-type",
            http::HeaderValue::from_static("application/json"),
        );
        let credentials = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("session".into()),
            None,
            "test",
        );
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        sign_request(
            &mut request,
            &Bytes::from_static(b"{}"),
            credentials,
            "us-west-2",
            time,
        )
        .unwrap();
        let auth = request.headers()["authorization"].to_str().unwrap();
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-west-2/bedrock/aws4_request, SignedHeaders="), "{auth}");
        assert!(request.headers()["authorization"].is_sensitive());
        assert_eq!(request.headers()["x-amz-date"], "20231114T221320Z");
        assert_eq!(request.headers()["x-amz-security-token"], "session");
        assert!(request.headers()["x-amz-security-token"].is_sensitive());
    }
}
