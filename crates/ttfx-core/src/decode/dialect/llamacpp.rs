//! llama.cpp server's native `/completion` stream (SSE): `content` pieces, `stop: true`
//! on the last object, with its `timings` (`prompt_n`, `prompt_ms`, `predicted_n`,
//! `predicted_ms`, `predicted_per_second`, `cache_n`). The same `timings` object rides on
//! the last chunk of llama.cpp's OpenAI-compatible endpoint, so the OpenAI dialect uses
//! [`push_timings`] too.

use crate::decode::json::{JsonExt, Value};

use crate::decode::dialect::{
    Progress, SseDialect, f64_field, parse_json, push_text, server_error, str_field, u64_field,
};
use crate::decode::event::{ErrorClass, Event};
use crate::decode::sse::SseEvent;
use crate::server_timing::{ServerTiming, TimingSource, Usage};

#[derive(Default)]
pub struct LlamaCpp {
    progress: Progress,
}

impl SseDialect for LlamaCpp {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Event>) {
        if self.progress.is_over() || event.data.trim() == "[DONE]" {
            return;
        }
        let Some(chunk) = parse_json(&event.data, out) else {
            return;
        };
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            self.progress = Progress::Failed;
            out.push(server_error(error));
            return;
        }
        let content = str_field(&chunk, "content");
        let stop = chunk.get("stop").and_then(Value::as_bool);
        if content.is_none() && stop.is_none() {
            out.push(Event::error(
                ErrorClass::UnexpectedShape,
                "llamacpp: object has neither content nor stop",
            ));
            return;
        }
        push_text(content, out);
        if let Some(timings) = chunk.get("timings").filter(|t| t.is_object()) {
            push_timings(timings, out);
        }
        if stop == Some(true) {
            self.progress = Progress::Done;
            out.push(Event::Done {
                reason: str_field(&chunk, "stop_type").map(str::to_owned),
            });
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.progress.finish("an object with `stop: true`", out);
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dialect::test_support::{classes, run_sse, text};

    #[test]
    fn content_then_stop_with_timings() {
        let events = run_sse(
            &mut LlamaCpp::default(),
            &[
                ("message", r#"{"content":"Hel","stop":false}"#),
                ("message", r#"{"content":"lo","stop":false}"#),
                (
                    "message",
                    r#"{"content":"","stop":true,"stop_type":"eos","timings":{"prompt_n":4,"prompt_ms":12.5,"predicted_n":2,"predicted_ms":40.0,"predicted_per_second":50.0,"cache_n":3}}"#,
                ),
            ],
        );
        assert_eq!(events[..2], [text("Hel"), text("lo")]);
        assert_eq!(
            events[2],
            Event::Usage {
                usage: Usage {
                    prompt_tokens: Some(4),
                    completion_tokens: Some(2),
                    reasoning_tokens: None,
                    cached_prompt_tokens: Some(3)
                }
            }
        );
        let Event::ServerTimings { timings } = &events[3] else {
            panic!("{events:?}")
        };
        let pairs: Vec<(&str, Option<f64>)> = timings
            .iter()
            .map(|t| (t.name.as_str(), t.duration_ms))
            .collect();
        assert_eq!(
            pairs,
            [
                ("prompt_ms", Some(12.5)),
                ("predicted_ms", Some(40.0)),
                ("predicted_per_token_ms", Some(20.0))
            ]
        );
        assert_eq!(
            events[4],
            Event::Done {
                reason: Some("eos".into())
            }
        );
        assert_eq!(events.len(), 5);
    }

    #[test]
    fn missing_stop_is_truncation() {
        let events = run_sse(
            &mut LlamaCpp::default(),
            &[("message", r#"{"content":"a","stop":false}"#)],
        );
        assert_eq!(classes(&events), [ErrorClass::Truncated]);
    }
}
