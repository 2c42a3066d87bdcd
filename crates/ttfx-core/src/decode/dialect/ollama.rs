//! Ollama `/api/chat` and `/api/generate` streams (NDJSON).
//!
//! Text is `message.content` (chat) or `response` (generate); reasoning is
//! `message.thinking` or `thinking`; tool calls come whole in `message.tool_calls`. The
//! final object has `done: true`, the stop reason in `done_reason`, the counts
//! `prompt_eval_count`/`eval_count` and the durations `total_duration`, `load_duration`,
//! `prompt_eval_duration`, `eval_duration` in nanoseconds (converted to ms here). A
//! failure is `{"error": "..."}`.

use crate::decode::json::{JsonExt, NULL, Value};

use crate::decode::dialect::{
    LineDialect, Progress, parse_json, push_reasoning, push_text, server_error, str_field,
    u64_field,
};
use crate::decode::event::{ErrorClass, Event};
use crate::server_timing::{ServerTiming, TimingSource, Usage};

const DURATIONS: [&str; 4] = [
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
];

#[derive(Default)]
pub struct Ollama {
    progress: Progress,
    tool_calls: u64,
}

impl LineDialect for Ollama {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        if self.progress.is_over() {
            return;
        }
        let Some(object) = parse_json(line, out) else {
            return;
        };
        if let Some(error) = object.get("error").filter(|e| !e.is_null()) {
            self.progress = Progress::Failed;
            out.push(server_error(error));
            return;
        }
        let message = object.get("message");
        let done = object.get("done").and_then(Value::as_bool);
        if message.is_none() && object.get("response").is_none() && done.is_none() {
            out.push(Event::error(
                ErrorClass::UnexpectedShape,
                "ollama: object has neither message, response nor done",
            ));
            return;
        }
        let message = message.unwrap_or(&NULL);
        push_reasoning(
            str_field(message, "thinking").or(str_field(&object, "thinking")),
            out,
        );
        push_text(
            str_field(message, "content").or(str_field(&object, "response")),
            out,
        );
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                let function = call.get("function").unwrap_or(&NULL);
                // Ollama sends arguments as a JSON object, whole; the normalized event
                // carries JSON text like every other dialect.
                let arguments = match function.get("arguments") {
                    Some(Value::String(s)) => s.to_string(),
                    Some(v) => crate::decode::json::to_string(v),
                    None => String::new(),
                };
                out.push(Event::ToolCall {
                    index: self.tool_calls,
                    id: str_field(call, "id").map(str::to_owned),
                    name: str_field(function, "name").map(str::to_owned),
                    arguments,
                });
                self.tool_calls += 1;
            }
        }
        if done == Some(true) {
            self.finish_object(&object, out);
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.progress.finish("an object with `done: true`", out);
    }
}

impl Ollama {
    fn finish_object(&mut self, object: &Value, out: &mut Vec<Event>) {
        let usage = Usage {
            prompt_tokens: u64_field(object, "prompt_eval_count"),
            completion_tokens: u64_field(object, "eval_count"),
            ..Usage::default()
        };
        if usage != Usage::default() {
            out.push(Event::Usage { usage });
        }
        let timings: Vec<ServerTiming> = DURATIONS
            .iter()
            .filter_map(|name| {
                let ns = object.get(name)?.as_f64()?;
                Some(ServerTiming {
                    name: (*name).to_owned(),
                    duration_ms: Some(ns / 1e6),
                    description: None,
                    source: TimingSource::OllamaDurations,
                })
            })
            .collect();
        if !timings.is_empty() {
            out.push(Event::ServerTimings { timings });
        }
        self.progress = Progress::Done;
        out.push(Event::Done {
            reason: str_field(object, "done_reason").map(str::to_owned),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dialect::test_support::{classes, reasoning, text};

    fn run(lines: &[&str]) -> Vec<Event> {
        let mut dialect = Ollama::default();
        let mut out = Vec::new();
        for line in lines {
            dialect.line(line, &mut out);
        }
        dialect.finish(&mut out);
        out
    }

    #[test]
    fn chat_and_generate_shapes_with_durations_in_ms() {
        let events = run(&[
            r#"{"model":"m","message":{"role":"assistant","content":"","thinking":"t"},"done":false}"#,
            r#"{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}"#,
            r#"{"model":"m","response":" there","done":false}"#,
            r#"{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":1500000000,"load_duration":2500000,"prompt_eval_count":7,"prompt_eval_duration":12000000,"eval_count":3,"eval_duration":300000000}"#,
        ]);
        assert_eq!(events[..3], [reasoning("t"), text("Hi"), text(" there")]);
        assert_eq!(
            events[3],
            Event::Usage {
                usage: Usage {
                    prompt_tokens: Some(7),
                    completion_tokens: Some(3),
                    ..Usage::default()
                }
            }
        );
        let Event::ServerTimings { timings } = &events[4] else {
            panic!("{events:?}")
        };
        let ms: Vec<(&str, f64)> = timings
            .iter()
            .map(|t| (t.name.as_str(), t.duration_ms.unwrap()))
            .collect();
        assert_eq!(
            ms,
            [
                ("total_duration", 1500.0),
                ("load_duration", 2.5),
                ("prompt_eval_duration", 12.0),
                ("eval_duration", 300.0)
            ]
        );
        assert_eq!(
            events[5],
            Event::Done {
                reason: Some("stop".into())
            }
        );
    }

    #[test]
    fn tool_calls_error_and_truncation() {
        let events = run(&[
            r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},"done":false}"#,
            r#"{"error":"model 'x' not found"}"#,
        ]);
        assert_eq!(
            events[0],
            Event::ToolCall {
                index: 0,
                id: None,
                name: Some("f".into()),
                arguments: r#"{"a":1}"#.into()
            }
        );
        assert_eq!(classes(&events), [ErrorClass::Server]);
        assert_eq!(
            classes(&run(&[r#"{"response":"a","done":false}"#])),
            [ErrorClass::Truncated]
        );
    }
}
