//! What one request leaves behind once its stream is read: a few numbers, never its
//! chunks, so a load's memory stays flat however many streams it reads.

use std::time::Instant;

use ttfx_core::metrics::{RequestMetrics, Scalar};
use ttfx_core::series::GapDigest;

/// The per-request metrics a load reports, by their report names (ttfx-core's
/// `SCALARS`), in the order its table shows them; `icl_ms` (pooled gaps) is added
/// after `tpot_ms`.
pub const SCALARS: [&str; 7] = [
    "ttft_ms",
    "ttft_visible_ms",
    "tpot_ms",
    "e2e_ms",
    "output_tokens",
    "output_tokens_per_s",
    "decode_tokens_per_s",
];

/// The pooled inter-chunk gaps, under the name every ttfx report gives them.
pub const ICL: &str = "icl_ms";

/// The readers of [`SCALARS`], found once in ttfx-core's table by name (a name missing
/// there is a test failure, not a silent gap).
pub(crate) fn readers() -> Vec<Scalar> {
    SCALARS
        .iter()
        .filter_map(|name| {
            ttfx_core::metrics::SCALARS
                .iter()
                .find(|s| s.name == *name)
                .copied()
        })
        .collect()
}

/// Why a request failed, as the report counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorClass {
    /// The connection could not be made (refused, unreachable, TLS handshake).
    Connect,
    /// A non-2xx answer.
    HttpStatus(u16),
    /// An error event inside the stream.
    InBand,
    /// The stream broke off: the connection dropped mid-body (or before the answer's
    /// head), or the body ended inside an unfinished event.
    Dropped,
    /// Not done within the spec's timeout of its send.
    Timeout,
    /// The recorder's timeline was refused by its own checks (a bug, counted, not hidden).
    Unreadable,
}

impl ErrorClass {
    pub fn name(self) -> String {
        match self {
            ErrorClass::Connect => "connect".into(),
            ErrorClass::HttpStatus(s) => format!("http_{s}"),
            ErrorClass::InBand => "in_band".into(),
            ErrorClass::Dropped => "dropped".into(),
            ErrorClass::Timeout => "timeout".into(),
            ErrorClass::Unreadable => "unreadable".into(),
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Completed,
    Failed(ErrorClass),
    /// The load was stopped while it was in flight: it is in no figure.
    Cancelled,
}

/// A request's inter-chunk gaps: the list, or, for a stream longer than the recorder
/// keeps chunk by chunk, the digest of every gap.
#[derive(Debug, Clone)]
pub enum Gaps {
    List(Vec<f64>),
    Digest(GapDigest),
}

/// One request, read.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Sent (open loop: scheduled) after the warm-up and before the window's end.
    pub measured: bool,
    /// Open loop: actual send − scheduled send, ms.
    pub lateness_ms: Option<f64>,
    pub sent: Instant,
    pub ended: Instant,
    pub end: End,
    /// [`SCALARS`]' values, in that order.
    pub values: [Option<f64>; SCALARS.len()],
    pub gaps: Gaps,
    /// Completed and within every goodput SLO.
    pub good: bool,
}

impl Sample {
    /// A request that ended before any metric could be taken.
    pub fn bare(measured: bool, lateness_ms: Option<f64>, sent: Instant, end: End) -> Sample {
        Sample {
            measured,
            lateness_ms,
            sent,
            ended: Instant::now(),
            end,
            values: [None; SCALARS.len()],
            gaps: Gaps::List(Vec::new()),
            good: false,
        }
    }

    /// The scalars of `metrics` by `readers` ([`readers`]).
    pub fn values_of(readers: &[Scalar], metrics: &RequestMetrics) -> [Option<f64>; SCALARS.len()] {
        let mut values = [None; SCALARS.len()];
        for (slot, reader) in values.iter_mut().zip(readers) {
            *slot = (reader.value)(metrics);
        }
        values
    }

    /// The value of the metric named `name` in [`SCALARS`].
    pub fn value(&self, name: &str) -> Option<f64> {
        SCALARS
            .iter()
            .position(|n| *n == name)
            .and_then(|i| self.values[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reported_name_is_a_per_request_metric_of_ttfx_core() {
        let readers = readers();
        assert_eq!(
            readers.len(),
            SCALARS.len(),
            "a name is missing from ttfx-core's SCALARS"
        );
        for (reader, name) in readers.iter().zip(SCALARS) {
            assert_eq!(reader.name, name);
        }
        assert!(
            !ttfx_core::metrics::SCALAR_NAMES.contains(&ICL),
            "icl_ms is a list, pooled"
        );
    }

    #[test]
    fn error_classes_are_named_as_the_report_counts_them() {
        let names: Vec<String> = [
            ErrorClass::Connect,
            ErrorClass::HttpStatus(429),
            ErrorClass::InBand,
            ErrorClass::Dropped,
            ErrorClass::Timeout,
            ErrorClass::Unreadable,
        ]
        .map(ErrorClass::name)
        .into();
        assert_eq!(
            names,
            [
                "connect",
                "http_429",
                "in_band",
                "dropped",
                "timeout",
                "unreadable"
            ]
        );
    }
}
