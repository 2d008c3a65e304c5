//! Open connections to one provider, for one serving thread.
//!
//! hyper-util's pooled client did more per request than a proxy needs: a pool shared by
//! every host (a lock and a hash of scheme and host on each checkout and return), the
//! `Host` header formatted anew, and a task spawned per request to put the connection back
//! once its response had been read. Here an HTTP/1 connection's sender goes back in the
//! list as soon as a request is handed to it, and is taken again only when hyper says it
//! is ready: once the previous response has been read to its end. An HTTP/2 connection
//! (the provider chose it through ALPN) carries every request at once.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::uri::{PathAndQuery, Uri};
use http::{header, HeaderValue, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::{Connection, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tower::ServiceExt;

type Body = Full<Bytes>;
pub type Connector = HttpsConnector<HttpConnector>;
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Sends on a connection that the provider closed while it sat idle are tried again on
/// another (the request was never written); this bounds how many.
const ATTEMPTS: usize = 4;

pub struct Pool {
    connector: Connector,
    idle_timeout: Duration,
    conns: Mutex<Conns>,
}

#[derive(Default)]
struct Conns {
    /// Every open HTTP/1 connection, busy or idle, in the order they were given their last
    /// request: the front ones are the likeliest to have finished. No cap: an entry is a
    /// connection in use or idle for less than the timeout, and capping them would close
    /// connections that a moment later are needed again (at thousands of requests in
    /// flight, a new connection per request).
    http1: VecDeque<Idle>,
    http2: Option<http2::SendRequest<Body>>,
}

struct Idle {
    sender: http1::SendRequest<Body>,
    /// When it was last given a request or seen busy.
    used: Instant,
}

enum Sender {
    Http1(http1::SendRequest<Body>),
    Http2(http2::SendRequest<Body>),
}

impl Pool {
    pub fn new(connector: Connector, idle_timeout: Duration) -> Pool {
        Pool {
            connector,
            idle_timeout,
            conns: Mutex::new(Conns::default()),
        }
    }

    /// Sends `request` (its URI absolute) and waits for the response head. `host` is the
    /// `Host` header an HTTP/1 request carries when it has none.
    pub async fn send(
        &self,
        mut request: Request<Body>,
        host: &HeaderValue,
    ) -> Result<Response<Incoming>, Error> {
        let absolute = request.uri().clone();
        for _ in 0..ATTEMPTS {
            let (sender, reused) = match self.take() {
                Some(sender) => (sender, true),
                // Boxed: the handshake's future (TLS, HTTP/2) is kilobytes, and unboxed it
                // would be moved along with every request's future, which rarely needs it.
                None => (Box::pin(self.connect(&absolute)).await?, false),
            };
            let sent = match sender {
                Sender::Http2(mut sender) => {
                    *request.uri_mut() = absolute.clone();
                    sender.try_send_request(request).await
                }
                Sender::Http1(mut sender) => {
                    *request.uri_mut() = origin_form(&absolute);
                    request
                        .headers_mut()
                        .entry(header::HOST)
                        .or_insert_with(|| host.clone());
                    let response = sender.try_send_request(request);
                    // Back in the list at once: it is not ready again until this response
                    // has been read, and nothing takes a sender that is not ready.
                    self.put_back(sender);
                    response.await
                }
            };
            match sent {
                Ok(response) => return Ok(response),
                Err(mut e) => match e.take_message() {
                    // Not written: the connection had closed. A fresh one failing is an
                    // answer; a reused one only went stale while idle.
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(e.into_error().into()),
                },
            }
        }
        Err("the provider closed every connection before a request could be sent".into())
    }

    fn lock(&self) -> MutexGuard<'_, Conns> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection ready for a request, dropping those closed or idle too long.
    fn take(&self) -> Option<Sender> {
        let mut conns = self.lock();
        if let Some(h2) = &conns.http2 {
            if !h2.is_closed() {
                return Some(Sender::Http2(h2.clone()));
            }
            conns.http2 = None;
        }
        let now = Instant::now();
        for _ in 0..conns.http1.len() {
            let Some(mut idle) = conns.http1.pop_front() else {
                break;
            };
            if idle.sender.is_closed() {
                continue;
            }
            if idle.sender.is_ready() {
                if now.duration_since(idle.used) > self.idle_timeout {
                    continue;
                }
                return Some(Sender::Http1(idle.sender));
            }
            // Busy with a response still being read: to the back, and not idle, however
            // long ago it was given its request (a stream can run for minutes).
            idle.used = now;
            conns.http1.push_back(idle);
        }
        None
    }

    fn put_back(&self, sender: http1::SendRequest<Body>) {
        self.lock().http1.push_back(Idle {
            sender,
            used: Instant::now(),
        });
    }

    /// Opens a connection (TCP, then TLS for `https`), speaking HTTP/2 when the provider
    /// chose it, and runs it on this thread.
    async fn connect(&self, uri: &Uri) -> Result<Sender, Error> {
        let io = self.connector.clone().oneshot(uri.clone()).await?;
        if io.connected().is_negotiated_h2() {
            let (sender, connection) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(io)
                .await?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "upstream connection ended");
                }
            });
            self.lock().http2 = Some(sender.clone());
            Ok(Sender::Http2(sender))
        } else {
            let (sender, connection) = http1::handshake(io).await?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "upstream connection ended");
                }
            });
            Ok(Sender::Http1(sender))
        }
    }

    /// Open HTTP/1 connections in the list (for tests).
    #[cfg(test)]
    fn open_http1(&self) -> usize {
        self.lock().http1.len()
    }
}

/// The path and query alone, as an HTTP/1 request line carries them.
fn origin_form(uri: &Uri) -> Uri {
    let path = uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    Uri::from(path)
}

/// The `Host` header for requests to `uri`: its host, and its port when not the scheme's
/// default.
pub fn host_header(uri: &Uri) -> Option<HeaderValue> {
    let host = uri.host()?;
    let default_port = match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    };
    match uri.port_u16() {
        Some(port) if port != default_port => HeaderValue::from_str(&format!("{host}:{port}")),
        _ => HeaderValue::from_str(host),
    }
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn connector() -> Connector {
        crate::upstream::install_tls_provider();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        hyper_rustls::HttpsConnectorBuilder::new()
            .try_with_platform_verifier()
            .unwrap()
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(http)
    }

    /// A server that answers each request on a connection with its own request line and
    /// Host header, and closes a connection after `per_connection` answers. Counts the
    /// connections it accepted.
    async fn server(
        per_connection: usize,
    ) -> (Uri, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    for _ in 0..per_connection {
                        let head = loop {
                            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                                buf.drain(..end + 4);
                                break head;
                            }
                            let mut chunk = [0u8; 4096];
                            match socket.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let line = head.lines().next().unwrap_or("").to_owned();
                        let host = head
                            .lines()
                            .find_map(|l| l.strip_prefix("host: "))
                            .unwrap_or("-")
                            .to_owned();
                        let body = format!("{line}|{host}");
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if socket.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (
            format!("http://{addr}/v1/chat?x=1").parse().unwrap(),
            accepted,
        )
    }

    async fn get(pool: &Pool, uri: &Uri) -> String {
        let host = host_header(uri).unwrap();
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.uri_mut() = uri.clone();
        let response = pool.send(request, &host).await.unwrap();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        String::from_utf8(body.to_vec()).unwrap()
    }

    /// `n` requests at once, each on its own task.
    async fn get_concurrently(pool: &std::sync::Arc<Pool>, uri: &Uri, n: usize) -> Vec<String> {
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let (pool, uri) = (pool.clone(), uri.clone());
                tokio::spawn(async move { get(&pool, &uri).await })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        answers
    }

    #[tokio::test]
    async fn requests_reuse_a_connection_in_origin_form_with_the_host() {
        let (uri, accepted) = server(usize::MAX).await;
        let pool = Pool::new(connector(), Duration::from_secs(90));
        let authority = uri.authority().unwrap().to_string();
        for _ in 0..5 {
            let answer = get(&pool, &uri).await;
            assert_eq!(answer, format!("GET /v1/chat?x=1 HTTP/1.1|{authority}"));
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(pool.open_http1(), 1);
    }

    #[tokio::test]
    async fn a_connection_closed_while_idle_is_not_used_again() {
        // The server closes each connection after one answer: every request after the
        // first must find its connection closed and open another, not fail.
        let (uri, accepted) = server(1).await;
        let pool = Pool::new(connector(), Duration::from_secs(90));
        for i in 1..=4 {
            assert!(get(&pool, &uri).await.starts_with("GET /v1/chat?x=1"));
            // Let the closed connection's task see the close.
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), i);
        }
    }

    #[tokio::test]
    async fn concurrent_requests_each_get_a_connection_and_they_are_kept() {
        let (uri, accepted) = server(usize::MAX).await;
        let pool = std::sync::Arc::new(Pool::new(connector(), Duration::from_secs(90)));
        for answer in get_concurrently(&pool, &uri, 8).await {
            assert!(answer.starts_with("GET /v1/chat?x=1"));
        }
        let opened = accepted.load(std::sync::atomic::Ordering::SeqCst);
        assert!((1..=8).contains(&opened), "{opened} connections");
        assert_eq!(pool.open_http1(), opened);
        // Once all are idle, more requests open nothing new.
        for _ in 0..8 {
            get(&pool, &uri).await;
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), opened);
    }

    #[tokio::test]
    async fn idle_connections_past_the_timeout_are_closed_not_used() {
        let (uri, accepted) = server(usize::MAX).await;
        let pool = Pool::new(connector(), Duration::from_millis(50));
        get(&pool, &uri).await;
        tokio::time::sleep(Duration::from_millis(120)).await;
        get(&pool, &uri).await;
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(pool.open_http1(), 1);
    }

    /// A provider that offers HTTP/2 through ALPN (as OpenAI's and Anthropic's do): every
    /// request, concurrent ones too, goes over one TLS connection, with the absolute URI.
    #[tokio::test]
    async fn https_with_http2_chosen_by_alpn_carries_every_request_on_one_connection() {
        crate::upstream::install_tls_provider();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let cert_der = cert.cert.der().clone();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key_pair.serialize_der().into());
        let mut server = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert_der.clone()], key)
            .unwrap();
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(server));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (socket, _) = listener.accept().await.unwrap();
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let tls = acceptor.accept(socket).await.unwrap();
                    let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                        let text = format!("{:?} {}", req.version(), req.uri());
                        Ok::<_, std::convert::Infallible>(Response::new(Full::new(Bytes::from(
                            text,
                        ))))
                    });
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert_der).unwrap();
        let tls = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(http);
        let pool = std::sync::Arc::new(Pool::new(connector, Duration::from_secs(90)));
        let uri: Uri = format!("https://localhost:{port}/v1/chat?x=1")
            .parse()
            .unwrap();
        let expected = format!("HTTP/2.0 https://localhost:{port}/v1/chat?x=1");
        assert_eq!(get(&pool, &uri).await, expected);
        for answer in get_concurrently(&pool, &uri, 8).await {
            assert_eq!(answer, expected);
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(pool.open_http1(), 0, "no HTTP/1 connection was opened");
    }

    #[test]
    fn host_header_names_a_port_only_when_not_the_default() {
        let h = |u: &str| host_header(&u.parse().unwrap()).unwrap();
        assert_eq!(h("https://api.openai.com/v1"), "api.openai.com");
        assert_eq!(h("https://api.openai.com:443/v1"), "api.openai.com");
        assert_eq!(h("http://127.0.0.1:8080/v1"), "127.0.0.1:8080");
        assert_eq!(h("http://localhost/v1"), "localhost");
        assert_eq!(h("https://example.com:8443/"), "example.com:8443");
    }
}
