//! The floor under any gateway built on hyper: a reverse proxy that does nothing but the
//! two HTTP/1 exchanges, with hyper and `http` as Trimgate uses them. It serves the way
//! Trimgate does (one single-threaded runtime per core, each with its own listener on the
//! port and its own pool of keep-alive connections upstream), reads each request's body
//! whole, sends it upstream with the client's headers and the upstream's `Host`, reads the
//! answer whole and relays it with the upstream's headers. No routing, no checks, no
//! ledger, no metrics, no logging.
//!
//! bench/instructions.py counts its instructions per request beside nginx's and
//! Trimgate's, and bench/hop.py its rate: what hyper itself costs for one hop.
//!
//!     trimgate-bench-hyperhop LISTEN_ADDR UPSTREAM_ADDR [THREADS]

use std::cell::RefCell;
use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, CONNECTION, HOST};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpSocket, TcpStream};

thread_local! {
    /// This thread's idle connections upstream.
    static IDLE: RefCell<Vec<SendRequest<Full<Bytes>>>> = const { RefCell::new(Vec::new()) };
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: trimgate-bench-hyperhop LISTEN_ADDR UPSTREAM_ADDR [THREADS]";
    let listen: SocketAddr = args.next().expect(usage).parse().expect(usage);
    let upstream: SocketAddr = args.next().expect(usage).parse().expect(usage);
    let threads: usize = args
        .next()
        .map(|t| t.parse().expect(usage))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let host = HeaderValue::from_str(&upstream.to_string()).unwrap();
    let (bound, all_bound) = std::sync::mpsc::channel();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (host, bound) = (host.clone(), bound.clone());
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(serve(listen, upstream, host, bound))
            })
        })
        .collect();
    for _ in 0..threads {
        all_bound.recv().unwrap();
    }
    // Only once every thread listens: the benchmarks start sending on this line.
    eprintln!("hyperhop listening on http://{listen}");
    for h in handles {
        h.join().unwrap();
    }
}

async fn serve(
    listen: SocketAddr,
    upstream: SocketAddr,
    host: HeaderValue,
    bound: std::sync::mpsc::Sender<()>,
) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_reuseport(true).unwrap();
    socket.set_reuseaddr(true).unwrap();
    socket.bind(listen).unwrap();
    let listener = socket.listen(1024).unwrap();
    bound.send(()).unwrap();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let host = host.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| hop(req, upstream, host.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn hop(
    req: Request<Incoming>,
    upstream: SocketAddr,
    host: HeaderValue,
) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(match forward(req, upstream, host).await {
        Ok(res) => res,
        Err(e) => {
            let mut res = Response::new(Full::new(Bytes::from(e.to_string())));
            *res.status_mut() = StatusCode::BAD_GATEWAY;
            res
        }
    })
}

async fn forward(
    req: Request<Incoming>,
    upstream: SocketAddr,
    host: HeaderValue,
) -> Result<Response<Full<Bytes>>, Box<dyn std::error::Error + Send + Sync>> {
    let (mut parts, body) = req.into_parts();
    let body = body.collect().await?.to_bytes();
    parts.headers.insert(HOST, host);
    parts.headers.remove(CONNECTION);
    let mut sender = match IDLE.with(|idle| idle.borrow_mut().pop()) {
        Some(sender) => sender,
        None => {
            let stream = TcpStream::connect(upstream).await?;
            stream.set_nodelay(true)?;
            let (sender, conn) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
            tokio::spawn(conn);
            sender
        }
    };
    let res = sender
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await?;
    let (mut parts, body) = res.into_parts();
    let body = body.collect().await?.to_bytes();
    if sender.is_ready() {
        IDLE.with(|idle| idle.borrow_mut().push(sender));
    }
    parts.headers.remove(CONNECTION);
    Ok(Response::from_parts(parts, Full::new(body)))
}
