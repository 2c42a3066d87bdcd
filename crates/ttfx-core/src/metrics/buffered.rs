//! The `buffered` verdict: was the visible text spread over the stream's life, or dumped
//! at once (JSON mode, a moderation pass, a buffering proxy)?
//!
//! Rule: take the chunks that carry visible tokens. With fewer than
//! [`BUFFERED_MIN_TOKENS`] visible tokens the verdict is `undetermined` (a short answer
//! arrives "at once" either way). Otherwise `burst_share` is the largest share of the
//! visible tokens that arrived within any window of [`BURST_WINDOW_MS`]; the stream is
//! `buffered` when `burst_share` ≥ [`BUFFERED_SHARE`], else `streamed`.

use serde::{Deserialize, Serialize};

use crate::timeline::Chunk;

/// About the span people perceive as "at once".
pub const BURST_WINDOW_MS: f64 = 100.0;
/// Share of the visible tokens that must land in one window to call the stream buffered.
pub const BUFFERED_SHARE: f64 = 0.9;
/// Below this a genuine stream at up to ~290 tok/s also fits 90 % of its tokens into one
/// 100 ms window, so the verdict would only measure the model's speed.
pub const BUFFERED_MIN_TOKENS: u64 = 32;

/// The verdict and the figures behind it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Buffered {
    pub verdict: BufferedVerdict,
    /// Visible tokens in the stream.
    pub visible_tokens: u64,
    /// Largest share of them inside one [`BURST_WINDOW_MS`] window; `None` with no visible
    /// tokens.
    pub burst_share: Option<f64>,
}

/// See the module docs for the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferedVerdict {
    Streamed,
    Buffered,
    Undetermined,
}

/// Applies the rule to a chunk series sorted by time.
pub fn verdict(chunks_by_time: &[Chunk]) -> Buffered {
    let visible: Vec<(f64, u64)> = chunks_by_time
        .iter()
        .filter(|c| c.visible_tokens > 0)
        .map(|c| (c.at_ms, u64::from(c.visible_tokens)))
        .collect();
    let total: u64 = visible.iter().map(|(_, n)| n).sum();
    // Two pointers: every window worth checking starts at a chunk.
    let (mut best, mut in_window, mut end) = (0u64, 0u64, 0usize);
    for &(t0, n0) in &visible {
        while end < visible.len() && visible[end].0 <= t0 + BURST_WINDOW_MS {
            in_window += visible[end].1;
            end += 1;
        }
        best = best.max(in_window);
        // The window's own first chunk is always inside it, so this never underflows.
        in_window -= n0;
    }
    of_counts(best, total)
}

/// The rule applied to its two figures: the most visible tokens in one window and the
/// visible tokens of the whole stream (a summarized series keeps both as it goes).
pub fn of_counts(best: u64, total: u64) -> Buffered {
    if total == 0 {
        return Buffered {
            verdict: BufferedVerdict::Undetermined,
            visible_tokens: 0,
            burst_share: None,
        };
    }
    let share = best as f64 / total as f64;
    let verdict = if total < BUFFERED_MIN_TOKENS {
        BufferedVerdict::Undetermined
    } else if share >= BUFFERED_SHARE {
        BufferedVerdict::Buffered
    } else {
        BufferedVerdict::Streamed
    };
    Buffered {
        verdict,
        visible_tokens: total,
        burst_share: Some(share),
    }
}
