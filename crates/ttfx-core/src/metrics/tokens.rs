//! Token family: output token count and its source, `tpot`, rates, hidden reasoning.
//!
//! The count comes from the server's `usage` when it sent one. Otherwise it is an
//! estimate, labelled [`Source::Estimate`]: the number of non-empty text deltas (visible
//! plus reasoning) the decoder saw, i.e. one token per delta, which is what
//! OpenAI-compatible servers send when they do not coalesce. Servers or proxies that put
//! several tokens in one delta make the estimate low and the TPOT high.

use serde::{Deserialize, Serialize};

use super::latency::Outcome;
use super::{Measured, Source};
use crate::milestone::Milestone;
use crate::timeline::{Chunk, Timeline};

/// Reasoning the server counted against what reached the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HiddenReasoning {
    /// `usage` reasoning tokens.
    pub reported_tokens: u64,
    /// Reasoning tokens seen in the stream.
    pub streamed_tokens: u64,
    /// The server reasoned and streamed none of it: the wait before the first token is
    /// thinking time the user cannot see.
    pub hidden: bool,
}

/// What one request's stream and usage say about tokens.
pub(crate) struct TokenFacts {
    pub output: Option<Measured>,
    pub hidden_reasoning: Option<HiddenReasoning>,
    /// Tokens that arrived between `first_token` and `last_token` inclusive, with source.
    streamed_span: Option<Measured>,
}

impl TokenFacts {
    pub fn from_timeline(t: &Timeline, chunks: &[Chunk]) -> TokenFacts {
        // A summarized series keeps the totals of the chunks it did not keep, exactly.
        let (rest, rest_reasoning) = t.chunk_summary.as_ref().map_or((0, 0), |s| {
            (s.visible_tokens + s.reasoning_tokens, s.reasoning_tokens)
        });
        let streamed: u64 = chunks.iter().map(Chunk::tokens).sum::<u64>() + rest;
        let streamed_reasoning: u64 = chunks
            .iter()
            .map(|c| u64::from(c.reasoning_tokens))
            .sum::<u64>()
            + rest_reasoning;
        let usage = t.server.usage.as_ref();

        let hidden_reasoning =
            usage
                .and_then(|u| u.reasoning_tokens)
                .map(|reported| HiddenReasoning {
                    reported_tokens: reported,
                    streamed_tokens: streamed_reasoning,
                    hidden: reported > 0 && streamed_reasoning == 0,
                });
        let estimate = (streamed > 0).then_some(Measured {
            value: streamed as f64,
            source: Source::Estimate,
        });

        let (output, streamed_span) = match usage.and_then(|u| u.completion_tokens) {
            Some(n) => {
                // Hidden reasoning tokens were generated before the first streamed token,
                // so they are outside the first→last span that TPOT divides.
                let hidden = hidden_reasoning
                    .filter(|h| h.hidden)
                    .map_or(0, |h| h.reported_tokens);
                let usage_count = |n: u64| Measured {
                    value: n as f64,
                    source: Source::ServerUsage,
                };
                (
                    Some(usage_count(n)),
                    Some(usage_count(n.saturating_sub(hidden))),
                )
            }
            None => (estimate, estimate),
        };
        TokenFacts {
            output,
            hidden_reasoning,
            streamed_span,
        }
    }

    /// `tpot` = (last_token − first_token) / (tokens − 1), the vLLM convention (AIPerf and
    /// GuideLLM call it ITL). Completed requests with at least two tokens only.
    pub fn tpot(&self, t: &Timeline, outcome: Outcome) -> Option<Measured> {
        if outcome != Outcome::Completed {
            return None;
        }
        let first = t.milestones.get(Milestone::FirstToken)?;
        let last = t.milestones.get(Milestone::LastToken)?;
        let n = self.streamed_span?;
        (n.value >= 2.0).then(|| Measured {
            value: (last - first) / (n.value - 1.0),
            source: n.source,
        })
    }
}

/// Output tokens per second of the whole request: tokens / e2e (LLMPerf's
/// `request_output_throughput_token_per_s`).
pub fn output_rate(output: Option<Measured>, e2e: Option<Measured>) -> Option<Measured> {
    let (n, e2e) = (output?, e2e?);
    (e2e.value > 0.0).then(|| Measured {
        value: n.value * 1000.0 / e2e.value,
        source: n.source,
    })
}

/// The decode rate once tokens flow: 1000 / tpot (GuideLLM's `output_tokens_per_second`).
pub fn decode_rate(tpot: Option<Measured>) -> Option<Measured> {
    let tpot = tpot?;
    (tpot.value > 0.0).then(|| Measured {
        value: 1000.0 / tpot.value,
        source: tpot.source,
    })
}
