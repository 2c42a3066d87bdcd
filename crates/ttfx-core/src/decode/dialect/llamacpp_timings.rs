//! llama.cpp's `timings` object, which its native `/completion` stream (`llamacpp`) and
//! its OpenAI-compatible endpoint (`openai_chat`) both carry on their last chunk.

use crate::decode::dialect::{f64_field, u64_field};
use crate::decode::event::Event;
use crate::decode::json::Value;
use crate::server_timing::{ServerTiming, TimingSource, Usage};

/// llama.cpp's `timings` object → usage counts and server timings (already in ms; the
/// generation rate becomes milliseconds per token so every timing shares one unit).
pub(crate) fn push_timings(timings: &Value, out: &mut Vec<Event>) {
    let usage = Usage {
        prompt_tokens: u64_field(timings, "prompt_n"),
        completion_tokens: u64_field(timings, "predicted_n"),
        reasoning_tokens: None,
        cached_prompt_tokens: u64_field(timings, "cache_n"),
    };
    if usage != Usage::default() {
        out.push(Event::Usage { usage });
    }
    let timing = |name: &str, duration_ms: f64, description: Option<&str>| ServerTiming {
        name: name.to_owned(),
        duration_ms: Some(duration_ms),
        description: description.map(str::to_owned),
        source: TimingSource::LlamaCppTimings,
    };
    let mut list = Vec::new();
    for name in ["prompt_ms", "predicted_ms"] {
        if let Some(ms) = f64_field(timings, name) {
            list.push(timing(name, ms, None));
        }
    }
    if let Some(rate) = f64_field(timings, "predicted_per_second").filter(|r| *r > 0.0) {
        list.push(timing(
            "predicted_per_token_ms",
            1000.0 / rate,
            Some("1000 / predicted_per_second"),
        ));
    }
    if !list.is_empty() {
        out.push(Event::ServerTimings { timings: list });
    }
}
