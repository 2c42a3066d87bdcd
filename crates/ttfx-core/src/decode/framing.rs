//! What every framer shares: its memory limits and the anomalies it can meet.

use std::fmt;

use crate::decode::event::{ErrorClass, Event};

/// Memory bounds of a decoder. A stream that passes them loses the offending line or
/// event (reported as an error event) but never grows memory past them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest line kept (SSE field line, NDJSON line), terminator excluded.
    pub max_line_bytes: usize,
    /// Most `data` one SSE event may gather over all its lines.
    pub max_event_bytes: usize,
}

impl Limits {
    /// One MiB for a line and for an event: far above any token delta or audio chunk a
    /// provider sends, far below what would hurt a browser tab.
    pub const DEFAULT: Limits = Limits {
        max_line_bytes: 1 << 20,
        max_event_bytes: 1 << 20,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Something a framer met that the format does not allow or that passed a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramingAnomaly {
    /// A line longer than the limit; its bytes were dropped as they came (and, for SSE,
    /// the event it belonged to, unless it was a comment).
    LineTooLong { bytes: usize, limit: usize },
    /// An SSE event whose data passed the limit; the event was dropped.
    EventTooLong { limit: usize },
    /// Bytes that are not UTF-8; each bad sequence became U+FFFD, as the WHATWG decoder does.
    InvalidUtf8,
    /// The stream ended inside a line or an event; those bytes were discarded.
    Unterminated { bytes: usize },
}

impl FramingAnomaly {
    /// The error class this anomaly is reported under.
    pub fn class(&self) -> ErrorClass {
        match self {
            FramingAnomaly::LineTooLong { .. } | FramingAnomaly::EventTooLong { .. } => {
                ErrorClass::TooLong
            }
            FramingAnomaly::InvalidUtf8 => ErrorClass::InvalidUtf8,
            FramingAnomaly::Unterminated { .. } => ErrorClass::Truncated,
        }
    }

    /// The anomaly as a normalized error event.
    pub fn to_event(&self) -> Event {
        Event::error(self.class(), self.to_string())
    }
}

impl fmt::Display for FramingAnomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FramingAnomaly::LineTooLong { bytes, limit } => {
                write!(
                    f,
                    "line of {bytes} bytes is over the {limit}-byte limit; dropped"
                )
            }
            FramingAnomaly::EventTooLong { limit } => {
                write!(
                    f,
                    "event data is over the {limit}-byte limit; event dropped"
                )
            }
            FramingAnomaly::InvalidUtf8 => f.write_str("invalid UTF-8 replaced with U+FFFD"),
            FramingAnomaly::Unterminated { bytes } => {
                write!(
                    f,
                    "stream ended inside an unterminated event; {bytes} bytes discarded"
                )
            }
        }
    }
}

impl std::error::Error for FramingAnomaly {}
