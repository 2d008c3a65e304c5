//! The gateway in this process: the config it runs on, its loopback listener, the admin
//! token the window is given, and a stop that drains requests and closes the ledger.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gateway_core::config::server::ENV_LISTEN;
use gateway_core::config::ENV_CONFIG;
use gateway_core::config::{self, Config};
use gateway_core::launch::Gateway;
use gateway_core::ledger::AnyPool;
use gateway_core::running::{self, Running};
use gateway_core::secrets::{KeyringStore, SecretStore};
use gateway_core::server;
use gateway_core::state::AppState;
use tauri::async_runtime::JoinHandle;
use tokio::sync::oneshot;

/// Time allowed past the gateway's own shutdown grace for the ledger and cache to flush.
const FLUSH_ALLOWANCE: Duration = Duration::from_secs(10);

/// Why the gateway did not start. Each says what to change.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(String),
    #[error("{addr} is already in use by another program (or another Trimgate). Stop it, or choose another port {fix}.")]
    PortInUse { addr: SocketAddr, fix: String },
    #[error("cannot listen on {addr}: {detail}")]
    Listen { addr: SocketAddr, detail: String },
    #[error("cannot start the gateway: {0}")]
    Gateway(String),
}

#[derive(Debug, thiserror::Error)]
pub enum StopError {
    #[error("the gateway stopped with an error: {0}")]
    Served(String),
    #[error("the gateway did not finish stopping within {0:?}")]
    TimedOut(Duration),
}

/// The running gateway. Managed as app state; the window and the tray read it.
pub struct Core {
    listen: SocketAddr,
    token: String,
    state: Arc<AppState>,
    ledger: Option<AnyPool>,
    /// `gateway.json`, where the `trimgate` command finds this gateway; none when it could
    /// not be written.
    record: Option<PathBuf>,
    stopping: AtomicBool,
    stopped: AtomicBool,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    served: Mutex<Option<JoinHandle<std::io::Result<()>>>>,
}

impl Core {
    /// Loads the config, binds `127.0.0.1:<port>` (the port from `[server] listen`, or
    /// `TRIMGATE_LISTEN`), starts the gateway and serves on the app's runtime. The desktop
    /// app always listens on loopback: the admin API it serves the window must not be
    /// reachable from elsewhere.
    pub async fn start() -> Result<Core, StartError> {
        gateway_core::admin::ui::provide(trimgate_ui::file);
        let (mut config, config_path, where_) = load_config()?;
        let (requested, fix) = match listen_override()? {
            Some(addr) => (addr, format!("in {ENV_LISTEN}")),
            None => (
                config.server.listen,
                format!("with [server] listen in {where_}"),
            ),
        };
        if !requested.ip().is_loopback() {
            tracing::info!(configured = %requested, "the desktop app listens on 127.0.0.1 only");
        }
        let addr = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), requested.port());
        let listener = server::bind(addr).await.map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrInUse => StartError::PortInUse { addr, fix },
            _ => StartError::Listen {
                addr,
                detail: e.to_string(),
            },
        })?;
        let listen = listener.local_addr().map_err(|e| StartError::Listen {
            addr,
            detail: e.to_string(),
        })?;
        config.server.listen = listen;
        let grace = config.server.shutdown_grace;
        let gateway = Gateway::start(config, secret_store(), config_path.clone())
            .await
            .map_err(|e| StartError::Gateway(e.to_string()))?;
        let token = gateway.admin_token().to_owned();
        if token.is_empty() {
            return Err(StartError::Gateway("the admin API is off".into()));
        }
        let state = gateway.state.clone();
        let ledger = gateway.ledger_pool();
        let record = record_where_it_listens(listen, config_path);
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tauri::async_runtime::spawn(gateway.serve(listener, async move {
            let _ = stopped.await;
        }));
        tracing::info!(%listen, shutdown_grace = ?grace, "gateway started");
        Ok(Core {
            listen,
            token,
            state,
            ledger,
            record,
            stopping: AtomicBool::new(false),
            stopped: AtomicBool::new(false),
            stop: Mutex::new(Some(stop)),
            served: Mutex::new(Some(served)),
        })
    }

    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// What the window puts before `/admin/api/…`.
    pub fn api_base(&self) -> String {
        format!("http://{}", self.listen)
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The gateway's shared state: its config, providers' health, the pause.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The ledger's database, when there is a ledger.
    pub fn ledger(&self) -> Option<&AnyPool> {
        self.ledger.as_ref()
    }

    /// Whether the optimizers are paused (from the tray or the window).
    pub fn paused(&self) -> bool {
        self.state.paused.load(Ordering::Relaxed)
    }

    /// Pauses or resumes the optimizers: while paused, every request passes unoptimized.
    pub fn set_paused(&self, paused: bool) {
        self.state.paused.store(paused, Ordering::Relaxed);
    }

    /// Claims the stop: true for the first caller only.
    pub fn begin_stop(&self) -> bool {
        !self.stopping.swap(true, Ordering::SeqCst)
    }

    /// Whether a stop has begun: the ledger may be closing.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Whether the gateway has stopped (or never served).
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Stops accepting, lets open requests finish (up to the configured grace), then writes
    /// out the response cache and the ledger's queue.
    pub async fn stop(&self) -> Result<(), StopError> {
        if let Some(stop) = lock(&self.stop).take() {
            let _ = stop.send(());
        }
        let Some(served) = lock(&self.served).take() else {
            return Ok(());
        };
        let limit = self.state.config().server.shutdown_grace + FLUSH_ALLOWANCE;
        let result = match tokio::time::timeout(limit, served).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(e))) => Err(StopError::Served(e.to_string())),
            Ok(Err(e)) => Err(StopError::Served(e.to_string())),
            Err(_) => Err(StopError::TimedOut(limit)),
        };
        self.stopped.store(true, Ordering::SeqCst);
        if let Some(path) = &self.record {
            if let Err(e) = running::remove(path, std::process::id()) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove the gateway's address file");
            }
        }
        result
    }
}

/// Writes `gateway.json` in the data dir, so `trimgate stats`, `wrap` and `status` find
/// this gateway even on a port the config does not name. Without it they fall back to
/// the config: a warning, not a failed start.
fn record_where_it_listens(listen: SocketAddr, config: Option<PathBuf>) -> Option<PathBuf> {
    let path = running::default_path()?;
    let record = Running {
        listen,
        pid: std::process::id(),
        config,
    };
    match running::write(&path, &record) {
        Ok(()) => Some(path),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot record where the gateway listens: the trimgate command will look where the config says");
            None
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where provider keys are read from: the OS keychain for keys set in the window, env vars
/// and files for the rest.
fn secret_store() -> Arc<dyn SecretStore> {
    Arc::new(KeyringStore)
}

/// The config file named by `TRIMGATE_CONFIG`, else the platform default. A named file must
/// exist; a missing default is a first run, with providers from `OPENAI_API_KEY` and the
/// like (the window's first edit writes the file). Also answers the file the window's
/// edits go to, and, for messages, where to change the config.
fn load_config() -> Result<(Config, Option<PathBuf>, String), StartError> {
    let named = std::env::var_os(ENV_CONFIG)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let path = match named {
        Some(path) => {
            let config = Config::load(&path).map_err(|e| StartError::Config(e.to_string()))?;
            tracing::info!(path = %path.display(), "config");
            let where_ = path.display().to_string();
            return Ok((config, Some(path), where_));
        }
        None => config::default_config_path(),
    };
    match path {
        Some(path) if path.exists() => {
            let config = Config::load(&path).map_err(|e| StartError::Config(e.to_string()))?;
            tracing::info!(path = %path.display(), "config");
            let where_ = path.display().to_string();
            Ok((config, Some(path), where_))
        }
        path => {
            let config =
                Config::from_env_keys(|var| std::env::var(var).is_ok_and(|v| !v.trim().is_empty()));
            let where_ = path.as_ref().map_or_else(
                || format!("a file named by {ENV_CONFIG}"),
                |p| p.display().to_string(),
            );
            tracing::info!(
                providers = config.providers.len(),
                "no config file at {where_}: providers from the environment"
            );
            Ok((config, path, where_))
        }
    }
}

/// `TRIMGATE_LISTEN`, when set: its port is used instead of the config's.
fn listen_override() -> Result<Option<SocketAddr>, StartError> {
    match std::env::var(ENV_LISTEN) {
        Ok(text) if !text.trim().is_empty() => config::parse_listen(&text)
            .map(Some)
            .map_err(|e| StartError::Config(format!("{ENV_LISTEN}: {e}"))),
        _ => Ok(None),
    }
}
