//! OpenAI Responses API streaming: typed SSE events (`response.*`, `error`), the type in
//! both the SSE `event` field and the JSON's `type`.
//!
//! Text comes from `response.output_text.delta` (and `response.refusal.delta`); reasoning
//! from `response.reasoning_text.delta` and the summary deltas; tool calls from
//! `response.output_item.added` (a `function_call` item) and
//! `response.function_call_arguments.delta`. `response.completed` and
//! `response.incomplete` carry usage and end the stream; `response.failed` and `error`
//! report failures. Lifecycle events and hosted-tool progress are known and skipped.

use crate::decode::json::{JsonExt, NULL, Value};

use crate::decode::dialect::{
    Progress, SseDialect, UsageNames, openai_usage, push_reasoning, push_text, push_usage,
    server_error, str_field, typed_payload, u64_field, unknown_event,
};
use crate::decode::event::Event;
use crate::decode::sse::SseEvent;

/// Events that carry nothing a user waits for.
const SKIPPED: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.done",
    "response.function_call_arguments.done",
    "response.reasoning_text.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary.done",
];

/// Families of hosted-tool progress events, skipped as a whole.
const SKIPPED_PREFIXES: &[&str] = &[
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call",
    "response.image_generation_call.",
    "response.mcp_",
    "response.custom_tool_call_input.",
];

#[derive(Default)]
pub struct OpenAiResponses {
    progress: Progress,
    reasoning_streamed: bool,
    hidden_reported: bool,
}

impl SseDialect for OpenAiResponses {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Event>) {
        let Some((payload, kind)) = typed_payload(self.progress, event, out) else {
            return;
        };
        match kind.as_str() {
            "response.output_text.delta" | "response.refusal.delta" => {
                push_text(delta(&payload), out)
            }
            "response.reasoning_text.delta"
            | "response.reasoning_summary_text.delta"
            | "response.reasoning_summary.delta"
            | "response.reasoning.delta" => {
                if push_reasoning(delta(&payload), out) {
                    self.reasoning_streamed = true;
                }
            }
            "response.output_item.added" => push_function_call(&payload, out),
            "response.function_call_arguments.delta" => out.push(Event::ToolCall {
                index: u64_field(&payload, "output_index").unwrap_or(0),
                id: None,
                name: None,
                arguments: delta(&payload).unwrap_or("").to_owned(),
            }),
            "response.completed" | "response.incomplete" => self.complete(&payload, out),
            "response.failed" => {
                let response = payload.get("response").unwrap_or(&NULL);
                let error = response.get("error").filter(|e| !e.is_null());
                self.fail(error.unwrap_or(response), out);
            }
            "error" => {
                let error = payload.get("error").filter(|e| e.is_object());
                self.fail(error.unwrap_or(&payload), out);
            }
            other => {
                if !is_skipped(other) {
                    out.push(unknown_event("openai-responses", other));
                }
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.progress.finish("`response.completed`", out);
    }
}

impl OpenAiResponses {
    /// `response.completed` or `response.incomplete`: the usage, if any, then the end of
    /// the stream with the reason an incomplete response gives.
    fn complete(&mut self, payload: &Value, out: &mut Vec<Event>) {
        let response = payload.get("response").unwrap_or(&NULL);
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            push_usage(
                openai_usage(usage, UsageNames::RESPONSES),
                self.reasoning_streamed,
                &mut self.hidden_reported,
                out,
            );
        }
        let reason = response
            .get("incomplete_details")
            .and_then(|d| str_field(d, "reason"))
            .or_else(|| str_field(response, "status"));
        self.progress = Progress::Done;
        out.push(Event::Done {
            reason: reason.map(str::to_owned),
        });
    }

    /// A failure ends the stream: `response.failed` or an `error` event.
    fn fail(&mut self, error: &Value, out: &mut Vec<Event>) {
        self.progress = Progress::Failed;
        out.push(server_error(error));
    }
}

/// An event's text delta. The summary event's delta is an object with `text`; the
/// others a string.
fn delta<'v>(payload: &'v Value<'_>) -> Option<&'v str> {
    let delta = payload.get("delta");
    delta
        .and_then(Value::as_str)
        .or_else(|| delta.and_then(|d| str_field(d, "text")))
}

/// The start of a tool call, when the added output item is a `function_call` (other
/// items, messages or reasoning, start nothing a user waits for).
fn push_function_call(payload: &Value, out: &mut Vec<Event>) {
    let item = payload.get("item").unwrap_or(&NULL);
    if str_field(item, "type") == Some("function_call") {
        out.push(Event::ToolCall {
            index: u64_field(payload, "output_index").unwrap_or(0),
            id: str_field(item, "call_id").map(str::to_owned),
            name: str_field(item, "name").map(str::to_owned),
            arguments: str_field(item, "arguments").unwrap_or("").to_owned(),
        });
    }
}

/// Lifecycle events and hosted-tool progress: known, and nothing to record.
fn is_skipped(kind: &str) -> bool {
    SKIPPED.contains(&kind) || SKIPPED_PREFIXES.iter().any(|p| kind.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dialect::test_support::{classes, reasoning, run_sse_data, text};
    use crate::decode::event::ErrorClass;

    fn run(data: &[&str]) -> Vec<Event> {
        run_sse_data(&mut OpenAiResponses::default(), data)
    }

    #[test]
    fn text_reasoning_usage_and_completion() {
        let events = run(&[
            r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","delta":"think"}"#,
            r#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":3,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}}}}"#,
        ]);
        assert_eq!(events[..2], [reasoning("think"), text("Hi")]);
        assert!(matches!(&events[2], Event::Usage { usage } if usage.reasoning_tokens == Some(2)));
        assert_eq!(
            events[3],
            Event::Done {
                reason: Some("completed".into())
            }
        );
        assert_eq!(
            events.len(),
            4,
            "streamed reasoning is not hidden: {events:?}"
        );
    }

    #[test]
    fn failures_unknown_events_and_truncation() {
        let events = run(&[
            r#"{"type":"response.new_thing","x":1}"#,
            r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"oops"}}}"#,
        ]);
        assert_eq!(
            classes(&events),
            [ErrorClass::UnknownEvent, ErrorClass::Server]
        );
        let events = run(&[r#"{"type":"error","code":"rate_limit_exceeded","message":"slow"}"#]);
        assert!(
            matches!(&events[..], [Event::Error { code: Some(c), .. }] if c == "rate_limit_exceeded")
        );
        let events = run(&[r#"{"type":"response.output_text.delta","delta":"a"}"#]);
        assert_eq!(classes(&events), [ErrorClass::Truncated]);
    }

    #[test]
    fn function_call_item_then_argument_deltas() {
        let events = run(&[
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","call_id":"c1","name":"get","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{}"}"#,
            r#"{"type":"response.completed","response":{"status":"completed"}}"#,
        ]);
        assert_eq!(
            events[..2],
            [
                Event::ToolCall {
                    index: 1,
                    id: Some("c1".into()),
                    name: Some("get".into()),
                    arguments: String::new()
                },
                Event::ToolCall {
                    index: 1,
                    id: None,
                    name: None,
                    arguments: "{}".into()
                },
            ]
        );
    }
}
