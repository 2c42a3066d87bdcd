//! Timings the server reports about itself: the other clock.
//!
//! A value here is what the server (or the vantage proxy) said, converted to
//! milliseconds, with where it came from. Parsers (the `Server-Timing` header, in-band
//! dialect fields) produce these; the timeline and the gap metrics consume them.

use serde::{Deserialize, Serialize};

/// Where a server-reported timing came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimingSource {
    /// The `Server-Timing` response header (known before the body: queue, accept).
    ServerTimingHeader,
    /// `Server-Timing` entries from the Resource Timing entry (`serverTiming`).
    ResourceTiming,
    /// llama.cpp's in-band `timings` object.
    LlamaCppTimings,
    /// Ollama's final object (`*_duration`, nanoseconds in the wire format).
    OllamaDurations,
    /// Any other in-band field of the stream's dialect.
    InBand,
    /// The ttfx vantage proxy's record for this request.
    VantageProxy,
    /// A provider's own documented timing header other than `Server-Timing` (OpenAI's
    /// `openai-processing-ms`, Envoy's `x-envoy-upstream-service-time`), as the vantage
    /// proxy read it; `name` is the header's name.
    ResponseHeader,
}

/// One server-reported duration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTiming {
    /// Metric name as the server spelled it (e.g. `queue`, `prompt_eval_duration`).
    pub name: String,
    /// Duration in milliseconds, when the entry carried one.
    pub duration_ms: Option<f64>,
    /// Free-text description, when the entry carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where the value came from.
    pub source: TimingSource,
}

/// Token counts the server reported (OpenAI/Anthropic `usage`, Ollama/llama.cpp counts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt (input) tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion (output) tokens, reasoning included where the server counts it so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Reasoning tokens (OpenAI `completion_tokens_details.reasoning_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Prompt tokens served from cache, where reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_snake_case_and_skips_absent_counts() {
        let t = ServerTiming {
            name: "queue".into(),
            duration_ms: Some(12.5),
            description: None,
            source: TimingSource::ServerTimingHeader,
        };
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(
            json,
            r#"{"name":"queue","duration_ms":12.5,"source":"server_timing_header"}"#
        );
        let u = Usage {
            completion_tokens: Some(3),
            ..Usage::default()
        };
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"completion_tokens":3}"#
        );
        let back: Usage = serde_json::from_str(r#"{"completion_tokens":3}"#).unwrap();
        assert_eq!(back, u);
    }
}
