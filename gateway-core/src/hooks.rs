//! The guard's HTTP guardrail hooks (`[[guard.hooks]]`): a team's own checker (Presidio,
//! a classifier) called with the request before it goes upstream, and with the answer
//! before the client gets it.
//!
//! The calls take the shape of Portkey's webhook guardrail, so a hook written for it
//! works here unchanged. The gateway `POST`s
//!
//! ```json
//! {"eventType": "beforeRequestHook" | "afterRequestHook",
//!  "request": {"json": <request body>}, "response": {"json": <answer>},  // response: after only
//!  "metadata": {"request_id": "…", "model": "…", "dialect": "…", "provider": "…"}}
//! ```
//!
//! and the hook answers `{"verdict": bool, "reason"?: "…", "transformedData"?: {"request":
//! {"json": …}} | {"response": {"json": …}}}`. `false` refuses ([`GatewayError::HookRefused`]);
//! `transformedData` replaces the body (how a PII hook masks what it found); `true` alone
//! lets it through as it was.
//!
//! A hook that cannot be reached, is too slow, or answers something unreadable has
//! *failed*: with `fail = "open"` the body goes on unchanged and one warning names the
//! hook and the cause; with `fail = "closed"` the request ends in
//! [`GatewayError::HookFailed`]. A refusal is not a failure: it refuses in either mode.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderName, HeaderValue, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::GatewayError;
use crate::guard::{FailMode, Hook};

/// A hook's answer is read up to this size, or twice what was sent to it if that is more
/// (a hook that masks a large request answers with all of it): a hook cannot make the
/// gateway hold more than that.
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;
/// A refusal's reason goes into the client's error message; a hook's essay is cut here.
const MAX_REASON_BYTES: usize = 1024;
/// What the client hears when the hook refused without saying why.
const NO_REASON: &str = "no reason given";
/// Connections to hooks unused this long are closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
const APPLICATION_JSON: &str = "application/json";

type Connector = HttpsConnector<HttpConnector>;

/// What the request is, for the hook: sent as the call's `metadata`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Meta<'a> {
    pub request_id: &'a str,
    pub model: &'a str,
    pub dialect: &'a str,
    pub provider: &'a str,
}

/// The client that calls every hook: made once, its connections kept between calls.
pub struct Hooks {
    /// Made on the first hook call: a gateway without hooks never reads the platform's
    /// certificate store for them (some milliseconds at start).
    client: std::sync::OnceLock<Result<Client<Connector, Full<Bytes>>, String>>,
    /// Hook and environment variable pairs already warned about (unset or unusable), so
    /// a missing token is said once, not on every request.
    warned: Mutex<HashSet<(String, String)>>,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks::new()
    }
}

impl Hooks {
    pub fn new() -> Hooks {
        Hooks {
            client: std::sync::OnceLock::new(),
            warned: Mutex::new(HashSet::new()),
        }
    }

    /// The client, made on first use, with the platform's certificate verifier for
    /// `https` hooks.
    fn client(&self) -> Result<&Client<Connector, Full<Bytes>>, Failure> {
        self.client
            .get_or_init(|| {
                let tls = crate::upstream::tls_config()?;
                Ok(Client::builder(TokioExecutor::new())
                    .pool_timer(TokioTimer::new())
                    .pool_idle_timeout(IDLE_TIMEOUT)
                    .build(crate::upstream::connector(&tls, None)))
            })
            .as_ref()
            .map_err(|e| Failure::Unreachable(e.clone()))
    }

    /// The request stage: runs each hook with `pre` set, in order, each seeing the body
    /// the previous one left. Returns the body to send upstream, or the refusal (or a
    /// closed hook's failure) to answer the client with.
    pub async fn before(
        &self,
        hooks: &[Arc<Hook>],
        meta: &Meta<'_>,
        mut body: Bytes,
    ) -> Result<Bytes, GatewayError> {
        for hook in hooks.iter().filter(|h| h.pre) {
            if let Some(changed) = self.run(hook, Stage::Pre, meta, &body, None).await? {
                body = changed;
            }
        }
        Ok(body)
    }

    /// The answer stage: runs each hook with `post` set, in order, with the request as
    /// it went upstream (`request`) and the whole answer as the previous hook left it.
    /// Returns the answer to give the client, or the refusal (or a closed hook's failure).
    pub async fn after(
        &self,
        hooks: &[Arc<Hook>],
        meta: &Meta<'_>,
        request: &[u8],
        mut answer: Bytes,
    ) -> Result<Bytes, GatewayError> {
        for hook in hooks.iter().filter(|h| h.post) {
            if let Some(changed) = self
                .run(hook, Stage::Post, meta, request, Some(&answer))
                .await?
            {
                answer = changed;
            }
        }
        Ok(answer)
    }

    /// One hook's call and what its outcome means: `Some` is the new body, `None` the
    /// same one.
    async fn run(
        &self,
        hook: &Hook,
        stage: Stage,
        meta: &Meta<'_>,
        request: &[u8],
        answer: Option<&[u8]>,
    ) -> Result<Option<Bytes>, GatewayError> {
        let outcome = self.call(hook, stage, meta, request, answer).await;
        let (result, out) = match outcome {
            Ok(Verdict::Allow) => ("allow", Ok(None)),
            Ok(Verdict::Transform(body)) => ("transform", Ok(Some(body))),
            Ok(Verdict::Refuse(reason)) => (
                "refuse",
                Err(GatewayError::HookRefused {
                    hook: hook.name.clone(),
                    stage: stage.refused(),
                    reason,
                }),
            ),
            Err(failure) => match hook.fail {
                FailMode::Open => {
                    tracing::warn!(
                        hook = %hook.name,
                        stage = stage.label(),
                        error = %failure,
                        "guard hook failed; it is set to fail open, so the {} goes on unchecked",
                        stage.refused(),
                    );
                    ("failed_open", Ok(None))
                }
                FailMode::Closed => (
                    "failed_closed",
                    Err(GatewayError::HookFailed {
                        hook: hook.name.clone(),
                        detail: failure.to_string(),
                    }),
                ),
            },
        };
        metrics::counter!(
            "trimgate_guard_hook_calls_total",
            "hook" => hook.name.clone(),
            "stage" => stage.label(),
            "result" => result,
        )
        .increment(1);
        out
    }

    /// Sends the event and reads the hook's verdict, all within the hook's timeout.
    async fn call(
        &self,
        hook: &Hook,
        stage: Stage,
        meta: &Meta<'_>,
        request: &[u8],
        answer: Option<&[u8]>,
    ) -> Result<Verdict, Failure> {
        // Borrowed as they are: checked to be JSON, never parsed into a tree and
        // written out again.
        let request: &RawValue =
            serde_json::from_slice(request).map_err(|_| Failure::NotJsonInput("request body"))?;
        let response = answer
            .map(serde_json::from_slice::<&RawValue>)
            .transpose()
            .map_err(|_| Failure::NotJsonInput("answer"))?;
        let event = Event {
            event_type: stage.event_type(),
            request: Carried { json: request },
            response: response.map(|json| Carried { json }),
            metadata: meta,
        };
        let payload = serde_json::to_vec(&event).map_err(|_| Failure::NotJsonInput("event"))?;
        let limit = MAX_ANSWER_BYTES.max(payload.len().saturating_mul(2));

        let uri: Uri = hook.url.parse().map_err(|_| Failure::Url)?;
        let mut req = Request::post(uri)
            .body(Full::new(Bytes::from(payload)))
            .map_err(|_| Failure::Url)?;
        req.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(APPLICATION_JSON));
        for (name, var) in &hook.headers {
            if let Some((name, value)) = self.header(hook, name, var) {
                req.headers_mut().insert(name, value);
            }
        }

        let exchange = async {
            let response = self
                .client()?
                .request(req)
                .await
                .map_err(|e| Failure::Unreachable(root_cause(&e)))?;
            let status = response.status();
            if !status.is_success() {
                return Err(Failure::Status(status));
            }
            Limited::new(response.into_body(), limit)
                .collect()
                .await
                .map(|c| c.to_bytes())
                .map_err(|e| {
                    if e.downcast_ref::<LengthLimitError>().is_some() {
                        Failure::TooLarge(limit)
                    } else {
                        Failure::Read(root_cause(e.as_ref()))
                    }
                })
        };
        let body = tokio::time::timeout(hook.timeout, exchange)
            .await
            .map_err(|_| Failure::Timeout(hook.timeout))??;
        read_verdict(&body, stage)
    }

    /// A header from the environment, read now (a rotated token is used at once). An
    /// unset or unusable variable leaves the header out, with one warning per hook and
    /// variable.
    fn header(&self, hook: &Hook, name: &str, var: &str) -> Option<(HeaderName, HeaderValue)> {
        let problem = match std::env::var(var) {
            Ok(text) => match (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&text),
            ) {
                (Ok(name), Ok(mut value)) => {
                    // Hooks' headers are usually tokens: keep them out of debug output.
                    value.set_sensitive(true);
                    return Some((name, value));
                }
                (Err(_), _) => "is not a header name",
                (_, Err(_)) => "holds what cannot be a header value",
            },
            Err(std::env::VarError::NotPresent) => "is not set",
            Err(std::env::VarError::NotUnicode(_)) => "is not valid UTF-8",
        };
        let first = self
            .warned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((hook.name.clone(), var.to_owned()));
        if first {
            tracing::warn!(
                hook = %hook.name,
                header = name,
                env = var,
                "guard hook's header left out: its environment variable {problem}",
            );
        }
        None
    }
}

/// Which side of the provider a hook is called on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Pre,
    Post,
}

impl Stage {
    fn event_type(self) -> &'static str {
        match self {
            Stage::Pre => "beforeRequestHook",
            Stage::Post => "afterRequestHook",
        }
    }

    /// The metric's `stage` label, as the config names it (`on = ["pre", "post"]`).
    fn label(self) -> &'static str {
        match self {
            Stage::Pre => "pre",
            Stage::Post => "post",
        }
    }

    /// What a refusal at this stage refused, for the client's message.
    fn refused(self) -> &'static str {
        match self {
            Stage::Pre => "request",
            Stage::Post => "answer",
        }
    }

    /// The key of `transformedData` that carries this stage's new body.
    fn transformed_key(self) -> &'static str {
        match self {
            Stage::Pre => "request",
            Stage::Post => "response",
        }
    }
}

/// What the hook is sent.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    event_type: &'static str,
    request: Carried<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response: Option<Carried<'a>>,
    metadata: &'a Meta<'a>,
}

#[derive(Serialize)]
struct Carried<'a> {
    json: &'a RawValue,
}

/// The hook's answer, loosely: each part is checked by hand so that no message built
/// from it quotes what the hook sent back (it may echo the request).
#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(default)]
    verdict: Option<Value>,
    #[serde(default)]
    reason: Option<Value>,
    #[serde(default, borrow, rename = "transformedData")]
    transformed: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Transformed<'a> {
    #[serde(default, borrow)]
    request: Option<&'a RawValue>,
    #[serde(default, borrow)]
    response: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct NewBody<'a> {
    #[serde(default, borrow)]
    json: Option<&'a RawValue>,
}

/// What a hook that answered decided.
#[derive(Debug, PartialEq)]
enum Verdict {
    Allow,
    Refuse(String),
    /// The new body, the hook's JSON as it wrote it.
    Transform(Bytes),
}

/// Why a hook gave no usable answer. Never holds any part of a body.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("the {0} is not JSON, so it could not be sent")]
    NotJsonInput(&'static str),
    #[error("its URL is not a valid URL")]
    Url,
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot reach it: {0}")]
    Unreachable(String),
    #[error("it answered {0}")]
    Status(StatusCode),
    #[error("its answer was cut off: {0}")]
    Read(String),
    #[error("its answer is larger than {0} bytes")]
    TooLarge(usize),
    #[error("its answer is not a JSON object")]
    NotJson,
    #[error("its answer has no boolean `verdict`")]
    NoVerdict,
    #[error("its `transformedData` is not an object holding `{0}.json`, an object")]
    BadTransform(&'static str),
}

fn read_verdict(body: &[u8], stage: Stage) -> Result<Verdict, Failure> {
    // serde would also read a struct from an array (`[true]`): only an object will do.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(Failure::NotJson);
    }
    let answer: Answer<'_> = serde_json::from_slice(body).map_err(|_| Failure::NotJson)?;
    match answer.verdict {
        Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            let reason = match answer.reason {
                Some(Value::String(text)) if !text.trim().is_empty() => cut(text, MAX_REASON_BYTES),
                _ => NO_REASON.to_owned(),
            };
            return Ok(Verdict::Refuse(reason));
        }
        _ => return Err(Failure::NoVerdict),
    }
    let Some(transformed) = answer.transformed.filter(|raw| raw.get() != "null") else {
        return Ok(Verdict::Allow);
    };
    let key = stage.transformed_key();
    let bad = || Failure::BadTransform(key);
    let transformed: Transformed<'_> =
        serde_json::from_str(transformed.get()).map_err(|_| bad())?;
    let carried = match stage {
        Stage::Pre => transformed.request,
        Stage::Post => transformed.response,
    };
    // Only the other stage's data (Portkey sends both keys to a hook that is on both
    // stages): nothing to change here.
    let Some(carried) = carried.filter(|raw| raw.get() != "null") else {
        return Ok(Verdict::Allow);
    };
    let new: NewBody<'_> = serde_json::from_str(carried.get()).map_err(|_| bad())?;
    match new.json {
        // A request or an answer is an object; anything else would only fail upstream,
        // or in the client, with less said about why.
        Some(json) if json.get().starts_with('{') => Ok(Verdict::Transform(
            Bytes::copy_from_slice(json.get().as_bytes()),
        )),
        _ => Err(bad()),
    }
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The innermost cause of a transport error ("connection refused", "invalid peer
/// certificate"), not its wrappers' text.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    use axum::routing::post;
    use axum::Router;
    use http::HeaderMap;
    use serde_json::json;

    const META: Meta<'static> = Meta {
        request_id: "req-1",
        model: "gpt-x",
        dialect: "openai-chat",
        provider: "p",
    };

    /// What the test hook does with a call.
    enum Reply {
        Json(Value),
        Raw(StatusCode, &'static str),
        /// Answers only after 2 s: longer than the tests' short timeouts.
        Slow,
    }

    type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

    /// A hook server on an ephemeral port; `reply` decides each answer from the event
    /// it was sent. Every call's headers and event are kept in the returned list.
    async fn hook_server(
        reply: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> (String, Seen) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/check", listener.local_addr().unwrap());
        let seen: Seen = Arc::default();
        let reply = Arc::new(reply);
        let kept = seen.clone();
        let app = Router::new().route(
            "/check",
            post(move |headers: HeaderMap, body: Bytes| {
                let kept = kept.clone();
                let reply = reply.clone();
                async move {
                    let event: Value = serde_json::from_slice(&body).unwrap();
                    let answer = reply(&event);
                    kept.lock().unwrap().push((headers, event));
                    match answer {
                        Reply::Json(v) => (StatusCode::OK, v.to_string()),
                        Reply::Raw(status, text) => (status, text.to_owned()),
                        Reply::Slow => {
                            tokio::time::sleep(Duration::from_secs(2)).await;
                            (StatusCode::OK, json!({"verdict": true}).to_string())
                        }
                    }
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, seen)
    }

    fn hook(name: &str, url: &str, fail: FailMode) -> Arc<Hook> {
        Arc::new(Hook {
            name: name.into(),
            url: url.into(),
            pre: true,
            post: true,
            timeout: Duration::from_secs(5),
            fail,
            headers: Vec::new(),
        })
    }

    /// The hook with a 200 ms timeout, for the test server's 2 s answers.
    fn short(hook: Arc<Hook>) -> Arc<Hook> {
        Arc::new(Hook {
            timeout: Duration::from_millis(200),
            ..Arc::try_unwrap(hook).unwrap()
        })
    }

    fn request() -> Bytes {
        Bytes::from_static(
            br#"{"model":"gpt-x","messages":[{"role":"user","content":"hi, I am Ada"}]}"#,
        )
    }

    /// A port nobody listens on: bound, then let go.
    async fn dead_url() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        format!("http://{addr}/check")
    }

    /// A hook that says yes leaves the body as it was, byte for byte, and was sent the
    /// request and the metadata in Portkey's shape.
    #[tokio::test]
    async fn allowing_hook_leaves_the_request_as_it_was() {
        let (url, seen) = hook_server(|_| Reply::Json(json!({"verdict": true}))).await;
        let hooks = Hooks::new();
        let out = hooks
            .before(&[hook("pii", &url, FailMode::Closed)], &META, request())
            .await
            .unwrap();
        assert_eq!(out, request());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        let (headers, event) = &seen[0];
        assert_eq!(headers[CONTENT_TYPE], "application/json");
        assert_eq!(event["eventType"], "beforeRequestHook");
        assert_eq!(
            event["request"]["json"],
            serde_json::from_slice::<Value>(&request()).unwrap()
        );
        assert!(event.get("response").is_none());
        assert_eq!(
            event["metadata"],
            json!({"request_id": "req-1", "model": "gpt-x", "dialect": "openai-chat", "provider": "p"})
        );
    }

    /// `verdict: false` refuses the request with the hook's name and reason, whether the
    /// hook fails open or not (a refusal is an answer, not a failure).
    #[tokio::test]
    async fn refusing_hook_refuses_with_its_reason() {
        let (url, _) = hook_server(|_| {
            Reply::Json(json!({"verdict": false, "reason": "contains a passport number"}))
        })
        .await;
        let hooks = Hooks::new();
        let err = hooks
            .before(&[hook("pii", &url, FailMode::Open)], &META, request())
            .await
            .unwrap_err();
        match &err {
            GatewayError::HookRefused {
                hook,
                stage,
                reason,
            } => {
                assert_eq!(hook, "pii");
                assert_eq!(*stage, "request");
                assert_eq!(reason, "contains a passport number");
            }
            other => panic!("expected HookRefused, got {other:?}"),
        }
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        let message = err.to_string();
        assert!(
            message.contains("pii") && message.contains("passport"),
            "{message}"
        );
    }

    /// A refusal without a reason still says something.
    #[tokio::test]
    async fn refusal_without_reason_says_none_was_given() {
        let (url, _) = hook_server(|_| Reply::Json(json!({"verdict": false}))).await;
        let hooks = Hooks::new();
        let err = hooks
            .before(&[hook("pii", &url, FailMode::Closed)], &META, request())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, GatewayError::HookRefused { reason, .. } if reason == NO_REASON),
            "{err:?}"
        );
    }

    /// `transformedData.request.json` becomes the body sent upstream, as the hook wrote it.
    #[tokio::test]
    async fn transforming_hook_replaces_the_request() {
        let (url, _) = hook_server(|event| {
            let mut masked = event["request"]["json"].clone();
            masked["messages"][0]["content"] = json!("hi, I am <PERSON>");
            Reply::Json(json!({"verdict": true, "transformedData": {"request": {"json": masked}}}))
        })
        .await;
        let hooks = Hooks::new();
        let out = hooks
            .before(
                &[hook("presidio", &url, FailMode::Closed)],
                &META,
                request(),
            )
            .await
            .unwrap();
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["messages"][0]["content"], "hi, I am <PERSON>");
        assert_eq!(out["model"], "gpt-x");
    }

    /// A hook slower than its timeout: open lets the request go on unchanged.
    #[tokio::test]
    async fn slow_hook_failing_open_lets_the_request_through() {
        let (url, _) = hook_server(|_| Reply::Slow).await;
        let hooks = Hooks::new();
        let out = hooks
            .before(
                &[short(hook("slow", &url, FailMode::Open))],
                &META,
                request(),
            )
            .await
            .unwrap();
        assert_eq!(out, request());
    }

    /// A hook slower than its timeout: closed refuses with `HookFailed`, saying it timed out.
    #[tokio::test]
    async fn slow_hook_failing_closed_fails_the_request() {
        let (url, _) = hook_server(|_| Reply::Slow).await;
        let hooks = Hooks::new();
        let err = hooks
            .before(
                &[short(hook("slow", &url, FailMode::Closed))],
                &META,
                request(),
            )
            .await
            .unwrap_err();
        match &err {
            GatewayError::HookFailed { hook, detail } => {
                assert_eq!(hook, "slow");
                assert!(detail.contains("no answer within 200ms"), "{detail}");
            }
            other => panic!("expected HookFailed, got {other:?}"),
        }
        assert_eq!(err.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    /// The failure a hook at `url` gives when set to fail closed, once the same hook set
    /// to fail open has let the request through unchanged.
    async fn failed_closed_passed_open(hooks: &Hooks, name: &str, url: &str) -> GatewayError {
        let out = hooks
            .before(&[hook(name, url, FailMode::Open)], &META, request())
            .await
            .unwrap();
        assert_eq!(out, request(), "{url}");
        hooks
            .before(&[hook(name, url, FailMode::Closed)], &META, request())
            .await
            .unwrap_err()
    }

    /// A 500 is a failure: closed fails with the status named, open goes on unchanged.
    #[tokio::test]
    async fn hook_answering_500_is_a_failure() {
        let (url, _) =
            hook_server(|_| Reply::Raw(StatusCode::INTERNAL_SERVER_ERROR, "{\"verdict\":false}"))
                .await;
        let err = failed_closed_passed_open(&Hooks::new(), "h", &url).await;
        assert!(
            matches!(&err, GatewayError::HookFailed { detail, .. } if detail.contains("500")),
            "{err:?}"
        );
    }

    /// Answers that are not JSON, have no boolean verdict, or carry a transformed body
    /// that is not an object, are failures, and never quoted in the error.
    #[tokio::test]
    async fn unreadable_answers_are_failures() {
        let cases: [(&'static str, &str); 5] = [
            ("<html>secret-echo</html>", "not a JSON object"),
            (r#"{"allowed":true}"#, "no boolean `verdict`"),
            (r#"{"verdict":"secret-echo"}"#, "no boolean `verdict`"),
            (r#"["secret-echo"]"#, "not a JSON object"),
            (
                r#"{"verdict":true,"transformedData":{"request":{"json":"secret-echo"}}}"#,
                "`transformedData`",
            ),
        ];
        let hooks = Hooks::new();
        for (answer, says) in cases {
            let (url, _) = hook_server(move |_| Reply::Raw(StatusCode::OK, answer)).await;
            let err = failed_closed_passed_open(&hooks, "h", &url).await;
            let GatewayError::HookFailed { detail, .. } = &err else {
                panic!("{answer}: expected HookFailed, got {err:?}");
            };
            assert!(detail.contains(says), "{answer}: {detail}");
            assert!(!err.to_string().contains("secret-echo"), "{answer}: {err}");
        }
    }

    /// Nobody listening: closed fails naming the cause, open goes on unchanged.
    #[tokio::test]
    async fn unreachable_hook_is_a_failure() {
        let url = dead_url().await;
        let err = failed_closed_passed_open(&Hooks::new(), "gone", &url).await;
        assert!(
            matches!(&err, GatewayError::HookFailed { hook, detail } if hook == "gone" && detail.starts_with("cannot reach it")),
            "{err:?}"
        );
    }

    /// Hooks run in order, the second seeing what the first made; a hook on `post` only is
    /// not called before the request.
    #[tokio::test]
    async fn hooks_run_in_order_on_each_others_output() {
        let (first, _) = hook_server(|event| {
            let mut json = event["request"]["json"].clone();
            json["messages"][0]["content"] = json!("masked by first");
            Reply::Json(json!({"verdict": true, "transformedData": {"request": {"json": json}}}))
        })
        .await;
        let (second, seen) = hook_server(|_| Reply::Json(json!({"verdict": true}))).await;
        let (answer_only, answer_seen) =
            hook_server(|_| Reply::Json(json!({"verdict": false}))).await;
        let answer_only = Arc::new(Hook {
            pre: false,
            ..Arc::try_unwrap(hook("answers", &answer_only, FailMode::Closed)).unwrap()
        });
        let hooks = Hooks::new();
        let out = hooks
            .before(
                &[
                    hook("first", &first, FailMode::Closed),
                    answer_only,
                    hook("second", &second, FailMode::Closed),
                ],
                &META,
                request(),
            )
            .await
            .unwrap();
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["messages"][0]["content"], "masked by first");
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen[0].1["request"]["json"]["messages"][0]["content"],
            "masked by first"
        );
        assert!(answer_seen.lock().unwrap().is_empty());
    }

    /// After the answer: the hook gets the request and the whole answer, and can replace
    /// the answer; a refusal there names the answer.
    #[tokio::test]
    async fn after_sends_the_answer_and_takes_its_replacement() {
        let (url, seen) = hook_server(|event| {
            let mut answer = event["response"]["json"].clone();
            answer["choices"][0]["message"]["content"] = json!("call <PHONE>");
            Reply::Json(json!({"verdict": true, "transformedData": {"response": {"json": answer}}}))
        })
        .await;
        let answer = Bytes::from_static(
            br#"{"id":"c1","choices":[{"message":{"role":"assistant","content":"call 555-0100"}}]}"#,
        );
        let hooks = Hooks::new();
        let out = hooks
            .after(
                &[hook("pii", &url, FailMode::Closed)],
                &META,
                &request(),
                answer.clone(),
            )
            .await
            .unwrap();
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["choices"][0]["message"]["content"], "call <PHONE>");
        assert_eq!(out["id"], "c1");
        let event = seen.lock().unwrap()[0].1.clone();
        assert_eq!(event["eventType"], "afterRequestHook");
        assert_eq!(event["request"]["json"]["model"], "gpt-x");
        assert_eq!(
            event["response"]["json"],
            serde_json::from_slice::<Value>(&answer).unwrap()
        );
        assert_eq!(event["metadata"]["request_id"], "req-1");

        let (refusing, _) =
            hook_server(|_| Reply::Json(json!({"verdict": false, "reason": "toxic"}))).await;
        let err = hooks
            .after(
                &[hook("tox", &refusing, FailMode::Open)],
                &META,
                &request(),
                answer,
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, GatewayError::HookRefused { stage: "answer", reason, .. } if reason == "toxic"),
            "{err:?}"
        );
    }

    /// A header's value is read from its environment variable at the call (PATH, which
    /// every test environment has: setting a variable is not allowed here); an unset
    /// variable leaves its header out and the call still goes.
    #[tokio::test]
    async fn headers_come_from_the_environment() {
        let (url, seen) = hook_server(|_| Reply::Json(json!({"verdict": true}))).await;
        let path = std::env::var("PATH").unwrap();
        let unset = "TRIMGATE_HOOKS_TEST_VARIABLE_NOBODY_SETS";
        assert!(std::env::var_os(unset).is_none());
        let with_headers = Arc::new(Hook {
            headers: vec![
                ("x-hook-token".into(), "PATH".into()),
                ("x-missing".into(), unset.into()),
            ],
            ..Arc::try_unwrap(hook("auth", &url, FailMode::Closed)).unwrap()
        });
        let hooks = Hooks::new();
        for _ in 0..2 {
            hooks
                .before(std::slice::from_ref(&with_headers), &META, request())
                .await
                .unwrap();
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].0["x-hook-token"], path.as_str());
        assert!(seen[0].0.get("x-missing").is_none());
        // Warned about once, not per call.
        assert_eq!(hooks.warned.lock().unwrap().len(), 1);
    }

    /// The answer parser on its own: a transformedData for the other stage, or null, is
    /// no change; a long reason is cut.
    #[test]
    fn verdicts_read_from_answers() {
        let read = |s: &str, stage| read_verdict(s.as_bytes(), stage);
        assert_eq!(
            read(r#"{"verdict":true}"#, Stage::Pre).unwrap(),
            Verdict::Allow
        );
        assert_eq!(
            read(r#"{"verdict":true,"transformedData":null}"#, Stage::Pre).unwrap(),
            Verdict::Allow
        );
        assert_eq!(
            read(
                r#"{"verdict":true,"transformedData":{"response":{"json":{"a":1}}}}"#,
                Stage::Pre
            )
            .unwrap(),
            Verdict::Allow
        );
        assert_eq!(
            read(
                r#"{"verdict":true,"transformedData":{"response":{"json":{"b":1, "a":2}}}}"#,
                Stage::Post
            )
            .unwrap(),
            Verdict::Transform(Bytes::from_static(br#"{"b":1, "a":2}"#))
        );
        let long = format!(r#"{{"verdict":false,"reason":"{}"}}"#, "é".repeat(2000));
        let Verdict::Refuse(reason) = read(&long, Stage::Pre).unwrap() else {
            panic!("expected a refusal");
        };
        assert!(reason.len() <= MAX_REASON_BYTES + '…'.len_utf8());
    }
}
