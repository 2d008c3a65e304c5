//! The state every handler shares: the config in force (swapped whole on reload), the
//! upstream clients, the optimizer, the response cache, the recorder and the feed, and
//! what the launch sets once (the bound address, metrics, the local key).

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arc_swap::ArcSwap;
use metrics_exporter_prometheus::PrometheusHandle;
use sha2::Digest as _;
use tokio::sync::watch;

use crate::config::Config;
use crate::local_key::LocalKey;
use crate::optimize::Optimizer;
use crate::record::Recorder;
use crate::secrets::SecretStore;
use crate::upstream::Upstream;

/// What a config makes: swapped whole on reload, so a request sees one consistent set.
pub struct Runtime {
    pub config: Arc<Config>,
    pub upstream: Upstream,
    pub optimizer: Arc<Optimizer>,
}

/// Everything a request handler can reach.
pub struct AppState {
    runtime: ArcSwap<Runtime>,
    /// Every request passes unoptimized while set (the window's and the tray's pause).
    pub paused: AtomicBool,
    pub started: std::time::Instant,
    /// The last requests, for the window's feed.
    pub recent: Arc<crate::feed::Recent>,
    /// Request bodies for the window's request detail, kept only while turned on.
    pub bodies: crate::bodies::Bodies,
    /// The address the listener got (the config may say port 0).
    pub(crate) bound: std::sync::OnceLock<SocketAddr>,
    pub cache: Arc<crate::cache::ResponseCache>,
    /// Providers' cooldowns and retry budgets, kept across reloads.
    pub health: crate::health::Health,
    /// Each session's last turn, for the cache-break detector; kept across reloads.
    pub sessions: Arc<crate::sessions::Sessions>,
    secrets: Arc<dyn SecretStore>,
    pub recorder: Arc<dyn Recorder>,
    /// Renders `/metrics`, when the process installed a Prometheus recorder.
    pub(crate) metrics: std::sync::OnceLock<PrometheusHandle>,
    /// Sent true when open streams must end (the shutdown grace period is over).
    pub(crate) abort: watch::Sender<bool>,
    /// Set when the listener has stopped accepting: `/readyz` says so.
    pub(crate) draining: AtomicBool,
    /// Set at launch when `[server] local_key` is on.
    local_key: std::sync::OnceLock<LocalKey>,
    /// Every client needs a key even when none is in force (serving beyond loopback): the
    /// last virtual key revoked does not open the gateway.
    pub keys_required: AtomicBool,
    /// Set at launch when there is a ledger, whose database keeps the virtual keys.
    keys: std::sync::OnceLock<Arc<crate::virtual_keys::KeyBook>>,
    /// Elided outputs kept in the ledger's database, when there is a ledger.
    originals_db: std::sync::OnceLock<Arc<crate::ledger::originals::OriginalsDb>>,
    /// Secrets replaced in requests, waiting for their answers: in memory only, bounded,
    /// kept across reloads. Named with a random key until launch sets the installation's.
    vault: std::sync::Mutex<crate::guard::Vault>,
    /// The client that calls guardrail hooks.
    pub hooks: crate::hooks::Hooks,
    /// Strings the guard searched and found clean (a hash each): history is not searched
    /// again on every turn.
    pub clean: crate::guard::Clean,
}

impl AppState {
    pub fn new(
        config: Config,
        secrets: Arc<dyn SecretStore>,
        recorder: Arc<dyn Recorder>,
    ) -> Result<Arc<AppState>, std::io::Error> {
        let secrets: Arc<dyn SecretStore> = Arc::new(crate::secrets::Remembered::new(secrets));
        let upstream = Upstream::new(&config, secrets.clone())?;
        let optimizer = Arc::new(Optimizer::new(config.optimize.clone()));
        let cache = Arc::new(crate::cache::ResponseCache::new(config.cache.clone()));
        let recent = Arc::new(crate::feed::Recent::default());
        let recorder = Arc::new(crate::feed::RecentRecorder {
            recent: recent.clone(),
            inner: recorder,
        });
        let vault = std::sync::Mutex::new(crate::guard::Vault::new(
            crate::guard::Placeholders::new(random_key()),
            config.guard.vault_capacity,
        ));
        let bodies = crate::bodies::Bodies::new(
            config.admin.keep_request_bodies,
            config.admin.request_bodies_bytes,
        );
        Ok(Arc::new(AppState {
            recent,
            bodies,
            bound: std::sync::OnceLock::new(),
            runtime: ArcSwap::from_pointee(Runtime {
                config: Arc::new(config),
                upstream,
                optimizer,
            }),
            paused: AtomicBool::new(false),
            started: std::time::Instant::now(),
            cache,
            health: crate::health::Health::default(),
            sessions: Arc::new(crate::sessions::Sessions::default()),
            secrets,
            metrics: std::sync::OnceLock::new(),
            recorder,
            abort: watch::Sender::new(false),
            draining: AtomicBool::new(false),
            local_key: std::sync::OnceLock::new(),
            keys: std::sync::OnceLock::new(),
            originals_db: std::sync::OnceLock::new(),
            keys_required: AtomicBool::new(false),
            vault,
            hooks: crate::hooks::Hooks::new(),
            clean: crate::guard::Clean::default(),
        }))
    }

    /// Names secrets with the installation's key (launch reads it), so a secret keeps its
    /// placeholder across restarts and on every replica sharing the key.
    pub fn set_guard_key(&self, key: [u8; 32]) {
        let capacity = self.config().guard.vault_capacity;
        let vault = crate::guard::Vault::new(crate::guard::Placeholders::new(key), capacity);
        *self
            .vault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = vault;
    }

    /// The vault, also after a panic elsewhere while it was held (its map stays whole).
    pub fn vault(&self) -> std::sync::MutexGuard<'_, crate::guard::Vault> {
        self.vault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Checks virtual keys in this book.
    pub fn set_originals_db(&self, db: Arc<crate::ledger::originals::OriginalsDb>) {
        let _ = self.originals_db.set(db);
    }

    /// The original kept under `id`: in this process's memory, else in the ledger's database
    /// (after a restart, or elided by another replica).
    pub async fn kept_original(&self, id: &str) -> Option<String> {
        let memory = self.runtime().optimizer.shared.originals.get(id);
        if let Some(kept) = memory {
            return Some(kept.original.to_string());
        }
        match self.originals_db()?.get(id).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "the ledger cannot be read for an original");
                None
            }
        }
    }

    /// Where elided outputs are kept beyond this process's memory, when there is a ledger.
    pub fn originals_db(&self) -> Option<&Arc<crate::ledger::originals::OriginalsDb>> {
        self.originals_db.get()
    }

    pub fn set_keys(&self, book: Arc<crate::virtual_keys::KeyBook>) {
        let _ = self.keys.set(book);
    }

    /// The virtual keys, when the gateway has a ledger to keep them in.
    pub fn keys(&self) -> Option<&Arc<crate::virtual_keys::KeyBook>> {
        self.keys.get()
    }

    /// Serves `/metrics` from `handle`.
    pub fn set_metrics(&self, handle: PrometheusHandle) {
        let _ = self.metrics.set(handle);
    }

    pub fn config(&self) -> Arc<Config> {
        self.runtime.load().config.clone()
    }

    /// The config, its clients and its optimizer, as one.
    pub fn runtime(&self) -> Arc<Runtime> {
        self.runtime.load_full()
    }

    /// Puts a new config in force: requests that started keep the old one to their end.
    /// The response cache, the ledger, the listen address and traces keep what they
    /// started with.
    pub fn reload(&self, mut config: Config) -> Result<(), std::io::Error> {
        // The listener is bound: a new address in the file waits for the next start. So does
        // the local key, which is read or made at launch; until then it stays as it was.
        config.server.listen = self.config().server.listen;
        config.server.local_key = self.config().server.local_key;
        let upstream = Upstream::new(&config, self.secrets.clone())?;
        let optimizer = Arc::new(
            self.runtime
                .load()
                .optimizer
                .with_modes(config.optimize.clone()),
        );
        self.runtime.store(Arc::new(Runtime {
            config: Arc::new(config),
            upstream,
            optimizer,
        }));
        Ok(())
    }

    /// Where the gateway listens: the bound address once serving, else the configured one.
    pub fn listening(&self) -> SocketAddr {
        self.bound
            .get()
            .copied()
            .unwrap_or_else(|| self.config().server.listen)
    }

    pub fn secrets(&self) -> &Arc<dyn SecretStore> {
        &self.secrets
    }

    /// The local key in force, when `[server] local_key` is on.
    pub fn local_key(&self) -> Option<&LocalKey> {
        self.local_key.get()
    }

    /// Puts the local key in force (once, at launch).
    pub fn set_local_key(&self, key: LocalKey) {
        let _ = self.local_key.set(key);
    }

    /// Turns true when open streams must end (the shutdown grace period is over).
    pub fn abort_streams(&self) -> watch::Receiver<bool> {
        self.abort.subscribe()
    }
}

/// A key of this process only: placeholders then change with each start.
fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    if getrandom::fill(&mut key).is_err() {
        // No system randomness: a key from the clock and the process, unguessable enough
        // for names that only need to differ between secrets.
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        key = sha2::Sha256::digest(seed.as_bytes()).into();
    }
    key
}
