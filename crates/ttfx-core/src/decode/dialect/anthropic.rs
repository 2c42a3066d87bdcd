//! Anthropic Messages streaming: `message_start`, `content_block_start`,
//! `content_block_delta` (`text_delta`, `thinking_delta`, `input_json_delta`,
//! `signature_delta`, `citations_delta`), `content_block_stop`, `message_delta` (stop
//! reason and cumulative usage), `message_stop`, `ping`, `error`.
//!
//! Usage arrives in pieces (input counts in `message_start`, the cumulative output count
//! in `message_delta`); each usage event carries everything known so far.

use crate::decode::json::{JsonExt, NULL, Value};

use crate::decode::dialect::{
    Progress, SseDialect, push_reasoning, push_text, server_error, str_field, typed_payload,
    u64_field, unknown_event,
};
use crate::decode::event::Event;
use crate::decode::sse::SseEvent;
use crate::server_timing::Usage;

#[derive(Default)]
pub struct Anthropic {
    progress: Progress,
    usage: Usage,
    stop_reason: Option<String>,
}

impl SseDialect for Anthropic {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Event>) {
        let Some((payload, kind)) = typed_payload(self.progress, event, out) else {
            return;
        };
        match kind.as_str() {
            "message_start" => {
                let usage = payload.get("message").and_then(|m| m.get("usage"));
                self.merge_usage(usage, out);
            }
            "content_block_start" => {
                let block = payload.get("content_block").unwrap_or(&NULL);
                let index = u64_field(&payload, "index").unwrap_or(0);
                match str_field(block, "type") {
                    Some("tool_use" | "server_tool_use") => out.push(Event::ToolCall {
                        index,
                        id: str_field(block, "id").map(str::to_owned),
                        name: str_field(block, "name").map(str::to_owned),
                        arguments: String::new(),
                    }),
                    Some("redacted_thinking") => out.push(Event::HiddenReasoning { tokens: None }),
                    // A block may open with text already in it.
                    Some("text") => push_text(str_field(block, "text"), out),
                    Some("thinking") => {
                        push_reasoning(str_field(block, "thinking"), out);
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = payload.get("delta").unwrap_or(&NULL);
                let index = u64_field(&payload, "index").unwrap_or(0);
                match str_field(delta, "type").unwrap_or("") {
                    "text_delta" => push_text(str_field(delta, "text"), out),
                    "thinking_delta" => {
                        push_reasoning(str_field(delta, "thinking"), out);
                    }
                    "input_json_delta" => out.push(Event::ToolCall {
                        index,
                        id: None,
                        name: None,
                        arguments: str_field(delta, "partial_json").unwrap_or("").to_owned(),
                    }),
                    // Integrity data for thinking blocks and citation metadata: no text.
                    "signature_delta" | "citations_delta" => {}
                    other => out.push(unknown_event(
                        "anthropic",
                        &format!("content_block_delta/{other}"),
                    )),
                }
            }
            "message_delta" => {
                if let Some(reason) = payload
                    .get("delta")
                    .and_then(|d| str_field(d, "stop_reason"))
                {
                    self.stop_reason = Some(reason.to_owned());
                }
                self.merge_usage(payload.get("usage"), out);
            }
            "message_stop" => {
                self.progress = Progress::Done;
                out.push(Event::Done {
                    reason: self.stop_reason.take(),
                });
            }
            "content_block_stop" | "ping" => {}
            "error" => {
                self.progress = Progress::Failed;
                let error = payload.get("error").unwrap_or(&payload);
                out.push(server_error(error));
            }
            other => out.push(unknown_event("anthropic", other)),
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.progress.finish("`message_stop`", out);
    }
}

impl Anthropic {
    /// Counts are cumulative: a present field replaces the one known before.
    fn merge_usage(&mut self, usage: Option<&Value>, out: &mut Vec<Event>) {
        let Some(usage) = usage.filter(|u| u.is_object()) else {
            return;
        };
        let fields = [
            ("input_tokens", &mut self.usage.prompt_tokens),
            ("output_tokens", &mut self.usage.completion_tokens),
            (
                "cache_read_input_tokens",
                &mut self.usage.cached_prompt_tokens,
            ),
        ];
        for (key, slot) in fields {
            if let Some(n) = u64_field(usage, key) {
                *slot = Some(n);
            }
        }
        out.push(Event::Usage {
            usage: self.usage.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dialect::test_support::{classes, reasoning, run_sse, text};
    use crate::decode::event::ErrorClass;

    #[test]
    fn thinking_text_tool_use_and_cumulative_usage() {
        let events = run_sse(
            &mut Anthropic::default(),
            &[
                (
                    "message_start",
                    r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}"#,
                ),
                ("ping", r#"{"type":"ping"}"#),
                (
                    "content_block_start",
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}"#,
                ),
                (
                    "content_block_start",
                    r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"tu_1","name":"f","input":{}}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}"#,
                ),
                (
                    "message_delta",
                    r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}"#,
                ),
                ("message_stop", r#"{"type":"message_stop"}"#),
            ],
        );
        let usage = |p, c| Event::Usage {
            usage: Usage {
                prompt_tokens: Some(p),
                completion_tokens: Some(c),
                ..Usage::default()
            },
        };
        assert_eq!(
            events,
            [
                usage(10, 1),
                reasoning("hmm"),
                text("Hi"),
                Event::ToolCall {
                    index: 2,
                    id: Some("tu_1".into()),
                    name: Some("f".into()),
                    arguments: String::new()
                },
                Event::ToolCall {
                    index: 2,
                    id: None,
                    name: None,
                    arguments: "{\"q\":1}".into()
                },
                usage(10, 42),
                Event::Done {
                    reason: Some("tool_use".into())
                },
            ]
        );
    }

    #[test]
    fn error_event_ends_without_truncation_and_unknown_types_are_reported() {
        let events = run_sse(
            &mut Anthropic::default(),
            &[
                ("future_event", r#"{"type":"future_event"}"#),
                (
                    "error",
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ),
            ],
        );
        assert_eq!(
            classes(&events),
            [ErrorClass::UnknownEvent, ErrorClass::Server]
        );
        assert!(
            matches!(&events[1], Event::Error { code: Some(c), .. } if c == "overloaded_error")
        );
    }
}
