//! NDJSON framing (Ollama): one JSON value per LF-terminated line.
//!
//! A CR before the LF is dropped, blank lines are skipped, and a last line without a
//! final LF is still a line (many writers omit it). The JSON itself is the dialect's job,
//! so a malformed value is reported where the dialect knows what it expected.

use crate::decode::framing::{FramingAnomaly, Limits};
use crate::decode::lines::{Line, LineSplitter, Unterminated};
use crate::decode::utf8::decode_lossy;

/// What the NDJSON framer produces, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NdjsonItem {
    /// One non-blank line, as text.
    Line(String),
    Anomaly(FramingAnomaly),
}

impl NdjsonItem {
    /// The item as JSON, the way `ttfx decode --dialect ndjson` prints it.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            NdjsonItem::Line(text) => serde_json::json!({"kind": "line", "text": text}),
            NdjsonItem::Anomaly(a) => crate::decode::sse::anomaly_json(a),
        }
    }
}

/// Incremental NDJSON framer.
pub struct NdjsonFramer {
    lines: LineSplitter,
    max_line_bytes: usize,
}

impl NdjsonFramer {
    /// Bytes held for the line not yet ended (tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.lines.held_bytes()
    }

    pub fn new(limits: Limits) -> Self {
        NdjsonFramer {
            lines: LineSplitter::new(limits.max_line_bytes, false),
            max_line_bytes: limits.max_line_bytes,
        }
    }

    /// Feeds one chunk; appends what it completes to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<NdjsonItem>) {
        let limit = self.max_line_bytes;
        self.lines.push(chunk, |line| match line {
            Line::Complete(bytes) => emit_line(bytes, out),
            Line::Overlong { bytes, .. } => {
                out.push(NdjsonItem::Anomaly(FramingAnomaly::LineTooLong {
                    bytes,
                    limit,
                }))
            }
        });
    }

    /// Ends the stream; a last line without its LF is handed over as a line.
    pub fn finish(&mut self, out: &mut Vec<NdjsonItem>) {
        match self.lines.finish() {
            Unterminated::Nothing => {}
            Unterminated::Bytes(bytes) => emit_line(&bytes, out),
            Unterminated::Overlong { bytes } => {
                out.push(NdjsonItem::Anomaly(FramingAnomaly::LineTooLong {
                    bytes,
                    limit: self.max_line_bytes,
                }))
            }
        }
    }
}

fn emit_line(bytes: &[u8], out: &mut Vec<NdjsonItem>) {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let (text, replaced) = decode_lossy(bytes);
    if replaced {
        out.push(NdjsonItem::Anomaly(FramingAnomaly::InvalidUtf8));
    }
    out.push(NdjsonItem::Line(text.into_owned()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_blank_lines_crlf_and_a_last_line_without_lf() {
        let mut framer = NdjsonFramer::new(Limits::DEFAULT);
        let mut out = Vec::new();
        framer.push(b"{\"a\":1}\r\n\n  \n{\"b\"", &mut out);
        framer.push(b":2}", &mut out);
        framer.finish(&mut out);
        assert_eq!(
            out,
            [
                NdjsonItem::Line("{\"a\":1}".into()),
                NdjsonItem::Line("{\"b\":2}".into())
            ]
        );
    }

    #[test]
    fn overlong_line_is_reported_and_the_next_one_kept() {
        let limits = Limits {
            max_line_bytes: 8,
            max_event_bytes: 8,
        };
        let mut framer = NdjsonFramer::new(limits);
        let mut out = Vec::new();
        framer.push(b"{\"long\":\"xxxxxxxx\"}\n{}\n", &mut out);
        framer.finish(&mut out);
        assert_eq!(
            out,
            [
                NdjsonItem::Anomaly(FramingAnomaly::LineTooLong {
                    bytes: 19,
                    limit: 8
                }),
                NdjsonItem::Line("{}".into())
            ]
        );
    }
}
