//! The serving threads: one single-threaded runtime per core, the way nginx runs one worker
//! process per core. A client connection lives on one thread from accept to close, and so
//! do the upstream connections its requests use (each thread keeps its own pools; see
//! [`crate::upstream`]), so a request never has to wake another thread.
//!
//! Tokio's work-stealing runtime spread each request's tasks (the client connection, the
//! handler, the upstream connection) over its threads: at one request at a time that was
//! 3.7 thread wake-ups and 185 µs of CPU per request, against 1.4 and 90 µs here
//! (BENCHMARKS.md, "Serving threads").

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

thread_local! {
    static INDEX: Cell<usize> = const { Cell::new(0) };
}

/// The serving thread this code runs on, counted from 1; 0 on any other thread.
pub fn current() -> usize {
    INDEX.with(Cell::get)
}

/// How many serving threads to start when the config does not say: one per core.
pub fn default_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Keeps the thread's timer driver waking at least this often. A timer armed to fire
/// before the driver's next planned wake-up makes the driver wake itself (an eventfd write,
/// then an extra return from epoll): hyper arms a 30 s header-read timer after each
/// response, and with only the 600 s first-byte timeouts pending, that was one self-wake
/// per request. With a wake-up planned within 5 s, no request's timer comes first.
const TICK: std::time::Duration = std::time::Duration::from_secs(5);

async fn tick() {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
    }
}

struct Worker {
    handle: Handle,
    /// Client connections open on this thread: new ones go to the least busy thread.
    open: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The running serving threads. Dropping them stops the threads; tasks still open on them
/// are dropped with their runtimes.
pub struct Workers {
    workers: Vec<Worker>,
    next: AtomicUsize,
}

impl Workers {
    /// Starts `count` threads (at least one), each running its own runtime.
    pub fn start(count: usize) -> io::Result<Workers> {
        let mut workers = Vec::with_capacity(count.max(1));
        for index in 1..=count.max(1) {
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let (stop, stopped) = oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("trimgate-serve-{index}"))
                .spawn(move || {
                    let runtime = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(runtime) => runtime,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    INDEX.with(|i| i.set(index));
                    let _ = ready_tx.send(Ok(runtime.handle().clone()));
                    // A dropped sender (the pool dropped without stop) ends the thread too.
                    runtime.block_on(async move {
                        tokio::select! {
                            _ = stopped => {}
                            () = tick() => {}
                        }
                    });
                })?;
            let handle = ready_rx
                .recv()
                .map_err(|_| io::Error::other("a serving thread ended while starting"))??;
            workers.push(Worker {
                handle,
                open: Arc::new(AtomicUsize::new(0)),
                stop: Some(stop),
                thread: Some(thread),
            });
        }
        Ok(Workers {
            workers,
            next: AtomicUsize::new(0),
        })
    }

    /// Runs a connection's future on the thread with the fewest open connections (ties go
    /// round the threads). `make` is called on that thread, so what it registers (a socket
    /// with the runtime's reactor) belongs to it.
    pub fn spawn_connection<M, F>(&self, make: M)
    where
        M: FnOnce() -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let n = self.workers.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let chosen = (0..n)
            .map(|k| &self.workers[(start + k) % n])
            .min_by_key(|w| w.open.load(Ordering::Relaxed))
            .unwrap_or(&self.workers[0]);
        let open = chosen.open.clone();
        open.fetch_add(1, Ordering::Relaxed);
        chosen.handle.spawn(async move {
            let _open = Open(open);
            make().await;
        });
    }

    /// Stops every thread and waits for it to end.
    pub fn stop(mut self) {
        for worker in &mut self.workers {
            if let Some(stop) = worker.stop.take() {
                let _ = stop.send(());
            }
        }
        for worker in &mut self.workers {
            if let Some(thread) = worker.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        // Not joined here: a drop may happen inside an async context, which must not block.
        for worker in &mut self.workers {
            if let Some(stop) = worker.stop.take() {
                let _ = stop.send(());
            }
        }
    }
}

/// Counts a connection as open on its thread until it ends, however it ends.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_go_to_the_least_busy_thread_and_run_there() {
        let workers = Workers::start(2).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = tokio::sync::watch::channel(false);
        for _ in 0..4 {
            let tx = tx.clone();
            let mut release = release_rx.clone();
            workers.spawn_connection(move || async move {
                tx.send(current()).unwrap();
                let _ = release.wait_for(|r| *r).await;
            });
        }
        let mut seen: Vec<usize> = (0..4).map(|_| rx.recv().unwrap()).collect();
        seen.sort_unstable();
        assert_eq!(
            seen,
            vec![1, 1, 2, 2],
            "two open connections on each thread"
        );
        assert_eq!(
            current(),
            0,
            "the test's own thread is not a serving thread"
        );
        release_tx.send_replace(true);
        workers.stop();
    }

    #[test]
    fn a_closed_connection_frees_its_place() {
        let workers = Workers::start(2).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        // One long connection on a thread, then short ones: they all go to the other thread.
        let (release_tx, release_rx) = tokio::sync::watch::channel(false);
        {
            let tx = tx.clone();
            let mut release = release_rx.clone();
            workers.spawn_connection(move || async move {
                tx.send(current()).unwrap();
                let _ = release.wait_for(|r| *r).await;
            });
        }
        let long = rx.recv().unwrap();
        for _ in 0..3 {
            let tx = tx.clone();
            workers.spawn_connection(move || async move {
                tx.send(current()).unwrap();
            });
            let short = rx.recv().unwrap();
            assert_ne!(short, long);
            // Let the finished connection's count drop before the next one is placed.
            while workers
                .workers
                .iter()
                .map(|w| w.open.load(Ordering::Relaxed))
                .sum::<usize>()
                > 1
            {
                std::thread::yield_now();
            }
        }
        release_tx.send_replace(true);
        workers.stop();
    }
}
