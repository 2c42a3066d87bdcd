//! Python's `json.dump` writes a float NaN or infinity as a bare `NaN`, `Infinity` or
//! `-Infinity` token (its default `allow_nan=True`), and every Python benchmark tool
//! writes its results that way: a standard deviation of one sample, an infinite request
//! rate. Those tokens are not JSON, so serde_json refuses the file. This reader rewrites
//! each one, outside strings, into a JSON string of the same length (`"N"`, `"Inf"` and
//! three spaces, `"-Inf"` and three spaces), which [`crate::number`] reads back as the
//! float. Same length, so offsets in error messages stay true and nothing is buffered
//! beyond one block. A bare token that is none of the three is an error, never guessed.

use std::io::{self, Read};

const BLOCK: usize = 64 * 1024;

/// (token, its replacement): equal lengths.
const NAN: (&[u8], &[u8]) = (b"NaN", b"\"N\"");
const INF: (&[u8], &[u8]) = (b"Infinity", b"\"Inf\"   ");
const NEG_INF: (&[u8], &[u8]) = (b"-Infinity", b"\"-Inf\"   ");

#[derive(Debug, Clone, Copy)]
enum Scan {
    Outside,
    InString,
    Escape,
    Token {
        token: (&'static [u8], &'static [u8]),
        at: usize,
    },
}

/// Wraps a JSON byte stream (see the module doc).
#[derive(Debug)]
pub struct NonFiniteTokens<R> {
    inner: R,
    buf: Box<[u8]>,
    /// Next byte to hand out.
    start: usize,
    /// `[start, ready)` are rewritten and can be handed out.
    ready: usize,
    /// `[ready, filled)` were read but not rewritten yet (a `-` waiting for its next byte).
    filled: usize,
    scan: Scan,
    /// Input bytes before `buf[0]`.
    offset: u64,
    eof: bool,
}

impl<R: Read> NonFiniteTokens<R> {
    pub fn new(inner: R) -> Self {
        NonFiniteTokens {
            inner,
            buf: vec![0; BLOCK].into_boxed_slice(),
            start: 0,
            ready: 0,
            filled: 0,
            scan: Scan::Outside,
            offset: 0,
            eof: false,
        }
    }

    /// Moves what is not handed out yet to the front and reads more.
    fn fill(&mut self) -> io::Result<()> {
        self.buf.copy_within(self.start..self.filled, 0);
        self.offset += self.start as u64;
        self.ready -= self.start;
        self.filled -= self.start;
        self.start = 0;
        let n = loop {
            match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            self.eof = true;
        }
        self.filled += n;
        Ok(())
    }

    fn rewrite(&mut self) -> io::Result<()> {
        let mut i = self.ready;
        while i < self.filled {
            // Jump to the next byte that can change the state; the bytes between are
            // copied through as they are.
            let rest = &self.buf[i..self.filled];
            let skip = match self.scan {
                Scan::InString => memchr::memchr2(b'"', b'\\', rest),
                Scan::Outside => memchr::memchr3(b'"', b'N', b'I', rest),
                Scan::Escape | Scan::Token { .. } => Some(0),
            };
            let Some(skip) = skip else {
                i = self.filled;
                break;
            };
            i += skip;
            let b = self.buf[i];
            self.scan = match self.scan {
                Scan::InString => match b {
                    b'\\' => Scan::Escape,
                    _ => Scan::Outside,
                },
                Scan::Escape => Scan::InString,
                Scan::Outside => match b {
                    b'"' => Scan::InString,
                    b'N' => self.begin(i, NAN),
                    // `-Infinity`: the `-` before is still in the block (a `-` at a
                    // block's end is held back until the next byte is read).
                    _ if i > 0 && self.buf[i - 1] == b'-' => {
                        self.buf[i - 1] = NEG_INF.1[0];
                        self.buf[i] = NEG_INF.1[1];
                        Scan::Token {
                            token: NEG_INF,
                            at: 2,
                        }
                    }
                    _ => self.begin(i, INF),
                },
                Scan::Token { token, at } => {
                    if b != token.0[at] {
                        return Err(self.bad(i));
                    }
                    self.buf[i] = token.1[at];
                    if at + 1 == token.0.len() {
                        Scan::Outside
                    } else {
                        Scan::Token { token, at: at + 1 }
                    }
                }
            };
            i += 1;
        }
        // A `-` ending the block outside a string may begin `-Infinity`: hold it back
        // (at the end of input there is nothing to wait for).
        if i == self.filled
            && !self.eof
            && matches!(self.scan, Scan::Outside)
            && i > self.start
            && self.buf[i - 1] == b'-'
        {
            i -= 1;
        }
        self.ready = i;
        Ok(())
    }

    fn begin(&mut self, i: usize, token: (&'static [u8], &'static [u8])) -> Scan {
        self.buf[i] = token.1[0];
        Scan::Token { token, at: 1 }
    }

    fn bad(&self, i: usize) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "byte {}: a bare word that is not NaN, Infinity or -Infinity",
                self.offset + i as u64
            ),
        )
    }
}

impl<R: Read> Read for NonFiniteTokens<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.start == self.ready {
            if self.eof {
                if let Scan::Token { .. } = self.scan {
                    return Err(self.bad(self.filled));
                }
                return Ok(0);
            }
            self.fill()?;
            self.rewrite()?;
        }
        let n = out.len().min(self.ready - self.start);
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per call, to cut tokens anywhere.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn rewrite(text: &str, step: usize) -> io::Result<String> {
        let mut out = String::new();
        NonFiniteTokens::new(Trickle {
            data: text.as_bytes(),
            step,
        })
        .read_to_string(&mut out)?;
        Ok(out)
    }

    #[test]
    fn bare_tokens_become_strings_of_the_same_length_wherever_reads_cut_them() {
        let text =
            r#"{"a": NaN, "b": [Infinity, -Infinity, -1.5], "s": "NaN -Infinity \" I", "n": null}"#;
        let want =
            r#"{"a": "N", "b": ["Inf"   , "-Inf"   , -1.5], "s": "NaN -Infinity \" I", "n": null}"#;
        for step in 1..=text.len() {
            assert_eq!(rewrite(text, step).unwrap(), want, "reads of {step} bytes");
        }
    }

    #[test]
    fn a_bare_word_that_is_not_a_float_is_an_error_naming_its_byte() {
        let e = rewrite(r#"{"a": Nope}"#, 4).unwrap_err();
        assert!(e.to_string().contains("byte 7"), "{e}");
        assert!(
            rewrite(r#"{"a": Inf"#, 3).is_err(),
            "a token cut by the end of input"
        );
        // A lone `-` at the end is handed to the JSON parser as it is.
        assert_eq!(rewrite("[-", 1).unwrap(), "[-");
    }
}
