//! The listener: `serve` takes a bound listener, the finished router and a shutdown
//! future from the caller (so tests bind `127.0.0.1:0` and stop the server cleanly), and
//! owns what happens around a request: the ingress checks, hyper's limits, the connection
//! and in-flight caps, idle connections, the serving threads and graceful shutdown.
//!
//! Shutdown: when `shutdown` resolves, the listener stops accepting, idle connections
//! close, and in-flight requests and streams get the grace period to finish. After it,
//! open streams end with an error event in their client's dialect and the server returns.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::Either;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use crate::dialect::Dialect;
use crate::error::GatewayError;
use crate::idle::{self, Activity, Tracked};
use crate::ingress::Ingress;
use crate::state::AppState;
use crate::workers::Workers;

/// How often an HTTP/2 connection is pinged, and how long the answer may take.
pub const HTTP2_KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);
pub const HTTP2_KEEPALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Serves `app` until `shutdown` resolves, then drains as described in the module docs.
/// `state` gives the limits, and learns the bound address and when draining starts.
pub async fn serve<A>(
    listener: TcpListener,
    state: Arc<AppState>,
    app: A,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    A: tower::Service<
            http::Request<hyper::body::Incoming>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    A::Future: Send,
{
    let grace = state.config().server.shutdown_grace;
    if let Ok(addr) = listener.local_addr() {
        let _ = state.bound.set(addr);
        // An agent on this machine reaches a gateway on every interface through loopback.
        let host = if addr.ip().is_unspecified() {
            std::net::SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port())
        } else {
            addr
        };
        let _ = state
            .runtime()
            .optimizer
            .shared
            .origin
            .set(format!("http://{host}"));
    }
    let limits = state.config().server.clone();
    let ingress = Ingress::new(state.listening(), &limits);
    // Held by each connection; at the cap, new connections wait in the kernel's queue.
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    // Held by each request until its answer starts; past the cap a request gets a 503.
    let in_flight = Arc::new(tokio::sync::Semaphore::new(limits.max_in_flight));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // One write per response: header and body go out in one buffer rather than a
    // writev of several slices, which is cheaper for the small bodies most calls have.
    // The parser's ceilings sit above the configured header limits, so a request past
    // those gets the gateway's 431 in its own shape; past the ceilings, hyper's bare 431.
    // Up to 100 headers hyper parses into a buffer on the stack.
    let header_ceiling = limits.max_header_bytes.saturating_mul(2);
    let mut http1 = builder.http1();
    http1
        .writev(false)
        .timer(TokioTimer::new())
        .max_headers((limits.max_header_count + limits.max_header_count / 2).max(100));
    if header_ceiling > HYPER_DEFAULT_MAX_BUF {
        http1.max_buf_size(header_ceiling);
    }
    // Pings find peers that went away without closing; one that does not answer is dropped.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(HTTP2_KEEPALIVE_INTERVAL))
        .keep_alive_timeout(HTTP2_KEEPALIVE_TIMEOUT)
        .max_header_list_size(u32::try_from(header_ceiling).unwrap_or(u32::MAX))
        .max_concurrent_streams(
            u32::try_from(limits.max_streams_per_connection).unwrap_or(u32::MAX),
        );
    let idle_timeout = limits.idle_timeout;
    let workers = Workers::start(state.config().server.workers)?;
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = stream;
        // Small SSE frames must not wait for Nagle.
        let _ = stream.set_nodelay(true);
        // Handed to a serving thread, which registers it with its own reactor.
        let Ok(stream) = stream.into_std() else {
            continue;
        };
        let app = app.clone();
        let builder = builder.clone();
        let in_flight = in_flight.clone();
        let watcher = graceful.watcher();
        workers.spawn_connection(move || async move {
            let _connection = permit;
            let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
                return;
            };
            let activity = Activity::new();
            let requests = activity.clone();
            let service = TowerToHyperService::new(tower::service_fn(
                move |mut request: http::Request<hyper::body::Incoming>| {
                    let open = requests.begin();
                    // Refused at the door: the router never sees it, nothing goes upstream.
                    if let Some(refused) = ingress.admit(&request) {
                        let refused = refused.map(|body| Tracked::new(body, open));
                        return Either::Left(std::future::ready(Ok(refused)));
                    }
                    let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                        let dialect = Dialect::guess(request.headers(), request.uri().path());
                        let busy = GatewayError::Overloaded.into_response(dialect);
                        let busy = busy.map(|body| Tracked::new(body, open));
                        return Either::Left(std::future::ready(Ok(busy)));
                    };
                    // The peer's address, for the admin API's loopback check.
                    request
                        .extensions_mut()
                        .insert(axum::extract::ConnectInfo(peer));
                    let answer = tower::ServiceExt::oneshot(app.clone(), request);
                    Either::Right(async move {
                        let answer = answer.await;
                        drop(permit);
                        answer.map(|response| response.map(|body| Tracked::new(body, open)))
                    })
                },
            ));
            let connection = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .into_owned();
            // A client that resets the connection is not the gateway's error. One that
            // holds the connection with nothing open on it is let go.
            tokio::select! {
                _ = watcher.watch(connection) => {}
                () = idle::idle_for(&activity, idle_timeout) => {}
            }
        });
    }
    drop(listener);
    state.draining.store(true, Ordering::Relaxed);
    tracing::info!(
        grace_secs = grace.as_secs_f64(),
        "shutting down: draining in-flight requests"
    );
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    tokio::select! {
        () = &mut drained => {}
        () = tokio::time::sleep(grace) => {
            tracing::warn!("grace period over: ending open streams");
            state.abort.send_replace(true);
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut drained).await;
        }
    }
    // The threads end after the drain: the open connections have closed, or been cut.
    tokio::task::spawn_blocking(move || workers.stop())
        .await
        .ok();
    Ok(())
}

/// hyper's HTTP/1 read buffer when not set: 8 KiB and 4 KiB for each of 100 headers.
const HYPER_DEFAULT_MAX_BUF: usize = 8192 + 4096 * 100;

/// Binds `addr`, with a message that says what to do when the port is taken.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await.map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
            format!(
                "{addr} is already in use: another Trimgate may be running, or pick a port with --listen 127.0.0.1:PORT"
            )
        } else {
            format!("cannot listen on {addr}: {e}")
        };
        std::io::Error::new(e.kind(), hint)
    })
}
