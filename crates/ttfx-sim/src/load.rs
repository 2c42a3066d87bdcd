//! The simulator under load: each profile name is one simulated deployment whose streams
//! slow each other down as a serving engine's do, so a load sweep against it has a known
//! answer (issue #33). docs/serve.md ("Under load") states the model for users:
//!
//! - an LLM stream is *running* from its admission (after its response headers, and any
//!   wait for a slot) until its task ends: the last byte, an injected failure, or its
//!   client gone. With `max_batch` = m, a stream waits, first come first served, until
//!   it fits among at most m running ones (a serving engine's waiting queue);
//! - at admission, `others` = the other streams running: the first token comes
//!   `load_ttft_ms × others` later (queue depth → TTFT);
//! - each token interval is the profile's × `1 + load_tps_slope × others`, `others` read
//!   again as each chunk leaves (a fuller batch decodes each stream more slowly);
//! - a TTS synthesis is in flight from its response headers to its end; each audio
//!   chunk's synthesis takes the profile's `rtf` × `1 + load_rtf_slope × others`, `others`
//!   the other syntheses in flight, read as each chunk is due to start.
//!
//! Counts are held by RAII guards, so a task that ends any way (a client that left
//! included, or an aborted Realtime response) frees its place.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::limits::{BATCH_PERMITS, MAX_BATCH, MAX_DELAY_MS, MAX_LOAD_SLOWDOWN};
use super::profile::Profile;

/// One profile's deployment: its batch of LLM streams and its TTS syntheses.
#[derive(Debug)]
pub struct Deployment {
    /// The batch's slots: each stream with a `max_batch` takes its share of
    /// [`BATCH_PERMITS`]. tokio's semaphore is fair, so waiting streams are admitted in
    /// the order they asked, a large share at the head holding back smaller ones behind.
    slots: Arc<Semaphore>,
    streams: Arc<AtomicUsize>,
    syntheses: Arc<AtomicUsize>,
}

impl Default for Deployment {
    fn default() -> Self {
        Deployment {
            slots: Arc::new(Semaphore::new(BATCH_PERMITS as usize)),
            streams: Arc::new(AtomicUsize::new(0)),
            syntheses: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Deployment {
    /// Admits one LLM stream of a request whose profile is `p`: at once without a
    /// `max_batch`; with one, once its share of the slots is free (cancel-safe: a
    /// request dropped while it waits leaves the queue). The stream runs until the
    /// returned guard is dropped.
    pub async fn admit(&self, p: &Profile) -> Admitted {
        let asked = Instant::now();
        let (permit, waited) = match p.max_batch {
            None => (None, false),
            Some(m) => {
                let share = share(m);
                // Waited: no permit at once (a fast path that leaves `wait` exactly zero,
                // so a stream that did not queue keeps its schedule to the bit).
                match self.slots.clone().try_acquire_many_owned(share) {
                    Ok(permit) => (Some(permit), false),
                    Err(_) => match self.slots.clone().acquire_many_owned(share).await {
                        Ok(permit) => (Some(permit), true),
                        // The semaphore is never closed; were it, the stream would run
                        // unlimited rather than never.
                        Err(_) => (None, true),
                    },
                }
            }
        };
        let wait = if waited {
            Instant::now().saturating_duration_since(asked)
        } else {
            Duration::ZERO
        };
        let others = self.streams.fetch_add(1, Ordering::AcqRel);
        Admitted {
            others,
            wait,
            first_token_delay: first_token_delay(p.load_ttft_ms, others),
            tps_slope: p.load_tps_slope,
            running: Running {
                count: self.streams.clone(),
                _permit: permit,
            },
        }
    }

    /// One TTS synthesis, in flight until the guard is dropped.
    pub fn synthesis(&self, p: &Profile) -> Synthesis {
        let others = self.syntheses.fetch_add(1, Ordering::AcqRel);
        Synthesis {
            others_at_start: others,
            rtf_slope: p.load_rtf_slope,
            count: self.syntheses.clone(),
        }
    }

    /// LLM streams running now.
    pub fn streams(&self) -> usize {
        self.streams.load(Ordering::Acquire)
    }
}

/// A stream's share of the batch's permits when at most `max_batch` may run
/// ([`BATCH_PERMITS`] says why exactly that many fit).
fn share(max_batch: usize) -> u32 {
    let m = max_batch.clamp(1, MAX_BATCH) as u32;
    BATCH_PERMITS / m
}

/// `load_ttft_ms × others`, saturating at [`MAX_DELAY_MS`] (limits.rs says why).
pub fn first_token_delay(load_ttft_ms: f64, others: usize) -> Duration {
    let ms = (load_ttft_ms * others as f64).clamp(0.0, MAX_DELAY_MS);
    // Finite and in range by the clamp (a NaN slope cannot pass the parser; were one
    // here, no delay rather than a panic).
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::ZERO)
}

/// `1 + slope × others`, saturating at [`MAX_LOAD_SLOWDOWN`]; exactly 1 without load.
pub fn slowdown(slope: f64, others: usize) -> f64 {
    if slope <= 0.0 || others == 0 {
        return 1.0;
    }
    (1.0 + slope * others as f64).min(MAX_LOAD_SLOWDOWN)
}

/// The load keys that change an LLM stream's timing are set: its record then says what
/// the batch was at admission (with none set, records stay as they were).
pub fn llm_model_on(p: &Profile) -> bool {
    p.max_batch.is_some() || p.load_ttft_ms > 0.0 || p.load_tps_slope > 0.0
}

/// An admitted LLM stream: what the model gives it.
#[must_use = "the stream runs while this is held"]
#[derive(Debug)]
pub struct Admitted {
    /// Other streams running when this one was admitted.
    pub others: usize,
    /// How long it waited for a slot (zero when it did not queue).
    pub wait: Duration,
    /// The queue-depth term: the first token (and all after it) this much later.
    pub first_token_delay: Duration,
    tps_slope: f64,
    running: Running,
}

impl Admitted {
    /// How far the stream's schedule moves: the wait and the queue-depth term.
    pub fn shift(&self) -> Duration {
        self.wait + self.first_token_delay
    }

    /// The factor on the next token interval: the other streams running now.
    pub fn slowdown(&self) -> f64 {
        slowdown(self.tps_slope, self.running.others())
    }

    /// Streams running at admission, this one included (the record's `batch`).
    pub fn batch(&self) -> usize {
        self.others + 1
    }
}

/// One running stream, counted until dropped; its slot (when it took one) is given
/// back after the count goes down, so the stream admitted into it never counts the one
/// that left.
#[must_use = "the stream counts as running while this is held"]
#[derive(Debug)]
struct Running {
    count: Arc<AtomicUsize>,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Running {
    fn others(&self) -> usize {
        self.count.load(Ordering::Acquire).saturating_sub(1)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Runs before the fields drop, so before the permit is released.
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One TTS synthesis in flight, counted until dropped.
#[must_use = "the synthesis counts as in flight while this is held"]
#[derive(Debug)]
pub struct Synthesis {
    /// Other syntheses in flight when this one started.
    pub others_at_start: usize,
    rtf_slope: f64,
    count: Arc<AtomicUsize>,
}

impl Synthesis {
    /// The factor on the next chunk's synthesis: the other syntheses in flight now.
    pub fn slowdown(&self) -> f64 {
        let others = self.count.load(Ordering::Acquire).saturating_sub(1);
        slowdown(self.rtf_slope, others)
    }
}

impl Drop for Synthesis {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `base` + `extra` seconds, for a deadline moved by load: never a panic (the limits
/// keep `extra` to days at most; a value past what an `Instant` holds waits as long as
/// one can).
pub fn later(base: Instant, extra_s: f64) -> Instant {
    Duration::try_from_secs_f64(extra_s.max(0.0))
        .ok()
        .and_then(|d| base.checked_add(d))
        .unwrap_or_else(|| base + Duration::from_secs(86_400 * 365))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::builtin;

    fn profile(pairs: &[(&str, &str)]) -> Profile {
        let mut p = builtin()[0].1.clone();
        p.apply(pairs.iter().copied()).unwrap();
        p
    }

    #[test]
    fn exactly_max_batch_shares_fit_for_every_value() {
        let total = u64::from(BATCH_PERMITS);
        for m in 1..=MAX_BATCH {
            let w = u64::from(share(m));
            assert!(m as u64 * w <= total, "{m} fit");
            assert!((m as u64 + 1) * w > total, "{m} + 1 do not fit");
        }
        assert!(BATCH_PERMITS as usize <= Semaphore::MAX_PERMITS);
    }

    #[test]
    fn the_model_terms_follow_the_formulas_and_saturate() {
        assert_eq!(slowdown(0.25, 0), 1.0);
        assert_eq!(slowdown(0.0, 7), 1.0);
        assert_eq!(slowdown(0.25, 7), 2.75);
        assert_eq!(slowdown(100.0, usize::MAX), MAX_LOAD_SLOWDOWN);
        assert_eq!(first_token_delay(20.0, 3), Duration::from_millis(60));
        assert_eq!(first_token_delay(0.0, 1000), Duration::ZERO);
        assert_eq!(
            first_token_delay(60_000.0, usize::MAX),
            Duration::from_secs_f64(MAX_DELAY_MS / 1000.0)
        );
        let t = Instant::now();
        assert_eq!(later(t, 0.0), t);
        assert!(later(t, f64::INFINITY) > t);
        assert!(later(t, f64::NAN) >= t);
    }

    #[tokio::test]
    async fn streams_count_until_dropped_and_wait_in_order_for_a_slot() {
        let d = Arc::new(Deployment::default());
        let p = profile(&[("max_batch", "2"), ("load_ttft_ms", "10")]);
        let a = d.admit(&p).await;
        let b = d.admit(&p).await;
        assert_eq!((a.others, b.others), (0, 1));
        assert_eq!((a.wait, b.wait), (Duration::ZERO, Duration::ZERO));
        assert_eq!(b.first_token_delay, Duration::from_millis(10));
        assert_eq!(d.streams(), 2);
        // Two more wait, in the order they asked.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for name in ["c", "e"] {
            let (d, p, tx) = (d.clone(), p.clone(), tx.clone());
            tokio::spawn(async move {
                let s = d.admit(&p).await;
                tx.send((name, s.others, s.wait)).ok();
                tokio::time::sleep(Duration::from_millis(50)).await;
                drop(s);
            });
            // Each asks before the next does.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(rx.try_recv().is_err(), "nobody admitted past the batch");
        // A stream without max_batch is never held, and counts.
        let free = d.admit(&builtin()[0].1).await;
        assert_eq!((free.others, free.wait), (2, Duration::ZERO));
        drop(free);
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(a);
        let (first, others, wait) = rx.recv().await.unwrap();
        assert_eq!((first, others), ("c", 1));
        assert!(wait >= Duration::from_millis(20), "{wait:?}");
        assert!(rx.try_recv().is_err(), "one slot, one admission");
        drop(b);
        let (second, _, _) = rx.recv().await.unwrap();
        assert_eq!(second, "e");
        // All gone: the count is back to zero.
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(d.streams(), 0);
    }

    #[tokio::test]
    async fn a_request_that_leaves_the_queue_takes_no_slot() {
        let d = Arc::new(Deployment::default());
        let p = profile(&[("max_batch", "1")]);
        let a = d.admit(&p).await;
        // Gives up while it waits (its client went away).
        let gave_up = tokio::time::timeout(Duration::from_millis(20), d.admit(&p)).await;
        assert!(gave_up.is_err());
        drop(a);
        let next = tokio::time::timeout(Duration::from_millis(200), d.admit(&p))
            .await
            .expect("the slot is free again");
        assert_eq!(next.others, 0);
    }

    #[test]
    fn syntheses_count_and_slow_each_other() {
        let d = Deployment::default();
        let p = profile(&[("load_rtf_slope", "0.5")]);
        let a = d.synthesis(&p);
        assert_eq!(a.slowdown(), 1.0);
        let b = d.synthesis(&p);
        let c = d.synthesis(&p);
        assert_eq!((b.others_at_start, c.others_at_start), (1, 2));
        assert_eq!(a.slowdown(), 2.0);
        drop(b);
        drop(c);
        assert_eq!(a.slowdown(), 1.0);
    }
}
