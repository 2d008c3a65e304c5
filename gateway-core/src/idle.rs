//! When a connection counts as idle, so one that carries no request can be closed.
//!
//! HTTP/1 needs no help: hyper's header-read timer runs while a keep-alive connection
//! waits for its next request. HTTP/2 has only pings, which a live but idle peer answers
//! forever. So each connection counts its open requests — from the request's arrival
//! until its answer's body is dropped, so a 40-minute stream is not idle — and notes when
//! the last one ended.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use tokio::time::Instant;

/// One connection's open requests and the time the last one ended.
#[derive(Debug)]
pub struct Activity {
    opened: Instant,
    open: AtomicUsize,
    /// Milliseconds from `opened` to the end of the last request.
    last_end_ms: AtomicU64,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity {
            opened: Instant::now(),
            open: AtomicUsize::new(0),
            last_end_ms: AtomicU64::new(0),
        })
    }

    /// Counts a request open until the returned guard is dropped.
    pub fn begin(self: &Arc<Self>) -> Open {
        self.open.fetch_add(1, Ordering::Relaxed);
        Open(self.clone())
    }

    /// When the connection will have been idle for `timeout`, or `None` while a request
    /// is open.
    pub fn idle_deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.open.load(Ordering::Acquire) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last_end_ms.load(Ordering::Relaxed));
        Some(self.opened + last + timeout)
    }
}

/// A request being served; dropping it ends the request.
#[derive(Debug)]
pub struct Open(Arc<Activity>);

impl Drop for Open {
    fn drop(&mut self) {
        let ms = u64::try_from(self.0.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last_end_ms.fetch_max(ms, Ordering::Relaxed);
        self.0.open.fetch_sub(1, Ordering::Release);
    }
}

/// A response body that keeps its request open until it is dropped.
pub struct Tracked<B> {
    body: B,
    _open: Open,
}

impl<B> Tracked<B> {
    pub fn new(body: B, open: Open) -> Self {
        Tracked { body, _open: open }
    }
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Waits until the connection has had no open request for `timeout`.
pub async fn idle_for(activity: &Activity, timeout: Duration) {
    loop {
        match activity.idle_deadline(timeout) {
            Some(deadline) if deadline <= Instant::now() => return,
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            // A request is open: look again a timeout later.
            None => tokio::time::sleep(timeout).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_only_when_no_request_is_open() {
        let activity = Activity::new();
        let timeout = Duration::from_secs(120);
        assert!(activity.idle_deadline(timeout).is_some());
        let open = activity.begin();
        assert_eq!(activity.idle_deadline(timeout), None);
        tokio::time::advance(Duration::from_secs(300)).await;
        // Still open after more than the timeout: not idle.
        assert_eq!(activity.idle_deadline(timeout), None);
        drop(open);
        let deadline = activity.idle_deadline(timeout).unwrap();
        assert!(deadline >= Instant::now() + Duration::from_secs(119));
        let waited = tokio::time::timeout(Duration::from_secs(121), idle_for(&activity, timeout));
        assert!(waited.await.is_ok());
    }
}
