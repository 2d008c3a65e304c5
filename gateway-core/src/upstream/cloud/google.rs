//! Google access tokens for Vertex AI, from gcp_auth: a service-account key file when the
//! config names one, else Application Default Credentials (`GOOGLE_APPLICATION_CREDENTIALS`,
//! `gcloud auth application-default login`'s file, the metadata server). gcp_auth keeps
//! each token and asks for a new one before it expires.

use std::path::PathBuf;
use std::sync::Arc;

use gcp_auth::TokenProvider;

use crate::secrets::Secret;

/// Vertex AI's scope.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

pub struct Google {
    file: Option<PathBuf>,
    provider: tokio::sync::OnceCell<Arc<dyn TokenProvider>>,
}

impl Google {
    pub fn new(file: Option<PathBuf>) -> Google {
        Google {
            file,
            provider: tokio::sync::OnceCell::new(),
        }
    }

    async fn provider(&self) -> Result<&Arc<dyn TokenProvider>, String> {
        self.provider
            .get_or_try_init(|| async {
                crate::upstream::install_tls_provider();
                match &self.file {
                    Some(file) => gcp_auth::CustomServiceAccount::from_file(file)
                        .map(|a| Arc::new(a) as Arc<dyn TokenProvider>)
                        .map_err(|e| {
                            format!(
                                "the service-account key file {} could not be used: {e}",
                                file.display()
                            )
                        }),
                    None => gcp_auth::provider().await.map_err(|e| {
                        format!("no Google credentials: name a service-account key file with credentials_file, set GOOGLE_APPLICATION_CREDENTIALS, or run `gcloud auth application-default login` ({e})")
                    }),
                }
            })
            .await
    }

    pub async fn token(&self) -> Result<Secret, String> {
        let provider = self.provider().await?;
        let token = provider
            .token(&[SCOPE])
            .await
            .map_err(|e| format!("Google did not give an access token: {e}"))?;
        Ok(Secret::new(token.as_str()))
    }
}
