//! The client's response headers: which of the provider's go on, and the gateway's own
//! (`x-request-id`, `x-trimgate-*`), stamped on every answer, served or refused.

use std::time::Duration;

use axum::response::Response;
use http::{HeaderMap, HeaderValue};

use super::Ctx;
use crate::headers::{
    relayed_response_header, retain_headers, X_APPLIED, X_ATTEMPTS, X_CACHE, X_DROPPED, X_MODEL,
    X_OVERHEAD_MS, X_PROVIDER, X_REQUEST_ID, X_SAVED_BYTES, X_SAVED_TOKENS, X_UPSTREAM_REQUEST_ID,
};
use crate::record::Millis;

pub(super) fn stamp(response: &mut Response, ctx: &Ctx) {
    if let Ok(v) = HeaderValue::from_str(&ctx.id) {
        response.headers_mut().insert(X_REQUEST_ID, v);
    }
    response
        .headers_mut()
        .insert(X_OVERHEAD_MS, millis_header(ctx.overhead));
    if let Some((provider, model)) = &ctx.served {
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&provider.name) {
            headers.insert(X_PROVIDER, v);
        }
        if let Ok(v) = HeaderValue::from_str(model) {
            headers.insert(X_MODEL, v);
        }
        headers.insert(
            X_ATTEMPTS,
            match ctx.attempts {
                1 => HeaderValue::from_static("1"),
                n => HeaderValue::from(n),
            },
        );
    }
    if let Some(status) = ctx.cache {
        response
            .headers_mut()
            .insert(X_CACHE, HeaderValue::from_static(status.header()));
    }
    if !ctx.dropped.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&ctx.dropped) {
            response.headers_mut().insert(X_DROPPED, v);
        }
    }
    if let Some(o) = &ctx.optimized {
        let headers = response.headers_mut();
        if o.applied.is_empty() {
            headers.insert(X_APPLIED, HeaderValue::from_static(""));
        } else if let Ok(v) = HeaderValue::from_str(&o.applied) {
            headers.insert(X_APPLIED, v);
        }
        headers.insert(X_SAVED_BYTES, count_header(o.saved_bytes));
        if let Some(tokens) = o.saved_tokens {
            headers.insert(X_SAVED_TOKENS, count_header(tokens));
        }
    }
}

/// Headers `stamp` and `relayed_headers` add to a response at most.
const STAMPED: usize = 10;

/// A count as a header value; the zero that most requests carry without an allocation.
fn count_header(n: i64) -> HeaderValue {
    if n == 0 {
        HeaderValue::from_static("0")
    } else {
        HeaderValue::from(n)
    }
}

/// `x-trimgate-overhead-ms`: milliseconds with three decimals (`0.042`).
fn millis_header(d: Duration) -> HeaderValue {
    HeaderValue::from_str(Millis(d).text(&mut [0; 24])).unwrap_or(HeaderValue::from_static("0.000"))
}

/// The provider's response headers that go on to the client, in the map they came in:
/// the others are taken out, and the provider's request id is renamed, since
/// `x-request-id` carries the gateway's.
pub(super) fn relayed_headers(mut headers: HeaderMap) -> HeaderMap {
    let upstream_id = headers.remove(&X_REQUEST_ID);
    retain_headers(&mut headers, relayed_response_header);
    // Room for the upstream id and what `stamp` adds, so the map grows once, not twice.
    headers.reserve(STAMPED);
    if let Some(id) = upstream_id {
        headers.insert(X_UPSTREAM_REQUEST_ID, id);
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_milliseconds_with_three_decimals() {
        let shown = |us: u64| millis_header(Duration::from_micros(us));
        assert_eq!(shown(0), "0.000");
        assert_eq!(shown(5), "0.005");
        assert_eq!(shown(42_017), "42.017");
        assert_eq!(shown(1_234_567_890), "1234567.890");
        assert_eq!(
            millis_header(Duration::MAX),
            format!("{}.{:03}", u64::MAX / 1000, u64::MAX % 1000).as_str()
        );
    }
}
