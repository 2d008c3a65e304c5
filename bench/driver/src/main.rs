//! The load the benchmark campaign needs that `wrk` does not make:
//!
//! ```text
//! trimgate-bench-driver open   --url U --body FILE [--header 'K: V']... --rates R1,R2,...
//!                              --duration S [--warmup S] [--timeout S] [--stop-on-fail]
//! trimgate-bench-driver closed --url U --body FILE [--header 'K: V']... --conc C
//!                              --duration S [--warmup S] [--timeout S] [--stream]
//! ```
//!
//! - `open`: an open loop. Request `i` of a step is due at `start + i / rate` whether or
//!   not earlier ones have answered, and its latency is counted from when it was due, not
//!   from when it went out (coordinated-omission correction): a target that stalls shows
//!   as rising latency rather than as fewer, faster samples. Steps run in order on one
//!   pool of keep-alive connections (opened as needed, never more than one request on
//!   each at a time); `--stop-on-fail` ends the run after the first step in which any
//!   request was not answered 200.
//! - `closed`: `C` keep-alive connections, each sending its next request when the last
//!   one has answered. With `--stream` it also times the first content event of each
//!   streamed answer (time to first token) and counts streams that ended without their
//!   final event (`[DONE]`, `message_stop`, `response.completed`) as incomplete.
//!
//! Prints one JSON object on stdout; latencies in microseconds (HdrHistogram, 4 significant
//! digits). Runs on one thread unless `--threads N` says otherwise.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpStream;

type Sender = SendRequest<Full<Bytes>>;

/// Longest latency the histograms hold: two minutes.
const MAX_US: u64 = 120_000_000;

struct Target {
    addr: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Bytes,
    stream: bool,
}

struct Args {
    mode: String,
    target: Target,
    rates: Vec<f64>,
    conc: usize,
    duration: Duration,
    warmup: Duration,
    timeout: Duration,
    threads: usize,
    stop_on_fail: bool,
}

// A command-line tool refusing its arguments before it starts anything.
#[allow(clippy::disallowed_methods)]
fn usage(problem: &str) -> ! {
    eprintln!("trimgate-bench-driver: {problem}");
    eprintln!(
        "usage: trimgate-bench-driver open|closed --url http://HOST:PORT/PATH --body FILE \
         [--header 'K: V']... (--rates R,... | --conc C) --duration S [--warmup S] \
         [--timeout S] [--stream] [--stop-on-fail] [--threads N]"
    );
    std::process::exit(2)
}

fn secs(v: &str) -> Duration {
    match v.parse::<f64>() {
        Ok(s) if s >= 0.0 && s.is_finite() => Duration::from_secs_f64(s),
        _ => usage(&format!("not a number of seconds: {v}")),
    }
}

fn parse_args() -> Args {
    let mut argv = std::env::args().skip(1);
    let mode = argv.next().unwrap_or_else(|| usage("no mode"));
    if mode != "open" && mode != "closed" {
        usage(&format!("unknown mode {mode}"));
    }
    let (mut url, mut body_file) = (None, None);
    let mut args = Args {
        mode,
        target: Target {
            addr: String::new(),
            path: String::new(),
            headers: Vec::new(),
            body: Bytes::new(),
            stream: false,
        },
        rates: Vec::new(),
        conc: 1,
        duration: Duration::from_secs(5),
        warmup: Duration::from_secs(1),
        timeout: Duration::from_secs(30),
        threads: 1,
        stop_on_fail: false,
    };
    while let Some(flag) = argv.next() {
        let mut value = || {
            argv.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--url" => url = Some(value()),
            "--body" => body_file = Some(value()),
            "--header" => {
                let h = value();
                let Some((k, v)) = h.split_once(':') else {
                    usage(&format!("a header is 'Name: value', not {h}"))
                };
                args.target
                    .headers
                    .push((k.trim().to_owned(), v.trim().to_owned()));
            }
            "--rates" => {
                args.rates = value()
                    .split(',')
                    .map(|r| {
                        r.trim()
                            .parse::<f64>()
                            .unwrap_or_else(|_| usage("bad --rates"))
                    })
                    .collect()
            }
            "--conc" => args.conc = value().parse().unwrap_or_else(|_| usage("bad --conc")),
            "--threads" => {
                args.threads = value().parse().unwrap_or_else(|_| usage("bad --threads"))
            }
            "--duration" => args.duration = secs(&value()),
            "--warmup" => args.warmup = secs(&value()),
            "--timeout" => args.timeout = secs(&value()),
            "--stream" => args.target.stream = true,
            "--stop-on-fail" => args.stop_on_fail = true,
            other => usage(&format!("unknown flag {other}")),
        }
    }
    let url = url.unwrap_or_else(|| usage("--url is required"));
    let rest = url
        .strip_prefix("http://")
        .unwrap_or_else(|| usage("only http:// URLs"));
    let (addr, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    args.target.addr = addr.to_owned();
    args.target.path = path.to_owned();
    let file = body_file.unwrap_or_else(|| usage("--body is required"));
    args.target.body = match std::fs::read(&file) {
        Ok(b) => Bytes::from(b),
        Err(e) => usage(&format!("cannot read {file}: {e}")),
    };
    if args.mode == "open" && (args.rates.is_empty() || args.rates.iter().any(|r| *r <= 0.0)) {
        usage("open needs --rates with positive rates");
    }
    if args.conc == 0 || args.threads == 0 {
        usage("--conc and --threads must be at least 1");
    }
    args
}

fn main() {
    let args = parse_args();
    let runtime = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => usage(&format!("cannot start the runtime: {e}")),
    };
    let out = runtime.block_on(async move {
        let target = Arc::new(args.target);
        if args.mode == "open" {
            open_loop(
                target,
                &args.rates,
                args.duration,
                args.warmup,
                args.timeout,
                args.stop_on_fail,
            )
            .await
        } else {
            closed_loop(target, args.conc, args.duration, args.warmup, args.timeout).await
        }
    });
    println!("{out}");
}

async fn connect(t: &Target) -> Result<Sender, String> {
    let tcp = TcpStream::connect(&t.addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

fn request(t: &Target) -> Result<Request<Full<Bytes>>, String> {
    let mut b = Request::post(t.path.as_str())
        .header("host", t.addr.as_str())
        .header("content-type", "application/json");
    for (k, v) in &t.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    b.body(Full::new(t.body.clone()))
        .map_err(|e| format!("request: {e}"))
}

/// What one exchange gave: the status, when the first content event arrived (streams),
/// and whether a stream reached its final event.
struct Answer {
    status: u16,
    first_token: Option<Instant>,
    complete: bool,
}

async fn exchange(sender: &mut Sender, t: &Target) -> Result<Answer, String> {
    sender
        .ready()
        .await
        .map_err(|e| format!("not ready: {e}"))?;
    let response = sender
        .send_request(request(t)?)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut buf: Vec<u8> = Vec::new();
    let mut first_token = None;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("body: {e}"))?;
        if let Ok(data) = frame.into_data() {
            let from = buf.len().saturating_sub(40);
            buf.extend_from_slice(&data);
            if t.stream && first_token.is_none() && has_token(&buf[from..]) {
                first_token = Some(Instant::now());
            }
        }
    }
    let complete = !t.stream || has_end(&buf);
    Ok(Answer {
        status,
        first_token,
        complete,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A content event with text in it: a non-empty `"content":"…"` (Chat) or `"text":"…"`
/// (Messages), or a Responses `output_text.delta` event.
fn has_token(buf: &[u8]) -> bool {
    if find(buf, b"output_text.delta").is_some() {
        return true;
    }
    for key in [&b"\"content\":"[..], &b"\"text\":"[..]] {
        let mut at = 0;
        while let Some(i) = find(&buf[at..], key) {
            let mut j = at + i + key.len();
            while buf.get(j) == Some(&b' ') {
                j += 1;
            }
            if buf.get(j) == Some(&b'"') && buf.get(j + 1).is_some_and(|c| *c != b'"') {
                return true;
            }
            at += i + 1;
        }
    }
    false
}

fn has_end(buf: &[u8]) -> bool {
    [&b"[DONE]"[..], b"message_stop", b"response.completed"]
        .iter()
        .any(|m| find(buf, m).is_some())
}

fn histogram() -> Histogram<u64> {
    // Four significant digits: 0.1 ms buckets at the open loop's 1.5 s, where the added
    // milliseconds are read.
    match Histogram::new_with_bounds(1, MAX_US, 4) {
        Ok(h) => h,
        Err(e) => usage(&format!("histogram: {e}")),
    }
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, MAX_US)
}

fn summary(h: &Histogram<u64>) -> Value {
    if h.is_empty() {
        return Value::Null;
    }
    json!({
        "count": h.len(),
        "mean": (h.mean() * 10.0).round() / 10.0,
        "min": h.min(),
        "p50": h.value_at_quantile(0.50),
        "p90": h.value_at_quantile(0.90),
        "p95": h.value_at_quantile(0.95),
        "p99": h.value_at_quantile(0.99),
        "p999": h.value_at_quantile(0.999),
        "max": h.max(),
    })
}

#[derive(Default)]
struct Counts {
    ok: AtomicU64,
    non200: AtomicU64,
    incomplete: AtomicU64,
    errors: AtomicU64,
    timeouts: AtomicU64,
}

impl Counts {
    fn json(&self) -> Value {
        json!({
            "ok": self.ok.load(Ordering::Relaxed),
            "non200": self.non200.load(Ordering::Relaxed),
            "incomplete": self.incomplete.load(Ordering::Relaxed),
            "errors": self.errors.load(Ordering::Relaxed),
            "timeouts": self.timeouts.load(Ordering::Relaxed),
        })
    }

    fn failed(&self) -> u64 {
        self.non200.load(Ordering::Relaxed)
            + self.incomplete.load(Ordering::Relaxed)
            + self.errors.load(Ordering::Relaxed)
            + self.timeouts.load(Ordering::Relaxed)
    }

    /// Counts an exchange; true when it was a good answer.
    fn count(&self, result: &Result<Result<Answer, String>, tokio::time::error::Elapsed>) -> bool {
        let counter = match result {
            Ok(Ok(a)) if a.status != 200 => &self.non200,
            Ok(Ok(a)) if !a.complete => &self.incomplete,
            Ok(Ok(_)) => &self.ok,
            Ok(Err(_)) => &self.errors,
            Err(_) => &self.timeouts,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        std::ptr::eq(counter, &self.ok)
    }
}

/// One open-loop step's measurements.
struct Step {
    /// From when each request was due (coordinated-omission corrected).
    latency: Mutex<Histogram<u64>>,
    /// From when it was sent: what a closed-loop tool would have seen.
    service: Mutex<Histogram<u64>>,
    /// How late the driver sent it after it was due.
    dispatch: Mutex<Histogram<u64>>,
    counts: Counts,
    first_error: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn open_loop(
    target: Arc<Target>,
    rates: &[f64],
    duration: Duration,
    warmup: Duration,
    timeout: Duration,
    stop_on_fail: bool,
) -> Value {
    let pool: Arc<Mutex<Vec<Sender>>> = Arc::new(Mutex::new(Vec::new()));
    let opened = Arc::new(AtomicU64::new(0));
    let mut steps = Vec::new();
    for &rate in rates {
        let step = Arc::new(Step {
            latency: Mutex::new(histogram()),
            service: Mutex::new(histogram()),
            dispatch: Mutex::new(histogram()),
            counts: Counts::default(),
            first_error: Mutex::new(None),
        });
        let warm_n = (warmup.as_secs_f64() * rate).round() as u64;
        let total = warm_n + (duration.as_secs_f64() * rate).round() as u64;
        let opened_before = opened.load(Ordering::Relaxed);
        let t0 = Instant::now() + Duration::from_millis(20);
        let mut tasks = Vec::with_capacity(total as usize);
        for i in 0..total {
            let due = t0 + Duration::from_secs_f64(i as f64 / rate);
            if due > Instant::now() {
                tokio::time::sleep_until(due.into()).await;
            }
            let measured = i >= warm_n;
            let (target, pool, opened, step) =
                (target.clone(), pool.clone(), opened.clone(), step.clone());
            tasks.push(tokio::spawn(async move {
                let sent = Instant::now();
                let popped = lock(&pool).pop();
                let mut sender = match popped {
                    Some(s) => s,
                    None => {
                        opened.fetch_add(1, Ordering::Relaxed);
                        match tokio::time::timeout(timeout, connect(&target)).await {
                            Ok(Ok(s)) => s,
                            failed => {
                                if measured {
                                    let counter = if failed.is_ok() {
                                        &step.counts.errors
                                    } else {
                                        &step.counts.timeouts
                                    };
                                    counter.fetch_add(1, Ordering::Relaxed);
                                    let why = match failed {
                                        Ok(Err(e)) => e,
                                        _ => "connect timed out".into(),
                                    };
                                    lock(&step.first_error).get_or_insert(why);
                                }
                                return;
                            }
                        }
                    }
                };
                let result = tokio::time::timeout(timeout, exchange(&mut sender, &target)).await;
                let done = Instant::now();
                if measured {
                    if step.counts.count(&result) {
                        lock(&step.latency).record(micros(done - due)).ok();
                        lock(&step.service).record(micros(done - sent)).ok();
                        lock(&step.dispatch)
                            .record(micros(sent.saturating_duration_since(due)))
                            .ok();
                    } else {
                        let why = match &result {
                            Ok(Ok(a)) if a.status != 200 => format!("HTTP {}", a.status),
                            Ok(Ok(_)) => "incomplete stream".into(),
                            Ok(Err(e)) => e.clone(),
                            Err(_) => "timed out".into(),
                        };
                        lock(&step.first_error).get_or_insert(why);
                    }
                }
                if matches!(result, Ok(Ok(_))) && !sender.is_closed() {
                    lock(&pool).push(sender);
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        let failed = step.counts.failed();
        let ok = step.counts.ok.load(Ordering::Relaxed);
        steps.push(json!({
            "rate": rate,
            "duration_s": duration.as_secs_f64(),
            "warmup_s": warmup.as_secs_f64(),
            "sent": total - warm_n,
            "counts": step.counts.json(),
            "all_ok": failed == 0 && ok == total - warm_n,
            "throughput": ok as f64 / duration.as_secs_f64(),
            "connections_opened": opened.load(Ordering::Relaxed) - opened_before,
            "latency_us": summary(&lock(&step.latency)),
            "service_us": summary(&lock(&step.service)),
            "dispatch_lag_us": summary(&lock(&step.dispatch)),
            "first_error": lock(&step.first_error).clone(),
        }));
        if stop_on_fail && (failed > 0 || ok != total - warm_n) {
            break;
        }
    }
    json!({"mode": "open", "steps": steps})
}

async fn closed_loop(
    target: Arc<Target>,
    conc: usize,
    duration: Duration,
    warmup: Duration,
    timeout: Duration,
) -> Value {
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + duration;
    let latency = Arc::new(Mutex::new(histogram()));
    let first = Arc::new(Mutex::new(histogram()));
    let counts = Arc::new(Counts::default());
    let first_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let mut workers = Vec::new();
    for _ in 0..conc {
        let (target, latency, first, counts, first_error) = (
            target.clone(),
            latency.clone(),
            first.clone(),
            counts.clone(),
            first_error.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut sender: Option<Sender> = None;
            while Instant::now() < end {
                let mut s = match sender.take() {
                    Some(s) => s,
                    None => match connect(&target).await {
                        Ok(s) => s,
                        Err(e) => {
                            counts.errors.fetch_add(1, Ordering::Relaxed);
                            lock(&first_error).get_or_insert(e);
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    },
                };
                let sent = Instant::now();
                let result = tokio::time::timeout(timeout, exchange(&mut s, &target)).await;
                let done = Instant::now();
                if sent >= measure_from && done <= end {
                    if counts.count(&result) {
                        lock(&latency).record(micros(done - sent)).ok();
                        if let Ok(Ok(Answer {
                            first_token: Some(at),
                            ..
                        })) = &result
                        {
                            lock(&first).record(micros(*at - sent)).ok();
                        }
                    } else {
                        let why = match &result {
                            Ok(Ok(a)) if a.status != 200 => format!("HTTP {}", a.status),
                            Ok(Ok(_)) => "incomplete stream".into(),
                            Ok(Err(e)) => e.clone(),
                            Err(_) => "timed out".into(),
                        };
                        lock(&first_error).get_or_insert(why);
                    }
                }
                if matches!(result, Ok(Ok(_))) && !s.is_closed() {
                    sender = Some(s);
                }
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    let ok = counts.ok.load(Ordering::Relaxed);
    let first_summary = summary(&lock(&first));
    json!({
        "mode": "closed",
        "conc": conc,
        "stream": target.stream,
        "duration_s": duration.as_secs_f64(),
        "warmup_s": warmup.as_secs_f64(),
        "counts": counts.json(),
        "rps": ok as f64 / duration.as_secs_f64(),
        "latency_us": summary(&lock(&latency)),
        "first_token_us": first_summary,
        "first_error": lock(&first_error).clone(),
    })
}
