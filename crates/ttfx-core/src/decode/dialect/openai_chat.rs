//! OpenAI Chat Completions streaming (`chat.completion.chunk` objects over SSE), as
//! spoken by OpenAI and its compatibles.
//!
//! - `choices[0].delta.content` is visible text; `delta.refusal` is shown to the user too.
//! - `delta.reasoning_content` (DeepSeek, vLLM, SGLang, llama.cpp) and `delta.reasoning`
//!   (newer vLLM, OpenRouter) are reasoning.
//! - `delta.tool_calls[]` pieces become tool-call events.
//! - A role-only chunk (`{"role":"assistant","content":""}`) is not a token.
//! - `usage` (with `completion_tokens_details.reasoning_tokens`) may come in any chunk,
//!   typically the last one before `[DONE]` with `stream_options.include_usage`.
//! - llama.cpp adds its `timings` object to the final chunk.
//! - `data: [DONE]` ends the stream; `{"error": {...}}` (or vLLM's `"object": "error"`)
//!   reports a failure. Only choice 0 is decoded: a chat UI shows one answer.
//! - After an in-band error no more tokens are read, but the stream may still say what
//!   it cost and that it ended: OpenRouter's mid-stream error chunk carries `usage` and
//!   `finish_reason: "error"` (or a usage-only chunk follows it), then `data: [DONE]`.
//!   That usage and those timings are kept, and `[DONE]` is still the end marker.

use crate::decode::json::{self, JsonExt, NULL, Value};

use crate::decode::dialect::{
    Progress, SseDialect, UsageNames, llamacpp_timings, openai_usage, parse_json, push_reasoning,
    push_text, push_usage, server_error, str_field, u64_field,
};
use crate::decode::event::{ErrorClass, Event};
use crate::decode::sse::SseEvent;

#[derive(Default)]
pub struct OpenAiChat {
    progress: Progress,
    finish_reason: Option<String>,
    reasoning_streamed: bool,
    hidden_reported: bool,
}

impl SseDialect for OpenAiChat {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Event>) {
        if self.progress == Progress::Done {
            return;
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            // Also after an in-band error: the server still closed the stream properly.
            self.progress = Progress::Done;
            out.push(Event::Done {
                reason: self.finish_reason.take(),
            });
            return;
        }
        if self.progress == Progress::Failed {
            // No more tokens after an error, but a later usage-only chunk still counts.
            if let Some(chunk) = json::parse(data) {
                self.usage_and_timings(&chunk, out);
            }
            return;
        }
        let Some(chunk) = parse_json(data, out) else {
            return;
        };
        let error = match chunk.get("error").filter(|e| !e.is_null()) {
            Some(error) => Some(error),
            None if event.event_type == "error" || str_field(&chunk, "object") == Some("error") => {
                Some(&*chunk)
            }
            None => None,
        };
        if let Some(error) = error {
            self.fail(error, out);
            // The error chunk may carry the request's usage (OpenRouter) and a
            // `finish_reason`; its (empty) delta is not read.
            if let Some(reason) = first_choice(&chunk).and_then(|c| str_field(c, "finish_reason")) {
                self.finish_reason = Some(reason.to_owned());
            }
            self.usage_and_timings(&chunk, out);
            return;
        }
        let mut known = false;
        if chunk.get("choices").and_then(Value::as_array).is_some() {
            known = true;
            if let Some(choice) = first_choice(&chunk) {
                self.choice(choice, out);
            }
        }
        if self.usage_and_timings(&chunk, out) {
            known = true;
        }
        if !known {
            out.push(Event::error(
                ErrorClass::UnexpectedShape,
                "openai-chat: chunk has neither choices, usage nor timings",
            ));
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.progress.finish("`data: [DONE]`", out);
    }
}

/// Choice 0 of a chunk (a choice without `index` is choice 0).
fn first_choice<'v, 'a>(chunk: &'v Value<'a>) -> Option<&'v Value<'a>> {
    chunk
        .get("choices")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| u64_field(c, "index").unwrap_or(0) == 0)
}

impl OpenAiChat {
    /// The chunk's `usage` and llama.cpp `timings`; true when it had either.
    fn usage_and_timings(&mut self, chunk: &Value, out: &mut Vec<Event>) -> bool {
        let mut known = false;
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            known = true;
            push_usage(
                openai_usage(usage, UsageNames::CHAT),
                self.reasoning_streamed,
                &mut self.hidden_reported,
                out,
            );
        }
        if let Some(timings) = chunk.get("timings").filter(|t| t.is_object()) {
            known = true;
            llamacpp_timings::push_timings(timings, out);
        }
        known
    }

    fn choice(&mut self, choice: &Value, out: &mut Vec<Event>) {
        if let Some(delta) = choice.get("delta") {
            for key in ["reasoning_content", "reasoning"] {
                if push_reasoning(str_field(delta, key), out) {
                    self.reasoning_streamed = true;
                }
            }
            push_text(str_field(delta, "content"), out);
            push_text(str_field(delta, "refusal"), out);
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (position, call) in calls.iter().enumerate() {
                    let function = call.get("function").unwrap_or(&NULL);
                    out.push(Event::ToolCall {
                        index: u64_field(call, "index").unwrap_or(position as u64),
                        id: str_field(call, "id").map(str::to_owned),
                        name: str_field(function, "name").map(str::to_owned),
                        arguments: str_field(function, "arguments").unwrap_or("").to_owned(),
                    });
                }
            }
        }
        if let Some(reason) = str_field(choice, "finish_reason") {
            self.finish_reason = Some(reason.to_owned());
        }
    }

    fn fail(&mut self, error: &Value, out: &mut Vec<Event>) {
        self.progress = Progress::Failed;
        out.push(server_error(error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dialect::test_support::{classes, reasoning, run_sse_data, text};
    use crate::server_timing::Usage;

    fn run(data: &[&str]) -> Vec<Event> {
        run_sse_data(&mut OpenAiChat::default(), data)
    }

    #[test]
    fn role_only_chunk_is_no_token_and_content_is_text() {
        let events = run(&[
            r#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            [
                text("Hi"),
                Event::Done {
                    reason: Some("stop".into())
                }
            ]
        );
    }

    #[test]
    fn both_reasoning_spellings_and_hidden_reasoning_from_usage() {
        let events = run(&[
            r#"{"choices":[{"delta":{"reasoning_content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"b"}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(events[..2], [reasoning("a"), reasoning("b")]);

        let events = run(&[
            r#"{"choices":[{"delta":{"content":"x"}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":7},"prompt_tokens_details":{"cached_tokens":2}}}"#,
            "[DONE]",
        ]);
        assert_eq!(events[1], Event::HiddenReasoning { tokens: Some(7) });
        assert_eq!(
            events[2],
            Event::Usage {
                usage: Usage {
                    prompt_tokens: Some(5),
                    completion_tokens: Some(9),
                    reasoning_tokens: Some(7),
                    cached_prompt_tokens: Some(2),
                }
            }
        );
    }

    #[test]
    fn tool_call_pieces_keep_their_index() {
        let events = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events[..2],
            [
                Event::ToolCall {
                    index: 1,
                    id: Some("call_1".into()),
                    name: Some("f".into()),
                    arguments: String::new()
                },
                Event::ToolCall {
                    index: 1,
                    id: None,
                    name: None,
                    arguments: "{\"a\":".into()
                },
            ]
        );
    }

    #[test]
    fn usage_riding_with_an_error_is_kept_and_done_still_ends_the_stream() {
        let usage = |prompt, completion| Event::Usage {
            usage: Usage {
                prompt_tokens: Some(prompt),
                completion_tokens: Some(completion),
                ..Usage::default()
            },
        };
        let error = Event::Error {
            class: ErrorClass::Server,
            code: Some("server_error".into()),
            message: "gone".into(),
        };
        let done = Event::Done {
            reason: Some("error".into()),
        };
        // OpenRouter: one chunk with the error, `finish_reason: "error"` and usage.
        let events = run(&[
            r#"{"choices":[{"delta":{"content":"a"}}]}"#,
            r#"{"error":{"code":"server_error","message":"gone"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            [text("a"), error.clone(), usage(3, 1), done.clone()]
        );
        // The error, then a usage-only chunk; tokens after the error are not read, and
        // malformed or unknown chunks after it are not reported.
        let events = run(&[
            r#"{"error":{"code":"server_error","message":"gone"},"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}"#,
            r#"{"choices":[{"delta":{"content":"late"}}]}"#,
            "{not json",
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#,
            "[DONE]",
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":9}}"#,
        ]);
        assert_eq!(events, [error.clone(), usage(3, 2), done]);
        // Without `[DONE]` after the error nothing is owed: no truncation either.
        let events = run(&[r#"{"error":{"code":"server_error","message":"gone"}}"#]);
        assert_eq!(events, [error]);
    }

    #[test]
    fn errors_malformed_chunks_and_truncation() {
        let events = run(&[r#"{"error":{"message":"boom","type":"server_error"}}"#]);
        assert_eq!(classes(&events), [ErrorClass::Server]);
        let events = run(&[
            "{not json",
            r#"{"id":"x"}"#,
            r#"{"choices":[{"delta":{"content":"ok"}}]}"#,
        ]);
        assert_eq!(
            classes(&events),
            [
                ErrorClass::MalformedJson,
                ErrorClass::UnexpectedShape,
                ErrorClass::Truncated
            ]
        );
        assert!(events.contains(&text("ok")));
    }
}
