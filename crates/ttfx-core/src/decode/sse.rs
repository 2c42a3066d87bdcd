//! Server-Sent Events framing, per the WHATWG HTML "event stream interpretation".
//!
//! Incremental: feed chunks as they arrive, split anywhere. Lines end at CR, LF or CRLF
//! (also when the pair is split across chunks); a leading BOM is skipped; comment lines
//! start with `:`; the fields are `event`, `data`, `id` (ignored when it contains NUL)
//! and `retry` (digits only); a line with no colon is a field with an empty value; one
//! space after the colon is dropped; `data` lines join with LF; a block without `data` is
//! not dispatched; an event still open when the stream ends is discarded.

use std::borrow::Cow;

use serde::Serialize;

use crate::decode::framing::{FramingAnomaly, Limits};
use crate::decode::lines::{Line, LineSplitter, Unterminated};
use crate::decode::utf8::decode_lossy;

/// One dispatched event, as the `MessageEvent` a browser's `EventSource` would fire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SseEvent {
    /// The `event` field, or `message` when the block had none (not allocated: most
    /// streams never name their events).
    pub event_type: Cow<'static, str>,
    /// The `data` lines joined with LF.
    pub data: String,
    /// The last event ID seen so far in the stream (it carries over between events).
    pub last_event_id: String,
}

/// What the SSE framer produces, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    Event(SseEvent),
    /// A `retry` field: the reconnection time the server asks for, in milliseconds.
    Retry(u64),
    Anomaly(FramingAnomaly),
}

impl SseItem {
    /// The item as JSON, the way `ttfx decode --dialect sse` prints it.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            SseItem::Event(e) => serde_json::json!({
                "kind": "event",
                "event_type": e.event_type,
                "data": e.data,
                "last_event_id": e.last_event_id,
            }),
            SseItem::Retry(ms) => serde_json::json!({"kind": "retry", "ms": ms}),
            SseItem::Anomaly(a) => anomaly_json(a),
        }
    }
}

/// A framing anomaly as the JSON of its error event.
pub(crate) fn anomaly_json(anomaly: &FramingAnomaly) -> serde_json::Value {
    serde_json::to_value(anomaly.to_event()).unwrap_or(serde_json::Value::Null)
}

/// Incremental SSE framer.
pub struct SseFramer {
    lines: LineSplitter,
    block: Block,
}

/// The buffers of the event being gathered.
struct Block {
    max_event_bytes: usize,
    max_line_bytes: usize,
    event_type: String,
    /// The `data` lines so far, joined with LF.
    data: String,
    /// Whether a `data` line came (an empty one counts: its event is dispatched).
    has_data: bool,
    last_event_id: String,
    /// A dispatched event's data buffer the caller handed back ([`SseFramer::recycle`]):
    /// the next event is copied into it, so a stream of events allocates none.
    spare: String,
    /// The block lost a line or passed the data limit: it is dropped at dispatch.
    dropped: bool,
}

impl SseFramer {
    /// Bytes held for the line and the event not yet ended (tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        let b = &self.block;
        self.lines.held_bytes()
            + b.event_type.capacity()
            + b.data.capacity()
            + b.last_event_id.capacity()
            + b.spare.capacity()
    }

    pub fn new(limits: Limits) -> Self {
        SseFramer {
            lines: LineSplitter::new(limits.max_line_bytes, true),
            block: Block {
                max_event_bytes: limits.max_event_bytes,
                max_line_bytes: limits.max_line_bytes,
                event_type: String::new(),
                data: String::new(),
                has_data: false,
                last_event_id: String::new(),
                spare: String::new(),
                dropped: false,
            },
        }
    }

    /// Hands back a dispatched event's data once read, for the next event to reuse. A
    /// buffer larger than the event limit is dropped: the framer's memory stays bounded.
    pub fn recycle(&mut self, data: String) {
        if data.capacity() <= self.block.max_event_bytes {
            self.block.spare = data;
        }
    }

    /// Feeds one chunk; appends what it completes to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseItem>) {
        let block = &mut self.block;
        self.lines.push(chunk, |line| block.line(line, out));
    }

    /// Ends the stream. An event not closed by a blank line is discarded (and reported).
    pub fn finish(&mut self, out: &mut Vec<SseItem>) {
        let pending = match self.lines.finish() {
            Unterminated::Nothing => 0,
            Unterminated::Bytes(bytes) => bytes.len(),
            Unterminated::Overlong { bytes } => {
                out.push(SseItem::Anomaly(FramingAnomaly::LineTooLong {
                    bytes,
                    limit: self.block.max_line_bytes,
                }));
                0
            }
        };
        // The data's bytes with one LF per line, as the limit counts them.
        let pending = pending + self.block.data.len() + usize::from(self.block.has_data);
        if pending > 0 && !self.block.dropped {
            out.push(SseItem::Anomaly(FramingAnomaly::Unterminated {
                bytes: pending,
            }));
        }
        self.block.reset();
    }
}

impl Block {
    fn line(&mut self, line: Line<'_>, out: &mut Vec<SseItem>) {
        let bytes = match line {
            Line::Complete(bytes) => bytes,
            Line::Overlong { first_byte, bytes } => {
                out.push(SseItem::Anomaly(FramingAnomaly::LineTooLong {
                    bytes,
                    limit: self.max_line_bytes,
                }));
                // A dropped comment costs nothing; a dropped field leaves the event
                // incomplete, and a partial event is worse than none.
                if first_byte != Some(b':') {
                    self.dropped = true;
                }
                return;
            }
        };
        let (text, replaced) = decode_lossy(bytes);
        if replaced {
            out.push(SseItem::Anomaly(FramingAnomaly::InvalidUtf8));
        }
        if text.is_empty() {
            self.dispatch(out);
            return;
        }
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (&*text, ""),
        };
        match field {
            "event" => {
                self.event_type.clear();
                self.event_type.push_str(value);
            }
            "data" => self.append_data(value, out),
            "id" if !value.as_bytes().contains(&0) => {
                self.last_event_id.clear();
                self.last_event_id.push_str(value);
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // Digits beyond u64 are not a time anyone means: ignored like junk.
                if let Ok(ms) = value.parse() {
                    out.push(SseItem::Retry(ms));
                }
            }
            _ => {}
        }
    }

    fn append_data(&mut self, value: &str, out: &mut Vec<SseItem>) {
        if self.dropped {
            return;
        }
        // One LF per line so far and for this one, as if each line kept its own.
        if self.data.len() + usize::from(self.has_data) + value.len() + 1 > self.max_event_bytes {
            out.push(SseItem::Anomaly(FramingAnomaly::EventTooLong {
                limit: self.max_event_bytes,
            }));
            self.dropped = true;
            self.data = String::new();
            return;
        }
        // Lines join with LF (the spec appends one after each and drops the last).
        if self.has_data {
            self.data.push('\n');
        }
        self.has_data = true;
        self.data.push_str(value);
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if self.dropped || !self.has_data {
            self.reset();
            return;
        }
        let event_type = if self.event_type.is_empty() {
            Cow::Borrowed("message")
        } else {
            Cow::Owned(std::mem::take(&mut self.event_type))
        };
        // A copy into the buffer the caller handed back (else a new one of the event's
        // size), and the block keeps its own for the next event.
        let mut data = std::mem::take(&mut self.spare);
        data.clear();
        data.push_str(&self.data);
        out.push(SseItem::Event(SseEvent {
            event_type,
            data,
            last_event_id: self.last_event_id.clone(),
        }));
        self.reset();
    }

    /// Clears the event being gathered; the last event ID survives, as the spec says.
    fn reset(&mut self) {
        self.event_type.clear();
        self.data.clear();
        self.has_data = false;
        self.dropped = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(chunks: &[&[u8]], limits: Limits) -> Vec<SseItem> {
        let mut framer = SseFramer::new(limits);
        let mut out = Vec::new();
        for chunk in chunks {
            framer.push(chunk, &mut out);
        }
        framer.finish(&mut out);
        out
    }

    fn event(event_type: &str, data: &str, id: &str) -> SseItem {
        SseItem::Event(SseEvent {
            event_type: event_type.to_owned().into(),
            data: data.into(),
            last_event_id: id.into(),
        })
    }

    #[test]
    fn fields_comments_and_multiline_data() {
        let items = frame(
            &[b": comment\nevent: add\ndata: a\ndata\ndata:  b\nid: 7\nunknown: x\n\n"],
            Limits::DEFAULT,
        );
        assert_eq!(items, [event("add", "a\n\n b", "7")]);
    }

    #[test]
    fn a_recycled_buffer_carries_the_next_event_and_an_oversized_one_is_not_kept() {
        let mut framer = SseFramer::new(Limits::DEFAULT);
        let mut out = Vec::new();
        framer.push(b"data: first event\n\n", &mut out);
        let Some(SseItem::Event(first)) = out.pop() else {
            panic!("no event");
        };
        let mut buffer = first.data;
        buffer.reserve(4096);
        let (pointer, capacity) = (buffer.as_ptr(), buffer.capacity());
        framer.recycle(buffer);
        framer.push(b"data: a\ndata: b\n\n", &mut out);
        let Some(SseItem::Event(second)) = out.pop() else {
            panic!("no event");
        };
        assert_eq!(second.data, "a\nb");
        assert_eq!(
            (second.data.as_ptr(), second.data.capacity()),
            (pointer, capacity)
        );
        // A buffer past the event limit would hold memory the limit does not allow.
        let held = framer.held_bytes();
        framer.recycle(String::with_capacity(Limits::DEFAULT.max_event_bytes + 1));
        assert_eq!(framer.held_bytes(), held);
    }

    #[test]
    fn block_without_data_is_not_dispatched_but_empty_data_is() {
        let items = frame(&[b"event: x\nid: 1\n\ndata:\n\n"], Limits::DEFAULT);
        assert_eq!(items, [event("message", "", "1")]);
    }

    #[test]
    fn id_with_nul_is_ignored_and_ids_carry_over() {
        let items = frame(
            &[b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n"],
            Limits::DEFAULT,
        );
        assert_eq!(
            items,
            [event("message", "a", "1"), event("message", "b", "1")]
        );
    }

    #[test]
    fn retry_takes_digits_only() {
        let items = frame(
            &[b"retry: 1500\nretry: 15x\nretry:\ndata: a\n\n"],
            Limits::DEFAULT,
        );
        assert_eq!(items, [SseItem::Retry(1500), event("message", "a", "")]);
    }

    #[test]
    fn unterminated_event_is_discarded_and_reported() {
        let items = frame(&[b"data: a\n\ndata: b\n"], Limits::DEFAULT);
        assert_eq!(
            items,
            [
                event("message", "a", ""),
                SseItem::Anomaly(FramingAnomaly::Unterminated { bytes: 2 })
            ]
        );
        let items = frame(&[b"data: a"], Limits::DEFAULT);
        assert_eq!(
            items,
            [SseItem::Anomaly(FramingAnomaly::Unterminated { bytes: 7 })]
        );
    }

    #[test]
    fn overlong_field_drops_its_event_and_decoding_goes_on() {
        let limits = Limits {
            max_line_bytes: 16,
            max_event_bytes: 32,
        };
        let long = format!("data: {}\n\ndata: ok\n\n", "x".repeat(40));
        let items = frame(&[long.as_bytes()], limits);
        assert_eq!(
            items,
            [
                SseItem::Anomaly(FramingAnomaly::LineTooLong {
                    bytes: 46,
                    limit: 16
                }),
                event("message", "ok", "")
            ]
        );
        // A long comment costs its bytes, not the event.
        let items = frame(
            &[format!(":{}\ndata: ok\n\n", "c".repeat(40)).as_bytes()],
            limits,
        );
        assert_eq!(items.len(), 2);
        assert_eq!(items[1], event("message", "ok", ""));
    }

    #[test]
    fn event_data_over_the_limit_drops_the_event() {
        let limits = Limits {
            max_line_bytes: 16,
            max_event_bytes: 20,
        };
        let items = frame(
            &[b"data: 0123456789\ndata: 0123456789\n\ndata: ok\n\n"],
            limits,
        );
        assert_eq!(
            items,
            [
                SseItem::Anomaly(FramingAnomaly::EventTooLong { limit: 20 }),
                event("message", "ok", "")
            ]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_and_reported() {
        let items = frame(&[b"data: a\xFFb\n\n"], Limits::DEFAULT);
        assert_eq!(
            items,
            [
                SseItem::Anomaly(FramingAnomaly::InvalidUtf8),
                event("message", "a\u{FFFD}b", "")
            ]
        );
    }
}
