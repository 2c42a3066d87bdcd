//! Raw text streams: UTF-8 decoded incrementally, a sequence cut by a chunk boundary
//! held until its last byte arrives.
//!
//! Each invalid sequence ends the text delta it is in (with its U+FFFD) and is followed
//! by its error event, so text and errors interleave the same way however the bytes
//! were split.

use crate::decode::event::Event;
use crate::decode::framing::FramingAnomaly;

/// Incremental UTF-8 decoder (WHATWG replacement semantics) emitting text events.
#[derive(Debug, Default)]
pub struct Utf8Stream {
    /// The start of a multi-byte sequence the previous chunk cut (at most 3 bytes).
    carry: Vec<u8>,
}

impl Utf8Stream {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one chunk into text events (and an error after each invalid sequence).
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Event>) {
        let joined;
        let mut input: &[u8] = if self.carry.is_empty() {
            chunk
        } else {
            joined = [std::mem::take(&mut self.carry).as_slice(), chunk].concat();
            &joined
        };
        let mut text = String::new();
        loop {
            match std::str::from_utf8(input) {
                Ok(valid) => {
                    text.push_str(valid);
                    break;
                }
                Err(e) => {
                    let (valid, rest) = input.split_at(e.valid_up_to());
                    text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(bad) => {
                            text.push('\u{FFFD}');
                            emit_invalid(&mut text, out);
                            input = rest.get(bad..).unwrap_or_default();
                        }
                        None => {
                            self.carry = rest.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        if !text.is_empty() {
            out.push(Event::Text { text });
        }
    }

    /// Ends the stream: a sequence still open is one U+FFFD.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        if !self.carry.is_empty() {
            self.carry.clear();
            emit_invalid(&mut "\u{FFFD}".to_owned(), out);
        }
    }
}

fn emit_invalid(text: &mut String, out: &mut Vec<Event>) {
    out.push(Event::Text {
        text: std::mem::take(text),
    });
    out.push(FramingAnomaly::InvalidUtf8.to_event());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(events: &[Event]) -> String {
        events
            .iter()
            .map(|e| match e {
                Event::Text { text } => text.as_str(),
                _ => "|",
            })
            .collect()
    }

    #[test]
    fn sequences_cut_by_chunks_decode_whole() {
        let mut stream = Utf8Stream::new();
        let mut out = Vec::new();
        for b in "añ€😀".as_bytes() {
            stream.push(&[*b], &mut out);
        }
        stream.finish(&mut out);
        assert_eq!(text_of(&out), "añ€😀");
    }

    #[test]
    fn each_invalid_sequence_closes_its_delta_then_reports() {
        let mut stream = Utf8Stream::new();
        let mut out = Vec::new();
        stream.push(b"a\xFFb\xE2\x82", &mut out);
        stream.finish(&mut out);
        assert_eq!(text_of(&out), "a\u{FFFD}|b\u{FFFD}|");
    }
}
