//! Splitting a byte stream into lines, whatever the chunk boundaries.
//!
//! A line end split across chunks (CR in one, LF in the next) is one line end; a leading
//! UTF-8 BOM is skipped; a line over the limit is counted, not stored.

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What the splitter hands over for each line end it meets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A complete line, without its terminator.
    Complete(&'a [u8]),
    /// A line over the limit: only its length and first byte were kept.
    Overlong {
        first_byte: Option<u8>,
        bytes: usize,
    },
}

/// What was left when the stream ended without a final line end.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unterminated {
    Nothing,
    Bytes(Vec<u8>),
    Overlong { bytes: usize },
}

pub(crate) struct LineSplitter {
    max_line_bytes: usize,
    /// SSE ends lines at CR, LF or CRLF; NDJSON only at LF (a CR before it is dropped).
    cr_ends_line: bool,
    line: Vec<u8>,
    /// Set while dropping an overlong line: (first byte, bytes seen so far).
    overlong: Option<(Option<u8>, usize)>,
    /// The previous chunk ended with CR: an LF at the start of the next one is its pair.
    after_cr: bool,
    /// No line has been completed yet, so a BOM may still lead the stream.
    at_stream_start: bool,
}

impl LineSplitter {
    /// Bytes held for a line not yet ended (tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.line.capacity()
    }

    pub(crate) fn new(max_line_bytes: usize, cr_ends_line: bool) -> Self {
        LineSplitter {
            max_line_bytes,
            cr_ends_line,
            line: Vec::new(),
            overlong: None,
            after_cr: false,
            at_stream_start: true,
        }
    }

    /// Feeds one chunk, calling `on_line` for every line it completes.
    pub(crate) fn push(&mut self, mut chunk: &[u8], mut on_line: impl FnMut(Line<'_>)) {
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if let Some((b'\n', rest)) = chunk.split_first() {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            let end = if self.cr_ends_line {
                memchr::memchr2(b'\n', b'\r', chunk)
            } else {
                memchr::memchr(b'\n', chunk)
            };
            let Some(end) = end else {
                self.keep(chunk);
                return;
            };
            let (content, rest) = chunk.split_at(end);
            let (terminator, rest) = match rest.split_first() {
                Some((t, rest)) => (*t, rest),
                None => (b'\n', rest),
            };
            self.complete(content, &mut on_line);
            chunk = rest;
            if terminator == b'\r' {
                match chunk.split_first() {
                    Some((b'\n', rest)) => chunk = rest,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
    }

    /// Ends the stream: whatever follows the last line end.
    pub(crate) fn finish(&mut self) -> Unterminated {
        self.after_cr = false;
        if let Some((_, bytes)) = self.overlong.take() {
            return Unterminated::Overlong { bytes };
        }
        if self.line.is_empty() {
            return Unterminated::Nothing;
        }
        let line = std::mem::take(&mut self.line);
        Unterminated::Bytes(self.trim(&line).to_vec())
    }

    fn keep(&mut self, part: &[u8]) {
        if let Some((_, bytes)) = &mut self.overlong {
            *bytes += part.len();
            return;
        }
        let len = self.line.len() + part.len();
        if len > self.max_line_bytes {
            let first_byte = self.line.first().or(part.first()).copied();
            self.overlong = Some((first_byte, len));
            // Give the memory back now: an overlong line may never end.
            self.line = Vec::new();
            return;
        }
        self.line.extend_from_slice(part);
    }

    fn complete(&mut self, tail: &[u8], on_line: &mut impl FnMut(Line<'_>)) {
        // Fast path: the whole line is inside this chunk, so it is handed over in place.
        if self.line.is_empty() && self.overlong.is_none() && tail.len() <= self.max_line_bytes {
            let line = self.trim(tail);
            on_line(Line::Complete(line));
            return;
        }
        self.keep(tail);
        if let Some((first_byte, bytes)) = self.overlong.take() {
            self.at_stream_start = false;
            on_line(Line::Overlong { first_byte, bytes });
            return;
        }
        let mut line = std::mem::take(&mut self.line);
        let trimmed = self.trim(&line);
        on_line(Line::Complete(trimmed));
        line.clear();
        self.line = line;
    }

    /// Drops a leading BOM (first line only) and, for LF-only framing, a CR before the LF.
    fn trim<'a>(&mut self, mut line: &'a [u8]) -> &'a [u8] {
        if std::mem::replace(&mut self.at_stream_start, false) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if !self.cr_ends_line {
            line = line.strip_suffix(b"\r").unwrap_or(line);
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(input: &[&[u8]], cr_ends_line: bool, limit: usize) -> (Vec<String>, Unterminated) {
        let mut splitter = LineSplitter::new(limit, cr_ends_line);
        let mut lines = Vec::new();
        for chunk in input {
            splitter.push(chunk, |line| {
                lines.push(match line {
                    Line::Complete(b) => String::from_utf8_lossy(b).into_owned(),
                    Line::Overlong { first_byte, bytes } => {
                        format!("<overlong {bytes} from {first_byte:?}>")
                    }
                })
            });
        }
        (lines, splitter.finish())
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        let (lines, rest) = split(&[b"a\r", b"\nb\r", b"c\n"], true, 100);
        assert_eq!(lines, ["a", "b", "c"]);
        assert_eq!(rest, Unterminated::Nothing);
    }

    #[test]
    fn lf_only_framing_keeps_bare_cr_and_drops_cr_before_lf() {
        let (lines, rest) = split(&[b"a\rb\r", b"\nc"], false, 100);
        assert_eq!(lines, ["a\rb"]);
        assert_eq!(rest, Unterminated::Bytes(b"c".to_vec()));
    }

    #[test]
    fn bom_is_skipped_only_at_stream_start_even_when_split() {
        let (lines, _) = split(&[b"\xEF", b"\xBB", b"\xBFx\n\xEF\xBB\xBFy\n"], true, 100);
        assert_eq!(lines, ["x", "\u{FEFF}y"]);
    }

    #[test]
    fn overlong_line_is_counted_not_stored() {
        let (lines, _) = split(&[b"ok\n:", b"0123456789", b"abc\nnext\n"], true, 8);
        assert_eq!(lines, ["ok", "<overlong 14 from Some(58)>", "next"]);
        let mut splitter = LineSplitter::new(4, true);
        splitter.push(&[b'x'; 1000], |_| panic!("no line ends here"));
        assert!(splitter.line.capacity() <= 4);
        assert_eq!(splitter.finish(), Unterminated::Overlong { bytes: 1000 });
    }
}
