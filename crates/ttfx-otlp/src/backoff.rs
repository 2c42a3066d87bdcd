//! When to try again: exponential backoff with jitter, or the receiver's `Retry-After`.
//!
//! The first retry waits 0.5 s, each next one twice as long, up to 30 s (an OTLP
//! receiver that sheds load recovers in seconds; 30 s keeps a long outage to two tries
//! a minute without leaving the backlog idle for long). Each wait is drawn uniformly
//! from its upper half ("equal jitter"): exporters that failed together do not come
//! back together, and no wait is near zero. A `Retry-After` (seconds or an HTTP date)
//! replaces the computed wait, bounded to 5 minutes so a bad header cannot stop export.

use std::time::{Duration, SystemTime};

pub const FIRST: Duration = Duration::from_millis(500);
pub const CAP: Duration = Duration::from_secs(30);
/// The longest `Retry-After` honoured.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(300);

/// The wait before retry number `retry` (0 for the first retry).
pub fn delay(retry: u32) -> Duration {
    let full = FIRST
        .saturating_mul(2u32.saturating_pow(retry.min(16)))
        .min(CAP);
    let half = full / 2;
    half + half.mul_f64(unit_random())
}

/// A uniform number in [0, 1) from the OS's generator (0.5 if it has none to give).
fn unit_random() -> f64 {
    let mut b = [0u8; 8];
    match getrandom::fill(&mut b) {
        Ok(()) => (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

/// A `Retry-After` value: delay-seconds or an HTTP date, bounded; None if unreadable.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = if let Ok(secs) = value.parse::<u64>() {
        Duration::from_secs(secs)
    } else {
        let at = httpdate::parse_http_date(value).ok()?;
        at.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(wait.min(RETRY_AFTER_CAP))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_within_their_upper_half_up_to_the_cap() {
        for retry in 0..20 {
            let full = FIRST.saturating_mul(1 << retry.min(16)).min(CAP);
            let d = delay(retry);
            assert!(d >= full / 2 && d <= full, "{retry}: {d:?}");
        }
        assert!(delay(30) <= CAP);
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_and_is_bounded() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("86400", now), Some(RETRY_AFTER_CAP));
        assert_eq!(retry_after("soon", now), None);
    }
}
