//! [`Decoder`]: framing and dialect together, fed chunk by chunk.

use crate::decode::auto::{self, Hint, SNIFF_MAX_BYTES, Sniffed};
use crate::decode::dialect::raw::byte_dialect;
use crate::decode::dialect::{
    ByteDialect, DialectKind, Framing, LineDialect, SseDialect, line_dialect, sse_dialect,
};
use crate::decode::event::Event;
use crate::decode::framing::Limits;
use crate::decode::ndjson::{NdjsonFramer, NdjsonItem};
use crate::decode::sse::{SseEvent, SseFramer, SseItem};

/// SSE events held back while `auto` looks for the dialect; after this many the stream
/// is decoded as OpenAI Chat, the format most servers speak.
const DETECT_MAX_EVENTS: usize = 16;

/// Decodes one response body, chunk by chunk, into normalized events.
///
/// ```
/// use ttfx_core::decode::{Decoder, DialectKind, Event, Limits};
/// let mut decoder = Decoder::new(DialectKind::OpenAiChat, Limits::DEFAULT);
/// let mut events = decoder.push(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n");
/// events.extend(decoder.push(b"\ndata: [DONE]\n\n"));
/// events.extend(decoder.finish());
/// assert_eq!(events[0], Event::Text { text: "Hi".into() });
/// assert_eq!(events[1], Event::Done { reason: None });
/// ```
pub struct Decoder {
    limits: Limits,
    state: DecoderState,
    dialect: Option<DialectKind>,
    frames: u64,
    /// Events produced before there was a call to return them from (PCM's format).
    held: Vec<Event>,
    sse_items: Vec<SseItem>,
    ndjson_items: Vec<NdjsonItem>,
}

enum DecoderState {
    Sniffing(Vec<u8>),
    Sse(SseFramer, SseSlot),
    Ndjson(NdjsonFramer, Box<dyn LineDialect>),
    Raw(Box<dyn ByteDialect>),
    Finished,
}

enum SseSlot {
    Detecting(Vec<SseEvent>),
    Ready(Box<dyn SseDialect>),
}

impl Decoder {
    /// Bytes the decoder holds between chunks: unfinished lines and events, events
    /// held while detecting the dialect, and its scratch lists (tests of the memory
    /// bound). `None` for raw bodies, whose dialects keep their few bytes privately.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> Option<usize> {
        use std::mem::size_of;
        let event_bytes = |e: &SseEvent| {
            size_of::<SseEvent>()
                + match &e.event_type {
                    std::borrow::Cow::Owned(s) => s.capacity(),
                    std::borrow::Cow::Borrowed(_) => 0,
                }
                + e.data.capacity()
                + e.last_event_id.capacity()
        };
        let state = match &self.state {
            DecoderState::Sniffing(prefix) => prefix.capacity(),
            DecoderState::Sse(framer, SseSlot::Detecting(pending)) => {
                framer.held_bytes() + pending.iter().map(event_bytes).sum::<usize>()
            }
            DecoderState::Sse(framer, SseSlot::Ready(_)) => framer.held_bytes(),
            DecoderState::Ndjson(framer, _) => framer.held_bytes(),
            DecoderState::Raw(_) => return None,
            DecoderState::Finished => 0,
        };
        Some(
            state
                + self.held.capacity() * size_of::<Event>()
                + self.sse_items.capacity() * size_of::<SseItem>()
                + self.ndjson_items.capacity() * size_of::<NdjsonItem>(),
        )
    }

    /// A decoder for a known dialect.
    pub fn new(kind: DialectKind, limits: Limits) -> Self {
        let mut decoder = Decoder::empty(limits);
        let mut held = Vec::new();
        decoder.state = decoder.state_for(kind, &mut held);
        decoder.held = held;
        decoder
    }

    /// A decoder that finds the dialect itself, from the response's `Content-Type` (if
    /// any) and the first bytes and frames.
    pub fn auto(content_type: Option<&str>, limits: Limits) -> Self {
        match content_type.and_then(auto::from_content_type) {
            Some(Hint::Dialect(kind)) => Decoder::new(kind, limits),
            Some(Hint::Framing(Framing::Sse)) => {
                let mut decoder = Decoder::empty(limits);
                decoder.state =
                    DecoderState::Sse(SseFramer::new(limits), SseSlot::Detecting(Vec::new()));
                decoder
            }
            Some(Hint::Framing(Framing::Ndjson)) => Decoder::new(DialectKind::Ollama, limits),
            Some(Hint::Framing(Framing::Raw)) | None => Decoder::empty(limits),
        }
    }

    fn empty(limits: Limits) -> Self {
        Decoder {
            limits,
            state: DecoderState::Sniffing(Vec::new()),
            dialect: None,
            frames: 0,
            held: Vec::new(),
            sse_items: Vec::new(),
            ndjson_items: Vec::new(),
        }
    }

    /// The dialect in use, once known.
    pub fn dialect(&self) -> Option<DialectKind> {
        self.dialect
    }

    /// Complete frames (SSE events, NDJSON lines) seen so far: the `first_event`
    /// milestone is the chunk that moves this from 0. Raw bodies have no frames.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Feeds one chunk; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        self.push_into(chunk, &mut out);
        out
    }

    /// Feeds one chunk, appending the events it completed to `out`.
    pub fn push_into(&mut self, chunk: &[u8], out: &mut Vec<Event>) {
        out.append(&mut self.held);
        match &mut self.state {
            DecoderState::Sniffing(prefix) => {
                prefix.extend_from_slice(chunk);
                // Past the limit the decision rests on exactly the first
                // SNIFF_MAX_BYTES bytes, so it is the same however they were split.
                let at_limit = prefix.len() >= SNIFF_MAX_BYTES;
                let window = prefix.get(..SNIFF_MAX_BYTES).unwrap_or(prefix);
                if let Some(sniffed) = auto::sniff(window, at_limit) {
                    let prefix = std::mem::take(prefix);
                    self.start_sniffed(sniffed, out);
                    self.push_into(&prefix, out);
                }
            }
            DecoderState::Sse(framer, _) => {
                framer.push(chunk, &mut self.sse_items);
                self.drain_sse(out);
            }
            DecoderState::Ndjson(framer, _) => {
                framer.push(chunk, &mut self.ndjson_items);
                self.drain_ndjson(out);
            }
            DecoderState::Raw(dialect) => dialect.bytes(chunk, out),
            DecoderState::Finished => {}
        }
    }

    /// Ends the stream; returns what the end completed or revealed (a truncated event,
    /// a missing end marker). Later pushes are ignored.
    pub fn finish(&mut self) -> Vec<Event> {
        let mut out = std::mem::take(&mut self.held);
        if let DecoderState::Sniffing(prefix) = &mut self.state {
            let prefix = std::mem::take(prefix);
            let sniffed = auto::sniff(&prefix, true).unwrap_or(Sniffed::Text);
            self.start_sniffed(sniffed, &mut out);
            self.push_into(&prefix, &mut out);
        }
        match &mut self.state {
            DecoderState::Sse(framer, _) => framer.finish(&mut self.sse_items),
            DecoderState::Ndjson(framer, _) => framer.finish(&mut self.ndjson_items),
            _ => {}
        }
        self.drain_sse(&mut out);
        self.drain_ndjson(&mut out);
        if let DecoderState::Sse(_, SseSlot::Detecting(_)) = self.state {
            self.settle_sse(DialectKind::OpenAiChat, &mut out);
        }
        match &mut self.state {
            DecoderState::Sse(_, SseSlot::Ready(dialect)) => dialect.finish(&mut out),
            DecoderState::Ndjson(_, dialect) => dialect.finish(&mut out),
            DecoderState::Raw(dialect) => dialect.finish(&mut out),
            _ => {}
        }
        self.state = DecoderState::Finished;
        out
    }

    fn state_for(&mut self, kind: DialectKind, out: &mut Vec<Event>) -> DecoderState {
        self.dialect = Some(kind);
        let state = match kind.framing() {
            Framing::Sse => sse_dialect(kind)
                .map(|d| DecoderState::Sse(SseFramer::new(self.limits), SseSlot::Ready(d))),
            Framing::Ndjson => {
                line_dialect(kind).map(|d| DecoderState::Ndjson(NdjsonFramer::new(self.limits), d))
            }
            Framing::Raw => byte_dialect(kind, out).map(DecoderState::Raw),
        };
        // Every kind has a dialect of its own framing; the fallback only keeps this
        // total without a panic path.
        state.unwrap_or(DecoderState::Finished)
    }

    fn start_sniffed(&mut self, sniffed: Sniffed, out: &mut Vec<Event>) {
        self.state = match sniffed {
            Sniffed::Sse => {
                DecoderState::Sse(SseFramer::new(self.limits), SseSlot::Detecting(Vec::new()))
            }
            Sniffed::Ndjson => self.state_for(DialectKind::Ollama, out),
            Sniffed::Wav => self.state_for(DialectKind::Wav, out),
            Sniffed::Text => self.state_for(DialectKind::Text, out),
        };
    }

    fn drain_sse(&mut self, out: &mut Vec<Event>) {
        let mut items = std::mem::take(&mut self.sse_items);
        for item in items.drain(..) {
            match item {
                SseItem::Event(event) => {
                    self.frames += 1;
                    self.sse_event(event, out);
                }
                SseItem::Retry(_) => {}
                SseItem::Anomaly(a) => out.push(a.to_event()),
            }
        }
        self.sse_items = items;
    }

    fn sse_event(&mut self, event: SseEvent, out: &mut Vec<Event>) {
        let DecoderState::Sse(framer, slot) = &mut self.state else {
            return;
        };
        match slot {
            SseSlot::Ready(dialect) => {
                dialect.event(&event, out);
                framer.recycle(event.data);
            }
            SseSlot::Detecting(pending) => {
                let detected = auto::dialect_of_sse(&event);
                pending.push(event);
                let kind = match detected {
                    Some(kind) => kind,
                    None if pending.len() >= DETECT_MAX_EVENTS => DialectKind::OpenAiChat,
                    None => return,
                };
                self.settle_sse(kind, out);
            }
        }
    }

    /// Fixes the SSE dialect and replays the events held while detecting.
    fn settle_sse(&mut self, kind: DialectKind, out: &mut Vec<Event>) {
        let DecoderState::Sse(_, slot) = &mut self.state else {
            return;
        };
        let Some(mut dialect) = sse_dialect(kind) else {
            return;
        };
        if let SseSlot::Detecting(pending) = slot {
            for event in pending.drain(..) {
                dialect.event(&event, out);
            }
        }
        *slot = SseSlot::Ready(dialect);
        self.dialect = Some(kind);
    }

    fn drain_ndjson(&mut self, out: &mut Vec<Event>) {
        let DecoderState::Ndjson(_, dialect) = &mut self.state else {
            return;
        };
        for item in self.ndjson_items.drain(..) {
            match item {
                NdjsonItem::Line(line) => {
                    self.frames += 1;
                    dialect.line(&line, out);
                }
                NdjsonItem::Anomaly(a) => out.push(a.to_event()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_auto(content_type: Option<&str>, body: &[u8]) -> (Option<DialectKind>, Vec<Event>) {
        let mut decoder = Decoder::auto(content_type, Limits::DEFAULT);
        let mut events = Vec::new();
        for byte in body {
            decoder.push_into(std::slice::from_ref(byte), &mut events);
        }
        events.extend(decoder.finish());
        (decoder.dialect(), events)
    }

    #[test]
    fn auto_finds_anthropic_after_leading_pings_and_replays_them() {
        let body = b"event: ping\ndata: {\"type\":\"ping\"}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let (dialect, events) = decode_auto(Some("text/event-stream"), body);
        assert_eq!(dialect, Some(DialectKind::Anthropic));
        assert_eq!(
            events,
            [
                Event::Text { text: "Hi".into() },
                Event::Done { reason: None }
            ]
        );
    }

    #[test]
    fn auto_without_content_type_sniffs_ndjson_and_text() {
        let (dialect, events) = decode_auto(None, b"{\"response\":\"a\",\"done\":true}\n");
        assert_eq!(dialect, Some(DialectKind::Ollama));
        assert_eq!(events[0], Event::Text { text: "a".into() });
        let (dialect, events) = decode_auto(None, "héllo".as_bytes());
        assert_eq!(dialect, Some(DialectKind::Text));
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                Event::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "héllo");
    }

    #[test]
    fn an_empty_sse_body_is_truncated_and_frames_are_counted() {
        let (dialect, events) = decode_auto(Some("text/event-stream"), b": keepalive\n\n");
        assert_eq!(dialect, Some(DialectKind::OpenAiChat));
        assert!(matches!(
            &events[..],
            [Event::Error {
                class: crate::decode::ErrorClass::Truncated,
                ..
            }]
        ));
        let mut decoder = Decoder::new(DialectKind::OpenAiChat, Limits::DEFAULT);
        decoder.push(b"data: {\"choices\":[]}\n\ndata: [DONE]\n");
        assert_eq!(decoder.frames(), 1);
        decoder.push(b"\n");
        assert_eq!(decoder.frames(), 2);
    }

    #[test]
    fn sniffing_decides_on_the_same_bytes_however_they_are_split() {
        // Found by the fuzzer: a long whitespace run before an SSE field.
        let body = format!("{}retry: 1\ndata: x\n\n", " ".repeat(SNIFF_MAX_BYTES + 3));
        let (whole_dialect, whole) = {
            let mut d = Decoder::auto(None, Limits::DEFAULT);
            let mut events = d.push(body.as_bytes());
            events.extend(d.finish());
            (d.dialect(), events)
        };
        let (split_dialect, split) = decode_auto(None, body.as_bytes());
        assert_eq!(whole_dialect, split_dialect);
        assert_eq!(whole_dialect, Some(DialectKind::Text));
        let text: String = split
            .iter()
            .filter_map(|e| match e {
                Event::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(whole[0], Event::Text { text });
    }

    #[test]
    fn pcm_announces_its_format_with_the_first_push() {
        let mut decoder = Decoder::new(DialectKind::Pcm16, Limits::DEFAULT);
        let events = decoder.push(b"\x01\x00");
        assert!(matches!(
            events[0],
            Event::AudioFormat {
                sample_rate: 24_000,
                ..
            }
        ));
        assert_eq!(events[1], Event::AudioSamples { samples: vec![1] });
    }
}
