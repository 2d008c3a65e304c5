//! The token endpoints (Entra's, Google's) and the lifetime of what they issue, as Azure and
//! Vertex see it.

use std::time::Duration;

use http::StatusCode;
use serde_json::{json, Value};

use super::call;
use super::cloud::{
    entra_token, google_token, jwt, jwt_form, post_form, service_account_claims, HOST, TOKEN_URL,
};
use crate::{MockConfig, MockState};

const AZURE_CHAT: &str = "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21";
const VERTEX_GEMINI: &str =
    "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent";

fn chat() -> Value {
    json!({"messages": [{"role": "user", "content": "hi"}]})
}

fn gemini() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
}

async fn status_with_bearer(
    state: &MockState,
    path: &str,
    token: &str,
    body: &Value,
) -> (StatusCode, Value) {
    let bearer = format!("Bearer {token}");
    let (status, _, bytes) = call(
        state,
        "POST",
        path,
        &[HOST, ("authorization", &bearer)],
        &body.to_string(),
    )
    .await;
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A client-credentials grant gets Entra's token answer, and Azure takes the token.
#[tokio::test]
async fn entra_issues_a_bearer_token_that_azure_accepts() {
    let s = MockState::new(MockConfig::default());
    let form = "grant_type=client_credentials&client_id=app&client_secret=s3cret\
                &scope=https%3A%2F%2Fcognitiveservices.azure.com%2F.default";
    let (status, body) = post_form(
        &s,
        "/72f988bf-86f1-41af-91ab-2d7cd011db47/oauth2/v2.0/token",
        form,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 4, "{body}");
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3599);
    assert_eq!(body["ext_expires_in"], 3599);
    let token = body["access_token"].as_str().unwrap();
    assert!(token.len() >= 64, "{token}");
    let (status, answer) = status_with_bearer(&s, AZURE_CHAT, token, &chat()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["model"], "gpt-4o-prod");
    // The form arrived as sent, for the tests that read it.
    let captured = s.requests();
    assert_eq!(captured[0].body, form.as_bytes());
}

/// Entra names the parameter that is missing and refuses grants it does not serve.
#[tokio::test]
async fn entra_refuses_missing_parameters_and_other_grants_in_its_error_shape() {
    let s = MockState::new(MockConfig::default());
    let path = "/common/oauth2/v2.0/token";
    let (status, body) = post_form(
        &s,
        path,
        "grant_type=client_credentials&client_secret=x&scope=api%3A%2F%2Fx%2F.default",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_request");
    assert_eq!(body["error_codes"], json!([900_144]));
    let description = body["error_description"].as_str().unwrap();
    assert!(
        description.starts_with(
            "AADSTS900144: The request body must contain the following parameter: 'client_id'."
        ),
        "{description}"
    );
    assert!(description.contains("Trace ID: "), "{description}");
    for key in ["timestamp", "trace_id", "correlation_id", "error_uri"] {
        assert!(body[key].is_string(), "{key}: {body}");
    }
    let (status, body) =
        post_form(&s, path, "client_id=a&client_secret=b&scope=x%2F.default").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .contains("'grant_type'"));
    let (status, body) = post_form(&s, path, "grant_type=password&client_id=a").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "unsupported_grant_type");
    let (status, body) = post_form(
        &s,
        path,
        "grant_type=client_credentials&client_id=a&scope=x%2F.default",
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"], "invalid_client");
    let (status, body) = post_form(&s, path, "grant_type=client_credentials&client_id=a&client_secret=b&scope=https%3A%2F%2Fcognitiveservices.azure.com").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_scope");
}

/// A service account's assertion for this token URL gets Google's token answer, which
/// Vertex takes; the assertion is kept as sent, for a test to check its signature.
#[tokio::test]
async fn google_issues_a_token_for_a_service_accounts_jwt_that_vertex_accepts() {
    let s = MockState::new(MockConfig::default());
    let assertion = jwt(&service_account_claims());
    let (status, body) = post_form(&s, "/token", &jwt_form(&assertion)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["access_token", "expires_in", "token_type"]);
    assert_eq!(body["expires_in"], 3599);
    assert_eq!(body["token_type"], "Bearer");
    let token = body["access_token"].as_str().unwrap();
    assert!(token.starts_with("ya29.mock-"), "{token}");
    let (status, answer) = status_with_bearer(&s, VERTEX_GEMINI, token, &gemini()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer["candidates"][0]["content"]["parts"][0]["text"].is_string());
    let (_, _, listed) = call(&s, "GET", "/_mock/requests", &[], "").await;
    let listed: Value = serde_json::from_slice(&listed).unwrap();
    let body = listed[0]["body"].as_str().unwrap();
    assert!(body.ends_with(&format!("assertion={assertion}")), "{body}");
}

/// Google checks the assertion's audience against the URL the request came to, its
/// times and its scope.
#[tokio::test]
async fn google_refuses_an_assertion_for_another_audience_or_out_of_time() {
    let s = MockState::new(MockConfig::default());
    let mut claims = service_account_claims();
    claims["aud"] = json!("http://other-host/token");
    let (status, body) = post_form(&s, "/token", &jwt_form(&jwt(&claims))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_grant");
    assert_eq!(
        body["error_description"],
        format!("Invalid JWT: Failed audience check. The right audience is {TOKEN_URL}")
    );
    let mut claims = service_account_claims();
    claims["exp"] = json!(claims["iat"].as_u64().unwrap() + 7200);
    let (status, body) = post_form(&s, "/token", &jwt_form(&jwt(&claims))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error_description"]
        .as_str()
        .unwrap()
        .contains("Check your iat and exp values"));
    let mut claims = service_account_claims();
    claims["scope"] = json!("https://www.googleapis.com/auth/devstorage.read_only");
    let (_, body) = post_form(&s, "/token", &jwt_form(&jwt(&claims))).await;
    assert_eq!(body["error"], "invalid_scope");
    let (status, body) = post_form(&s, "/token", "grant_type=client_credentials").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "unsupported_grant_type");
}

/// An authorized user's refresh token (ADC from `gcloud auth application-default login`)
/// gets the same token answer.
#[tokio::test]
async fn google_takes_an_authorized_users_refresh_token() {
    let s = MockState::new(MockConfig::default());
    let form = "grant_type=refresh_token&client_id=764086051850-x.apps.googleusercontent.com\
                &client_secret=d-FL95Q&refresh_token=1%2F%2F0gmock";
    let (status, body) = post_form(&s, "/token", form).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let token = body["access_token"].as_str().unwrap();
    let (status, _) = status_with_bearer(&s, VERTEX_GEMINI, token, &gemini()).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = post_form(&s, "/token", "grant_type=refresh_token&client_id=a").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_request");
}

/// Tokens live `token_lifetime_secs`: both clouds take them until then and refuse them after.
#[tokio::test(start_paused = true)]
async fn tokens_expire_after_the_configured_lifetime() {
    let s = MockState::new(MockConfig {
        token_lifetime_secs: 60,
        ..MockConfig::default()
    });
    let azure = entra_token(&s).await;
    let vertex = google_token(&s).await;
    let (_, body) = post_form(&s, "/token", &jwt_form(&jwt(&service_account_claims()))).await;
    assert_eq!(body["expires_in"], 60);
    tokio::time::advance(Duration::from_secs(59)).await;
    assert_eq!(
        status_with_bearer(&s, AZURE_CHAT, &azure, &chat()).await.0,
        StatusCode::OK
    );
    assert_eq!(
        status_with_bearer(&s, VERTEX_GEMINI, &vertex, &gemini())
            .await
            .0,
        StatusCode::OK
    );
    tokio::time::advance(Duration::from_secs(2)).await;
    let (status, body) = status_with_bearer(&s, AZURE_CHAT, &azure, &chat()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "401");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("have expired"));
    let (status, body) = status_with_bearer(&s, VERTEX_GEMINI, &vertex, &gemini()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED");
    assert_eq!(
        body["error"]["details"][0]["reason"],
        "ACCESS_TOKEN_EXPIRED"
    );
    // A new token works again.
    let fresh = google_token(&s).await;
    assert_eq!(
        status_with_bearer(&s, VERTEX_GEMINI, &fresh, &gemini())
            .await
            .0,
        StatusCode::OK
    );
}

/// A token is good only where its issuer's tokens are: Entra's on Azure, Google's on Vertex.
#[tokio::test]
async fn an_entra_token_is_refused_by_vertex_and_a_google_token_by_azure() {
    let s = MockState::new(MockConfig::default());
    let azure = entra_token(&s).await;
    let vertex = google_token(&s).await;
    assert_eq!(
        status_with_bearer(&s, VERTEX_GEMINI, &azure, &gemini())
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status_with_bearer(&s, AZURE_CHAT, &vertex, &chat()).await.0,
        StatusCode::UNAUTHORIZED
    );
    // An Entra token for another resource is no good on Azure OpenAI either.
    let form = "grant_type=client_credentials&client_id=a&client_secret=b\
                &scope=https%3A%2F%2Fgraph.microsoft.com%2F.default";
    let (_, body) = post_form(&s, "/t/oauth2/v2.0/token", form).await;
    let graph = body["access_token"].as_str().unwrap();
    assert_eq!(
        status_with_bearer(&s, AZURE_CHAT, graph, &chat()).await.0,
        StatusCode::UNAUTHORIZED
    );
}
