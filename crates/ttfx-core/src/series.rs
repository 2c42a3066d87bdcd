//! The chunk series of a long stream, in bounded memory.
//!
//! A 2-hour stream at 50 chunks/s is 360,000 chunks and a 500 MB body can be millions;
//! one [`Chunk`] each would grow the probe's memory, and its report, with the stream.
//! So a [`Recorder`](crate::Recorder) keeps the first [`KEPT_CHUNKS`] chunks one by one
//! in `timeline.chunks` and folds every later chunk into a [`ChunkSummary`], built so
//! that each metric the series feeds stays right:
//!
//! - totals of the later chunks (chunks, bytes, events, visible and reasoning tokens):
//!   exact, so token counts, `tpot` and the rates are exact;
//! - [`ChunkBin`]s: the later chunks merged in consecutive windows of equal chunk count,
//!   at most `kept / 8` of them, so the whole series still plots (downsampled);
//! - a [`GapDigest`] of every gap between token chunks of the whole stream, the kept
//!   chunks' too: count, sum, min, max and the gaps above the stall floor exactly; order
//!   statistics (percentiles, the median of the stall rule) from 64 buckets per doubling,
//!   within [`GAP_RELATIVE_ERROR`] of the true value;
//! - the `buffered` verdict's busiest window, computed as the chunks arrive: exact.
//!
//! The figures are computed in arrival order, which is time order for every caller (a
//! chunk is timed when it is handed over). A later chunk timed before an earlier one is
//! counted as arriving with it, and the recorder notes a `chunk_out_of_order` anomaly.
//!
//! Memory per recorder with the default bound: 2,048 kept chunks × 32 B = 64 KiB, at
//! most 256 bins × 56 B = 14 KiB, a digest of at most 3,329 buckets × 16 B (64 KiB of
//! capacity; a real stream fills a few hundred), and the burst window of at most
//! [`BURST_TIMES_MAX`] × 16 B = 64 KiB (the visible-token chunks of the last 100 ms):
//! at most 206 KiB however long the stream, about 90 KiB for a typical long one.

use std::collections::VecDeque;

use crate::metrics::buffered::BURST_WINDOW_MS;
use crate::timeline::Chunk;

// The summary's types live below the timeline that holds them; re-exported here, where
// they are made.
pub use crate::chunk_summary::{ChunkBin, ChunkSummary, GAP_RELATIVE_ERROR, GapDigest};

/// Chunks a recorder keeps one by one before it summarizes the rest: 2,048 × 32 B =
/// 64 KiB, more chunks than a chat reply of a few thousand tokens has (the page hands
/// over a network read at a time, often several tokens). It also bounds the report,
/// which lists each kept chunk (about 80 B of JSON) and its gap: with 8,192 a
/// 50,000-event stream wrote a 0.7 MB report (#35), now at most about 0.25 MB
/// (crates/ttfx-analysis/tests/report_size.rs).
pub const KEPT_CHUNKS: usize = 2_048;

/// Bins per kept chunk: a recorder keeping `k` chunks holds at most `k / 8` bins.
const KEPT_PER_BIN: usize = 8;

/// Most distinct arrival times the `buffered` burst window holds. Browsers coarsen
/// `performance.now()` to 5 µs or more, and a page cannot hand over anywhere near
/// 4,096 token chunks in 100 ms, so a real stream never fills it. Past it the two oldest
/// times merge into the older one, which can only undercount a window:
/// `burst_visible_tokens` is then a lower bound and says so.
pub const BURST_TIMES_MAX: usize = 4_096;

/// How many chunks a recorder keeps one by one, and how many bins it may hold after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SeriesBound {
    pub kept: usize,
    max_bins: usize,
}

impl SeriesBound {
    pub(crate) fn keeping(kept: usize) -> SeriesBound {
        // Even, so that a full set of bins merges in pairs.
        let max_bins = (kept / KEPT_PER_BIN).max(2) & !1;
        SeriesBound { kept, max_bins }
    }
}

/// The running state behind a [`ChunkSummary`]: what is needed to fold in the next
/// chunk, and nothing of the chunks already folded.
#[derive(Debug)]
pub(crate) struct Summarizer {
    max_bins: usize,
    /// Chunks per bin; doubles each time the bins fill up and merge in pairs.
    bin_width: u64,
    /// The latest arrival so far.
    last_at: f64,
    last_token_at: Option<f64>,
    /// Visible-token chunks of the last `BURST_WINDOW_MS`: (arrival, visible tokens),
    /// one entry per distinct arrival time.
    burst: VecDeque<(f64, u64)>,
    burst_tokens: u64,
}

impl Summarizer {
    /// Starts summarizing after the `kept` chunks. They are replayed in time order, so
    /// the gaps and the burst window cover the stream from its first chunk.
    pub(crate) fn start(kept: &[Chunk], bound: SeriesBound) -> (Summarizer, ChunkSummary) {
        let mut summarizer = Summarizer {
            max_bins: bound.max_bins,
            bin_width: 1,
            last_at: f64::NEG_INFINITY,
            last_token_at: None,
            burst: VecDeque::new(),
            burst_tokens: 0,
        };
        let mut summary = ChunkSummary::default();
        for c in crate::order::sorted_by_key(kept, |c| c.at_ms) {
            summarizer.observe(&mut summary, c.at_ms, &c);
        }
        (summarizer, summary)
    }

    /// Folds one chunk after the kept ones into `summary`. False when it was timed
    /// before an earlier chunk (it is then counted as arriving with that one).
    pub(crate) fn push(&mut self, summary: &mut ChunkSummary, c: &Chunk) -> bool {
        summary.chunks += 1;
        summary.bytes += c.bytes;
        summary.events += u64::from(c.events);
        summary.visible_tokens += u64::from(c.visible_tokens);
        summary.reasoning_tokens += u64::from(c.reasoning_tokens);
        self.bin(&mut summary.bins, c);
        let in_order = c.at_ms >= self.last_at;
        self.observe(summary, c.at_ms.max(self.last_at), c);
        in_order
    }

    /// The running figures: gaps between token chunks and the busiest window of
    /// visible tokens (the same two-pointer rule as `buffered::verdict`, seen from each
    /// window's last chunk: the largest window is the same).
    fn observe(&mut self, summary: &mut ChunkSummary, at: f64, c: &Chunk) {
        self.last_at = at;
        if c.tokens() > 0
            && let Some(previous) = self.last_token_at.replace(at)
        {
            summary.gaps.insert(at - previous);
        }
        if c.visible_tokens == 0 {
            return;
        }
        // The same comparison as the two-pointer rule: a chunk is inside the window
        // that starts at `t0` when its time is ≤ t0 + BURST_WINDOW_MS.
        while let Some(&(t0, n0)) = self.burst.front() {
            if at <= t0 + BURST_WINDOW_MS {
                break;
            }
            self.burst.pop_front();
            self.burst_tokens -= n0;
        }
        let n = u64::from(c.visible_tokens);
        match self.burst.back_mut() {
            Some(last) if last.0 == at => last.1 += n,
            _ => {
                if self.burst.len() >= BURST_TIMES_MAX
                    && let Some((t0, n0)) = self.burst.pop_front()
                    && let Some(next) = self.burst.front_mut()
                {
                    // Merged into the older time: those tokens may leave the window
                    // early, so a later window can only be undercounted.
                    *next = (t0, next.1 + n0);
                    summary.burst_lower_bound = true;
                }
                self.burst.push_back((at, n));
            }
        }
        self.burst_tokens += n;
        summary.burst_visible_tokens = summary.burst_visible_tokens.max(self.burst_tokens);
    }

    /// Adds `c` to the last bin, or starts a new one; when all bins are full, adjacent
    /// pairs merge first, so bins always hold the same number of chunks.
    fn bin(&mut self, bins: &mut Vec<ChunkBin>, c: &Chunk) {
        if let Some(last) = bins.last_mut()
            && last.chunks < self.bin_width
        {
            last.add(&c.as_bin());
            return;
        }
        if bins.len() >= self.max_bins {
            let pairs = bins.len() / 2;
            for i in 0..pairs {
                let mut merged = bins[2 * i];
                merged.add(&bins[2 * i + 1]);
                bins[i] = merged;
            }
            bins.truncate(pairs);
            self.bin_width *= 2;
        }
        bins.push(c.as_bin());
    }

    /// Bytes this state holds (tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.burst.capacity() * std::mem::size_of::<(f64, u64)>()
    }
}

#[cfg(test)]
mod tests;
