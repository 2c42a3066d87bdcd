//! The probe's one error type. Every failure the probe can meet is a variant here, so a
//! host page sees a clear sentence instead of a panic.

use std::fmt;

/// What went wrong inside the probe.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeError {
    /// The global scope has no usable `performance.now()` (not a browser or worker).
    NoPerformanceClock(String),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::NoPerformanceClock(why) => {
                write!(
                    f,
                    "ttfx: no performance.now() clock in this global scope: {why}"
                )
            }
        }
    }
}

impl std::error::Error for ProbeError {}
