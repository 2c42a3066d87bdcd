//! llama.cpp server's native `/completion` stream (SSE): `content` pieces, `stop: true`
//! on the last object, with its `timings` (`prompt_n`, `prompt_ms`, `predicted_n`,
//! `predicted_ms`, `predicted_per_second`, `cache_n`). The same `timings` object rides on
//! the last chunk of llama.cpp's OpenAI-compatible endpoint, so both dialects read it
//! with `llamacpp_timings::push_timings`.
//!
//! llama-server also serves `/v1/chat/completions`: OpenAI chat chunks (with `timings`).
//! `--dialect llamacpp` reads that stream too: a chunk with `choices` or an `object` of
//! `chat.completion*` hands this and every later event to the OpenAI chat dialect, so the
//! tokens, usage, timings and `[DONE]` come out as `auto` decodes them.

use crate::decode::json::{JsonExt, Value};

use crate::decode::dialect::llamacpp_timings::push_timings;
use crate::decode::dialect::openai_chat::OpenAiChat;
use crate::decode::dialect::{
    Progress, SseDialect, parse_json, push_text, server_error, str_field,
};
use crate::decode::event::{ErrorClass, Event};
use crate::decode::sse::SseEvent;

#[derive(Default)]
pub struct LlamaCpp {
    progress: Progress,
    /// Set when the stream is llama-server's OpenAI-compatible one.
    openai: Option<OpenAiChat>,
}

impl SseDialect for LlamaCpp {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Event>) {
        if let Some(openai) = &mut self.openai {
            openai.event(event, out);
            return;
        }
        if self.progress.is_over() || event.data.trim() == "[DONE]" {
            return;
        }
        let Some(chunk) = parse_json(&event.data, out) else {
            return;
        };
        if is_openai_chat_chunk(&chunk) {
            let openai = self.openai.insert(OpenAiChat::default());
            openai.event(event, out);
            return;
        }
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
        match &mut self.openai {
            Some(openai) => openai.finish(out),
            None => self.progress.finish("an object with `stop: true`", out),
        }
    }
}

/// An OpenAI chat chunk (llama-server's `/v1/chat/completions`), by the same signs
/// `auto` detects it by; a native `/completion` object has neither.
fn is_openai_chat_chunk(chunk: &Value) -> bool {
    chunk.get("choices").is_some()
        || str_field(chunk, "object").is_some_and(|o| o.starts_with("chat.completion"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dialect::test_support::{classes, run_sse, run_sse_data, text};
    use crate::server_timing::Usage;

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

    /// llama-server's `/v1/chat/completions` stream, as its README describes it.
    const OPENAI_STREAM: &[&str] = &[
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"}"#,
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"object":"chat.completion.chunk"}"#,
        r#"{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"object":"chat.completion.chunk","usage":{"completion_tokens":1,"prompt_tokens":5},"timings":{"prompt_n":5,"prompt_ms":10.0,"predicted_n":1,"predicted_ms":4.0,"predicted_per_second":250.0}}"#,
        "[DONE]",
    ];

    #[test]
    fn the_openai_compatible_stream_decodes_as_openai_chat_does() {
        let as_llamacpp = run_sse_data(&mut LlamaCpp::default(), OPENAI_STREAM);
        let as_openai = run_sse_data(&mut OpenAiChat::default(), OPENAI_STREAM);
        assert_eq!(as_llamacpp, as_openai);
        assert_eq!(as_llamacpp[0], text("Hi"));
        assert!(
            as_llamacpp
                .iter()
                .any(|e| matches!(e, Event::ServerTimings { timings } if timings.len() == 3))
        );
        assert_eq!(
            as_llamacpp.last(),
            Some(&Event::Done {
                reason: Some("stop".into())
            })
        );
        assert!(classes(&as_llamacpp).is_empty(), "{as_llamacpp:?}");
        // Its end marker is `[DONE]`: without it the stream is truncated.
        let cut = run_sse_data(&mut LlamaCpp::default(), &OPENAI_STREAM[..3]);
        assert_eq!(classes(&cut), [ErrorClass::Truncated]);
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
