//! Chunk-series family: inter-chunk gaps (`icl`) and stalls (the rule is in
//! [`crate::stall`], shared with a summarized series' digest; re-exported here).

use crate::timeline::Chunk;

pub use crate::stall::{
    STALL_FACTOR, STALL_FLOOR_MS, STALL_MIN_GAPS, Stalls, stall_threshold, stalls,
};

/// Gaps between consecutive chunks that carry at least one token (any channel), in ms:
/// one sample per chunk after the first, the way vLLM's benchmark records "ITL". Chunks
/// without tokens (role-only, keep-alive, usage) neither start nor end a gap.
pub fn inter_chunk_gaps(chunks_by_time: &[Chunk]) -> Vec<f64> {
    let times: Vec<f64> = chunks_by_time
        .iter()
        .filter(|c| c.tokens() > 0)
        .map(|c| c.at_ms)
        .collect();
    times.windows(2).map(|w| w[1] - w[0]).collect()
}
