//! The stall rule (docs/metrics.md): a gap is a stall when it is longer than both
//! [`STALL_FACTOR`] × the request's median gap and [`STALL_FLOOR_MS`]. One rule for the
//! gaps of a stream kept whole (`metrics::chunks`) and for a summarized stream's gap
//! digest (`chunk_summary`), which counts the gaps above the floor as they arrive: so it
//! sits below both.

use serde::{Deserialize, Serialize};

use crate::percentile::percentile;

/// A gap is a stall when it exceeds both this multiple of the request's own median gap…
pub const STALL_FACTOR: f64 = 4.0;
/// …and this absolute floor: below ~200 ms a pause in streaming text is not noticed, so a
/// fast stream's 4× blip is not called a stall.
pub const STALL_FLOOR_MS: f64 = 200.0;
/// With fewer gaps the median is mostly the outlier itself, so there is no typical gap to
/// compare against.
pub const STALL_MIN_GAPS: usize = 3;

/// max(STALL_FACTOR × median gap, STALL_FLOOR_MS): the one place the threshold is
/// computed, for the gaps themselves and for a summarized series' digest.
pub fn stall_threshold(median_gap_ms: f64) -> f64 {
    (STALL_FACTOR * median_gap_ms).max(STALL_FLOOR_MS)
}

/// Gaps far above the request's own typical gap.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stalls {
    /// Gaps above the threshold.
    pub count: u32,
    /// Their total length.
    pub stalled_ms: f64,
    /// The longest gap of the request (stall or not).
    pub longest_gap_ms: f64,
    /// The request's median gap (numpy's linear interpolation).
    pub median_gap_ms: f64,
    /// max(STALL_FACTOR × median, STALL_FLOOR_MS).
    pub threshold_ms: f64,
}

/// The stall rule: a gap is a stall when gap > max(4 × median gap, 200 ms), the median
/// taken over the same request's gaps; needs at least 3 gaps, else `None`.
pub fn stalls(gaps: &[f64]) -> Option<Stalls> {
    if gaps.len() < STALL_MIN_GAPS {
        return None;
    }
    let median = percentile(gaps, 50.0)?;
    let threshold = stall_threshold(median);
    let stalled: Vec<f64> = gaps.iter().copied().filter(|g| *g > threshold).collect();
    Some(Stalls {
        count: stalled.len() as u32,
        // Folded from +0.0: an empty f64 `sum()` is -0.0, which reports print as "-0.0".
        stalled_ms: stalled.iter().fold(0.0, |total, g| total + g),
        longest_gap_ms: gaps.iter().copied().fold(0.0, f64::max),
        median_gap_ms: median,
        threshold_ms: threshold,
    })
}
