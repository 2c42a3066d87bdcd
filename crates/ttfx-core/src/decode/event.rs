//! Normalized events: what every dialect turns its frames into.
//!
//! One vocabulary for all providers, so the timeline and the metrics never look at a
//! provider's wire format. Deltas are pieces in arrival order; `Usage` carries the
//! cumulative totals known so far (the last one wins).

use std::fmt;

use serde::Serialize;

use crate::server_timing::{ServerTiming, Usage};

/// One normalized decoder event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// A piece of the visible answer.
    Text { text: String },
    /// A piece of reasoning ("thinking") text the server streamed.
    Reasoning { text: String },
    /// Reasoning happened but its text is not streamed: known only from usage counts
    /// (`tokens`) or from a redacted block.
    HiddenReasoning {
        #[serde(skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
    },
    /// A piece of a tool call. `id` and `name` come with the first piece of a call;
    /// `arguments` pieces concatenate to the call's JSON arguments.
    ToolCall {
        index: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        arguments: String,
    },
    /// Token counts reported so far (cumulative: a later event replaces an earlier one).
    Usage { usage: Usage },
    /// Server-reported durations, in milliseconds, with where they came from.
    ServerTimings { timings: Vec<ServerTiming> },
    /// The audio format, once it is known (WAV header parsed, PCM assumed).
    AudioFormat {
        sample_rate: u32,
        channels: u16,
        bits_per_sample: u16,
    },
    /// Decoded PCM samples, interleaved when there are several channels.
    AudioSamples { samples: Vec<i16> },
    /// Compressed audio (MP3, Opus, AAC, FLAC) passed through undecoded: only its size.
    AudioEncoded { bytes: usize },
    /// Something went wrong: the server said so, or the decoder met bad input.
    Error {
        class: ErrorClass,
        /// The provider's own error type or code, when it sent one.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        message: String,
    },
    /// The dialect's end marker (`[DONE]`, `message_stop`, `done: true`, …), with the
    /// stop reason the server gave.
    Done {
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl Event {
    /// A decoder-side error without a provider code.
    pub fn error(class: ErrorClass, message: impl Into<String>) -> Event {
        Event::Error {
            class,
            code: None,
            message: message.into(),
        }
    }

    /// The event's `kind` as it appears in JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Text { .. } => "text",
            Event::Reasoning { .. } => "reasoning",
            Event::HiddenReasoning { .. } => "hidden_reasoning",
            Event::ToolCall { .. } => "tool_call",
            Event::Usage { .. } => "usage",
            Event::ServerTimings { .. } => "server_timings",
            Event::AudioFormat { .. } => "audio_format",
            Event::AudioSamples { .. } => "audio_samples",
            Event::AudioEncoded { .. } => "audio_encoded",
            Event::Error { .. } => "error",
            Event::Done { .. } => "done",
        }
    }

    /// Whether this event is a token on some channel (the `first_token` milestone): a
    /// non-empty text or reasoning delta, or a tool-call piece that carries generated
    /// output (its function name, or argument text). A tool-call piece with neither (an
    /// empty `arguments: ""` delta) carries nothing the model wrote. The one rule the
    /// probe's recorder and `ttfx serve`'s records share.
    pub fn is_token(&self) -> bool {
        match self {
            Event::Text { text } | Event::Reasoning { text } => !text.is_empty(),
            Event::ToolCall {
                name, arguments, ..
            } => name.as_deref().is_some_and(|n| !n.is_empty()) || !arguments.is_empty(),
            _ => false,
        }
    }
}

/// Merges adjacent pieces of the same stream of content (text, reasoning, samples,
/// encoded audio). Raw bodies deliver these as the chunks come, so two splits of the
/// same bytes agree on the merged events, not on their grouping.
pub fn coalesce(events: impl IntoIterator<Item = Event>) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for event in events {
        match (out.last_mut(), event) {
            (Some(Event::Text { text: a }), Event::Text { text: b })
            | (Some(Event::Reasoning { text: a }), Event::Reasoning { text: b }) => a.push_str(&b),
            (Some(Event::AudioSamples { samples: a }), Event::AudioSamples { samples: b }) => {
                a.extend(b)
            }
            (Some(Event::AudioEncoded { bytes: a }), Event::AudioEncoded { bytes: b }) => *a += b,
            (_, event) => out.push(event),
        }
    }
    out
}

/// What kind of trouble an [`Event::Error`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The server reported a failure in-band (error object, `error` event, failed response).
    Server,
    /// The stream ended before the dialect's end marker, or inside a frame.
    Truncated,
    /// A frame that should hold JSON does not parse.
    MalformedJson,
    /// Valid JSON without any field the dialect knows.
    UnexpectedShape,
    /// An event type the dialect does not know (skipped; decoding goes on).
    UnknownEvent,
    /// A line or event over the configured limit (dropped).
    TooLong,
    /// Bytes that are not UTF-8 (replaced with U+FFFD).
    InvalidUtf8,
    /// Audio the decoder cannot read (bad base64, bad or unsupported WAV header).
    InvalidAudio,
}

impl ErrorClass {
    /// The snake_case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Server => "server",
            ErrorClass::Truncated => "truncated",
            ErrorClass::MalformedJson => "malformed_json",
            ErrorClass::UnexpectedShape => "unexpected_shape",
            ErrorClass::UnknownEvent => "unknown_event",
            ErrorClass::TooLong => "too_long",
            ErrorClass::InvalidUtf8 => "invalid_utf8",
            ErrorClass::InvalidAudio => "invalid_audio",
        }
    }

    /// Whether the request failed (as opposed to the decoder skipping something).
    pub fn is_request_failure(self) -> bool {
        matches!(self, ErrorClass::Server | ErrorClass::Truncated)
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_with_their_kind_tag() {
        let json = serde_json::to_value(Event::error(ErrorClass::MalformedJson, "x")).unwrap();
        assert_eq!(json["kind"], "error");
        assert_eq!(json["class"], "malformed_json");
        assert!(json.get("code").is_none());
        for e in [
            Event::Text { text: "a".into() },
            Event::HiddenReasoning { tokens: Some(3) },
            Event::AudioEncoded { bytes: 1 },
            Event::Done { reason: None },
        ] {
            assert_eq!(serde_json::to_value(&e).unwrap()["kind"], e.kind());
        }
    }

    #[test]
    fn coalesce_merges_only_adjacent_pieces_of_one_kind() {
        let merged = coalesce([
            Event::Text { text: "a".into() },
            Event::Text { text: "b".into() },
            Event::Reasoning { text: "r".into() },
            Event::Text { text: "c".into() },
            Event::AudioSamples { samples: vec![1] },
            Event::AudioSamples { samples: vec![2] },
        ]);
        assert_eq!(
            merged,
            [
                Event::Text { text: "ab".into() },
                Event::Reasoning { text: "r".into() },
                Event::Text { text: "c".into() },
                Event::AudioSamples {
                    samples: vec![1, 2]
                },
            ]
        );
    }

    #[test]
    fn only_non_empty_deltas_and_tool_calls_are_tokens() {
        assert!(Event::Text { text: "a".into() }.is_token());
        assert!(
            !Event::Text {
                text: String::new()
            }
            .is_token()
        );
        assert!(Event::Reasoning { text: "r".into() }.is_token());
        assert!(!Event::Done { reason: None }.is_token());
        let call = |name: Option<&str>, arguments: &str| Event::ToolCall {
            index: 0,
            id: Some("call_1".into()),
            name: name.map(str::to_owned),
            arguments: arguments.into(),
        };
        assert!(
            call(Some("get_weather"), "").is_token(),
            "the name is output"
        );
        assert!(call(None, "{\"city\"").is_token());
        assert!(!call(None, "").is_token(), "an empty arguments delta");
        assert!(!call(Some(""), "").is_token());
    }
}
