//! Stage 1, ingress: the request as it arrives — its id and the agent's session, its
//! content type, its body read within the size and time limits, and the model and stream
//! a Gemini path names.

use axum::body::Body;
use bytes::Bytes;
use http::{header, HeaderMap};
use http_body_util::BodyExt;

use crate::error::GatewayError;
use crate::headers::{SESSION_HEADERS, X_REQUEST_ID};
use crate::relay::ready_or_within;

/// The model and stream a Gemini request's path names (`models/{model}:streamGenerateContent`),
/// handed to [`handle`](super::handle) in the request's extensions: its body names neither.
#[derive(Clone, Debug)]
pub struct PathModel {
    pub(super) model: String,
    pub(super) stream: bool,
    /// A stream asked without `alt=sse`: Google then streams one JSON array.
    pub(super) array: bool,
}

impl PathModel {
    pub fn new(model: &str, stream: bool, sse: bool) -> PathModel {
        PathModel {
            model: model.to_owned(),
            stream,
            array: stream && !sse,
        }
    }
}

/// The agent's session id, when it sent a sane one (see [`SESSION_HEADERS`]).
pub(super) fn session_id(headers: &HeaderMap) -> Option<String> {
    SESSION_HEADERS.iter().find_map(|name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
            .map(str::to_owned)
    })
}

/// The request id: the client's, when it sent a sane one, else a fresh one.
pub fn request_id(headers: &HeaderMap) -> String {
    headers
        .get(&X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| {
            // Written straight into a buffer: `to_string` goes through the formatter.
            let mut text = uuid::Uuid::encode_buffer();
            uuid::Uuid::new_v4()
                .hyphenated()
                .encode_lower(&mut text)
                .to_owned()
        })
}

pub(super) fn is_json(headers: &HeaderMap) -> Result<(), GatewayError> {
    let value = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = value.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(GatewayError::UnsupportedMediaType(value.to_owned()))
    }
}

/// Reads the body within the size limit and the time limit. An over-limit body is read
/// on and thrown away (up to `max_discard_bytes`, within the time limit) before the 413
/// goes out, so a client that writes its whole body before reading gets the answer rather
/// than a reset; one that asked `Expect: 100-continue` has sent nothing to throw away.
pub(super) async fn read_body(
    mut body: Body,
    headers: &HeaderMap,
    server: &crate::config::Server,
) -> Result<Bytes, GatewayError> {
    let limit = server.max_body_bytes;
    let too_large = GatewayError::BodyTooLarge { limit };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let deadline = tokio::time::Instant::now() + server.body_timeout;
    if declared.is_some_and(|n| n > limit as u64) {
        let expects_continue = headers
            .get(header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if !expects_continue {
            discard(body, server.max_discard_bytes, deadline).await;
        }
        return Err(too_large);
    }
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    loop {
        let frame = match ready_or_within(body.frame(), || deadline).await {
            Err(_) => {
                return Err(GatewayError::BodyTimeout {
                    secs: server.body_timeout.as_secs_f64(),
                })
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(GatewayError::InvalidJson(format!(
                    "could not read the request body: {e}"
                )))
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total += data.len();
        if total > limit {
            discard(body, server.max_discard_bytes, deadline).await;
            return Err(too_large);
        }
        chunks.push(data);
    }
    // One chunk is passed on as it is; several are joined once.
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.swap_remove(0),
        _ => {
            let mut joined = bytes::BytesMut::with_capacity(total);
            for chunk in &chunks {
                joined.extend_from_slice(chunk);
            }
            joined.freeze()
        }
    })
}

/// Reads and drops what is left of a body, up to `max` bytes or the deadline.
async fn discard(mut body: Body, max: usize, deadline: tokio::time::Instant) {
    let mut dropped = 0usize;
    while dropped <= max {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                dropped += frame.data_ref().map_or(0, Bytes::len);
            }
            _ => return,
        }
    }
}
