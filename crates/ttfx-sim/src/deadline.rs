//! Waiting for a simulated chunk's deadline, to the tens of microseconds.
//!
//! tokio's timer wheel ticks in whole milliseconds and rounds a deadline up to the next
//! tick, and its reactor's wait is itself rounded to a millisecond: a first token planned
//! for 1,000 ms left at 1,001–1,002 ms, under load later, which is most of the record's
//! lateness that `serve_bench` reports (#16 asks p99 ≤ 2 ms). On Linux each wait arms a
//! `timerfd` (CLOCK_MONOTONIC, nanoseconds, the clock `Instant` reads) that becomes
//! readable at the deadline itself and wakes the task through tokio's own reactor; no
//! thread spins. Elsewhere, or if the kernel refuses a timerfd, tokio's timer.

use tokio::time::Instant;

/// Returns at `deadline`, at once when it has passed.
pub async fn until(deadline: Instant) {
    if deadline <= Instant::now() {
        return;
    }
    #[cfg(target_os = "linux")]
    if timerfd::until(deadline).await.is_ok() {
        return;
    }
    tokio::time::sleep_until(deadline).await;
}

#[cfg(target_os = "linux")]
mod timerfd {
    use std::io;

    use rustix::time::{
        Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
        timerfd_settime,
    };
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;
    use tokio::time::Instant;

    pub async fn until(deadline: Instant) -> io::Result<()> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // Relative to now, taken just before arming: a few microseconds of error, where
        // converting an `Instant` to an absolute timespec has no stable API.
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        let value = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let spec = Itimerspec {
            it_interval: Timespec::default(),
            it_value: value,
        };
        timerfd_settime(&fd, TimerfdTimerFlags::empty(), &spec)?;
        // Deprecated because an arbitrary `AsRawFd` may close or swap its fd while
        // registered; an `OwnedFd` owned by the `AsyncFd` cannot, and the safe
        // constructor keeps this crate free of `unsafe`.
        #[allow(deprecated)]
        let fd = AsyncFd::with_interest(fd, Interest::READABLE)?;
        // Readable once the timer has expired; the fd is dropped with it, so its count
        // need not be read.
        let _ready = fd.readable().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The wait ends at or after the deadline, never before it. How late is measured by
    /// `serve_bench`, not asserted here (a busy test machine decides that).
    #[tokio::test]
    async fn a_wait_never_ends_before_its_deadline_and_a_past_one_returns_at_once() {
        for us in [150, 1_300, 7_700] {
            let deadline = Instant::now() + Duration::from_micros(us);
            until(deadline).await;
            assert!(Instant::now() >= deadline, "{us} µs");
        }
        let past = Instant::now();
        until(past).await;
        until(past - Duration::from_millis(5)).await;
    }
}
