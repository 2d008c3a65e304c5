//! `count_tokens` answered by the gateway, for a provider without that endpoint: the
//! request decoded to the IR and counted by the local tokenizer.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, HeaderValue};

use super::stamp::stamp;
use super::Ctx;
use crate::dialect::Dialect;
use crate::error::GatewayError;
use crate::pending::Pending;
use crate::translate;

/// Answers `count_tokens` here for a provider without that endpoint.
pub(super) async fn count_locally(
    ctx: &mut Ctx,
    pending: &mut Pending,
    body: Bytes,
) -> Result<Response, GatewayError> {
    // Counting reads what the model would see; fields it drops cannot add tokens.
    let dialect = ctx.dialect();
    let mut ignored = translate::Report::new(dialect);
    // Gemini's `countTokens` may wrap a whole `generateContentRequest`: only a body that
    // names one is read twice.
    let wrapped = dialect == Dialect::Gemini
        && memchr::memmem::find(&body, b"\"generateContentRequest\"").is_some();
    let inner = wrapped
        .then(|| {
            #[derive(serde::Deserialize)]
            struct Wrapper<'a> {
                #[serde(rename = "generateContentRequest", borrow)]
                request: Option<&'a serde_json::value::RawValue>,
            }
            let w: Wrapper<'_> = serde_json::from_slice(&body).ok()?;
            w.request.map(|r| r.get().as_bytes())
        })
        .flatten();
    let req = translate::decode_request(
        dialect,
        inner.unwrap_or(&body),
        translate::Policy::default(),
        &mut ignored,
    )?;
    // Tokenizing a large request takes milliseconds: keep it off the async workers.
    let tokens = tokio::task::spawn_blocking(move || translate::count::count_tokens(&req))
        .await
        .map_err(|_| GatewayError::UpstreamBroken {
            provider: "local tokenizer".into(),
            detail: "counting failed".into(),
        })?;
    let answer = match dialect {
        Dialect::Gemini => format!("{{\"totalTokens\":{tokens}}}"),
        _ => format!("{{\"input_tokens\":{tokens}}}"),
    };
    let mut out = Response::new(Body::from(answer));
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    ctx.overhead = ctx.started.elapsed();
    stamp(&mut out, ctx);
    let record = pending.record();
    record.status = 200;
    record.overhead = ctx.overhead;
    Ok(out)
}
