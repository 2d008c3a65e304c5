//! Shared harness for the end-to-end tests: the project's mock provider in-process on
//! `127.0.0.1:0`, and the gateway either as the real `trimgate` binary or in-process
//! (when a test needs to read the record stage).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gateway_core::config::Config;
use gateway_core::mock::{MockConfig, MockState};
use gateway_core::record::MemoryRecorder;
use gateway_core::secrets::MemoryStore;
use gateway_core::state::AppState;

pub const OPENAI_KEY: &str = "sk-mock-openai";
pub const ANTHROPIC_KEY: &str = "sk-ant-mock";
pub const GEMINI_KEY: &str = "AIza-mock-gemini";
/// What a client sends; it must never reach the provider.
pub const CLIENT_PLACEHOLDER: &str = "sk-client-placeholder-123";

pub struct Mock {
    pub state: MockState,
    pub url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn start_mock(config: MockConfig) -> Mock {
    gateway_core::upstream::install_tls_provider();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let state = MockState::new(config);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let serve_state = state.clone();
    tokio::spawn(async move {
        let _ = gateway_core::mock::serve(listener, serve_state, async {
            let _ = rx.await;
        })
        .await;
    });
    Mock {
        state,
        url,
        _stop: tx,
    }
}

/// A config serving `gpt-*`, `o*` through the mock's OpenAI side and `claude-*` through
/// its Anthropic side, plus `extra` TOML appended (routes come first when given there).
pub fn mock_config(mock_url: &str, server: &str, extra: &str) -> String {
    format!(
        r#"
[server]
{server}

{extra}

[providers.mock-openai]
kind = "openai"
base_url = "{mock_url}/v1"
api_key = {{ env = "TG_TEST_OPENAI_KEY" }}
models = ["gpt-5", "gpt-5-mini"]

[providers.mock-anthropic]
kind = "anthropic"
base_url = "{mock_url}/v1"
api_key = {{ env = "TG_TEST_ANTHROPIC_KEY" }}
models = ["claude-sonnet-5-5"]
"#
    )
}

/// The gateway as a child process of the real binary.
pub struct Gateway {
    pub url: String,
    pub child: Child,
    pub dir: tempfile::TempDir,
    /// The admin API's token, from the window's address the gateway prints.
    pub admin_token: String,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Gateway {
    pub fn spawn(config_toml: &str) -> Gateway {
        Gateway::spawn_with_env(config_toml, &[])
    }

    pub fn spawn_with_env(config_toml: &str, env: &[(&str, &str)]) -> Gateway {
        Gateway::spawn_wrapped(
            config_toml,
            env,
            &[],
            "127.0.0.1:0",
            tempfile::tempdir().unwrap(),
        )
    }

    /// The binary run by `wrapper` (a command that ends by exec'ing its arguments, such as
    /// `unshare`), in `dir`.
    pub fn spawn_wrapped(
        config_toml: &str,
        env: &[(&str, &str)],
        wrapper: &[&str],
        listen: &str,
        dir: tempfile::TempDir,
    ) -> Gateway {
        let config = dir.path().join("config.toml");
        std::fs::write(&config, config_toml).unwrap();
        let log = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
        let bin = env!("CARGO_BIN_EXE_trimgate");
        let mut cmd = match wrapper.split_first() {
            None => Command::new(bin),
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(bin);
                cmd
            }
        };
        cmd.arg("serve")
            .arg("--config")
            .arg(&config)
            .arg("--listen")
            .arg(listen)
            .env("TG_TEST_OPENAI_KEY", OPENAI_KEY)
            .env("TG_TEST_ANTHROPIC_KEY", ANTHROPIC_KEY)
            .env("TG_TEST_GEMINI_KEY", GEMINI_KEY)
            .env("TRIMGATE_LOG", "info")
            // The default ledger goes to the platform data dir: keep it in the test's folder.
            .env("XDG_DATA_HOME", dir.path())
            // And the log file to the platform state dir: there too.
            .env("XDG_STATE_HOME", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                let log =
                    std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
                panic!("gateway exited before listening; stderr:\n{log}");
            }
            if let Some(rest) = line.trim().strip_prefix("Trimgate listening on ") {
                break rest.to_owned();
            }
        };
        // The window's address with the admin token follows the listening line.
        let mut admin_token = String::new();
        for _ in 0..10 {
            line.clear();
            if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            if let Some((_, token)) = line.trim().split_once("/ui/#token=") {
                admin_token = token.to_owned();
                break;
            }
            // Stdout is a pipe here: the token is in a file only the user can read.
            if let Some((_, path)) = line.trim().split_once("(admin token in ") {
                let path = path.trim_end_matches(')');
                admin_token = std::fs::read_to_string(path).unwrap_or_default();
                break;
            }
            if line.trim().starts_with("Window:") {
                break;
            }
        }
        Gateway {
            url,
            child,
            dir,
            admin_token,
            _stdout: stdout,
        }
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default()
    }

    pub fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit, up to `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            // A test's own thread polling a child process; no runtime runs on it.
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The gateway in-process, with a recorder the test can read.
pub struct InProcess {
    pub url: String,
    pub records: Arc<MemoryRecorder>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn start_inprocess(config_toml: &str) -> InProcess {
    start_inprocess_env(config_toml, &[]).await
}

/// The gateway in-process, with more keys in its environment than the two tests' own.
pub async fn start_inprocess_env(config_toml: &str, env: &[(&str, &str)]) -> InProcess {
    gateway_core::upstream::install_tls_provider();
    let config = Config::from_toml(config_toml, "test").unwrap();
    let mut secrets = MemoryStore::default()
        .with_env("TG_TEST_OPENAI_KEY", OPENAI_KEY)
        .with_env("TG_TEST_ANTHROPIC_KEY", ANTHROPIC_KEY)
        .with_env("TG_TEST_GEMINI_KEY", GEMINI_KEY);
    for (name, value) in env {
        secrets = secrets.with_env(name, value);
    }
    let records = Arc::new(MemoryRecorder::new(1000));
    let state = AppState::new(config, Arc::new(secrets), records.clone()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = gateway_core::launch::serve(listener, state, async {
            let _ = rx.await;
        })
        .await;
    });
    InProcess {
        url,
        records,
        _stop: tx,
    }
}

pub fn client() -> reqwest::Client {
    gateway_core::upstream::install_tls_provider();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// `GET /admin/api{path}` on `gw` with the window's token: the answer's JSON, once it is a 200.
pub async fn admin_get(gw: &Gateway, path: &str) -> serde_json::Value {
    let text = admin_get_text(gw, path).await;
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET /admin/api{path}: {e}: {text}"))
}

/// As [`admin_get`], the answer's text as sent (for a test that reads what it must not hold).
pub async fn admin_get_text(gw: &Gateway, path: &str) -> String {
    let res = client()
        .get(format!("{}/admin/api{path}", gw.url))
        .bearer_auth(&gw.admin_token)
        .send()
        .await
        .unwrap();
    let status = res.status();
    let text = res.text().await.unwrap();
    assert_eq!(status, 200, "GET /admin/api{path}: {text}");
    text
}

/// The Prometheus text a gateway at `url` serves at `/metrics` (no key).
pub async fn metrics_text(url: &str) -> String {
    client()
        .get(format!("{url}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Polls `check` until it holds or `limit` passes; returns whether it held.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    check()
}

/// Splits an SSE body into its frames' `data` payloads.
pub fn sse_data(body: &str) -> Vec<String> {
    // Google's servers end lines with `\r\n`.
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|frame| {
            frame
                .lines()
                .find_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
                .map(str::to_owned)
        })
        .collect()
}

/// Splits an SSE body into (event, data) pairs.
pub fn sse_events(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .filter_map(|frame| {
            let event = frame
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .map(str::to_owned);
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event, data.to_owned()))
        })
        .collect()
}

/// POSTs a JSON body the way the SDKs do (with `anthropic-version` on Anthropic paths),
/// plus any extra headers (`x-mock-*` controls travel through the gateway to the mock).
pub async fn post_json(
    url: &str,
    body: impl Into<reqwest::Body>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = client()
        .post(url)
        .header("content-type", "application/json");
    if url.contains("/messages") {
        request = request.header("anthropic-version", "2023-06-01");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(body).send().await.unwrap()
}

/// Every file below `dir`.
pub fn files_below(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_below(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Whether a D-Bus session (for the keychain's Secret Service) is there. Without one the
/// caller skips, and says so, unless `TRIMGATE_REQUIRE_KEYCHAIN=1` makes that a failure.
pub fn keychain_available() -> bool {
    let available = std::env::var("DBUS_SESSION_BUS_ADDRESS").is_ok();
    if !available {
        assert!(
            std::env::var("TRIMGATE_REQUIRE_KEYCHAIN").as_deref() != Ok("1"),
            "no D-Bus session, and TRIMGATE_REQUIRE_KEYCHAIN=1"
        );
        eprintln!("SKIPPED: no D-Bus session bus for the keychain (run under dbus-run-session with gnome-keyring-daemon)");
    }
    available
}

/// A `cargo test` log of 300 passing tests and one failure: a tool output the optimizer cuts.
pub fn cargo_test_log() -> String {
    let mut log = String::from("running 301 tests\n");
    for i in 0..300 {
        log.push_str(&format!("test store::tests::case_{i:03} ... ok\n"));
    }
    log.push_str("test store::tests::keeps_order ... FAILED\n\nfailures:\n\n---- store::tests::keeps_order stdout ----\nthread 'store::tests::keeps_order' panicked at src/store.rs:88:5:\nassertion failed: sorted\n\nfailures:\n    store::tests::keeps_order\n\ntest result: FAILED. 300 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.04s\n");
    log
}

/// A Chat request whose last message is `log` as a shell tool's output.
pub fn chat_body(log: &str) -> serde_json::Value {
    serde_json::json!({
        "model": "gpt-5",
        "messages": [
            {"role": "user", "content": "Run the tests."},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"cargo test\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": log},
        ],
    })
}

/// Where a client hangs up on a streamed answer.
#[derive(Clone, Copy, Debug)]
pub enum HangUp {
    /// Once the body has shown this text (the answer's last event), before the
    /// provider's body ends.
    After(&'static str),
    /// Before the response headers: the request is given up after this long.
    Before(Duration),
}

/// Sends `body` to `url` and leaves as `at` says, the connection closed: what an agent
/// does that stops reading once it has its answer (or gives up). Returns the body read.
pub async fn hang_up(url: &str, body: &str, headers: &[(&str, &str)], at: HangUp) -> String {
    let mut request = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned());
    if url.contains("/messages") {
        request = request.header("anthropic-version", "2023-06-01");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    match at {
        HangUp::Before(after) => {
            let gave_up = tokio::time::timeout(after, request.send()).await;
            assert!(gave_up.is_err(), "the answer came before the client left");
            String::new()
        }
        HangUp::After(text) => {
            let mut res = request.send().await.unwrap();
            assert_eq!(res.status(), 200, "{url}");
            let mut seen = Vec::new();
            while let Some(chunk) = res.chunk().await.unwrap() {
                seen.extend_from_slice(&chunk);
                if seen.windows(text.len()).any(|w| w == text.as_bytes()) {
                    break;
                }
            }
            let seen = String::from_utf8_lossy(&seen).into_owned();
            assert!(seen.contains(text), "{text} never came: {seen}");
            // Dropping an unfinished body closes its connection.
            drop(res);
            seen
        }
    }
}

/// The URL of a new SQLite ledger in `dir`.
pub fn fresh_sqlite(dir: &tempfile::TempDir) -> String {
    gateway_core::ledger::sqlite_url(&dir.path().join("ledger.sqlite"))
}

/// A new, empty database on the test PostgreSQL server (`TRIMGATE_TEST_POSTGRES_URL`, which
/// `scripts/test.sh` sets after starting one with `scripts/postgres.sh`), so runs never see
/// each other's rows.
pub async fn fresh_postgres() -> String {
    let base = std::env::var("TRIMGATE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("TRIMGATE_TEST_POSTGRES_URL is not set: run scripts/test.sh, or start a server with scripts/postgres.sh and export the URL it prints")
    });
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&base).await.unwrap();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let name = format!("tg_{nanos:x}{:x}", std::process::id());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let (prefix, _) = base.rsplit_once('/').unwrap();
    format!("{prefix}/{name}")
}

/// `trimgate keys create` with `args` on the config at `config`: the key printed.
pub fn keys_create(config: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_trimgate"))
        .args(["keys", "--config"])
        .arg(config)
        .arg("create")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Whether the ledger at `url` has a row for request `id` within a few seconds (rows are
/// written in batches, off the request path).
pub async fn row_written(url: &str, id: &str) -> bool {
    let pool = gateway_core::ledger::open(url).await.unwrap();
    let mut found = false;
    for _ in 0..60 {
        found = sqlx::query("SELECT 1 FROM requests WHERE request_id = $1")
            .bind(id.to_owned())
            .fetch_optional(&pool)
            .await
            .unwrap()
            .is_some();
        if found {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    pool.close().await;
    found
}
