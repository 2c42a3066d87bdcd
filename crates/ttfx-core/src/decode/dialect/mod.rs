//! Dialects: one provider's frames → normalized [`Event`]s.
//!
//! Each dialect is a small state machine over the frames of one framing (SSE events,
//! NDJSON lines or raw bytes). All of them share the rules in this module: malformed JSON
//! and unknown event types are reported and skipped; a server error ends the request; a
//! stream that closes before the dialect's end marker is reported as truncated.

use std::fmt;
use std::str::FromStr;

use crate::decode::json::{self, Document, JsonExt, Value};

use crate::decode::event::{ErrorClass, Event};
use crate::decode::sse::SseEvent;
use crate::server_timing::Usage;

pub mod anthropic;
pub mod llamacpp;
mod llamacpp_timings;
pub mod ollama;
pub mod openai_chat;
pub mod openai_realtime;
pub mod openai_responses;
pub mod raw;
pub mod tts;

/// The dialects a stream can be decoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DialectKind {
    /// OpenAI Chat Completions and its many compatibles (vLLM, SGLang, DeepSeek,
    /// llama.cpp's `/v1/chat/completions`, …).
    OpenAiChat,
    /// OpenAI Responses API.
    OpenAiResponses,
    /// OpenAI Realtime API server events (JSON messages over a WebSocket, one SSE event
    /// each as the probe hands them over).
    OpenAiRealtime,
    /// Anthropic Messages.
    Anthropic,
    /// Ollama `/api/chat` and `/api/generate` (NDJSON).
    Ollama,
    /// llama.cpp server's native `/completion`, and its OpenAI-compatible
    /// `/v1/chat/completions` (read as [`DialectKind::OpenAiChat`] is).
    LlamaCpp,
    /// OpenAI speech with `stream_format: "sse"`.
    OpenAiSpeech,
    /// A WAV body.
    Wav,
    /// A headerless 16-bit little-endian PCM body (24 kHz mono, OpenAI's `pcm`).
    Pcm16,
    /// A plain text body.
    Text,
}

/// How a dialect's frames are cut out of the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Sse,
    Ndjson,
    Raw,
}

impl DialectKind {
    pub const ALL: [DialectKind; 10] = [
        DialectKind::OpenAiChat,
        DialectKind::OpenAiResponses,
        DialectKind::OpenAiRealtime,
        DialectKind::Anthropic,
        DialectKind::Ollama,
        DialectKind::LlamaCpp,
        DialectKind::OpenAiSpeech,
        DialectKind::Wav,
        DialectKind::Pcm16,
        DialectKind::Text,
    ];

    /// The name used on the command line and in reports.
    pub const fn as_str(self) -> &'static str {
        match self {
            DialectKind::OpenAiChat => "openai-chat",
            DialectKind::OpenAiResponses => "openai-responses",
            DialectKind::OpenAiRealtime => "openai-realtime",
            DialectKind::Anthropic => "anthropic",
            DialectKind::Ollama => "ollama",
            DialectKind::LlamaCpp => "llamacpp",
            DialectKind::OpenAiSpeech => "openai-speech",
            DialectKind::Wav => "wav",
            DialectKind::Pcm16 => "pcm16",
            DialectKind::Text => "text",
        }
    }

    pub const fn framing(self) -> Framing {
        match self {
            DialectKind::OpenAiChat
            | DialectKind::OpenAiResponses
            | DialectKind::OpenAiRealtime
            | DialectKind::Anthropic
            | DialectKind::LlamaCpp
            | DialectKind::OpenAiSpeech => Framing::Sse,
            DialectKind::Ollama => Framing::Ndjson,
            DialectKind::Wav | DialectKind::Pcm16 | DialectKind::Text => Framing::Raw,
        }
    }
}

impl fmt::Display for DialectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name is not a dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDialect(pub String);

impl fmt::Display for UnknownDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written name by name: `[&str]::join` is 1 KB of the browser analysis's wasm.
        write!(f, "unknown dialect `{}` (known: ", self.0)?;
        for (i, d) in DialectKind::ALL.iter().enumerate() {
            f.write_str(if i == 0 { "" } else { ", " })?;
            f.write_str(d.as_str())?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnknownDialect {}

impl FromStr for DialectKind {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DialectKind::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| UnknownDialect(s.to_owned()))
    }
}

/// A dialect over SSE events.
pub trait SseDialect: Send {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Event>);
    fn finish(&mut self, out: &mut Vec<Event>);
}

/// A dialect over NDJSON lines.
pub trait LineDialect: Send {
    fn line(&mut self, line: &str, out: &mut Vec<Event>);
    fn finish(&mut self, out: &mut Vec<Event>);
}

/// A dialect over raw bytes.
pub trait ByteDialect: Send {
    fn bytes(&mut self, bytes: &[u8], out: &mut Vec<Event>);
    fn finish(&mut self, out: &mut Vec<Event>);
}

/// The SSE dialect for `kind`, or None when `kind` is not framed as SSE.
pub fn sse_dialect(kind: DialectKind) -> Option<Box<dyn SseDialect>> {
    Some(match kind {
        DialectKind::OpenAiChat => Box::new(openai_chat::OpenAiChat::default()),
        DialectKind::OpenAiResponses => Box::new(openai_responses::OpenAiResponses::default()),
        DialectKind::OpenAiRealtime => Box::new(openai_realtime::OpenAiRealtime::default()),
        DialectKind::Anthropic => Box::new(anthropic::Anthropic::default()),
        DialectKind::LlamaCpp => Box::new(llamacpp::LlamaCpp::default()),
        DialectKind::OpenAiSpeech => Box::new(tts::OpenAiSpeech::default()),
        _ => return None,
    })
}

/// The line dialect for `kind`, or None when `kind` is not framed as NDJSON.
pub fn line_dialect(kind: DialectKind) -> Option<Box<dyn LineDialect>> {
    match kind {
        DialectKind::Ollama => Some(Box::new(ollama::Ollama::default())),
        _ => None,
    }
}

/// How far a dialect has got towards the end of its stream.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    #[default]
    Streaming,
    /// The end marker arrived.
    Done,
    /// The server reported a failure: no end marker is owed.
    Failed,
}

impl Progress {
    pub(crate) fn is_over(self) -> bool {
        self != Progress::Streaming
    }

    /// At the end of the stream: reports a missing end marker.
    pub(crate) fn finish(self, marker: &str, out: &mut Vec<Event>) {
        if self == Progress::Streaming {
            out.push(Event::error(
                ErrorClass::Truncated,
                format!("stream ended before {marker}"),
            ));
        }
    }
}

/// Parses a frame's JSON; malformed JSON becomes an error event.
pub(crate) fn parse_json<'a>(text: &'a str, out: &mut Vec<Event>) -> Option<Document<'a>> {
    let value = json::parse(text);
    if value.is_none() {
        out.push(Event::error(
            ErrorClass::MalformedJson,
            format!("not JSON: {}", snippet(text)),
        ));
    }
    value
}

/// The first 80 characters of a frame, for error messages.
pub(crate) fn snippet(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None => format!("`{text}`"),
    }
}

pub(crate) fn str_field<'v>(value: &'v Value<'_>, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

pub(crate) fn u64_field(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

pub(crate) fn f64_field(value: &Value, key: &str) -> Option<f64> {
    value
        .get(key)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite())
}

/// For dialects whose events name their type in the JSON's `type` (the SSE `event`
/// field says the same, and is the fallback): the payload and its type, unless the
/// stream is already over or the JSON is malformed (reported).
pub(crate) fn typed_payload<'e>(
    progress: Progress,
    event: &'e SseEvent,
    out: &mut Vec<Event>,
) -> Option<(Document<'e>, String)> {
    if progress.is_over() {
        return None;
    }
    let payload = parse_json(&event.data, out)?;
    let kind = str_field(&payload, "type")
        .unwrap_or(&event.event_type)
        .to_owned();
    Some((payload, kind))
}

/// The field names of an OpenAI-style usage object: Chat Completions says
/// prompt/completion, the Responses API input/output.
pub(crate) struct UsageNames {
    pub prompt: &'static str,
    pub completion: &'static str,
}

impl UsageNames {
    /// Chat Completions' names.
    pub const CHAT: UsageNames = UsageNames {
        prompt: "prompt_tokens",
        completion: "completion_tokens",
    };
    /// The Responses and Realtime APIs' names.
    pub const RESPONSES: UsageNames = UsageNames {
        prompt: "input_tokens",
        completion: "output_tokens",
    };
}

/// An OpenAI-style usage object, with reasoning and cached counts from its
/// `*_tokens_details` objects.
pub(crate) fn openai_usage(usage: &Value, names: UsageNames) -> Usage {
    let details = |count: &str, field: &str| {
        usage
            .get(&format!("{count}_details"))
            .and_then(|d| u64_field(d, field))
    };
    Usage {
        prompt_tokens: u64_field(usage, names.prompt),
        completion_tokens: u64_field(usage, names.completion),
        reasoning_tokens: details(names.completion, "reasoning_tokens"),
        cached_prompt_tokens: details(names.prompt, "cached_tokens"),
    }
}

/// A non-empty visible text delta.
pub(crate) fn push_text(text: Option<&str>, out: &mut Vec<Event>) {
    if let Some(text) = text.filter(|t| !t.is_empty()) {
        out.push(Event::Text {
            text: text.to_owned(),
        });
    }
}

/// A non-empty reasoning delta; true when one was pushed.
pub(crate) fn push_reasoning(text: Option<&str>, out: &mut Vec<Event>) -> bool {
    match text.filter(|t| !t.is_empty()) {
        Some(text) => {
            out.push(Event::Reasoning {
                text: text.to_owned(),
            });
            true
        }
        None => false,
    }
}

/// An error object as providers send it: a string, or an object with `message` and a
/// `type` or `code`.
pub(crate) fn server_error(error: &Value) -> Event {
    let message = match error {
        Value::String(s) => s.to_string(),
        _ => str_field(error, "message")
            .map(str::to_owned)
            .unwrap_or_else(|| json::to_string(error)),
    };
    let code = ["code", "type"]
        .iter()
        .find_map(|key| match error.get(key) {
            Some(Value::String(s)) => Some(s.to_string()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        });
    Event::Error {
        class: ErrorClass::Server,
        code,
        message,
    }
}

/// An event type the dialect does not know: reported, skipped.
pub(crate) fn unknown_event(dialect: &str, event_type: &str) -> Event {
    Event::error(
        ErrorClass::UnknownEvent,
        format!("{dialect}: unknown event type `{event_type}` skipped"),
    )
}

/// The usage, after the hidden reasoning its count reveals when no reasoning text was
/// streamed (reported once per stream).
pub(crate) fn push_usage(
    usage: Usage,
    reasoning_streamed: bool,
    hidden_reported: &mut bool,
    out: &mut Vec<Event>,
) {
    if let Some(tokens) = usage.reasoning_tokens.filter(|&t| t > 0)
        && !reasoning_streamed
        && !*hidden_reported
    {
        *hidden_reported = true;
        out.push(Event::HiddenReasoning {
            tokens: Some(tokens),
        });
    }
    out.push(Event::Usage { usage });
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// Runs an SSE dialect over `(event type, data)` pairs.
    pub(crate) fn run_sse(dialect: &mut dyn SseDialect, frames: &[(&str, &str)]) -> Vec<Event> {
        let mut out = Vec::new();
        for (event_type, data) in frames {
            let event = SseEvent {
                event_type: (*event_type).to_owned().into(),
                data: (*data).to_owned(),
                last_event_id: String::new(),
            };
            dialect.event(&event, &mut out);
        }
        dialect.finish(&mut out);
        out
    }

    /// Runs an SSE dialect over unnamed (`message`) events with these data.
    pub(crate) fn run_sse_data(dialect: &mut dyn SseDialect, data: &[&str]) -> Vec<Event> {
        let frames: Vec<(&str, &str)> = data.iter().map(|d| ("message", *d)).collect();
        run_sse(dialect, &frames)
    }

    pub(crate) fn text(s: &str) -> Event {
        Event::Text { text: s.into() }
    }

    pub(crate) fn reasoning(s: &str) -> Event {
        Event::Reasoning { text: s.into() }
    }

    pub(crate) fn classes(events: &[Event]) -> Vec<ErrorClass> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Error { class, .. } => Some(*class),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known_ones() {
        for d in DialectKind::ALL {
            assert_eq!(d.as_str().parse::<DialectKind>(), Ok(d));
        }
        let err = "gemini".parse::<DialectKind>().unwrap_err().to_string();
        assert!(
            err.starts_with("unknown dialect `gemini` (known: openai-chat, "),
            "{err}"
        );
        let names: Vec<&str> = DialectKind::ALL.iter().map(|d| d.as_str()).collect();
        let listed = format!("unknown dialect `gemini` (known: {})", names.join(", "));
        assert_eq!(err, listed);
    }

    #[test]
    fn server_errors_take_message_and_code_or_type() {
        let e = server_error(
            &json::parse(r#"{"message": "slow down", "type": "rate_limit", "code": null}"#)
                .unwrap(),
        );
        assert_eq!(
            e,
            Event::Error {
                class: ErrorClass::Server,
                code: Some("rate_limit".into()),
                message: "slow down".into()
            }
        );
        let e = server_error(&json::parse(r#""model not found""#).unwrap());
        assert!(
            matches!(e, Event::Error { code: None, message, .. } if message == "model not found")
        );
    }

    #[test]
    fn snippets_cut_on_char_boundaries() {
        let long = "é".repeat(100);
        let s = snippet(&long);
        assert_eq!(s.chars().filter(|c| *c == 'é').count(), 80);
    }
}
