//! The OTLP outbox: runs stored but not yet accepted by the receiver, and the export's
//! counters (`otlp_outbox`, `otlp_state`; db.rs's MIGRATION_OUTBOX).
//!
//! A run enters the outbox in its own insert's transaction, so a run is stored and
//! queued, or neither; it leaves once a receiver answered 2xx (exported), refused it for
//! good (refused), or the backlog's bound pushed it out (dropped, the oldest first: the
//! newest runs say most about now). Every way out is counted in `otlp_state`, which
//! `/field/health` and `ttfx field --health` read. Writes happen on the collector's
//! writer thread (lib.rs's jobs); reads on a connection of their own.

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde_json::{Value, json};
use ttfx_core::field::FieldReport;
use ttfx_otlp::StoredRun;

/// Queues `ids` and, past `max_backlog` queued runs, drops the oldest, counting them.
pub fn enqueue(tx: &Transaction<'_>, ids: &[i64], max_backlog: u64) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached("INSERT OR IGNORE INTO otlp_outbox (run) VALUES (?1)")?;
    for id in ids {
        stmt.execute([id])?;
    }
    let pending: i64 = tx.query_row("SELECT COUNT(*) FROM otlp_outbox", [], |r| r.get(0))?;
    let over = pending.saturating_sub(i64::try_from(max_backlog).unwrap_or(i64::MAX));
    if over > 0 {
        tx.execute(
            "DELETE FROM otlp_outbox WHERE run IN \
             (SELECT run FROM otlp_outbox ORDER BY run LIMIT ?1)",
            [over],
        )?;
        tx.execute(
            "UPDATE otlp_state SET dropped = dropped + ?1 WHERE id = 1",
            [over],
        )?;
    }
    Ok(())
}

/// Runs retention removed leave the outbox too, counted as dropped.
pub fn forget_removed(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let gone = tx.execute(
        "DELETE FROM otlp_outbox WHERE run NOT IN (SELECT id FROM runs)",
        [],
    )?;
    if gone > 0 {
        tx.execute(
            "UPDATE otlp_state SET dropped = dropped + ?1 WHERE id = 1",
            [gone as i64],
        )?;
    }
    Ok(())
}

/// This file's salt for span ids.
pub fn salt(conn: &Connection) -> rusqlite::Result<Vec<u8>> {
    conn.query_row("SELECT salt FROM otlp_state WHERE id = 1", [], |r| r.get(0))
}

/// A run row as the exporter takes it; Err: the id of a row whose report cannot be read.
fn stored(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<StoredRun, i64>> {
    let row_id: i64 = r.get(0)?;
    let report: String = r.get(4)?;
    Ok(match serde_json::from_str::<FieldReport>(&report) {
        Ok(report) => Ok(StoredRun {
            row_id,
            at_unix_ms: r.get(1)?,
            received_unix_ms: r.get(2)?,
            source: r.get(3)?,
            report,
        }),
        Err(_) => Err(row_id),
    })
}

const RUN_COLUMNS: &str = "r.id, r.at_unix_ms, r.received_unix_ms, r.source, r.report";

/// The oldest `limit` queued runs (and the ids of queued rows that cannot be read).
pub fn next_batch(conn: &Connection, limit: usize) -> rusqlite::Result<(Vec<StoredRun>, Vec<i64>)> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM otlp_outbox o JOIN runs r ON r.id = o.run \
         ORDER BY o.run LIMIT ?1"
    ))?;
    let rows = stmt.query_map([limit as i64], stored)?;
    let mut runs = Vec::new();
    let mut unreadable = Vec::new();
    for row in rows {
        match row? {
            Ok(run) => runs.push(run),
            Err(id) => unreadable.push(id),
        }
    }
    Ok((runs, unreadable))
}

/// Stored runs after row `after` whose time is at or after `since_unix_ms`, oldest row
/// first (`ttfx field --export-otlp`'s backfill, page by page).
pub fn runs_after(
    conn: &Connection,
    after: i64,
    since_unix_ms: Option<f64>,
    limit: usize,
) -> rusqlite::Result<(Vec<StoredRun>, Vec<i64>)> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM runs r WHERE r.id > ?1 AND r.at_unix_ms >= ?2 \
         ORDER BY r.id LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![after, since_unix_ms.unwrap_or(f64::MIN), limit as i64],
        stored,
    )?;
    let mut runs = Vec::new();
    let mut unreadable = Vec::new();
    for row in rows {
        match row? {
            Ok(run) => runs.push(run),
            Err(id) => unreadable.push(id),
        }
    }
    Ok((runs, unreadable))
}

/// What became of a batch, for the writer to record.
#[derive(Debug)]
pub enum Outcome {
    /// Accepted (2xx); `rejected` items the receiver's partial success named.
    Exported { runs: Vec<i64>, rejected: u64 },
    /// Refused for good (or unreadable): out of the outbox, counted, its reason kept.
    Refused { runs: Vec<i64>, error: String },
    /// A failure that will be retried: only its reason is kept.
    Failing { error: String },
}

/// Records `outcome` in one transaction.
pub fn record(conn: &mut Connection, outcome: &Outcome, now_unix_ms: f64) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    // Counts only the rows still queued: a run the backlog's bound dropped while its
    // batch was in flight is counted once, as dropped.
    let remove = |tx: &Transaction<'_>, runs: &[i64]| -> rusqlite::Result<i64> {
        let mut stmt = tx.prepare_cached("DELETE FROM otlp_outbox WHERE run = ?1")?;
        let mut removed = 0;
        for id in runs {
            removed += stmt.execute([id])? as i64;
        }
        Ok(removed)
    };
    match outcome {
        Outcome::Exported { runs, rejected } => {
            let n = remove(&tx, runs)?;
            tx.execute(
                "UPDATE otlp_state SET exported = exported + ?1, rejected = rejected + ?2 \
                 WHERE id = 1",
                params![n, i64::try_from(*rejected).unwrap_or(i64::MAX)],
            )?;
        }
        Outcome::Refused { runs, error } => {
            let n = remove(&tx, runs)?;
            tx.execute(
                "UPDATE otlp_state SET refused = refused + ?1, last_error = ?2, \
                 last_error_unix_ms = ?3 WHERE id = 1",
                params![n, error, now_unix_ms],
            )?;
        }
        Outcome::Failing { error } => {
            tx.execute(
                "UPDATE otlp_state SET last_error = ?1, last_error_unix_ms = ?2 WHERE id = 1",
                params![error, now_unix_ms],
            )?;
        }
    }
    tx.commit()
}

/// The export's state as `/field/health` and `ttfx field --health` show it.
pub fn health(conn: &Connection) -> rusqlite::Result<Value> {
    let pending: i64 = conn.query_row("SELECT COUNT(*) FROM otlp_outbox", [], |r| r.get(0))?;
    let state = conn
        .query_row(
            "SELECT exported, dropped, refused, rejected, last_error, last_error_unix_ms \
             FROM otlp_state WHERE id = 1",
            [],
            |r| {
                Ok(json!({
                    "exported": r.get::<_, i64>(0)?,
                    "pending": pending,
                    "dropped": r.get::<_, i64>(1)?,
                    "refused": r.get::<_, i64>(2)?,
                    "rejected": r.get::<_, i64>(3)?,
                    "last_error": r.get::<_, Option<String>>(4)?,
                    "last_error_unix_ms": r.get::<_, Option<f64>>(5)?,
                }))
            },
        )
        .optional()?;
    Ok(state.unwrap_or_else(|| {
        json!({"exported": 0, "pending": pending, "dropped": 0,
        "refused": 0, "rejected": 0, "last_error": null, "last_error_unix_ms": null})
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db;

    fn row(n: usize) -> db::Row {
        let body = format!(
            "{{\"schema_version\":1,\"kind\":\"field\",\"generator\":\"t\",\"run\":{{\
             \"outcome\":\"completed\",\"hidden\":false,\"sample_rate\":1,\
             \"milestones\":{{\"request_start\":0,\"first_token\":{n}}},\
             \"metrics\":{{\"ttft_ms\":{n}}},\"gaps\":{{}},\
             \"chunks\":{{\"count\":0,\"bytes\":0,\"visible_tokens\":0,\"reasoning_tokens\":0,\"bins\":[]}}}}}}"
        );
        db::Row {
            report: serde_json::from_str(&body).unwrap(),
            source: db::Source::Field,
            received_unix_ms: 1000.0 + n as f64,
        }
    }

    #[test]
    fn a_full_backlog_drops_the_oldest_and_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = db::open(&dir.path().join("t.db"), true).unwrap();
        let rows: Vec<db::Row> = (1..=5).map(row).collect();
        db::insert_queued(&mut conn, &rows, Some(3)).unwrap();
        let h = health(&conn).unwrap();
        assert_eq!(
            (h["pending"].as_i64(), h["dropped"].as_i64()),
            (Some(3), Some(2))
        );
        let (runs, bad) = next_batch(&conn, 10).unwrap();
        assert!(bad.is_empty());
        // The newest three stayed.
        let ttft: Vec<f64> = runs
            .iter()
            .map(|r| r.report.run.metrics.get("ttft_ms").unwrap())
            .collect();
        assert_eq!(ttft, [3.0, 4.0, 5.0]);
        record(
            &mut conn,
            &Outcome::Exported {
                runs: runs.iter().map(|r| r.row_id).collect(),
                rejected: 0,
            },
            1.0,
        )
        .unwrap();
        let h = health(&conn).unwrap();
        assert_eq!(
            (h["pending"].as_i64(), h["exported"].as_i64()),
            (Some(0), Some(3))
        );
        // Without export on, nothing is queued.
        db::insert(&mut conn, &rows).unwrap();
        assert_eq!(health(&conn).unwrap()["pending"], 0);
    }

    #[test]
    fn a_run_dropped_while_its_batch_was_in_flight_is_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = db::open(&dir.path().join("t.db"), true).unwrap();
        db::insert_queued(&mut conn, &[row(1), row(2)], Some(2)).unwrap();
        let (batch, _) = next_batch(&conn, 10).unwrap();
        // Two more arrive meanwhile and push the batch's runs out.
        db::insert_queued(&mut conn, &[row(3), row(4)], Some(2)).unwrap();
        let runs = batch.iter().map(|r| r.row_id).collect();
        record(&mut conn, &Outcome::Exported { runs, rejected: 0 }, 1.0).unwrap();
        let h = health(&conn).unwrap();
        assert_eq!(
            (
                h["exported"].as_i64(),
                h["dropped"].as_i64(),
                h["pending"].as_i64()
            ),
            (Some(0), Some(2), Some(2))
        );
    }

    #[test]
    fn a_run_removed_by_retention_leaves_the_outbox_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = db::open(&dir.path().join("t.db"), true).unwrap();
        db::insert_queued(&mut conn, &[row(1), row(2)], Some(100)).unwrap();
        db::remove_before(&mut conn, f64::MAX).unwrap();
        let h = health(&conn).unwrap();
        assert_eq!(
            (h["pending"].as_i64(), h["dropped"].as_i64()),
            (Some(0), Some(2))
        );
    }
}
