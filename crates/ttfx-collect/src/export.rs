//! OTLP export of stored runs: the drainer that empties the outbox while `ttfx serve`
//! runs, and the backfill of `ttfx field FILE.db --export-otlp URL`.
//!
//! The drainer reads a batch of the oldest queued runs on a read connection of its own,
//! posts it (ttfx-otlp: metrics, then spans; retried with backoff while the receiver
//! answers 429/502/503/504 or cannot be reached, with no bound: the backlog's bound is
//! what limits an outage), and hands the outcome to the writer thread, which deletes the
//! batch from the outbox and counts it. A stop between the POST's 2xx and that delete
//! sends the batch again after the restart: at-least-once, and the spans' ids are the
//! same, so a backend can tell the duplicate.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rusqlite::Connection;
use tokio::sync::{Notify, mpsc, oneshot};
use ttfx_edge::clock::unix_ms;
use ttfx_otlp::{Exporter, Retrying, SendError, StoredRun};

use crate::db;
use crate::outbox::{self, Outcome};

/// Runs per request: 512 runs are ~1–2 MB of protobuf, well under an OpenTelemetry
/// Collector's default 20 MiB request bound.
pub const BATCH: usize = 512;
/// The backlog's default bound (`--otlp-max-backlog`): a day of a busy page's runs.
pub const DEFAULT_MAX_BACKLOG: u64 = 100_000;
/// How often an idle drainer looks at the outbox even without a wake-up.
const IDLE: Duration = Duration::from_secs(5);
/// The least time between two sends of a batch that is not full: runs that arrive in
/// the meantime join the next batch, so a steady stream of beacons goes out as about
/// one request per signal a second, not one per run (measured before: 102,050 requests
/// for 124,000 runs at 2,000 beacons/s). A full batch goes at once: a backlog drains at
/// full speed. (OpenTelemetry's batch span processor waits 5 s by default; a second
/// keeps a backend's view of the last minute whole.)
pub const BATCH_WAIT: Duration = Duration::from_secs(1);
/// A failing export is logged at its first retry and then every this many.
const LOG_EVERY: u32 = 20;

/// `ttfx serve`'s export options.
#[derive(Debug, Clone)]
pub struct ExportSettings {
    pub exporter: Exporter,
    pub max_backlog: u64,
}

fn log_retry(r: &Retrying<'_>) {
    if r.attempt == 1 || r.attempt.is_multiple_of(LOG_EVERY) {
        eprintln!(
            "ttfx serve: OTLP export to {}: {} (attempt {}); retrying in {:.1} s",
            r.url,
            r.reason,
            r.attempt,
            r.wait.as_secs_f64()
        );
    }
}

/// Reads the next batch on `reader` off the async threads.
async fn next_batch(
    reader: &Arc<std::sync::Mutex<Connection>>,
) -> Result<(Vec<StoredRun>, Vec<i64>), String> {
    let reader = reader.clone();
    tokio::task::spawn_blocking(move || {
        let conn = match reader.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        outbox::next_batch(&conn, BATCH).map_err(|e| db::one_line(&e))
    })
    .await
    .unwrap_or_else(|e| Err(format!("reading the outbox stopped: {e}")))
}

/// Empties the outbox for as long as the server runs.
pub(crate) async fn drain(
    exporter: Exporter,
    reader: Connection,
    salt: Vec<u8>,
    wake: Arc<Notify>,
    jobs: mpsc::Sender<crate::Job>,
) {
    let reader = Arc::new(std::sync::Mutex::new(reader));
    // Hands an outcome to the writer and waits for its COMMIT. Err: the writer is gone
    // (the server is stopping). A failed COMMIT is said and the batch stays queued: it is
    // sent again (a duplicate the span ids tell), never lost.
    let record = |outcome: Outcome| {
        let jobs = jobs.clone();
        async move {
            let (done, result) = oneshot::channel();
            if jobs
                .send(crate::Job::Export(outcome, Some(done)))
                .await
                .is_err()
            {
                return Err(());
            }
            match result.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => {
                    eprintln!("ttfx serve: OTLP export: cannot record a batch: {e}");
                    tokio::time::sleep(IDLE).await;
                    Ok(())
                }
                Err(_) => Err(()),
            }
        }
    };
    let mut last_send: Option<tokio::time::Instant> = None;
    loop {
        let (runs, unreadable) = match next_batch(&reader).await {
            Ok(b) => b,
            Err(e) => {
                eprintln!("ttfx serve: OTLP export: reading the outbox: {e}");
                tokio::time::sleep(IDLE).await;
                continue;
            }
        };
        if !unreadable.is_empty() {
            let error = format!("{} stored run(s) could not be read", unreadable.len());
            eprintln!("ttfx serve: OTLP export: {error}; counted as refused");
            if record(Outcome::Refused {
                runs: unreadable,
                error,
            })
            .await
            .is_err()
            {
                return;
            }
        }
        if runs.is_empty() {
            let _ = tokio::time::timeout(IDLE, wake.notified()).await;
            continue;
        }
        if let Some(wait) = batch_wait(runs.len(), last_send) {
            tokio::time::sleep(wait).await;
            continue;
        }
        last_send = Some(tokio::time::Instant::now());
        let ids: Vec<i64> = runs.iter().map(|r| r.row_id).collect();
        let jobs_for_retry = jobs.clone();
        let mut on_retry = move |r: Retrying<'_>| {
            log_retry(&r);
            if r.attempt == 1 || r.attempt.is_multiple_of(LOG_EVERY) {
                // Best effort, not awaited: the health's last error.
                let _ = jobs_for_retry.try_send(crate::Job::Export(
                    Outcome::Failing {
                        error: format!("{}: {}", r.url, r.reason),
                    },
                    None,
                ));
            }
        };
        let outcome = match exporter.deliver(&runs, &salt, None, &mut on_retry).await {
            Ok(d) => Outcome::Exported {
                runs: ids,
                rejected: d.rejected,
            },
            Err(e) => {
                // A refusal is final: said once per batch, counted, never retried.
                eprintln!(
                    "ttfx serve: OTLP export: {e}; {} run(s) counted as refused",
                    ids.len()
                );
                Outcome::Refused {
                    runs: ids,
                    error: e.to_string(),
                }
            }
        };
        if record(outcome).await.is_err() {
            return;
        }
    }
}

/// How long a batch of `len` runs waits before it is sent: a full batch never, a
/// partial one until [`BATCH_WAIT`] has passed since the last send.
fn batch_wait(len: usize, last_send: Option<tokio::time::Instant>) -> Option<Duration> {
    if len >= BATCH {
        return None;
    }
    let since = last_send?.elapsed();
    (since < BATCH_WAIT).then(|| BATCH_WAIT - since)
}

/// What a backfill did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Backfilled {
    pub exported: u64,
    pub rejected: u64,
    pub unreadable: u64,
}

/// Attempts per request in a backfill before it gives up (a command must end).
pub const BACKFILL_ATTEMPTS: u32 = 8;

/// Exports every stored run since `since_unix_ms` (all when None), oldest first, in
/// batches; not through the outbox (a read-only open: the serving collector's file is
/// not written). Stops at the first refusal or when a batch keeps failing.
pub async fn backfill(
    conn: &Connection,
    exporter: &Exporter,
    since_unix_ms: Option<f64>,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<Backfilled, BackfillError> {
    let salt = outbox::salt(conn).map_err(|e| BackfillError::Db(db::one_line(&e)))?;
    let mut done = Backfilled::default();
    let mut after = i64::MIN;
    loop {
        let (runs, unreadable) = outbox::runs_after(conn, after, since_unix_ms, BATCH)
            .map_err(|e| BackfillError::Db(db::one_line(&e)))?;
        done.unreadable += unreadable.len() as u64;
        let last = runs
            .iter()
            .map(|r| r.row_id)
            .chain(unreadable.iter().copied())
            .max();
        let Some(last) = last else {
            return Ok(done);
        };
        after = last;
        if runs.is_empty() {
            continue;
        }
        let mut on_retry = |r: Retrying<'_>| {
            eprintln!(
                "ttfx field: OTLP export to {}: {} (attempt {}); retrying in {:.1} s",
                r.url,
                r.reason,
                r.attempt,
                r.wait.as_secs_f64()
            );
        };
        let d = exporter
            .deliver(&runs, &salt, Some(BACKFILL_ATTEMPTS), &mut on_retry)
            .await
            .map_err(|e| BackfillError::Send {
                error: e,
                exported: done.exported,
            })?;
        done.exported += runs.len() as u64;
        done.rejected += d.rejected;
        progress(done.exported);
    }
}

/// Why a backfill stopped.
#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    #[error("--export-otlp: {error} ({exported} run(s) exported before it)")]
    Send { error: SendError, exported: u64 },
    #[error("--export-otlp: reading the runs: {0}")]
    Db(String),
}

/// Now, for an outcome's time.
pub fn now_unix_ms() -> f64 {
    unix_ms(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full batch and the first batch go at once; a partial batch right after a send
    /// waits out the rest of the second, and not longer.
    #[test]
    fn only_a_partial_batch_soon_after_a_send_waits() {
        let now = tokio::time::Instant::now();
        assert_eq!(batch_wait(BATCH, Some(now)), None);
        assert_eq!(batch_wait(1, None), None);
        let wait = batch_wait(1, Some(now)).unwrap();
        assert!(wait <= BATCH_WAIT && wait > BATCH_WAIT / 2, "{wait:?}");
        let long_ago = now.checked_sub(BATCH_WAIT * 2).unwrap();
        assert_eq!(batch_wait(1, Some(long_ago)), None);
    }
}
