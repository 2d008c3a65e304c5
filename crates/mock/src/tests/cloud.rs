//! What the cloud routes' tests share: tokens from the mock's own endpoints, SigV4-shaped
//! credentials, and an event-stream reader written apart from the mock's encoder (its CRC32
//! computed bit by bit here).

use base64::Engine;
use http::StatusCode;
use serde_json::{json, Value};

use super::{call, post_json};
use crate::dates::{amz_date, unix_now};
use crate::MockState;

/// The host the tests' requests name, and so the audience a service account's JWT must have.
pub(crate) const HOST: (&str, &str) = ("host", "mock");
pub(crate) const TOKEN_URL: &str = "http://mock/token";
pub(crate) const CLOUD_PLATFORM: &str = "https://www.googleapis.com/auth/cloud-platform";
const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

/// A JWT with these claims: RS256 in its header, a signature nobody checks here.
pub(crate) fn jwt(claims: &Value) -> String {
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": "0123abcd"});
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 256]);
    format!("{}.{}.{signature}", b64(&header), b64(claims))
}

/// The claims google-auth puts in a service account's assertion.
pub(crate) fn service_account_claims() -> Value {
    let now = unix_now();
    json!({"iss": "mock-sa@mock-project.iam.gserviceaccount.com", "scope": CLOUD_PLATFORM,
           "aud": TOKEN_URL, "iat": now, "exp": now + 3600})
}

pub(crate) fn jwt_form(assertion: &str) -> String {
    format!(
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={assertion}"
    )
}

/// `POST /token` with a form body: status and JSON.
pub(crate) async fn post_form(state: &MockState, path: &str, form: &str) -> (StatusCode, Value) {
    let (status, _, body) = call(state, "POST", path, &[HOST, FORM], form).await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// A Vertex access token from the mock's Google endpoint.
pub(crate) async fn google_token(state: &MockState) -> String {
    let form = jwt_form(&jwt(&service_account_claims()));
    let (status, body) = post_form(state, "/token", &form).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["access_token"].as_str().unwrap().to_owned()
}

/// An Azure access token from the mock's Entra endpoint.
pub(crate) async fn entra_token(state: &MockState) -> String {
    let form = "grant_type=client_credentials&client_id=app&client_secret=s3cret\
                &scope=https%3A%2F%2Fcognitiveservices.azure.com%2F.default";
    let (status, body) = post_form(state, "/tenant-id/oauth2/v2.0/token", form).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["access_token"].as_str().unwrap().to_owned()
}

/// `POST` a JSON body with these owned headers.
pub(crate) async fn post_owned(
    state: &MockState,
    path: &str,
    headers: &[(String, String)],
    body: Value,
) -> (StatusCode, http::HeaderMap, Value) {
    let borrowed: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    post_json(state, path, &borrowed, body).await
}

/// SigV4-shaped credentials for `region`, dated now: `authorization` and `x-amz-date`.
pub(crate) fn sigv4(region: &str) -> Vec<(String, String)> {
    sigv4_at(region, "bedrock", unix_now())
}

pub(crate) fn sigv4_at(region: &str, service: &str, unix: u64) -> Vec<(String, String)> {
    let date = amz_date(unix);
    let authorization = format!(
        "AWS4-HMAC-SHA256 Credential=AKIAMOCKMOCKMOCKMOCK/{}/{region}/{service}/aws4_request, \
         SignedHeaders=content-type;host;x-amz-date, \
         Signature=0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        &date[..8]
    );
    vec![
        ("authorization".to_owned(), authorization),
        ("x-amz-date".to_owned(), date),
        ("content-type".to_owned(), "application/json".to_owned()),
        (HOST.0.to_owned(), HOST.1.to_owned()),
    ]
}

/// One event-stream frame, as read back.
#[derive(Debug)]
pub(crate) struct Frame {
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Frame {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.payload)
            .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&self.payload)))
    }
}

/// How reading a body of frames went wrong.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// The body ended inside a frame, after the frames before it.
    Truncated {
        whole: usize,
    },
    PreludeCrc {
        frame: usize,
    },
    MessageCrc {
        frame: usize,
    },
}

/// Reads every frame of an event-stream body, checking both CRCs of each.
pub(crate) fn read_frames(mut bytes: &[u8]) -> Result<Vec<Frame>, (Vec<Frame>, ReadError)> {
    let mut frames = Vec::new();
    while !bytes.is_empty() {
        let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if bytes.len() < 12 {
            let whole = frames.len();
            return Err((frames, ReadError::Truncated { whole }));
        }
        let total = be32(&bytes[0..4]) as usize;
        let headers_len = be32(&bytes[4..8]) as usize;
        if crc32(&bytes[0..8]) != be32(&bytes[8..12]) {
            let frame = frames.len();
            return Err((frames, ReadError::PreludeCrc { frame }));
        }
        if bytes.len() < total {
            let whole = frames.len();
            return Err((frames, ReadError::Truncated { whole }));
        }
        let (message, rest) = bytes.split_at(total);
        if crc32(&message[..total - 4]) != be32(&message[total - 4..]) {
            let frame = frames.len();
            return Err((frames, ReadError::MessageCrc { frame }));
        }
        let mut headers = Vec::new();
        let mut at = 12;
        while at < 12 + headers_len {
            let name_len = message[at] as usize;
            let name = String::from_utf8(message[at + 1..at + 1 + name_len].to_vec()).unwrap();
            at += 1 + name_len;
            assert_eq!(message[at], 7, "only string headers are sent");
            let value_len = u16::from_be_bytes([message[at + 1], message[at + 2]]) as usize;
            let value = String::from_utf8(message[at + 3..at + 3 + value_len].to_vec()).unwrap();
            at += 3 + value_len;
            headers.push((name, value));
        }
        assert_eq!(at, 12 + headers_len);
        frames.push(Frame {
            headers,
            payload: message[at..total - 4].to_vec(),
        });
        bytes = rest;
    }
    Ok(frames)
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), a bit at a time.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn the_test_crc_is_the_standard_one() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}
