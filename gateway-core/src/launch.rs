//! Starting a gateway from a validated config, the same way for the `trimgate` binary and
//! the desktop shell: the ledger (or a loud warning and none), metrics, the state, the
//! response cache attached to the ledger's database; then serving until told to stop,
//! and closing in order (cache writes, then the ledger) so nothing queued is lost.
//!
//! The one composition root: the router is built here from the gateway's endpoints, the
//! admin API and the window's files, and handed to the server, which knows none of them.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::admin::{self, Admin};
use crate::cache;
use crate::config::Config;
use crate::endpoints;
use crate::ledger::{self, AnyPool, Ledger};
use crate::local_key::{self, LocalKey};
use crate::pricing::Pricing;
use crate::record::{LogRecorder, Recorder};
use crate::secrets::SecretStore;
use crate::server;
use crate::state::AppState;
use crate::telemetry::{self, MetricsRecorder};

/// A gateway ready to serve.
pub struct Gateway {
    pub state: Arc<AppState>,
    /// The admin API's own part, when the config turns it on.
    admin: Option<Arc<Admin>>,
    ledger: Option<(Ledger, AnyPool)>,
}

impl Gateway {
    /// Builds the gateway for `config`, reading keys through `secrets`. Problems with the
    /// ledger or the cache's persistence are warnings (on stderr and in the log), never
    /// errors: the gateway serves without them.
    /// `config_path` is the file the window's edits go to (made on the first edit).
    pub async fn start(
        config: Config,
        secrets: Arc<dyn SecretStore>,
        config_path: Option<PathBuf>,
    ) -> Result<Gateway, std::io::Error> {
        let pricing = Arc::new(config.pricing.clone());
        let admin_enabled = config.admin.enabled;
        // Read or made before anything serves, so no request is ever let in without it.
        let local_key = if config.server.local_key {
            Some(open_local_key(config_path.as_deref())?)
        } else {
            None
        };
        let (recorder, ledger) = open_ledger(
            config.ledger_url.as_deref(),
            pricing.clone(),
            config.ledger_retention,
        )
        .await;
        // Virtual keys live in the ledger's database; each finished request is charged to
        // its key before it is recorded.
        let counters = open_counters(config.limits.clone());
        let book = match &ledger {
            Some((_, pool)) => {
                match crate::virtual_keys::KeyBook::open(pool.clone(), counters).await {
                    Ok(book) => Some(book),
                    Err(e) => {
                        tracing::error!(error = %e, "virtual keys cannot be read: only the config's gateway keys are checked");
                        None
                    }
                }
            }
            None => None,
        };
        let recorder: Arc<dyn crate::record::Recorder> = match &book {
            Some(book) => Arc::new(crate::virtual_keys::Metering {
                book: book.clone(),
                pricing,
                inner: recorder,
            }),
            None => recorder,
        };
        let recorder = Arc::new(MetricsRecorder::new(recorder));
        let guard_key = guard_key(config.guard.key_file.as_deref(), config_path.as_deref())?;
        let state = AppState::new(config, secrets, recorder)?;
        if let Some(key) = guard_key {
            state.set_guard_key(key);
        }
        if let Some(book) = book {
            state.set_keys(book);
        }
        if let Some(key) = local_key {
            state.set_local_key(key);
        }
        if let Some(handle) = telemetry::install() {
            state.set_metrics(handle);
        }
        attach_cache(&state, ledger.as_ref().map(|(_, pool)| pool)).await;
        if let Some((_, pool)) = &ledger {
            let modes = &state.runtime().optimizer.modes;
            let (keep_for, max_bytes) = (modes.originals_for, modes.originals_db_bytes);
            state.set_originals_db(crate::ledger::originals::OriginalsDb::start(
                pool.clone(),
                keep_for,
                max_bytes,
            ));
        }
        let admin = admin_enabled.then(|| {
            Arc::new(Admin::new(
                config_path,
                ledger.as_ref().map(|(_, pool)| pool.clone()),
            ))
        });
        Ok(Gateway {
            state,
            admin,
            ledger,
        })
    }

    /// Whether the ledger holds virtual keys in force, which every client then needs.
    pub fn virtual_keys_in_force(&self) -> bool {
        self.state.keys().is_some_and(|book| book.any())
    }

    /// From now on every client needs a key, even when none is in force.
    pub fn require_keys(&self) {
        self.state
            .keys_required
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The ledger's database, when there is a ledger: the desktop shell reads its tray
    /// figures from it with `ledger::stats`, as the admin API does.
    pub fn ledger_pool(&self) -> Option<AnyPool> {
        self.ledger.as_ref().map(|(_, pool)| pool.clone())
    }

    /// The admin API's token for this launch (the window's key to it); empty when the
    /// admin API is off.
    pub fn admin_token(&self) -> &str {
        self.admin.as_deref().map_or("", |a| a.token.as_str())
    }

    /// Serves on `listener` until `shutdown` resolves, then drains and closes.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let app = router(self.state.clone(), self.admin.clone());
        let served = server::serve(listener, self.state.clone(), app, shutdown).await;
        cache::persist::flush(&self.state.cache).await;
        if let Some((ledger, _)) = self.ledger {
            ledger.close().await;
        }
        served
    }
}

/// The whole HTTP surface, composed here and nowhere else: the gateway's endpoints, the
/// admin API and, when the admin API is on, the window's files (without the admin API
/// the window has nothing to talk to). Unknown paths and methods get the gateway's
/// answers in the client's dialect, on every route merged above.
/// The proxied routes are also taken directly, before the router ([`endpoints::App`]).
pub fn router(state: Arc<AppState>, admin: Option<Arc<Admin>>) -> endpoints::App {
    let window = admin.is_some();
    let mut router = endpoints::router().merge(admin::router(state.clone(), admin));
    if window {
        router = router.merge(admin::ui::router());
    }
    let router = router
        .fallback(endpoints::not_found)
        .method_not_allowed_fallback(endpoints::method_not_allowed)
        .with_state(state.clone());
    endpoints::App::new(state, router)
}

/// Serves `state` on `listener` with the admin API off until `shutdown` resolves: for a
/// gateway built by hand (tests) rather than by [`Gateway::start`]. Nothing is flushed
/// or closed after.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state.clone(), None);
    server::serve(listener, state, app, shutdown).await
}

/// The installation's key for naming secrets: the file `[guard] key_file` names (any
/// text of at least 32 bytes, such as a mounted secret the replicas share), else
/// `guard-key` beside the config, made there owner-only on the first start. Without a
/// config folder the process makes its own, and placeholders change with each start.
fn guard_key(
    key_file: Option<&std::path::Path>,
    config_path: Option<&std::path::Path>,
) -> Result<Option<[u8; 32]>, std::io::Error> {
    use sha2::Digest as _;
    let derive = |text: &str| -> [u8; 32] {
        let mut hash = sha2::Sha256::new();
        hash.update(b"trimgate guard placeholders\0");
        hash.update(text.trim().as_bytes());
        hash.finalize().into()
    };
    if let Some(path) = key_file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            std::io::Error::other(format!(
                "cannot read [guard] key_file {}: {e}",
                path.display()
            ))
        })?;
        if text.trim().len() < 32 {
            return Err(std::io::Error::other(format!(
                "[guard] key_file {} holds fewer than 32 bytes: put a long random key in it",
                path.display()
            )));
        }
        return Ok(Some(derive(&text)));
    }
    let Some(config_path) = config_path else {
        return Ok(None);
    };
    let path = config_path
        .parent()
        .unwrap_or_else(|| std::path::Path::new(""))
        .join(GUARD_KEY_FILE);
    // The local key's file format and care (owner-only, made whole or not at all).
    match LocalKey::load_or_create(&path) {
        Ok(key) => Ok(Some(derive(key.expose()))),
        Err(e) => {
            tracing::warn!(error = %e, "the guard's key cannot be kept: secrets get placeholders of this process only");
            Ok(None)
        }
    }
}

/// The guard's key file, beside the config.
const GUARD_KEY_FILE: &str = "guard-key";

/// The local key beside the config file, made on the first start. Unlike a broken ledger,
/// a key that cannot be had stops the start: serving without it would let every local user in.
fn open_local_key(config_path: Option<&std::path::Path>) -> Result<LocalKey, std::io::Error> {
    let config_path = config_path.ok_or_else(|| {
        std::io::Error::other("local_key is on, but there is no config folder to keep the key in")
    })?;
    let path = local_key::path_for(config_path);
    let key = LocalKey::load_or_create(&path).map_err(std::io::Error::other)?;
    eprintln!("local key: required, kept in {}", path.display());
    Ok(key)
}

/// The ledger, or — when it cannot be opened — a loud warning and the log line alone: a
/// broken database never stops the gateway from serving.
async fn open_ledger(
    url: Option<&str>,
    pricing: Arc<Pricing>,
    retention: Option<std::time::Duration>,
) -> (Arc<dyn Recorder>, Option<(Ledger, AnyPool)>) {
    let Some(url) = url else {
        eprintln!("ledger: off");
        return (Arc::new(LogRecorder), None);
    };
    match ledger::open(url).await {
        Ok(pool) => {
            eprintln!("ledger: {}", ledger::redact(url));
            if let Some(keep) = retention {
                ledger::spawn_retention(pool.clone(), keep);
            }
            let (ledger, recorder) = Ledger::start(pool.clone(), Arc::new(LogRecorder), pricing);
            (recorder, Some((ledger, pool)))
        }
        Err(e) => {
            eprintln!("WARNING: {e}\nWARNING: the ledger is disabled; requests are served but not recorded");
            tracing::warn!(error = %e, "ledger disabled");
            (Arc::new(LogRecorder), None)
        }
    }
}

/// Attaches the response cache to the ledger's database (loading what it kept) and says
/// what the cache does.
async fn attach_cache(state: &AppState, pool: Option<&AnyPool>) {
    let cache = &state.cache;
    let settings = &cache.settings;
    if !settings.enabled {
        eprintln!("response cache: off");
        return;
    }
    let persisted = match pool {
        Some(pool) if settings.persist => {
            match cache::persist::attach(&state.cache, pool.clone()).await {
                Ok(_) => "kept in the ledger's database",
                Err(e) => {
                    eprintln!("WARNING: the response cache cannot use the ledger's database: {e}");
                    "in memory only"
                }
            }
        }
        _ => "in memory only",
    };
    eprintln!(
        "response cache: {} entries loaded, up to {} entries / {} MiB, {persisted}",
        cache.len(),
        settings.max_entries,
        settings.max_bytes / (1024 * 1024)
    );
}

/// Where virtual keys' use is counted: the Redis the replicas share when `[limits] redis`
/// names one, else this process.
fn open_counters(
    limits: Option<crate::config::SharedLimits>,
) -> Arc<dyn crate::virtual_keys::counters::Counters> {
    let local = || Arc::new(crate::virtual_keys::counters::LocalCounters::default());
    let Some(limits) = limits else {
        return local();
    };
    match crate::virtual_keys::shared::SharedCounters::open(limits) {
        Ok(shared) => shared,
        Err(e) => {
            // Checked when the config was read; a URL the client still refuses is counted
            // locally rather than not at all.
            tracing::error!(error = %e.category(), "the limits' Redis URL is not usable: virtual keys' limits are counted in this process only");
            local()
        }
    }
}
