//! The open loop's clock: a thread of its own that wakes at each scheduled send and hands
//! the request to the runtime.
//!
//! Why not a tokio task: tokio's timer wheel ticks in whole milliseconds and rounds each
//! deadline up to the next tick, so a task sleeping until an arrival leaves up to 1–2 ms
//! late before any load (and later once the workers are busy), which is the whole
//! lateness budget (p99 ≤ 2 ms at 1,000 streams/s). A plain thread's sleep is the
//! kernel's high-resolution timer: it wakes within the thread's timer slack (50 µs by
//! default on Linux) of the deadline, whatever the runtime's workers are doing. It
//! sleeps most of the wait and spins only the last [`SPIN`], so it holds a core only
//! for that sliver per arrival. Each request then starts as a task on the runtime;
//! its lateness is taken inside the task, when it really sends, so the runtime's own
//! delay is in the figure too.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// The end of each wait spent spinning (yielding the core between looks) rather than
/// asleep: the sleep's own overshoot (timer slack plus wake-up) is below this on an idle
/// Linux machine, so the send is on time to a few microseconds when the core is free.
const SPIN: Duration = Duration::from_micros(200);

/// The longest single sleep: a stop is noticed within this, however far the next
/// arrival is.
const MAX_SLEEP: Duration = Duration::from_millis(20);

/// Starts the clock. For each arrival offset of `schedule` (ascending) before `end`
/// (`None`: no end), it waits until `start + offset` and calls `send(index, due)`; it
/// ends at `end`, when the schedule does, or at `cancel`.
pub fn start(
    schedule: impl Iterator<Item = Duration> + Send + 'static,
    start: Instant,
    end: Option<Duration>,
    cancel: CancellationToken,
    mut send: impl FnMut(u64, Instant) + Send + 'static,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ttfx-load-pacer".into())
        .spawn(move || {
            for (index, offset) in (0u64..).zip(schedule) {
                if end.is_some_and(|e| offset >= e) {
                    return;
                }
                let due = start + offset;
                if !wait_until(due, &cancel) {
                    return;
                }
                send(index, due);
            }
        })
}

/// Waits until `due`; false when cancelled first.
fn wait_until(due: Instant, cancel: &CancellationToken) -> bool {
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let now = Instant::now();
        if now >= due {
            return true;
        }
        let left = due - now;
        if left > SPIN {
            std::thread::sleep((left - SPIN).min(MAX_SLEEP));
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn sends_never_leave_early_stop_at_the_end_and_at_a_cancel() {
        let (tx, rx) = mpsc::channel();
        let start_at = Instant::now();
        let schedule = (1..).map(|i| Duration::from_millis(3 * i));
        let pacer = start(
            schedule,
            start_at,
            Some(Duration::from_millis(31)),
            CancellationToken::new(),
            move |i, due| {
                let _ = tx.send((i, due, Instant::now()));
            },
        )
        .unwrap();
        pacer.join().unwrap();
        let sent: Vec<_> = rx.iter().collect();
        // Offsets 3, 6, …, 30 ms are before the end at 31 ms: ten sends, in order.
        assert_eq!(sent.len(), 10);
        for (n, (i, due, at)) in sent.iter().enumerate() {
            assert_eq!(*i, n as u64);
            assert_eq!(*due, start_at + Duration::from_millis(3 * (n as u64 + 1)));
            assert!(at >= due, "send {i} left before its time");
        }

        let cancel = CancellationToken::new();
        let (tx, rx) = mpsc::channel();
        let far = start(
            std::iter::once(Duration::from_secs(3600)),
            Instant::now(),
            None,
            cancel.clone(),
            move |i, _| {
                let _ = tx.send(i);
            },
        )
        .unwrap();
        let asked = Instant::now();
        cancel.cancel();
        far.join().unwrap();
        // Noticed within one sleep, not an hour later; nothing was sent.
        assert!(asked.elapsed() < Duration::from_secs(1));
        assert_eq!(rx.try_recv().ok(), None);
    }
}
