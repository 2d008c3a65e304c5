//! A credential (a bearer token, the AWS chain's keys) kept until shortly before it
//! expires, fetched again by the first request that finds it due while the others wait for
//! that one fetch.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::secrets::Secret;

/// How long before its expiry a token is fetched again: requests signed with it may
/// still be on their way, and clocks differ.
const AHEAD: Duration = Duration::from_secs(300);

pub struct Kept<T = Secret> {
    held: tokio::sync::Mutex<Option<(T, Instant)>>,
}

impl<T: Clone> Kept<T> {
    pub fn new() -> Kept<T> {
        Kept {
            held: tokio::sync::Mutex::new(None),
        }
    }

    /// The kept credential, or a new one from `fetch`, which says how long it lasts.
    pub async fn get<F, Fut>(&self, fetch: F) -> Result<T, String>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(T, Duration), String>>,
    {
        let mut held = self.held.lock().await;
        if let Some((token, renew_at)) = held.as_ref() {
            if Instant::now() < *renew_at {
                return Ok(token.clone());
            }
        }
        let (token, lasts) = fetch().await?;
        // One that lasts less than twice the margin is used for half its life.
        let keep = if lasts > 2 * AHEAD {
            lasts - AHEAD
        } else {
            lasts / 2
        };
        *held = Some((token.clone(), Instant::now() + keep));
        Ok(token)
    }
}

/// How long a JWT (an Entra ID access token) has left, from its `exp` claim; `None` for a
/// token that is not a JWT.
pub fn jwt_lasts(token: &str, now_unix: u64) -> Option<Duration> {
    use base64::Engine as _;
    let claims = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(claims.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?.as_u64()?;
    Some(Duration::from_secs(exp.saturating_sub(now_unix)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn a_token_is_fetched_once_while_it_lasts_and_again_when_due() {
        let kept = Kept::new();
        let fetched = AtomicU32::new(0);
        let fetch = |lasts: Duration| {
            let n = fetched.fetch_add(1, Ordering::SeqCst);
            async move { Ok((Secret::new(format!("t{n}").as_str()), lasts)) }
        };
        let a = kept.get(|| fetch(Duration::from_secs(3600))).await.unwrap();
        let b = kept.get(|| fetch(Duration::from_secs(3600))).await.unwrap();
        assert_eq!(a, b);
        assert_eq!(fetched.load(Ordering::SeqCst), 1);
        // One that is already due is fetched again at once.
        let kept = Kept::new();
        kept.get(|| fetch(Duration::ZERO)).await.unwrap();
        let c = kept.get(|| fetch(Duration::ZERO)).await.unwrap();
        assert_eq!(fetched.load(Ordering::SeqCst), 3);
        assert_eq!(c, Secret::new("t2"));
        // A failed fetch keeps nothing and says why.
        let err = Kept::new()
            .get(|| async { Err::<(Secret, Duration), _>("no token".to_owned()) })
            .await
            .unwrap_err();
        assert_eq!(err, "no token");
    }

    #[test]
    fn a_jwt_says_how_long_it_lasts() {
        use base64::Engine as _;
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"exp":1000}"#);
        assert_eq!(
            jwt_lasts(&format!("h.{claims}.s"), 400),
            Some(Duration::from_secs(600))
        );
        assert_eq!(
            jwt_lasts(&format!("h.{claims}.s"), 2000),
            Some(Duration::ZERO)
        );
        assert_eq!(jwt_lasts("opaque-token", 0), None);
    }
}
