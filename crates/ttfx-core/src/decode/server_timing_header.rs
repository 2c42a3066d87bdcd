//! The `Server-Timing` response header, per the W3C Server Timing grammar:
//!
//! ```text
//! Server-Timing             = #server-timing-metric
//! server-timing-metric      = metric-name *( OWS ";" OWS server-timing-param )
//! server-timing-param       = server-timing-param-name OWS "=" OWS server-timing-param-value
//! server-timing-param-value = token / quoted-string
//! ```
//!
//! `dur` (milliseconds) and `desc` are read, the first occurrence of each winning, other
//! parameters ignored. Several headers concatenate. A malformed entry is skipped up to
//! the next top-level comma and reported; the entries around it are kept.

use std::fmt;

use crate::server_timing::{ServerTiming, TimingSource};

/// A part of a header that was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTimingJunk {
    /// An entry that does not follow the grammar; its text is kept for the report.
    MalformedEntry { text: String },
    /// A `dur` that is not a finite number; the metric is kept without a duration.
    BadDuration { metric: String, value: String },
}

impl fmt::Display for ServerTimingJunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerTimingJunk::MalformedEntry { text } => {
                write!(f, "malformed Server-Timing entry `{text}` skipped")
            }
            ServerTimingJunk::BadDuration { metric, value } => {
                write!(
                    f,
                    "Server-Timing `{metric}` has a dur that is not a number: `{value}`"
                )
            }
        }
    }
}

impl std::error::Error for ServerTimingJunk {}

/// What one or more `Server-Timing` headers said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedServerTiming {
    pub timings: Vec<ServerTiming>,
    pub junk: Vec<ServerTimingJunk>,
}

/// Parses every `Server-Timing` header value of a response, in order.
pub fn parse_headers<'a>(values: impl IntoIterator<Item = &'a str>) -> ParsedServerTiming {
    let mut parsed = ParsedServerTiming::default();
    for value in values {
        Parser {
            text: value,
            pos: 0,
        }
        .entries(&mut parsed);
    }
    parsed
}

/// Parses one `Server-Timing` header value.
pub fn parse_header(value: &str) -> ParsedServerTiming {
    parse_headers([value])
}

fn is_tchar(c: char) -> bool {
    // Bytes, not `str::contains(char)`: that brings std's substring searcher (2.5 KB of
    // the browser analysis's wasm) for non-ASCII chars, which are never tchars anyway.
    c.is_ascii_alphanumeric() || (c.is_ascii() && b"!#$%&'*+-.^_`|~".contains(&(c as u8)))
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ows(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start_matches([' ', '\t']).len();
    }

    fn token(&mut self) -> &'a str {
        let rest = self.rest();
        let len = rest.find(|c| !is_tchar(c)).unwrap_or(rest.len());
        self.pos += len;
        rest.get(..len).unwrap_or("")
    }

    /// A quoted-string, unescaped; None when it never closes.
    fn quoted(&mut self) -> Option<String> {
        let mut value = String::new();
        let mut chars = self.rest().char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos += i + 1;
                    return Some(value);
                }
                '\\' => value.push(chars.next()?.1),
                c => value.push(c),
            }
        }
        None
    }

    /// Moves past the next comma outside a quoted string (or to the end).
    fn skip_entry(&mut self) {
        let mut in_quotes = false;
        let mut escaped = false;
        for (i, c) in self.rest().char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_quotes => escaped = true,
                '"' => in_quotes = !in_quotes,
                ',' if !in_quotes => {
                    self.pos += i + 1;
                    return;
                }
                _ => {}
            }
        }
        self.pos = self.text.len();
    }

    fn entries(&mut self, parsed: &mut ParsedServerTiming) {
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | ',')) {
                self.pos += 1;
            }
            if self.peek().is_none() {
                return;
            }
            let start = self.pos;
            match self.entry(parsed) {
                Some(timing) => parsed.timings.push(timing),
                None => {
                    self.pos = start;
                    self.skip_entry();
                    let text = self.text.get(start..self.pos).unwrap_or("");
                    let text = text.trim_end_matches(',').trim().to_owned();
                    parsed.junk.push(ServerTimingJunk::MalformedEntry { text });
                }
            }
        }
    }

    /// One metric; None when it breaks the grammar.
    fn entry(&mut self, parsed: &mut ParsedServerTiming) -> Option<ServerTiming> {
        let name = self.token();
        if name.is_empty() {
            return None;
        }
        let mut timing = ServerTiming {
            name: name.to_owned(),
            duration_ms: None,
            description: None,
            source: TimingSource::ServerTimingHeader,
        };
        let (mut seen_dur, mut seen_desc) = (false, false);
        loop {
            self.skip_ows();
            match self.peek() {
                None => return Some(timing),
                Some(',') => {
                    self.pos += 1;
                    return Some(timing);
                }
                Some(';') => self.pos += 1,
                Some(_) => return None,
            }
            self.skip_ows();
            let param = self.token();
            if param.is_empty() {
                return None;
            }
            self.skip_ows();
            // The grammar requires a value; browsers accept a bare name as an empty one.
            let value = if self.peek() == Some('=') {
                self.pos += 1;
                self.skip_ows();
                if self.peek() == Some('"') {
                    self.quoted()?
                } else {
                    let token = self.token();
                    if token.is_empty() {
                        return None;
                    }
                    token.to_owned()
                }
            } else {
                String::new()
            };
            match param.to_ascii_lowercase().as_str() {
                "dur" if !seen_dur => {
                    seen_dur = true;
                    match crate::decode::decimal::parse(&value) {
                        Some(ms) => timing.duration_ms = Some(ms),
                        None => parsed.junk.push(ServerTimingJunk::BadDuration {
                            metric: timing.name.clone(),
                            value,
                        }),
                    }
                }
                "desc" if !seen_desc => {
                    seen_desc = true;
                    timing.description = Some(value);
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(parsed: &ParsedServerTiming) -> Vec<(String, Option<f64>, Option<String>)> {
        parsed
            .timings
            .iter()
            .map(|t| (t.name.clone(), t.duration_ms, t.description.clone()))
            .collect()
    }

    fn t(
        name: &str,
        dur: Option<f64>,
        desc: Option<&str>,
    ) -> (String, Option<f64>, Option<String>) {
        (name.into(), dur, desc.map(Into::into))
    }

    #[test]
    fn names_durations_token_and_quoted_descriptions() {
        let parsed = parse_header(
            r#"miss, db;dur=53, app;dur=47.2, cache;desc="Cache Read";dur=23.2, edge; desc=hit ; dur = 1"#,
        );
        assert_eq!(
            summary(&parsed),
            [
                t("miss", None, None),
                t("db", Some(53.0), None),
                t("app", Some(47.2), None),
                t("cache", Some(23.2), Some("Cache Read")),
                t("edge", Some(1.0), Some("hit")),
            ]
        );
        assert!(parsed.junk.is_empty());
        assert!(
            parsed
                .timings
                .iter()
                .all(|t| t.source == TimingSource::ServerTimingHeader)
        );
    }

    #[test]
    fn first_dur_and_desc_win_escapes_unquote_and_unknown_params_are_ignored() {
        let parsed = parse_header(r#"q;dur=1;dur=2;desc="a \"b\", c";desc=x;foo=bar"#);
        assert_eq!(summary(&parsed), [t("q", Some(1.0), Some(r#"a "b", c"#))]);
    }

    #[test]
    fn junk_in_one_entry_keeps_the_others_and_several_headers_concatenate() {
        let parsed = parse_headers([
            r#"a;dur=1, @bad;dur=2, b dur=3, c;dur=x, d;desc="unterminated"#,
            "e;dur=5",
        ]);
        assert_eq!(
            summary(&parsed),
            [
                t("a", Some(1.0), None),
                t("c", None, None),
                t("e", Some(5.0), None)
            ]
        );
        assert_eq!(
            parsed.junk,
            [
                ServerTimingJunk::MalformedEntry {
                    text: "@bad;dur=2".into()
                },
                ServerTimingJunk::MalformedEntry {
                    text: "b dur=3".into()
                },
                ServerTimingJunk::BadDuration {
                    metric: "c".into(),
                    value: "x".into()
                },
                ServerTimingJunk::MalformedEntry {
                    text: r#"d;desc="unterminated"#.into()
                },
            ]
        );
    }
}
