//! The wall clock as the servers report it.

use std::time::SystemTime;

/// `t` in ms since the Unix epoch (0 for a time before it).
pub fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}
