//! The field collector of `ttfx serve --collect FILE.db` (docs/field.md): `POST
//! /collect` stores the probe's beacons and run reports in SQLite, the `/field/…`
//! endpoints and `ttfx field` query them.
//!
//! - db.rs     open (refusing corrupt or foreign files), migrations, insert, retention
//! - writer.rs the writer thread: group commit of the waiting inserts, each answered after it
//! - ingest.rs a body (object, array or NDJSON) → checked rows, or one 400
//! - plausible.rs  the bounds of a stored run's numbers (sample rate, durations, counts)
//! - limits.rs body size, token bucket per client
//! - query.rs  summary, series, histogram, slowest, dimensions (weighted percentiles)
//! - http.rs   the routes, the origin check, the read token and CORS
//! - read_access.rs  who may read /field/…: open on loopback, else a token
//! - field_cmd.rs  `ttfx field`: the same queries, printed; `--bench`: the gap
//! - bench_store.rs  imported benchmark runs: store once, list, select by name
//! - gap.rs    a benchmark beside the field, metric by metric, and its sentence
//! - import_cmd.rs  `ttfx import`: read benchmark files (ttfx-import), print, store
//! - outbox.rs  the OTLP outbox and the export's counters, in the runs' own transactions
//! - export.rs  OTLP export: the outbox's drainer while serving; `ttfx field --export-otlp`
//!
//! It depends on ttfx-core (the report schema, statistics), ttfx-import (benchmark
//! files), ttfx-otlp (runs as OTLP, and its client: this crate owns the database, so it
//! hands that crate rows, never the other way) and the shared HTTP edge;
//! it must not depend on the simulator, the proxy, the runner or `ttfx serve`, which
//! merges [`http::router`] into its own.
//!
//! SQLite is blocking, so one writer thread owns the writing connection and takes jobs
//! from a bounded channel (an insert is answered after the COMMIT that holds it;
//! the inserts waiting together share one, writer.rs); queries run on
//! tokio's blocking pool over a second connection (WAL lets it read while the writer
//! writes).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use ttfx_edge::clock::unix_ms;
pub(crate) use writer::Job;

pub mod bench_store;
pub mod db;
pub mod export;
mod field_args;
pub mod field_cmd;
pub mod gap;
pub mod http;
mod import_args;
pub mod import_cmd;
pub mod ingest;
pub mod limits;
pub mod outbox;
pub mod plausible;
pub mod query;
pub mod read_access;
mod writer;

pub use field_args::FieldArgs;
pub use import_args::ImportArgs;

/// How often old rows are removed while serving (and once at startup).
const RETENTION_EVERY: Duration = Duration::from_secs(3600);
/// Inserts waiting for the writer before `POST /collect` waits too.
const QUEUE: usize = 64;
const DAY_MS: f64 = 86_400_000.0;

/// `ttfx serve`'s collector options.
#[derive(Debug, Clone)]
pub struct Settings {
    pub path: PathBuf,
    /// Origins besides the server's own that may post and read (`--collect-origin`).
    pub origins: Vec<String>,
    /// Host names besides loopback ones and IP literals that it answers
    /// (`--collect-host`).
    pub hosts: Vec<String>,
    /// Runs older than this many days are removed; 0 keeps them.
    pub retention_days: u32,
    /// Token bucket per client: requests per second, and at once.
    pub rate_per_s: f64,
    pub burst: u32,
    /// The database file's largest size in MiB (`--collect-max-mb`); None: no cap.
    pub max_mb: Option<u64>,

    /// Who may read `/field/…` (decided from the listening address and the token).
    pub reads: read_access::ReadAccess,
    /// OTLP export of every stored run (`--otlp-endpoint`); None: off.
    pub otlp: Option<export::ExportSettings>,
}

/// An opened, migrated collector database, not yet serving.
pub struct Collector {
    settings: Settings,
    writer: Connection,
    reader: Connection,
}

/// What the collector's handlers share.
pub struct Shared {
    /// Posts refused with 507 because the file reached `--collect-max-mb`.
    pub refused_full: std::sync::atomic::AtomicU64,
    jobs: mpsc::Sender<Job>,
    reader: Arc<Mutex<Connection>>,
    /// A second read connection, for the summary of every metric to read its two
    /// indexes at once (`query::summary_with`); read-only.
    helper: Arc<Mutex<Connection>>,
    buckets: limits::Buckets,
    settings: Settings,
    /// Wakes the OTLP drainer after an insert queued runs.
    export_wake: Arc<tokio::sync::Notify>,
}

/// Why the collector did not open or start; each text names the option at fault. The
/// database's refusal is printed in it (no `source` chain: a `{:#}` print says it once).
#[derive(Debug, thiserror::Error)]
pub enum CollectorError {
    #[error(
        "--collect-origin `{0}`: expected an origin, scheme://host[:port] (e.g. \
         https://app.example.com)"
    )]
    NotAnOrigin(String),
    #[error(
        "--collect-rate {0}: expected 0 (the burst only) or a number of requests per \
         second from {min} (one an hour) up",
        min = limits::MIN_RATE_PER_S
    )]
    BadRate(f64),
    #[error("--collect-max-mb: cannot cap the file: {0}")]
    Cap(db::DbError),
    #[error("--collect {0}")]
    Db(db::DbError),
    #[error(transparent)]
    Reads(#[from] read_access::ReadAccessError),
    #[error("--collect: removing old runs: {0}")]
    Retention(db::DbError),
    #[error("cannot start the collector's writer thread: {0}")]
    WriterThread(std::io::Error),
}

/// An origin as `--collect-origin` takes it: `scheme://host[:port]`, no path.
fn check_origin_arg(origin: &str) -> Result<(), CollectorError> {
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.trim_end_matches('/').contains('/') => Ok(()),
        _ => Err(CollectorError::NotAnOrigin(origin.to_owned())),
    }
}

impl Collector {
    /// Opens (or creates) the database, migrates it and removes rows past the retention,
    /// before anything listens. Every refusal is one line.
    pub fn open(settings: Settings) -> Result<Collector, CollectorError> {
        for origin in &settings.origins {
            check_origin_arg(origin)?;
        }
        let rate = settings.rate_per_s;
        if !(rate == 0.0 || (rate.is_finite() && rate >= limits::MIN_RATE_PER_S)) {
            return Err(CollectorError::BadRate(settings.rate_per_s));
        }
        let writer = db::open(&settings.path, true).map_err(CollectorError::Db)?;
        if let Some(mb) = settings.max_mb {
            let (pages, page_size) = db::cap(&writer, mb).map_err(CollectorError::Cap)?;
            if pages * page_size > mb * 1024 * 1024 {
                eprintln!(
                    "ttfx serve: collector: {} is already {} MiB, past --collect-max-mb {mb}: \
                     every post is refused with 507 until retention removes runs",
                    settings.path.display(),
                    pages * page_size / (1024 * 1024)
                );
            }
        }
        let reader = db::open(&settings.path, false).map_err(CollectorError::Db)?;
        let mut collector = Collector {
            settings,
            writer,
            reader,
        };
        if let Some(cutoff) = collector.cutoff() {
            db::remove_before(&mut collector.writer, cutoff).map_err(CollectorError::Retention)?;
        }
        Ok(collector)
    }

    fn cutoff(&self) -> Option<f64> {
        retention_cutoff(self.settings.retention_days)
    }

    /// Starts the writer thread and the hourly retention; inside the runtime.
    pub fn start(self) -> Result<Arc<Shared>, CollectorError> {
        let (tx, rx) = mpsc::channel::<Job>(QUEUE);
        let outbox = self.settings.otlp.as_ref().map(|o| o.max_backlog);
        // The drainer's own read connection and the file's salt, before the writer
        // thread takes the writing connection.
        let drainer = match &self.settings.otlp {
            Some(o) => {
                // Read-only (SQLite's own mode): the writer thread stays the one writer.
                let reader = db::open_read_only(&self.settings.path).map_err(CollectorError::Db)?;
                let salt = outbox::salt(&self.writer)
                    .map_err(|e| CollectorError::Db(db::DbError::Sql(e)))?;
                Some((o.exporter.clone(), reader, salt))
            }
            None => None,
        };
        let checkpoints = db::open(&self.settings.path, false).map_err(CollectorError::Db)?;
        let helper = db::open_read_only(&self.settings.path).map_err(CollectorError::Db)?;
        writer::start(self.writer, checkpoints, rx, outbox)
            .map_err(CollectorError::WriterThread)?;
        let days = self.settings.retention_days;
        if days > 0 {
            let jobs = tx.clone();
            tokio::spawn(async move {
                let first = tokio::time::Instant::now() + RETENTION_EVERY;
                let mut every = tokio::time::interval_at(first, RETENTION_EVERY);
                loop {
                    every.tick().await;
                    let Some(cutoff) = retention_cutoff(days) else {
                        continue;
                    };
                    let (done, result) = oneshot::channel();
                    if jobs.send(Job::Retain(cutoff, done)).await.is_err() {
                        return;
                    }
                    if let Ok(Err(e)) = result.await {
                        eprintln!("ttfx serve: collector: removing old runs: {e}");
                    }
                }
            });
        }
        let export_wake = Arc::new(tokio::sync::Notify::new());
        if let Some((exporter, reader, salt)) = drainer {
            tokio::spawn(export::drain(
                exporter,
                reader,
                salt,
                export_wake.clone(),
                tx.clone(),
            ));
        }
        Ok(Arc::new(Shared {
            export_wake,
            refused_full: std::sync::atomic::AtomicU64::new(0),
            jobs: tx,
            reader: Arc::new(Mutex::new(self.reader)),
            helper: Arc::new(Mutex::new(helper)),
            buckets: limits::Buckets::new(self.settings.rate_per_s, self.settings.burst),
            settings: self.settings,
        }))
    }
}

fn retention_cutoff(days: u32) -> Option<f64> {
    (days > 0).then(|| unix_ms(SystemTime::now()) - f64::from(days) * DAY_MS)
}

/// Why rows were not stored.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The writer is gone (the server is stopping).
    #[error("the collector is stopping; retry")]
    Closed,
    /// The file reached `--collect-max-mb` (SQLite's `max_page_count`).
    #[error("the collector's file is full (--collect-max-mb {0}): nothing of this post was stored")]
    Full(u64),
    #[error("cannot store the runs: {0}")]
    Db(db::DbError),
}

impl Shared {
    /// Stores `rows` in one transaction; returns after its COMMIT.
    pub async fn store(&self, rows: Vec<db::Row>) -> Result<(), StoreError> {
        let (done, result) = oneshot::channel();
        self.jobs
            .send(Job::Insert(rows, done))
            .await
            .map_err(|_| StoreError::Closed)?;
        match result.await {
            Ok(Ok(())) => {
                if self.settings.otlp.is_some() {
                    self.export_wake.notify_one();
                }
                Ok(())
            }
            Ok(Err(e)) if e.is_full() => {
                let before = self
                    .refused_full
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // Said once, then every thousandth: a full collector must not fill the log.
                if before.is_multiple_of(1000) {
                    eprintln!(
                        "ttfx serve: collector: the file is at --collect-max-mb; {} post(s) \
                         refused with 507 so far",
                        before + 1
                    );
                }
                Err(StoreError::Full(self.settings.max_mb.unwrap_or(0)))
            }
            Ok(Err(e)) => Err(StoreError::Db(e)),
            Err(_) => Err(StoreError::Closed),
        }
    }

    /// The second read connection (`query::summary_with`).
    pub(crate) fn helper(&self) -> Arc<Mutex<Connection>> {
        self.helper.clone()
    }

    /// Whether stored runs are exported over OTLP.
    pub fn exporting(&self) -> bool {
        self.settings.otlp.is_some()
    }

    /// Runs a query on the reading connection, off the async threads, on one snapshot.
    pub async fn read<F>(&self, query: F) -> Result<serde_json::Value, query::Fail>
    where
        F: FnOnce(&Connection) -> Result<serde_json::Value, query::Fail> + Send + 'static,
    {
        let reader = self.reader.clone();
        tokio::task::spawn_blocking(move || {
            let conn = match reader.lock() {
                Ok(c) => c,
                Err(poisoned) => poisoned.into_inner(),
            };
            query::on_one_snapshot(&conn, query)
        })
        .await
        .unwrap_or_else(|e| Err(query::Fail::Db(format!("query stopped: {e}"))))
    }
}
