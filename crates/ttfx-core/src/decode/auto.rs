//! `auto`: which framing and dialect a stream is, from its content type and first bytes
//! or frames. Every rule here looks only at what the stream has already delivered, so
//! detection is as chunk-proof as the decoding that follows.

use crate::decode::json::{self, JsonExt, Value};

use crate::decode::dialect::{DialectKind, Framing};
use crate::decode::sse::SseEvent;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What a content type says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// The framing is known; the dialect comes from the first frames.
    Framing(Framing),
    /// The dialect is known outright.
    Dialect(DialectKind),
}

/// Reads a `Content-Type` value (parameters and case ignored).
pub fn from_content_type(content_type: &str) -> Option<Hint> {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    Some(match essence.as_str() {
        "text/event-stream" => Hint::Framing(Framing::Sse),
        // NDJSON has several names in the wild; Ollama sends application/x-ndjson.
        "application/x-ndjson"
        | "application/ndjson"
        | "application/jsonl"
        | "application/x-jsonlines"
        | "application/jsonlines" => Hint::Dialect(DialectKind::Ollama),
        "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => {
            Hint::Dialect(DialectKind::Wav)
        }
        "audio/pcm" => Hint::Dialect(DialectKind::Pcm16),
        "text/plain" => Hint::Dialect(DialectKind::Text),
        _ => return None,
    })
}

/// What the first bytes of a body look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    Sse,
    Ndjson,
    Wav,
    Text,
}

/// How many bytes sniffing may hold back before it must decide.
pub const SNIFF_MAX_BYTES: usize = 64;

/// Decides from a body's first bytes; None means "need more bytes" (never when `at_end`).
pub fn sniff(prefix: &[u8], at_end: bool) -> Option<Sniffed> {
    let undecided = |candidate: &[u8], seen: &[u8]| {
        !at_end && !seen.is_empty() && seen.len() < candidate.len() && candidate.starts_with(seen)
    };
    if prefix.starts_with(b"RIFF") {
        return Some(Sniffed::Wav);
    }
    if undecided(b"RIFF", prefix) || undecided(BOM, prefix) {
        return None;
    }
    let body = prefix.strip_prefix(BOM).unwrap_or(prefix);
    let body = match body.iter().position(|b| !b.is_ascii_whitespace()) {
        Some(start) => body.get(start..).unwrap_or_default(),
        None if at_end => return Some(Sniffed::Text),
        None => return None,
    };
    match body.first() {
        Some(b'{' | b'[') => return Some(Sniffed::Ndjson),
        Some(b':') => return Some(Sniffed::Sse),
        _ => {}
    }
    for field in [&b"data:"[..], b"event:", b"id:", b"retry:"] {
        if body.starts_with(field) {
            return Some(Sniffed::Sse);
        }
        if undecided(field, body) {
            return None;
        }
    }
    Some(Sniffed::Text)
}

/// The dialect one SSE event reveals, if any (a `ping` or an error alone reveals none).
pub fn dialect_of_sse(event: &SseEvent) -> Option<DialectKind> {
    if let Some(kind) = dialect_of_type(&event.event_type) {
        return Some(kind);
    }
    let data = event.data.trim();
    if data == "[DONE]" {
        return Some(DialectKind::OpenAiChat);
    }
    let value = json::parse(data)?;
    // Realtime server events carry an `event_id` beside their `type`; Responses events,
    // whose type names Realtime shares (`response.output_text.delta`), carry none.
    if value.get("event_id").and_then(Value::as_str).is_some()
        && value.get("type").and_then(Value::as_str).is_some()
    {
        return Some(DialectKind::OpenAiRealtime);
    }
    if let Some(kind) = value
        .get("type")
        .and_then(Value::as_str)
        .and_then(dialect_of_type)
    {
        return Some(kind);
    }
    let object = value.get("object").and_then(Value::as_str).unwrap_or("");
    if value.get("choices").is_some() || object.starts_with("chat.completion") {
        return Some(DialectKind::OpenAiChat);
    }
    if value.get("content").is_some() && value.get("stop").is_some() {
        return Some(DialectKind::LlamaCpp);
    }
    None
}

fn dialect_of_type(event_type: &str) -> Option<DialectKind> {
    match event_type {
        "message_start"
        | "content_block_start"
        | "content_block_delta"
        | "content_block_stop"
        | "message_delta"
        | "message_stop" => Some(DialectKind::Anthropic),
        // Names only Realtime uses (its end, its audio and transcript deltas, its
        // session events), for a stream whose events lack `event_id`.
        "response.done"
        | "response.text.delta"
        | "response.audio.delta"
        | "response.audio_transcript.delta"
        | "response.output_audio.delta"
        | "response.output_audio_transcript.delta" => Some(DialectKind::OpenAiRealtime),
        t if t.starts_with("session.")
            || t.starts_with("conversation.")
            || t.starts_with("input_audio_buffer.") =>
        {
            Some(DialectKind::OpenAiRealtime)
        }
        t if t.starts_with("response.") => Some(DialectKind::OpenAiResponses),
        t if t.starts_with("speech.audio.") => Some(DialectKind::OpenAiSpeech),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(
            from_content_type("text/event-stream; charset=utf-8"),
            Some(Hint::Framing(Framing::Sse))
        );
        assert_eq!(
            from_content_type("Application/X-NDJSON"),
            Some(Hint::Dialect(DialectKind::Ollama))
        );
        assert_eq!(
            from_content_type("audio/wav"),
            Some(Hint::Dialect(DialectKind::Wav))
        );
        assert_eq!(from_content_type("application/json"), None);
    }

    #[test]
    fn sniffing_waits_only_as_long_as_it_must() {
        assert_eq!(sniff(b"da", false), None);
        assert_eq!(sniff(b"da", true), Some(Sniffed::Text));
        assert_eq!(sniff(b"data: {}", false), Some(Sniffed::Sse));
        assert_eq!(sniff(b"\xEF\xBB", false), None);
        assert_eq!(sniff(b"\xEF\xBB\xBF\r\n: hi", false), Some(Sniffed::Sse));
        assert_eq!(sniff(b"  {\"model\"", false), Some(Sniffed::Ndjson));
        assert_eq!(sniff(b"RI", false), None);
        assert_eq!(sniff(b"RIFF", false), Some(Sniffed::Wav));
        assert_eq!(sniff(b"Hello", false), Some(Sniffed::Text));
        assert_eq!(sniff(b"\n\n", false), None);
    }

    #[test]
    fn dialects_from_first_events() {
        let ev = |t: &str, d: &str| SseEvent {
            event_type: t.to_owned().into(),
            data: d.into(),
            last_event_id: String::new(),
        };
        assert_eq!(
            dialect_of_sse(&ev("message_start", "{}")),
            Some(DialectKind::Anthropic)
        );
        assert_eq!(
            dialect_of_sse(&ev("message", r#"{"type":"response.created"}"#)),
            Some(DialectKind::OpenAiResponses)
        );
        assert_eq!(
            dialect_of_sse(&ev("message", r#"{"choices":[]}"#)),
            Some(DialectKind::OpenAiChat)
        );
        assert_eq!(
            dialect_of_sse(&ev("message", r#"{"content":"a","stop":false}"#)),
            Some(DialectKind::LlamaCpp)
        );
        assert_eq!(
            dialect_of_sse(&ev(
                "message",
                r#"{"type":"speech.audio.delta","audio":""}"#
            )),
            Some(DialectKind::OpenAiSpeech)
        );
        assert_eq!(dialect_of_sse(&ev("ping", r#"{"type":"ping"}"#)), None);
    }

    #[test]
    fn realtime_is_told_from_responses_by_event_id_and_its_own_names() {
        let ev = |t: &str, d: &str| SseEvent {
            event_type: t.to_owned().into(),
            data: d.into(),
            last_event_id: String::new(),
        };
        // The same type: Responses has no event_id, Realtime has one.
        let delta = r#"{"type":"response.output_text.delta","delta":"a","sequence_number":3}"#;
        assert_eq!(
            dialect_of_sse(&ev("message", delta)),
            Some(DialectKind::OpenAiResponses)
        );
        let delta = r#"{"type":"response.output_text.delta","event_id":"ev_1","delta":"a"}"#;
        assert_eq!(
            dialect_of_sse(&ev("message", delta)),
            Some(DialectKind::OpenAiRealtime)
        );
        // A Responses stream named in the SSE event field stays Responses.
        assert_eq!(
            dialect_of_sse(&ev("response.created", r#"{"type":"response.created"}"#)),
            Some(DialectKind::OpenAiResponses)
        );
        for data in [
            r#"{"type":"session.created","session":{}}"#,
            r#"{"type":"response.audio_transcript.delta","delta":"a"}"#,
            r#"{"type":"response.done","response":{}}"#,
        ] {
            assert_eq!(
                dialect_of_sse(&ev("message", data)),
                Some(DialectKind::OpenAiRealtime),
                "{data}"
            );
        }
        assert_eq!(
            dialect_of_sse(&ev("message", r#"{"type":"response.completed"}"#)),
            Some(DialectKind::OpenAiResponses)
        );
    }
}
