//! The summary of a long stream's later chunks, as a timeline holds it
//! (`timeline.chunk_summary`): totals, bins for plotting and a digest of every gap.
//! Plain data and the digest's arithmetic, below the timeline; how a recorder folds
//! chunks into it, and why each figure stays right, is in [`crate::series`].

use serde::{Deserialize, Serialize};

use crate::percentile::Summary;
use crate::stall::{STALL_FLOOR_MS, STALL_MIN_GAPS, Stalls, stall_threshold};

/// Bits of an f64 mantissa kept in a gap bucket's key: 2^6 = 64 buckets per doubling.
const BUCKET_MANTISSA_BITS: u32 = 6;
const BUCKET_DROPPED_BITS: u32 = 52 - BUCKET_MANTISSA_BITS;
/// Gaps are bucketed from 2^-20 ms (about 1 ns, finer than any clock a chunk is timed
/// with) to 2^32 ms (about 50 days); outside that they are clamped. This bounds the
/// digest to 52 doublings × 64 + 1 (zero) = 3,329 buckets, 64 KiB with the Vec's slack.
const GAP_BUCKETED_MIN_MS: f64 = 1.0 / 1_048_576.0;
const GAP_BUCKETED_MAX_MS: f64 = 4_294_967_296.0;

/// Largest relative error of an order statistic read from a [`GapDigest`]: a bucket
/// spans at most 1/64 of its lower bound and is read at its middle (1/128), and an
/// interpolation between two such values is no further off than they are.
pub const GAP_RELATIVE_ERROR: f64 = 1.0 / 128.0;

/// The chunks after the kept ones, summarized (see [`crate::series`] for what stays
/// exact).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkSummary {
    /// Chunks not kept in `timeline.chunks`.
    pub chunks: u64,
    /// Their body bytes.
    pub bytes: u64,
    /// Their complete events.
    pub events: u64,
    /// Their visible tokens.
    pub visible_tokens: u64,
    /// Their reasoning tokens.
    pub reasoning_tokens: u64,
    /// Those chunks in arrival order, merged in windows of equal chunk count (the last
    /// window may be partly filled), for plotting.
    #[serde(default)]
    pub bins: Vec<ChunkBin>,
    /// Every gap between consecutive token chunks of the whole stream, kept chunks
    /// included; absent when there is none.
    #[serde(default, skip_serializing_if = "GapDigest::is_empty")]
    pub gaps: GapDigest,
    /// Most visible tokens inside any one `BURST_WINDOW_MS` window of the whole stream.
    #[serde(default)]
    pub burst_visible_tokens: u64,
    /// The burst window overflowed [`crate::series::BURST_TIMES_MAX`], so `burst_visible_tokens` is a
    /// lower bound. Absent when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub burst_lower_bound: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Consecutive chunks merged into one entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkBin {
    /// The earliest arrival in the bin.
    pub from_ms: f64,
    /// The latest arrival in the bin.
    pub to_ms: f64,
    /// Chunks merged.
    pub chunks: u64,
    pub bytes: u64,
    pub events: u64,
    pub visible_tokens: u64,
    pub reasoning_tokens: u64,
}

impl ChunkBin {
    pub(crate) fn add(&mut self, other: &ChunkBin) {
        self.from_ms = self.from_ms.min(other.from_ms);
        self.to_ms = self.to_ms.max(other.to_ms);
        self.chunks += other.chunks;
        self.bytes += other.bytes;
        self.events += other.events;
        self.visible_tokens += other.visible_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

/// Gaps in bounded memory. Count, sum, min, max and the gaps longer than the stall
/// floor are kept exactly; the distribution is kept as counts per bucket, 64 buckets per
/// doubling of the gap (a bucket is `[lower, lower + 2^e/64)` for `2^e ≤ lower`), with
/// gaps of exactly 0 in a bucket of their own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GapDigest {
    pub count: u64,
    pub sum_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Gaps longer than the stall floor (`STALL_FLOOR_MS`, 200 ms): how many…
    pub above_floor: u64,
    /// …and their total, added in arrival order.
    pub above_floor_ms: f64,
    /// `[lower_ms, count]`, ascending by `lower_ms`.
    pub buckets: Vec<(f64, u64)>,
}

impl GapDigest {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds one gap (ms, ≥ 0).
    pub fn insert(&mut self, gap_ms: f64) {
        if self.count == 0 {
            (self.min_ms, self.max_ms) = (gap_ms, gap_ms);
        } else {
            self.min_ms = self.min_ms.min(gap_ms);
            self.max_ms = self.max_ms.max(gap_ms);
        }
        self.count += 1;
        self.sum_ms += gap_ms;
        if gap_ms > STALL_FLOOR_MS {
            self.above_floor += 1;
            self.above_floor_ms += gap_ms;
        }
        self.add_to_bucket(bucket_lower(gap_ms), 1);
    }

    /// Pools another digest into this one (a batch's `icl_ms` over several runs).
    pub fn merge(&mut self, other: &GapDigest) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            (self.min_ms, self.max_ms) = (other.min_ms, other.max_ms);
        } else {
            self.min_ms = self.min_ms.min(other.min_ms);
            self.max_ms = self.max_ms.max(other.max_ms);
        }
        self.count += other.count;
        self.sum_ms += other.sum_ms;
        self.above_floor += other.above_floor;
        self.above_floor_ms += other.above_floor_ms;
        for &(lower, n) in &other.buckets {
            self.add_to_bucket(lower, n);
        }
    }

    fn add_to_bucket(&mut self, lower: f64, n: u64) {
        match self.buckets.binary_search_by(|(l, _)| l.total_cmp(&lower)) {
            Ok(i) => self.buckets[i].1 += n,
            Err(i) => self.buckets.insert(i, (lower, n)),
        }
    }

    /// The `p`-th percentile (0–100) by numpy's linear rule, as
    /// [`crate::percentile::percentile`] computes it over the gaps themselves, within
    /// [`GAP_RELATIVE_ERROR`]: rank 0 is the exact minimum, the last rank the exact
    /// maximum, any other rank the middle of its bucket.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        if self.count == 0 || !(0.0..=100.0).contains(&p) {
            return None;
        }
        let h = (self.count - 1) as f64 * p / 100.0;
        let lo = h.floor() as u64;
        let hi = (lo + 1).min(self.count - 1);
        let (a, b) = (self.value_at(lo), self.value_at(hi));
        Some(a + (h - lo as f64) * (b - a))
    }

    /// The gap of ascending rank `rank` (0-based), as well as the buckets know it.
    fn value_at(&self, rank: u64) -> f64 {
        if rank == 0 {
            return self.min_ms;
        }
        if rank + 1 >= self.count {
            return self.max_ms;
        }
        let mut below = 0;
        for &(lower, n) in &self.buckets {
            below += n;
            if rank < below {
                return self.middle(lower);
            }
        }
        self.max_ms
    }

    /// A bucket's value: its middle, held inside the exact extremes (which can only
    /// bring it closer to the gaps it stands for). Not `f64::clamp`: its assertion
    /// would panic on a hand-edited digest and brings core's float formatter into the
    /// probe's wasm.
    fn middle(&self, lower: f64) -> f64 {
        bucket_middle(lower).max(self.min_ms).min(self.max_ms)
    }

    /// Count, mean, extremes and percentiles of the gaps, as [`Summary::of`] gives
    /// them over the gaps themselves: count, min and max exactly, the mean up to the
    /// order of its sum, the percentiles within [`GAP_RELATIVE_ERROR`].
    pub fn summary(&self) -> Option<Summary> {
        let p = |q| self.percentile(q);
        Some(Summary {
            count: self.count,
            mean: self.sum_ms / self.count as f64,
            min: self.min_ms,
            max: self.max_ms,
            p50: p(50.0)?,
            p90: p(90.0)?,
            p95: p(95.0)?,
            p99: p(99.0)?,
        })
    }

    /// The stall rule of [`crate::stall::stalls`] over the digest. When the
    /// threshold is the 200 ms floor (any stream whose median gap is under 50 ms) the
    /// count and total are the exact ones kept for it. Above the floor the threshold
    /// comes from the digest's median, and a gap counts when its bucket's middle is
    /// above it: only gaps within 2 % of the true threshold can be counted differently,
    /// and each counted gap adds its bucket's middle to `stalled_ms`.
    pub fn stalls(&self) -> Option<Stalls> {
        if self.count < STALL_MIN_GAPS as u64 {
            return None;
        }
        let median = self.percentile(50.0)?;
        let threshold = stall_threshold(median);
        let (count, stalled_ms) = if threshold == STALL_FLOOR_MS {
            (self.above_floor, self.above_floor_ms)
        } else {
            self.buckets
                .iter()
                .map(|&(lower, n)| (n, self.middle(lower)))
                .filter(|&(_, value)| value > threshold)
                .fold((0, 0.0), |(count, total), (n, value)| {
                    (count + n, total + n as f64 * value)
                })
        };
        Some(Stalls {
            count: u32::try_from(count).unwrap_or(u32::MAX),
            stalled_ms,
            longest_gap_ms: self.max_ms,
            median_gap_ms: median,
            threshold_ms: threshold,
        })
    }

    /// What a report read from a file must hold for the readers above to be right:
    /// finite figures, min ≤ max, and ascending buckets that add up to `count`.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        if self.is_empty() {
            return Ok(());
        }
        let figures = [self.sum_ms, self.min_ms, self.max_ms, self.above_floor_ms];
        if figures.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err("a gap figure is negative or not finite");
        }
        if self.min_ms > self.max_ms {
            return Err("min_ms is above max_ms");
        }
        if self.buckets.windows(2).any(|w| w[0].0 >= w[1].0)
            || self.buckets.iter().any(|(l, _)| !l.is_finite() || *l < 0.0)
        {
            return Err("gap buckets are not ascending");
        }
        if self.buckets.iter().map(|(_, n)| n).sum::<u64>() != self.count {
            return Err("gap buckets do not add up to the gap count");
        }
        Ok(())
    }
}

/// The lower bound of the bucket a gap falls in: the gap with all but the top
/// [`BUCKET_MANTISSA_BITS`] mantissa bits cleared (for positive floats, bit order is
/// value order, and the result is the same on every platform). 0 for a gap of 0.
fn bucket_lower(gap_ms: f64) -> f64 {
    if gap_ms.is_nan() || gap_ms <= 0.0 {
        return 0.0;
    }
    let clamped = gap_ms.clamp(GAP_BUCKETED_MIN_MS, GAP_BUCKETED_MAX_MS);
    f64::from_bits(clamped.to_bits() >> BUCKET_DROPPED_BITS << BUCKET_DROPPED_BITS)
}

/// The middle of the bucket starting at `lower` (exactly representable: one more bit).
fn bucket_middle(lower: f64) -> f64 {
    if lower <= 0.0 {
        return 0.0;
    }
    let upper = f64::from_bits(lower.to_bits() + (1 << BUCKET_DROPPED_BITS));
    (lower + upper) / 2.0
}

#[cfg(test)]
mod tests;
