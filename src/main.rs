//! The `trimgate` command: thin. It parses flags, loads the config, sets up logging (and
//! trace export, when configured), binds, and hands over to gateway-core.

mod allocator;
mod keys;
mod memory;
mod sessions;
mod status;
mod traces;
mod wrap;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use gateway_core::config::server::ENV_LISTEN;
use gateway_core::config::telemetry::{ENV_OTLP_ENDPOINT, ENV_OTLP_PROTOCOL, OTLP_PROTOCOL};
use gateway_core::config::ENV_CONFIG;
use gateway_core::config::{self, Config, ProviderKind, Telemetry};
use gateway_core::launch::Gateway;
use gateway_core::ledger;
use gateway_core::ledger::stats::{By, Totals};
use gateway_core::logs;
use gateway_core::running::{self, Running};
use gateway_core::server;
use gateway_core::telemetry::{ENV_LOG, SPAN_TARGET};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;
use trimgate_mock::{MockConfig, MockState};

// glibc's malloc contends across the runtime's threads; mimalloc keeps per-thread heaps.
#[global_allocator]
static GLOBAL: allocator::Mimalloc = allocator::Mimalloc;

#[derive(Parser)]
#[command(
    name = "trimgate",
    version,
    about = "A local LLM gateway that makes coding agents cheaper and faster"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway (headless).
    Serve(ServeArgs),
    /// Check a config file and print every problem in it.
    Check(ConfigArgs),
    /// Run the mock provider (OpenAI and Anthropic wire formats) for tests and benchmarks.
    Mock(MockArgs),
    /// Totals from the ledger: requests, tokens, tokens saved, cost and cost saved.
    Stats(StatsArgs),
    /// Run a coding agent (claude, codex, aider, or any command) through the running gateway.
    Wrap(WrapArgs),
    /// The running gateway's providers: in rotation, cooling down, or being probed.
    Status(StatusArgs),
    /// Exit 0 when the gateway answers `/healthz`, 1 when not (a container's HEALTHCHECK).
    Healthcheck(HealthcheckArgs),
    /// Print a tool output as it was before the optimizer elided part of it (the id its
    /// marker gives: `[… all of it: … trimgate show <id> …]`).
    Show(ShowArgs),
    /// Virtual keys for a team's clients: create, list, revoke (kept in the ledger's database).
    Keys(KeysArgs),
}

#[derive(Args)]
struct KeysArgs {
    #[command(flatten)]
    config: ConfigArgs,
    #[command(subcommand)]
    command: keys::KeysCommand,
}

#[derive(Args)]
struct HealthcheckArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The gateway's address (default: the running desktop app's, else the config's listen
    /// address).
    #[arg(long, env = "TRIMGATE_URL")]
    gateway: Option<String>,
}

#[derive(Args)]
struct StatusArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The gateway's address (default: the running desktop app's, else the config's listen
    /// address).
    #[arg(long, env = "TRIMGATE_URL")]
    gateway: Option<String>,
    /// Print the gateway's JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ShowArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The gateway's address (default: the running desktop app's, else the config's listen
    /// address).
    #[arg(long, env = "TRIMGATE_URL")]
    gateway: Option<String>,
    /// The id in the marker.
    id: String,
}

#[derive(Args)]
struct WrapArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The gateway's address (default: the running desktop app's, else the config's listen
    /// address).
    #[arg(long, env = "TRIMGATE_URL")]
    gateway: Option<String>,
    /// The agent: claude, codex, aider, or another program.
    agent: String,
    /// The agent's own arguments, after `--`.
    #[arg(last = true)]
    args: Vec<String>,
}

#[derive(Args)]
struct StatsArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// How far back: 30m, 24h, 7d, or a Unix time in milliseconds.
    #[arg(long, default_value = "24h")]
    since: String,
    /// Group by model, provider, pass (each pass), passes (the set applied), key, session,
    /// hour or day.
    ///
    /// `session` lists the latest sessions (an agent's session id, or `h-…` derived from
    /// the model and first user message): requests, input tokens, prompt-cache reads and
    /// writes, tokens the passes removed, cost, $ saved, cache breaks by cause (gateway,
    /// client, provider) and whether the session was held out. Then the net savings
    /// against the held-out control group (`[optimize] holdout`), per model with enough
    /// held-out traffic (3 sessions, 10 requests):
    ///
    ///   rate_held = held-out cost / held-out input-equivalent tokens
    ///
    ///   net saved = optimized input-equivalent tokens × rate_held − optimized cost
    ///
    /// where input-equivalent tokens are the provider's input tokens (cache reads and
    /// writes included) plus the tokens the passes removed: what the clients sent.
    #[arg(long, default_value = "model", verbatim_doc_comment)]
    by: String,
    /// With `--by session`: how many sessions to list, newest first.
    #[arg(long, default_value_t = 20)]
    limit: i64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ConfigArgs {
    /// Config file (default: the platform config dir's trimgate/config.toml).
    #[arg(long, env = ENV_CONFIG)]
    config: Option<PathBuf>,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Address to listen on, as host:port or a bare port (loopback). Overrides the config.
    #[arg(long, env = ENV_LISTEN)]
    listen: Option<String>,
    /// Log lines as JSON instead of text.
    #[arg(long)]
    log_json: bool,
    /// Where the log file `trimgate.log` goes (rotated at 5 MiB, two old files kept), beside
    /// stderr; `off` for none. Default: the platform's log dir
    /// (`~/.local/state/trimgate/logs` on Linux).
    #[arg(long, env = logs::ENV_LOG_DIR, value_name = "DIR|off")]
    log_dir: Option<PathBuf>,
    /// Serve beyond loopback without gateway keys: anyone who can reach the address spends
    /// your provider keys. Without it such a start is refused.
    #[arg(long, env = "TRIMGATE_INSECURE_OPEN_RELAY", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false)]
    insecure_open_relay: bool,
}

#[derive(Args)]
struct MockArgs {
    /// Address to listen on; port 0 picks a free one (the chosen address is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// Pause before response headers, in milliseconds.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Pause between stream frames, in milliseconds.
    #[arg(long, default_value_t = 0)]
    frame_interval_ms: u64,
    /// The key OpenAI endpoints accept.
    #[arg(long, default_value = "sk-mock-openai")]
    openai_key: String,
    /// The key Anthropic endpoints accept.
    #[arg(long, default_value = "sk-ant-mock")]
    anthropic_key: String,
    /// The key Gemini endpoints accept (`x-goog-api-key` or `?key=`).
    #[arg(long, default_value = trimgate_mock::MOCK_GEMINI_KEY)]
    gemini_key: String,
    /// The `api-key` Azure OpenAI endpoints accept (also any Entra token the mock issued).
    #[arg(long, default_value = trimgate_mock::MOCK_AZURE_KEY)]
    azure_key: String,
    /// Seconds an access token from the mock's Entra and Google token endpoints lasts.
    #[arg(long, default_value_t = 3599)]
    token_lifetime_secs: u64,
    /// The Claude subscription login (OAuth access token) Anthropic endpoints accept.
    #[arg(long, default_value = trimgate_mock::MOCK_OAUTH_TOKEN)]
    anthropic_oauth_token: String,
    /// Accept any key.
    #[arg(long)]
    any_key: bool,
    /// Serve without any key, like a local model server.
    #[arg(long)]
    keyless: bool,
    /// Answer every `--fail-every`-th request with this error status (e.g. 529), in the
    /// dialect of the endpoint asked; for clients that send no `x-mock-*` headers.
    #[arg(long, value_parser = parse_error_status)]
    fail_status: Option<trimgate_mock::StatusCode>,
    /// With `--fail-status`: fail requests number N, 2N, 3N… counting from the first
    /// (1 fails them all, the default).
    #[arg(long, requires = "fail_status", value_parser = clap::value_parser!(u64).range(1..))]
    fail_every: Option<u64>,
    /// Close the connection of requests number N, 2N, 3N… before any answer.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    drop_every: Option<u64>,
    /// Seconds for `retry-after` on `--fail-status` answers (a 429 also gets the provider's
    /// rate-limit reset headers).
    #[arg(long, requires = "fail_status")]
    retry_after: Option<u64>,
    /// Play Anthropic's prompt cache: `cache_control` marks write prefixes that later
    /// Messages requests read (5 minutes, 20-block lookback), in the usage reported.
    #[arg(long)]
    prompt_cache: bool,
}

/// A 4xx or 5xx status for `--fail-status`.
fn parse_error_status(text: &str) -> Result<trimgate_mock::StatusCode, String> {
    text.parse::<u16>()
        .ok()
        .and_then(|code| trimgate_mock::StatusCode::from_u16(code).ok())
        .filter(|status| status.is_client_error() || status.is_server_error())
        .ok_or_else(|| format!("{text:?} is not an error status (400-599)"))
}

/// Logs to stderr and to the log file `log_file` names (the same lines; a file that cannot
/// be written is said once, and serving goes on), and, when `telemetry` names an OTLP
/// endpoint, starts the exporter of request spans. The log filter turns the spans' target
/// off, so the log reads the same with or without an exporter, and without one the spans
/// are never enabled at all.
fn init_logging(
    json: bool,
    log_file: &logs::Destination,
    telemetry: Option<&Telemetry>,
) -> Option<traces::Traces> {
    let (mut layers, logging) =
        logs::layers(log_file, log_filter, json, logs::Stderr::detect(json));
    let mut exporting = None;
    let mut failed = None;
    if let Some((endpoint, telemetry)) =
        telemetry.and_then(|t| Some((t.otlp_endpoint.as_deref()?, t)))
    {
        match traces::start(endpoint, telemetry) {
            Ok((layer, traces)) => {
                layers.push(layer);
                exporting = Some(traces);
            }
            Err(e) => failed = Some(e),
        }
    }
    tracing_subscriber::registry().with(layers).init();
    // One line, not a log event too: the diagnostics report it from the status.
    if let Some(problem) = logging.status().problem() {
        eprintln!("{problem}");
    } else if let Some(file) = logging
        .status()
        .file
        .as_ref()
        .filter(|_| logging.status().writable)
    {
        // Where to look when something goes wrong, beside the ledger's line.
        eprintln!("log: {}", file.display());
    }
    // Like a broken ledger, a broken exporter never stops the gateway from serving.
    if let Some(e) = failed {
        eprintln!("WARNING: {e}\nWARNING: traces are off");
        tracing::warn!(error = %e, "traces disabled");
    }
    exporting
}

/// `TRIMGATE_LOG` (default `info`), with the request spans only an exporter reads off.
fn log_filter() -> EnvFilter {
    let filter = EnvFilter::try_from_env(ENV_LOG).unwrap_or_else(|_| EnvFilter::new("info"));
    match format!("{SPAN_TARGET}=off").parse() {
        Ok(spans_off) => filter.add_directive(spans_off),
        Err(_) => filter,
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

const EXAMPLE_PROVIDER: &str = r#"  [providers.openai]
  kind = "openai"                         # openai | anthropic | deepseek | gemini | openai_compatible
  api_key = { env = "OPENAI_API_KEY" }    # or { file = "/run/secrets/openai" }"#;

/// Loads the config the way the README describes, saying where it came from; a set
/// `OTEL_EXPORTER_OTLP_ENDPOINT` overrides `telemetry.otlp_endpoint`.
fn load_config(args: &ConfigArgs) -> Result<Config, String> {
    let mut config = load_file_or_env(args)?;
    if let Some(url) = otlp_endpoint_from_env()? {
        config.telemetry.otlp_endpoint = Some(url);
    }
    Ok(config)
}

/// The traces URL `OTEL_EXPORTER_OTLP_ENDPOINT` gives, unless `OTEL_EXPORTER_OTLP_PROTOCOL`
/// says it is for another protocol than http/protobuf (another tool's gRPC collector).
fn otlp_endpoint_from_env() -> Result<Option<String>, String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let Some(value) = var(ENV_OTLP_ENDPOINT) else {
        return Ok(None);
    };
    if let Some(protocol) = var(ENV_OTLP_PROTOCOL).filter(|p| p.trim() != OTLP_PROTOCOL) {
        eprintln!(
            "{ENV_OTLP_ENDPOINT} ignored: {ENV_OTLP_PROTOCOL} is {protocol:?}, and trimgate exports {OTLP_PROTOCOL} only"
        );
        return Ok(None);
    }
    config::otlp_traces_url(&value)
        .map(Some)
        .map_err(|e| format!("{ENV_OTLP_ENDPOINT}: {e}"))
}

fn load_file_or_env(args: &ConfigArgs) -> Result<Config, String> {
    let vars = config::env::read(std::env::vars()).map_err(|e| e.to_string())?;
    let and_vars = if vars.is_empty() {
        String::new()
    } else {
        format!(" and {} TRIMGATE__ variable(s)", vars.len())
    };
    if let Some(path) = &args.config {
        eprintln!("config: {}{and_vars}", path.display());
        return Config::load_layered(Some(path), &vars).map_err(|e| e.to_string());
    }
    let default = config::default_config_path();
    if let Some(path) = default.as_ref().filter(|p| p.exists()) {
        eprintln!("config: {}{and_vars}", path.display());
        return Config::load_layered(Some(path), &vars).map_err(|e| e.to_string());
    }
    if !vars.is_empty() {
        eprintln!("config: {} TRIMGATE__ variable(s), no file", vars.len());
        return Config::load_layered(None, &vars).map_err(|e| e.to_string());
    }
    let config =
        Config::from_env_keys(|var| std::env::var(var).is_ok_and(|v| !v.trim().is_empty()));
    let where_ = default
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "a file passed with --config".into());
    if config.providers.is_empty() {
        eprintln!("config: none found at {where_}, and no OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY or GEMINI_API_KEY is set.");
    } else {
        let names: Vec<&str> = config.providers.iter().map(|p| p.name.as_str()).collect();
        eprintln!(
            "config: none found at {where_}; providers from the environment: {}",
            names.join(", ")
        );
    }
    eprintln!(
        "to add a provider, set one of those keys, or write {where_} with:\n{EXAMPLE_PROVIDER}"
    );
    Ok(config)
}

fn describe(config: &Config) {
    for p in &config.providers {
        let dialects = p.dialect_names();
        let patterns = p.kind.implicit_patterns().join(", ");
        let extra = if p.kind == ProviderKind::OpenAiCompatible || patterns.is_empty() {
            String::new()
        } else {
            format!(", models {patterns}")
        };
        let credentials = match &p.cloud {
            Some(cloud) => cloud.credentials(&p.key),
            None => format!("key from {}", p.key),
        };
        eprintln!(
            "provider {}: {} at {} ({dialects}{extra}), {credentials}",
            p.name,
            p.kind.as_str(),
            gateway_core::secrets::redact_url(&p.base_url),
        );
    }
    let modes = &config.optimize;
    eprintln!(
        "optimizer: {}{} (a request can send `x-trimgate-optimize: off`)",
        modes.defaults,
        match modes.rules.len() {
            0 => String::new(),
            n => format!(", {n} per-model rule(s)"),
        }
    );
    let telemetry = &config.telemetry;
    if let Some(endpoint) = &telemetry.otlp_endpoint {
        eprintln!(
            "traces: OTLP/HTTP to {} as {}, {}% of requests",
            ledger::redact(endpoint),
            telemetry.service_name,
            telemetry.sample_ratio * 100.0
        );
    }
    if !config.gateway_keys.is_empty() {
        eprintln!(
            "gateway keys required: {}",
            config
                .gateway_keys
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// Where the window opens. The admin token is shown only to a person at a terminal (the
/// fragment never reaches a server, and the window keeps it for the session); when stdout
/// goes to a log (systemd, a pipe) the token is written to a file only the user can read,
/// and its path is shown instead.
fn window_address(local: std::net::SocketAddr, token: &str) -> String {
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return format!("http://{local}/ui/#token={token}");
    }
    match gateway_core::admin::write_token_file(token) {
        Ok(path) => format!("http://{local}/ui/ (admin token in {})", path.display()),
        Err(e) => {
            tracing::warn!(error = %e, "cannot write the admin token file: the window is unavailable");
            format!("http://{local}/ui/ (admin token not written: {e})")
        }
    }
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let mut config = load_config(&args.config)?;
    let log_file = logs::Destination::from_setting(args.log_dir.as_deref().map(|d| d.as_os_str()));
    let traces = init_logging(args.log_json, &log_file, Some(&config.telemetry));
    if let Some(listen) = &args.listen {
        config.server.listen =
            config::parse_listen(listen).map_err(|e| format!("--listen: {e}"))?;
    }
    describe(&config);
    let addr = config.server.listen;
    let open = !addr.ip().is_loopback() && config.gateway_keys.is_empty();
    // Edits from the window go to the file named, or to the default place.
    let config_path = args
        .config
        .config
        .clone()
        .or_else(config::default_config_path);
    let gateway = Gateway::start(config, key_store(), config_path)
        .await
        .map_err(|e| format!("cannot start the gateway: {e}"))?;
    // Virtual keys in the ledger count as gateway keys.
    if open && !gateway.virtual_keys_in_force() {
        if !args.insecure_open_relay {
            return Err(format!(
                "refusing to listen on {addr} without gateway keys: anyone who could reach it would spend your provider keys. \
                 Add [[gateway_keys]] to the config (or TRIMGATE__GATEWAY_KEYS__0__KEY), make a key with `trimgate keys create`, listen on 127.0.0.1, \
                 or pass --insecure-open-relay if something in front of the gateway checks its clients"
            ));
        }
        tracing::warn!(%addr, "--insecure-open-relay: listening beyond loopback without gateway keys; anyone who can reach this address can use your provider keys");
    } else if !addr.ip().is_loopback() {
        gateway.require_keys();
    }
    let listener = server::bind(addr).await.map_err(|e| e.to_string())?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    println!("Trimgate listening on http://{local}");
    // The log file's first line of a run says which build served where.
    tracing::info!(version = env!("CARGO_PKG_VERSION"), listen = %local, "gateway started");
    println!("  Claude Code:  ANTHROPIC_BASE_URL=http://{local}");
    println!("  OpenAI SDKs, Codex CLI, aider:  OPENAI_BASE_URL=http://{local}/v1");
    let token = gateway.admin_token();
    if token.is_empty() {
        println!("  Window: off ([admin] enabled = false)");
    } else {
        println!("  Window: {}", window_address(local, token));
    }
    memory::release_startup_memory();
    let served = gateway.serve(listener, shutdown_signal()).await;
    if let Some(traces) = traces {
        traces.shutdown().await;
    }
    served.map_err(|e| e.to_string())?;
    eprintln!("stopped");
    Ok(())
}

/// Where provider keys are read: the OS keychain too when built with it; else env vars and
/// files only (the server build).
fn key_store() -> Arc<dyn gateway_core::secrets::SecretStore> {
    #[cfg(feature = "keychain")]
    return Arc::new(gateway_core::secrets::KeyringStore);
    #[cfg(not(feature = "keychain"))]
    Arc::new(gateway_core::secrets::EnvFileStore)
}

async fn mock(args: MockArgs) -> Result<(), String> {
    // A test and benchmark tool: stderr only.
    init_logging(false, &logs::Destination::Off, None);
    let addr: SocketAddr = config::parse_listen(&args.listen)?;
    let state = MockState::new(MockConfig {
        delay: Duration::from_millis(args.delay_ms),
        frame_interval: Duration::from_millis(args.frame_interval_ms),
        openai_key: (!args.any_key).then_some(args.openai_key),
        anthropic_key: (!args.any_key).then_some(args.anthropic_key),
        gemini_key: (!args.any_key).then_some(args.gemini_key),
        azure_key: (!args.any_key).then_some(args.azure_key),
        token_lifetime_secs: args.token_lifetime_secs,
        anthropic_oauth_token: Some(args.anthropic_oauth_token),
        keyless: args.keyless,
        fail_status: args.fail_status,
        fail_every: args.fail_every.unwrap_or(1),
        drop_every: args.drop_every.unwrap_or(0),
        retry_after: args.retry_after,
        prompt_cache: args.prompt_cache,
    });
    let listener = server::bind(addr).await.map_err(|e| e.to_string())?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    println!("mock provider listening on http://{local}");
    trimgate_mock::serve(listener, state, shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

async fn stats(args: StatsArgs) -> Result<(), String> {
    let config = load_config(&stats_config(&args.config))?;
    let by = (args.by != "session")
        .then(|| By::parse(&args.by))
        .transpose()?;
    let since = ledger::stats::parse_since(&args.since, gateway_core::clock::now_ms())?;
    let url = config
        .ledger_url
        .ok_or("the ledger is off in this config ([ledger] enabled = false)")?;
    let pool = ledger::open(&url).await.map_err(|e| e.to_string())?;
    let Some(by) = by else {
        let report = ledger::stats::sessions(&pool, since, args.limit)
            .await
            .map_err(|e| format!("cannot read the ledger: {e}"))?;
        return sessions::print(&report, args.json, &config.pricing.date);
    };
    let rows = ledger::stats::totals(&pool, since, by)
        .await
        .map_err(|e| format!("cannot read the ledger: {e}"))?;
    if args.json {
        let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
        println!("{text}");
        return Ok(());
    }
    println!(
        "{:<28} {:>8} {:>6} {:>9} {:>12} {:>10} {:>7} {:>12} {:>10} {:>10} {:>7}",
        args.by,
        "requests",
        "errors",
        "cancelled",
        "input tok",
        "output tok",
        "cached",
        "saved tok",
        "cost $",
        "saved $",
        "cache"
    );
    for t in &rows {
        let key = match by {
            By::Bucket(_) => t.key.parse::<i64>().map_or(t.key.clone(), format_ms),
            _ if t.key.is_empty() => "(no pass)".to_owned(),
            _ => t.key.clone(),
        };
        print_row(&key, t);
    }
    let all = ledger::stats::sum(&rows);
    print_row("total", &all);
    eprintln!(
        "prices: list prices of {} (override with [[pricing]])",
        config.pricing.date
    );
    Ok(())
}

fn print_row(key: &str, t: &Totals) {
    println!(
        "{:<28} {:>8} {:>6} {:>9} {:>12} {:>10} {:>6.1}% {:>12} {:>10.4} {:>10.4} {:>7}",
        key,
        t.requests,
        t.errors,
        t.cancelled,
        t.input_tokens,
        t.output_tokens,
        t.cache_hit_rate() * 100.0,
        t.saved_tokens,
        t.cost_usd,
        t.saved_usd,
        if t.cache_lookups == 0 {
            "-".to_owned()
        } else {
            format!("{:.1}%", t.response_cache_hit_rate() * 100.0)
        }
    );
}

/// A bucket's start as `YYYY-MM-DD HH:00` UTC.
fn format_ms(ms: i64) -> String {
    let mut text = format_minute(ms);
    text.replace_range(text.len() - 2.., "00");
    text
}

/// A time as `YYYY-MM-DD HH:MM` UTC.
fn format_minute(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let hour = secs.rem_euclid(86_400) / 3600;
    let minute = secs.rem_euclid(3600) / 60;
    let (year, month, day) = gateway_core::clock::civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

fn wrap_agent(args: WrapArgs) -> Result<i32, String> {
    let (base, local_key) = gateway_address(&args.config, args.gateway)?;
    wrap::run(&base, &args.agent, &args.args, local_key.as_deref())
}

async fn status(args: StatusArgs) -> Result<(), String> {
    let target = client_target(&args.config, args.gateway)?;
    status::run(&target, args.json).await
}

async fn show(args: ShowArgs) -> Result<(), String> {
    let target = client_target(&args.config, args.gateway)?;
    status::show(&target, &args.id).await
}

/// The running gateway as a client reaches it: its address, its local key when its config
/// turns that on, and a gateway key from `TRIMGATE_KEY`.
fn client_target(config: &ConfigArgs, gateway: Option<String>) -> Result<status::Target, String> {
    let (base, local_key) = gateway_address(config, gateway)?;
    let local_key = local_key
        .map(|path| wrap::read_local_key(&path).map(|k| k.expose().to_owned()))
        .transpose()?;
    Ok(status::Target {
        base,
        local_key,
        gateway_key: std::env::var("TRIMGATE_KEY").ok().filter(|k| !k.is_empty()),
    })
}

/// The running gateway's base URL and the path of its local key when its config turns that
/// on. The address is `--gateway` (or `TRIMGATE_URL`); else the desktop app's gateway when
/// it runs (its `gateway.json`: the app may listen on a port no config names) and no other
/// config is named; else the config's listen address.
fn gateway_address(
    args: &ConfigArgs,
    gateway: Option<String>,
) -> Result<(String, Option<PathBuf>), String> {
    let named = args.config.clone();
    let desktop = match &gateway {
        Some(_) => None,
        None => desktop_gateway(named.as_deref()),
    };
    let config_path = named
        .clone()
        .or_else(|| desktop_config(desktop.as_ref()))
        .or_else(|| config::default_config_path().filter(|p| p.exists()));
    let vars = config::env::read(std::env::vars()).map_err(|e| e.to_string())?;
    let config = match (&config_path, vars.is_empty()) {
        (None, true) => None,
        (path, _) => match Config::load_layered(path.as_deref(), &vars) {
            Ok(config) => Some(config),
            // Given the address, a broken default config only costs the local key.
            Err(_) if named.is_none() && (gateway.is_some() || desktop.is_some()) => None,
            Err(e) => return Err(e.to_string()),
        },
    };
    let base = match (gateway, desktop) {
        (Some(url), _) => url,
        (None, Some(app)) => app.base_url(),
        (None, None) => {
            let listen = config
                .as_ref()
                .map_or_else(|| config::Server::default().listen, |c| c.server.listen);
            let host = if listen.ip().is_unspecified() {
                "127.0.0.1".to_owned()
            } else {
                listen.ip().to_string()
            };
            format!("http://{host}:{}", listen.port())
        }
    };
    let local_key = config
        .filter(|c| c.server.local_key)
        .and(config_path)
        .map(|path| gateway_core::local_key::path_for(&path));
    Ok((base, local_key))
}

/// The desktop app's gateway, when its `gateway.json` records one that answers and runs on
/// the config named (when one is): a record left by an app that crashed, or one for another
/// config, is passed over.
fn desktop_gateway(named: Option<&std::path::Path>) -> Option<Running> {
    let app = running::default_path().and_then(|path| running::read(&path))?;
    if let Some(named) = named {
        let same = |a: &std::path::Path, b: &std::path::Path| {
            a == b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
        };
        if !app.config.as_deref().is_some_and(|c| same(c, named)) {
            return None;
        }
    }
    wrap::reachable(&format!("{}/healthz", app.base_url())).then_some(app)
}

/// The running desktop app's config file, when it has one on disk.
fn desktop_config(app: Option<&Running>) -> Option<PathBuf> {
    app?.config.clone().filter(|p| p.exists())
}

/// The config `trimgate stats` reads: the one named, else the running desktop app's (so the
/// table counts the app's ledger), else the default.
fn stats_config(args: &ConfigArgs) -> ConfigArgs {
    let config = args
        .config
        .clone()
        .or_else(|| desktop_config(desktop_gateway(None).as_ref()));
    ConfigArgs { config }
}

fn check(args: ConfigArgs) -> Result<(), String> {
    let config = load_config(&args)?;
    describe(&config);
    println!("config is valid");
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    gateway_core::admin::ui::provide(trimgate_ui::file);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if matches!(cli.command, Command::Serve(_)) {
        // Requests are served on the gateway's own threads (gateway_core::workers); this
        // runtime only accepts connections and runs the ledger writer and timers.
        builder.worker_threads(1);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Serve(args) => runtime.block_on(serve(args)),
        Command::Mock(args) => runtime.block_on(mock(args)),
        Command::Check(args) => check(args),
        Command::Stats(args) => runtime.block_on(stats(args)),
        Command::Status(args) => runtime.block_on(status(args)),
        Command::Show(args) => runtime.block_on(show(args)),
        Command::Keys(args) => runtime.block_on(async {
            let config = load_config(&args.config)?;
            let url = config.ledger_url.ok_or(
                "virtual keys live in the ledger's database, and the ledger is off in this config",
            )?;
            let pool = ledger::open(&url).await.map_err(|e| e.to_string())?;
            keys::run(&pool, args.command).await
        }),
        Command::Healthcheck(args) => gateway_address(&args.config, args.gateway)
            .and_then(|(base, _)| status::healthcheck(&base)),
        Command::Wrap(args) => {
            return match wrap_agent(args) {
                Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
                Err(message) => {
                    eprintln!("error: {message}");
                    ExitCode::FAILURE
                }
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{format_minute, format_ms};

    #[test]
    fn bucket_starts_print_as_utc_dates() {
        assert_eq!(format_ms(0), "1970-01-01 00:00");
        assert_eq!(format_ms(1_796_130_000_000), "2026-12-01 13:00");
        assert_eq!(format_ms(1_709_247_600_000), "2024-02-29 23:00");
        assert_eq!(format_ms(1_709_249_100_000), "2024-02-29 23:00");
        assert_eq!(format_minute(1_709_249_100_000), "2024-02-29 23:25");
    }
}
