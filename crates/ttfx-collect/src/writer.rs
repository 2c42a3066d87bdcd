//! The writer thread's loop: the one connection that writes, fed by a bounded channel.
//!
//! Group commit: the inserts already waiting when the writer takes one are stored in one
//! transaction with it (at most [`MAX_GROUP`] of them), and each is answered after that
//! COMMIT. SQLite's cost per transaction (the WAL frames of the pages it touched, the
//! commit record) is then shared by every post of the group, so the writer keeps up with
//! more beacons per second (#31). A 204 still means the post's runs are committed.
//!
//! The WAL is copied back into the file by a checkpointer thread of its own, never
//! inside a post's COMMIT ([`start`]).
//!
//! One post's rows must not fail its neighbours': when a group's transaction fails, it
//! is rolled back whole and each post is retried alone, so only the post at fault gets
//! the error (a file at its `--collect-max-mb` cap fails only the posts that do not
//! fit).

use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::db;
use crate::outbox;

/// How often the checkpointer copies the WAL back into the database file: often, so
/// that the writer's backstop checkpoint finds at most this much left to copy and sync
/// (at 1 s it stalled posts for about 100 ms every few seconds at 2,000/s).
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// WAL pages (4 KiB) past which the writer checkpoints itself: 40 MiB, about four
/// seconds of beacons at 2,000/s (SQLite's default is 1,000).
pub const WRITER_CHECKPOINT_PAGES: i64 = 10_000;

/// Starts the writer thread on `conn` and, beside it, the checkpointer on `checkpoints`
/// (a connection of its own), which ends when the writer does.
///
/// The writer does not checkpoint at SQLite's default: its automatic checkpoint (at 1,000 pages of WAL)
/// ran inside the COMMIT that crossed it, copying the pages back and syncing the file
/// there, and every post queued behind that COMMIT waited for the sync (the p99 at
/// 2,000 beacons/s, #31). A PASSIVE checkpoint from another connection does the same
/// work while the writer goes on appending to the WAL. The writer keeps a far larger
/// automatic checkpoint ([`WRITER_CHECKPOINT_PAGES`]) as a backstop: a PASSIVE
/// checkpoint never restarts the WAL while posts keep coming (the bench's 60 s at
/// 2,000/s left a 3 GB WAL without it); the writer's own one, finding nearly every page
/// copied already, completes, and its next transaction writes the WAL from the start.
/// `outbox`: when OTLP export is on, its backlog's bound; each insert then queues its
/// runs for export in its own transaction (crate::outbox).
pub(crate) fn start(
    mut conn: Connection,
    checkpoints: Connection,
    mut rx: mpsc::Receiver<Job>,
    outbox: Option<u64>,
) -> std::io::Result<()> {
    conn.pragma_update(None, "wal_autocheckpoint", WRITER_CHECKPOINT_PAGES)
        .map_err(std::io::Error::other)?;
    let (alive, gone) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("ttfx-collect-writer".into())
        .spawn(move || {
            let _alive = alive;
            run(&mut conn, &mut rx, outbox);
        })?;
    std::thread::Builder::new()
        .name("ttfx-collect-checkpoint".into())
        .spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                gone.recv_timeout(CHECKPOINT_EVERY)
            {
                // A failed checkpoint leaves the WAL longer; the next one retries.
                let _ = checkpoints.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            }
        })?;
    Ok(())
}

/// Posts stored in one transaction at most: a group of beacons is a few hundred KB of
/// WAL, and the first post of a group waits for the whole group's COMMIT.
pub const MAX_GROUP: usize = 256;

pub(crate) enum Job {
    Insert(Vec<db::Row>, oneshot::Sender<Result<(), db::DbError>>),
    Retain(f64, oneshot::Sender<Result<usize, db::DbError>>),
    /// What became of an exported batch (answered when the sender waits for it).
    Export(
        outbox::Outcome,
        Option<oneshot::Sender<Result<(), db::DbError>>>,
    ),
}

/// Takes jobs until every sender is gone.
pub(crate) fn run(conn: &mut Connection, rx: &mut mpsc::Receiver<Job>, outbox: Option<u64>) {
    let mut next = rx.blocking_recv();
    while let Some(job) = next.take() {
        match job {
            Job::Retain(cutoff, done) => {
                let _ = done.send(db::remove_before(conn, cutoff));
            }
            Job::Export(outcome, done) => {
                let now = ttfx_edge::clock::unix_ms(std::time::SystemTime::now());
                let result = crate::outbox::record(conn, &outcome, now).map_err(db::DbError::Sql);
                if let Some(done) = done {
                    let _ = done.send(result);
                } else if let Err(e) = result {
                    eprintln!("ttfx serve: OTLP export: cannot record: {e}");
                }
            }
            Job::Insert(rows, done) => {
                let mut group = vec![(rows, done)];
                // What waits now joins the group; a removal ends it and runs next.
                while group.len() < MAX_GROUP {
                    match rx.try_recv() {
                        Ok(Job::Insert(rows, done)) => group.push((rows, done)),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                insert_group(conn, group, outbox);
            }
        }
        if next.is_none() {
            next = rx.blocking_recv();
        }
    }
}

type Post = (Vec<db::Row>, oneshot::Sender<Result<(), db::DbError>>);

/// Stores the posts of `group` in one transaction and answers each after its COMMIT;
/// when that fails, each post alone.
fn insert_group(conn: &mut Connection, group: Vec<Post>, outbox: Option<u64>) {
    if group.len() == 1 {
        for (rows, done) in group {
            let _ = done.send(db::insert_queued(conn, &rows, outbox));
        }
        return;
    }
    // The rows moved into one list, each post's share remembered by its length.
    let mut lens = Vec::with_capacity(group.len());
    let mut answers = Vec::with_capacity(group.len());
    let mut all = Vec::new();
    for (rows, done) in group {
        lens.push(rows.len());
        all.extend(rows);
        answers.push(done);
    }
    if db::insert_queued(conn, &all, outbox).is_ok() {
        for done in answers {
            let _ = done.send(Ok(()));
        }
        return;
    }
    let mut start = 0;
    for (len, done) in lens.into_iter().zip(answers) {
        let _ = done.send(db::insert_queued(conn, &all[start..start + len], outbox));
        start += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ttfx_core::field::FieldReport;

    fn row(ttft: f64, sample_rate: f64) -> db::Row {
        let doc = serde_json::json!({
            "schema_version": 1, "kind": "field", "generator": "test",
            "run": {"outcome": "completed", "hidden": false, "sample_rate": 1.0,
                    "milestones": {"request_start": 0.0, "first_token": ttft},
                    "metrics": {"ttft_ms": ttft}, "chunks": {"count": 0, "bytes": 0,
                    "visible_tokens": 0, "reasoning_tokens": 0}}
        });
        let mut report: FieldReport = serde_json::from_value(doc).unwrap_or_else(|e| panic!("{e}"));
        // Set after parsing: JSON has no NaN.
        report.run.sample_rate = sample_rate;
        db::Row {
            report,
            source: db::Source::Field,
            received_unix_ms: 1.0,
        }
    }

    fn count(conn: &Connection) -> i64 {
        conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
            .unwrap_or(-1)
    }

    /// Posts queued before the writer looks are one group: every one is stored and
    /// answered Ok, and a post that fails fails alone (its neighbours in the same
    /// group are stored).
    #[test]
    fn a_group_is_stored_whole_and_a_bad_post_fails_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("t.db");
        let mut conn = db::open(&path, true).unwrap_or_else(|e| panic!("{e}"));
        // A row SQLite refuses: its sample rate is NaN, which SQLite stores as NULL in a
        // NOT NULL column (ingest's checks never let one through; here it stands for
        // any post whose rows fail).
        let (tx, mut rx) = mpsc::channel(64);
        let mut answers = Vec::new();
        for i in 0..10 {
            let (done, answer) = oneshot::channel();
            let rows = if i == 4 {
                vec![row(100.0, 1.0), row(200.0, f64::NAN)]
            } else {
                vec![row(f64::from(i) + 1.0, 1.0)]
            };
            tx.try_send(Job::Insert(rows, done))
                .unwrap_or_else(|_| panic!("queue full"));
            answers.push(answer);
        }
        drop(tx);
        run(&mut conn, &mut rx, None);
        let results: Vec<bool> = answers
            .into_iter()
            .map(|mut a| matches!(a.try_recv(), Ok(Ok(()))))
            .collect();
        let mut expected = vec![true; 10];
        expected[4] = false;
        assert_eq!(results, expected);
        // Nine posts of one row; nothing of the bad post's two rows.
        assert_eq!(count(&conn), 9);
    }

    /// A removal queued between inserts ends the group and runs in its turn.
    #[test]
    fn a_removal_between_inserts_runs_in_order() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut conn = db::open(&dir.path().join("t.db"), true).unwrap_or_else(|e| panic!("{e}"));
        let (tx, mut rx) = mpsc::channel(64);
        let (d1, mut a1) = oneshot::channel();
        let (d2, mut a2) = oneshot::channel();
        let (d3, mut a3) = oneshot::channel();
        let ok = |r: Result<(), mpsc::error::TrySendError<Job>>| assert!(r.is_ok());
        ok(tx.try_send(Job::Insert(vec![row(1.0, 1.0), row(2.0, 1.0)], d1)));
        // Every stored run is at time 1 ms: a cutoff of 2 removes them all.
        ok(tx.try_send(Job::Retain(2.0, d2)));
        ok(tx.try_send(Job::Insert(vec![row(3.0, 1.0)], d3)));
        drop(tx);
        run(&mut conn, &mut rx, None);
        assert!(matches!(a1.try_recv(), Ok(Ok(()))));
        assert!(matches!(a2.try_recv(), Ok(Ok(2))));
        assert!(matches!(a3.try_recv(), Ok(Ok(()))));
        assert_eq!(count(&conn), 1);
    }
}
