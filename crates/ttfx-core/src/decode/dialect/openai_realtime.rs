//! OpenAI Realtime API server events (JSON messages over a WebSocket, each with a `type`
//! and an `event_id`). The probe hands each text message to the decoder as one SSE event
//! (docs/probe.md, Transports), so this is an SSE dialect like the others.
//!
//! Visible text comes from the transcript and text deltas (`response.text.delta`,
//! `response.output_text.delta`, `response.audio_transcript.delta`,
//! `response.output_audio_transcript.delta`, the GA names and the beta ones): in a voice
//! reply the transcript is the text the user is shown. Audio deltas (`response.audio.delta`,
//! `response.output_audio.delta`) are base64 audio in the session's output format, decoded
//! as `openai-speech`'s are (PCM16 at 24 kHz unless a WAV header says otherwise): they make
//! the audio series and are not tokens, so `first_token` is the first transcript or text
//! delta, never an audio delta. Tool calls come from `response.function_call_arguments.delta`.
//! `response.done` ends the reply, with usage (`response.usage.input_tokens` /
//! `output_tokens`) and its status; a `failed` status or an `error` event is a failure.
//! Session, conversation and buffer events, and the per-part `.done` events, are known
//! and skipped.

use crate::decode::audio::{AudioKind, AudioStream};
use crate::decode::base64;
use crate::decode::dialect::{
    Progress, SseDialect, UsageNames, openai_usage, push_text, server_error, str_field,
    typed_payload, u64_field, unknown_event,
};
use crate::decode::event::{ErrorClass, Event};
use crate::decode::json::{JsonExt, NULL};
use crate::decode::sse::SseEvent;

/// Families of events that carry nothing a user waits for in a reply.
const SKIPPED_PREFIXES: &[&str] = &[
    "session.",
    "transcription_session.",
    "conversation.",
    "input_audio_buffer.",
    "output_audio_buffer.",
    "rate_limits.",
    "response.created",
    "response.output_item.",
    "response.content_part.",
    "response.mcp_call",
];

pub struct OpenAiRealtime {
    progress: Progress,
    audio: AudioStream,
}

impl Default for OpenAiRealtime {
    fn default() -> Self {
        OpenAiRealtime {
            progress: Progress::default(),
            audio: AudioStream::new(AudioKind::Sniff {
                sample_rate: 24_000,
                channels: 1,
            }),
        }
    }
}

impl SseDialect for OpenAiRealtime {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Event>) {
        let Some((payload, kind)) = typed_payload(self.progress, event, out) else {
            return;
        };
        match kind.as_str() {
            "response.text.delta"
            | "response.output_text.delta"
            | "response.audio_transcript.delta"
            | "response.output_audio_transcript.delta" => {
                push_text(str_field(&payload, "delta"), out);
            }
            "response.audio.delta" | "response.output_audio.delta" => {
                match base64::decode(str_field(&payload, "delta").unwrap_or("")) {
                    Ok(bytes) => self.audio.push(&bytes, out),
                    Err(e) => out.push(Event::error(
                        ErrorClass::InvalidAudio,
                        format!("openai-realtime: audio delta skipped: {e}"),
                    )),
                }
            }
            "response.function_call_arguments.delta" => out.push(Event::ToolCall {
                index: u64_field(&payload, "output_index").unwrap_or(0),
                id: str_field(&payload, "call_id").map(str::to_owned),
                name: None,
                arguments: str_field(&payload, "delta").unwrap_or("").to_owned(),
            }),
            "response.done" => self.done(&payload, out),
            "error" => {
                self.progress = Progress::Failed;
                let error = payload.get("error").filter(|e| e.is_object());
                out.push(server_error(error.unwrap_or(&payload)));
            }
            other => {
                // `response.done` is matched above; every other `response.*.done` closes
                // one part of the reply.
                let part_done = other.starts_with("response.") && other.ends_with(".done");
                if !part_done && !SKIPPED_PREFIXES.iter().any(|p| other.starts_with(p)) {
                    out.push(unknown_event("openai-realtime", other));
                }
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        if !self.progress.is_over() {
            self.audio.finish(out);
        }
        self.progress.finish("`response.done`", out);
    }
}

impl OpenAiRealtime {
    fn done(&mut self, payload: &crate::decode::json::Value, out: &mut Vec<Event>) {
        self.audio.finish(out);
        let response = payload.get("response").unwrap_or(&NULL);
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            out.push(Event::Usage {
                usage: openai_usage(usage, UsageNames::RESPONSES),
            });
        }
        let status = str_field(response, "status");
        if status == Some("failed") {
            // The reason is in `status_details.error` (a type and a code).
            let details = response.get("status_details").unwrap_or(&NULL);
            let error = details.get("error").filter(|e| e.is_object());
            self.progress = Progress::Failed;
            out.push(server_error(error.unwrap_or(details)));
            return;
        }
        // `incomplete` and `cancelled` name why in `status_details.reason`.
        let reason = response
            .get("status_details")
            .and_then(|d| str_field(d, "reason"))
            .or(status);
        self.progress = Progress::Done;
        out.push(Event::Done {
            reason: reason.map(str::to_owned),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dialect::test_support::{classes, run_sse_data, text};

    fn run(data: &[&str]) -> Vec<Event> {
        run_sse_data(&mut OpenAiRealtime::default(), data)
    }

    #[test]
    fn transcript_and_text_deltas_are_text_and_done_carries_usage() {
        let events = run(&[
            r#"{"type":"session.created","event_id":"e0","session":{}}"#,
            r#"{"type":"response.created","event_id":"e1","response":{"status":"in_progress"}}"#,
            r#"{"type":"response.output_item.added","event_id":"e2","item":{}}"#,
            r#"{"type":"response.audio_transcript.delta","event_id":"e3","delta":"Hel"}"#,
            r#"{"type":"response.output_audio_transcript.delta","event_id":"e4","delta":"lo"}"#,
            r#"{"type":"response.text.delta","event_id":"e5","delta":" you"}"#,
            r#"{"type":"response.output_text.delta","event_id":"e6","delta":"!"}"#,
            r#"{"type":"response.output_text.delta","event_id":"e6b","delta":""}"#,
            r#"{"type":"response.audio_transcript.done","event_id":"e7","transcript":"Hello you!"}"#,
            r#"{"type":"response.done","event_id":"e8","response":{"status":"completed","usage":{"input_tokens":12,"output_tokens":4}}}"#,
            r#"{"type":"response.output_text.delta","event_id":"e9","delta":"late"}"#,
        ]);
        assert_eq!(
            events[..4],
            [text("Hel"), text("lo"), text(" you"), text("!")]
        );
        assert!(
            matches!(&events[4], Event::Usage { usage }
                if usage.prompt_tokens == Some(12) && usage.completion_tokens == Some(4)),
            "{events:?}"
        );
        assert_eq!(
            events[5],
            Event::Done {
                reason: Some("completed".into())
            }
        );
        assert_eq!(events.len(), 6, "nothing after the end: {events:?}");
    }

    #[test]
    fn audio_deltas_are_samples_not_tokens() {
        // Two PCM16 samples, 1 and -2, little-endian: AQD+/w== is [1, 0, 254, 255].
        let events = run(&[
            r#"{"type":"response.audio.delta","event_id":"a","delta":"AQD+/w=="}"#,
            r#"{"type":"response.output_audio.delta","event_id":"b","delta":"AQD+/w=="}"#,
            r#"{"type":"response.done","event_id":"c","response":{"status":"completed"}}"#,
        ]);
        let samples: Vec<i16> = events
            .iter()
            .filter_map(|e| match e {
                Event::AudioSamples { samples } => Some(samples.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(samples, [1, -2, 1, -2], "{events:?}");
        assert!(events.iter().all(|e| !e.is_token()), "{events:?}");
        assert!(matches!(events.last(), Some(Event::Done { .. })));
        let bad = run(&[r#"{"type":"response.audio.delta","delta":"***"}"#]);
        assert_eq!(
            classes(&bad),
            [ErrorClass::InvalidAudio, ErrorClass::Truncated]
        );
    }

    #[test]
    fn failures_cancellation_unknown_events_and_truncation() {
        let events = run(&[
            r#"{"type":"error","event_id":"x","error":{"type":"invalid_request_error","code":"bad","message":"no"}}"#,
        ]);
        assert!(
            matches!(&events[..], [Event::Error { class: ErrorClass::Server, code: Some(c), message }]
                if c == "bad" && message == "no"),
            "{events:?}"
        );
        let events = run(&[
            r#"{"type":"response.done","response":{"status":"failed","status_details":{"type":"failed","error":{"type":"server_error","message":"boom"}}}}"#,
        ]);
        assert_eq!(classes(&events), [ErrorClass::Server]);
        let events = run(&[
            r#"{"type":"response.done","response":{"status":"cancelled","status_details":{"type":"cancelled","reason":"turn_detected"}}}"#,
        ]);
        assert_eq!(
            events,
            [Event::Done {
                reason: Some("turn_detected".into())
            }]
        );
        let events = run(&[
            r#"{"type":"response.brand_new","event_id":"n"}"#,
            r#"{"type":"response.text.delta","delta":"a"}"#,
        ]);
        assert_eq!(
            classes(&events),
            [ErrorClass::UnknownEvent, ErrorClass::Truncated]
        );
    }

    #[test]
    fn function_call_argument_deltas_are_tool_calls() {
        let events = run(&[
            r#"{"type":"response.function_call_arguments.delta","output_index":2,"call_id":"c1","delta":"{\"a\""}"#,
            r#"{"type":"response.function_call_arguments.done","call_id":"c1","arguments":"{\"a\":1}"}"#,
            r#"{"type":"response.done","response":{"status":"completed"}}"#,
        ]);
        assert_eq!(
            events[0],
            Event::ToolCall {
                index: 2,
                id: Some("c1".into()),
                name: None,
                arguments: "{\"a\"".into()
            }
        );
        assert_eq!(events.len(), 2, "{events:?}");
    }
}
