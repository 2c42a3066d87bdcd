//! What a transcription reply's bytes say about a voice turn's timing: when its first
//! partial transcript arrived (`stt_first_partial`) and when its final one did
//! (`stt_final`).
//!
//! OpenAI's streamed transcription is Server-Sent Events: `transcript.text.delta`
//! events, then one `transcript.text.done`. The type is in the JSON's `"type"` (OpenAI
//! sends no `event:` line) or in the `event:` field (other servers); either counts. A
//! reply that is not an event stream (`json`, `text`, `verbose_json`) is final when its
//! body ends. Fed chunk by chunk with their arrival times, split anywhere; the bytes are
//! read, never kept beyond the SSE framer's bounds.

use crate::decode::json::{self, JsonExt};
use crate::decode::{Limits, SseFramer, SseItem};

const DELTA: &str = "transcript.text.delta";
const DONE: &str = "transcript.text.done";

/// Watches one transcription body.
pub struct TranscriptionWatch {
    /// `Some` for an event stream.
    framer: Option<SseFramer>,
    items: Vec<SseItem>,
    first_partial_ms: Option<f64>,
    final_ms: Option<f64>,
    /// The body ended without a `transcript.text.done` event.
    final_is_body_end: bool,
}

impl std::fmt::Debug for TranscriptionWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TranscriptionWatch")
            .field("sse", &self.framer.is_some())
            .field("first_partial_ms", &self.first_partial_ms)
            .field("final_ms", &self.final_ms)
            .finish()
    }
}

impl TranscriptionWatch {
    /// A watch for a body of this `Content-Type` (`text/event-stream` is SSE; anything
    /// else, or none, is a whole reply).
    pub fn new(content_type: Option<&str>) -> Self {
        let sse = content_type.is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/event-stream"))
        });
        TranscriptionWatch {
            framer: sse.then(|| SseFramer::new(Limits::DEFAULT)),
            items: Vec::new(),
            first_partial_ms: None,
            final_ms: None,
            final_is_body_end: false,
        }
    }

    /// Whether the body is read as an event stream.
    pub fn is_event_stream(&self) -> bool {
        self.framer.is_some()
    }

    /// A chunk that arrived at page time `at_ms`.
    pub fn push(&mut self, chunk: &[u8], at_ms: f64) {
        if let Some(framer) = &mut self.framer {
            framer.push(chunk, &mut self.items);
            self.take_events(at_ms);
        }
    }

    /// The body ended at `at_ms`: a whole reply is final now, and so is an event stream
    /// that never said `transcript.text.done` (its last bytes are all the text there is).
    pub fn finish(&mut self, at_ms: f64) {
        if let Some(framer) = &mut self.framer {
            framer.finish(&mut self.items);
            self.take_events(at_ms);
        }
        if self.final_ms.is_none() {
            self.final_ms = Some(at_ms);
            self.final_is_body_end = self.framer.is_some();
        }
    }

    /// Whether the final transcript has been seen (the rest of the body tells nothing).
    pub fn has_final(&self) -> bool {
        self.final_ms.is_some()
    }

    /// `stt_first_partial`: the first `transcript.text.delta` (event streams only).
    pub fn first_partial_ms(&self) -> Option<f64> {
        self.first_partial_ms
    }

    /// `stt_final`: `transcript.text.done`, else the body's end.
    pub fn final_ms(&self) -> Option<f64> {
        self.final_ms
    }

    /// An event stream that ended without `transcript.text.done`: its `stt_final` is the
    /// body's end, which a report should say.
    pub fn final_is_body_end(&self) -> bool {
        self.final_is_body_end
    }

    fn take_events(&mut self, at_ms: f64) {
        for item in self.items.drain(..) {
            let SseItem::Event(event) = item else {
                continue;
            };
            let named = match &*event.event_type {
                DELTA | DONE => Some(&*event.event_type),
                _ => None,
            };
            let parsed = json::parse(&event.data);
            let typed = parsed
                .as_ref()
                .and_then(|v| v.get("type"))
                .and_then(JsonExt::as_str);
            match named.or(typed) {
                Some(DELTA) => {
                    self.first_partial_ms.get_or_insert(at_ms);
                }
                Some(DONE) => {
                    self.final_ms.get_or_insert(at_ms);
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI: &str = "data: {\"type\":\"transcript.text.delta\",\"delta\":\"Hello\"}\n\n\
        data: {\"type\":\"transcript.text.delta\",\"delta\":\" there\"}\n\n\
        data: {\"type\":\"transcript.text.done\",\"text\":\"Hello there\"}\n\n";

    #[test]
    fn openai_events_give_the_first_partial_and_the_final_wherever_the_chunks_break() {
        let bytes = OPENAI.as_bytes();
        for cut in 1..bytes.len() {
            let mut w = TranscriptionWatch::new(Some("text/event-stream; charset=utf-8"));
            w.push(&bytes[..cut], 10.0);
            w.push(&bytes[cut..], 20.0);
            w.finish(30.0);
            // The first delta's block is complete (its blank line) at byte 56.
            let first_end = OPENAI.find("\n\n").unwrap() + 2;
            let expected_partial = if cut >= first_end { 10.0 } else { 20.0 };
            assert_eq!(w.first_partial_ms(), Some(expected_partial), "cut {cut}");
            let expected_final = if cut == bytes.len() { 10.0 } else { 20.0 };
            assert_eq!(w.final_ms(), Some(expected_final), "cut {cut}");
            assert!(!w.final_is_body_end());
        }
    }

    #[test]
    fn event_names_count_too_and_a_stream_without_done_is_final_at_its_end() {
        let mut w = TranscriptionWatch::new(Some("text/event-stream"));
        w.push(
            b"event: transcript.text.delta\ndata: {\"delta\":\"Hi\"}\n\n",
            5.0,
        );
        w.push(b": keep-alive\n\n", 6.0);
        assert_eq!((w.first_partial_ms(), w.final_ms()), (Some(5.0), None));
        w.push(b"event: transcript.text.done\ndata: not json\n\n", 7.0);
        assert_eq!(w.final_ms(), Some(7.0));
        assert!(w.has_final());

        let mut cut_short = TranscriptionWatch::new(Some("text/event-stream"));
        cut_short.push(
            b"data: {\"type\":\"transcript.text.delta\",\"delta\":\"a\"}\n\n",
            1.0,
        );
        cut_short.finish(9.0);
        assert_eq!(cut_short.final_ms(), Some(9.0));
        assert!(cut_short.final_is_body_end());
    }

    #[test]
    fn a_json_or_text_reply_is_final_when_its_body_ends_and_has_no_partial() {
        for content_type in [Some("application/json"), Some("text/plain"), None] {
            let mut w = TranscriptionWatch::new(content_type);
            assert!(!w.is_event_stream());
            // Even text that looks like events is not read as such.
            w.push(b"{\"text\":\"data: transcript.text.delta\"}", 3.0);
            assert_eq!(w.final_ms(), None);
            w.finish(4.0);
            assert_eq!((w.first_partial_ms(), w.final_ms()), (None, Some(4.0)));
            assert!(!w.final_is_body_end());
        }
    }
}
