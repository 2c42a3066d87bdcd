//! The machine, as every e2e test process on it shares it: `cargo xtask test` runs test
//! binaries side by side, and a test that keeps both cores busy (a 500 MB body) must
//! still run with nothing beside it, in any binary. So the lock is a file's (`flock`),
//! which every process on the machine sees, taken shared by a test and exclusively by one
//! written `engines!(alone NAME)`.
//!
//! `flock` does not queue a writer ahead of readers that come after it: with tests
//! starting all the time in two processes, an exclusive waiter could wait for ever. A
//! second file is the turnstile: every taker passes through it exclusively before taking
//! the machine, and a writer holds it while it waits, so readers that come later wait
//! behind it (the classic writer-preferring turnstile).

use std::fs::{File, OpenOptions};
use std::path::PathBuf;

use anyhow::Context;

/// Where the lock files live: `$TTFX_E2E_MACHINE_LOCK` (a path prefix), else the temp
/// folder's `ttfx-e2e-machine`, shared by every e2e process of this machine.
pub const LOCK_ENV: &str = "TTFX_E2E_MACHINE_LOCK";

fn prefix() -> PathBuf {
    std::env::var_os(LOCK_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("ttfx-e2e-machine"))
}

fn open(prefix: &std::path::Path, suffix: &str) -> anyhow::Result<File> {
    let mut path = prefix.as_os_str().to_owned();
    path.push(suffix);
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| {
            format!(
                "cannot open the e2e machine lock {}",
                path.to_string_lossy()
            )
        })
}

/// The machine held, shared or alone, until dropped (closing the file releases it).
#[must_use = "the machine is released when the guard is dropped"]
#[derive(Debug)]
pub struct Machine {
    _lock: File,
}

impl Machine {
    /// Waits for the machine: shared with other tests, or `alone`.
    pub async fn take(alone: bool) -> anyhow::Result<Machine> {
        Machine::take_at(prefix(), alone).await
    }

    /// [`Machine::take`] for a plain `#[test]` (no runtime): blocks this thread.
    pub fn take_now(alone: bool) -> anyhow::Result<Machine> {
        Machine::take_blocking(&prefix(), alone)
    }

    /// The same with the lock files at `prefix` (`.turnstile`, `.lock` appended).
    pub async fn take_at(prefix: PathBuf, alone: bool) -> anyhow::Result<Machine> {
        tokio::task::spawn_blocking(move || Machine::take_blocking(&prefix, alone))
            .await
            .context("the machine lock's waiting thread failed")?
    }

    fn take_blocking(prefix: &std::path::Path, alone: bool) -> anyhow::Result<Machine> {
        let turnstile = open(prefix, ".turnstile")?;
        turnstile
            .lock()
            .context("cannot pass the e2e machine lock's turnstile")?;
        let lock = open(prefix, ".lock")?;
        if alone {
            lock.lock()
        } else {
            lock.lock_shared()
        }
        .context("cannot take the e2e machine lock")?;
        // Closing the turnstile's file releases it: the next taker may queue.
        drop(turnstile);
        Ok(Machine { _lock: lock })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Shared takers overlap; an alone one waits for them, and readers that come after
    /// it wait behind it.
    #[tokio::test]
    async fn alone_waits_for_the_shared_and_the_later_shared_wait_for_it() {
        let dir = tempfile_dir();
        let at = dir.join("m");
        let take = |alone| Machine::take_at(at.clone(), alone);
        let a = take(false).await.unwrap();
        let b = take(false).await.unwrap();
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let o = order.clone();
        let writer_take = take(true);
        let writer = tokio::spawn(async move {
            let w = writer_take.await.unwrap();
            o.lock().unwrap().push("alone");
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(w);
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let o = order.clone();
        let late_take = take(false);
        let late = tokio::spawn(async move {
            let r = late_take.await.unwrap();
            o.lock().unwrap().push("late shared");
            drop(r);
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            order.lock().unwrap().is_empty(),
            "nobody got in past the two shared"
        );
        drop((a, b));
        writer.await.unwrap();
        late.await.unwrap();
        assert_eq!(*order.lock().unwrap(), ["alone", "late shared"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ttfx-machine-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
