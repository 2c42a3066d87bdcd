//! Clause/sentence segmentation of a streamed answer, for the LLM → TTS handoff.
//!
//! A voice app sends text to TTS a segment at a time; the sooner the first segment is
//! complete and leaves, the sooner the user hears something. [`Segmenter`] is fed the
//! visible text deltas as they arrive and returns each segment the moment the text seen so
//! far proves it complete. The rules (also in `docs/metrics.md`) are for English:
//!
//! 1. A **sentence** ends at a run of `.`, `!`, `?` or `…`, optionally followed by closers
//!    (`"` `'` `”` `’` `)` `]` `»` `*` `_` `` ` ``), when whitespace follows. A terminator
//!    glued to the next character is not an end: `3.14`, `e.g`, `U.S.A`, `...and`.
//!    Commas inside numbers (`1,000`) are glued the same way.
//! 2. A single `.` after a **title or Latin abbreviation** (`Dr.`, `Mr.`, `e.g.`, `i.e.`,
//!    `vs.`, …, see [`NEVER_FINAL`]) or a single capital letter (an initial: `J. Smith`)
//!    never ends a sentence.
//! 3. After an abbreviation that may also end a sentence (`etc.`, `Inc.`, `a.m.`, a word
//!    with inner dots like `U.S.`, see [`MAYBE_FINAL`]), after an **ellipsis** (`...`,
//!    `…`) and after a closing quote, the next word decides: a capital letter, digit or
//!    opening quote starts a new sentence; a lower-case word continues this one. The
//!    segment is held until that word's first character arrives.
//! 4. A number alone before `.` at the start of a segment is a list marker (`1. Item`).
//! 5. A line break ends a non-empty segment (paragraphs, list items, headings).
//! 6. With [`SegmenterConfig::clause_min_chars`] set, `,` `;` `:` `—` followed by
//!    whitespace also end a segment once it holds at least that many characters: a first
//!    clause can leave for TTS before its sentence is over, without flooding TTS with
//!    two-word fragments.
//!
//! `finish` emits whatever is left as the last segment. Whitespace between segments
//! belongs to neither; segments that would be empty are never emitted.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Abbreviations whose `.` never ends a sentence (compared lower-case, inner dots kept).
pub const NEVER_FINAL: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "rev", "gen", "gov", "sen", "rep",
    "capt", "lt", "col", "sgt", "e.g", "i.e", "vs", "cf", "approx", "ca", "fig", "figs", "eq",
    "no", "vol", "pp", "ch", "sec",
];

/// Abbreviations whose `.` ends a sentence only when a new sentence visibly starts.
pub const MAYBE_FINAL: &[&str] = &[
    "etc", "inc", "ltd", "co", "corp", "bros", "a.m", "p.m", "jan", "feb", "mar", "apr", "jun",
    "jul", "aug", "sep", "sept", "oct", "nov", "dec",
];

const SENTENCE_END: [char; 4] = ['.', '!', '?', '…'];
const CLAUSE_END: [char; 4] = [',', ';', ':', '—'];
const CLOSERS: [char; 10] = ['"', '\'', '”', '’', ')', ']', '»', '*', '_', '`'];
const OPENERS: [char; 7] = ['"', '\'', '“', '‘', '(', '[', '«'];

/// How finely to cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SegmenterConfig {
    /// Also cut at clause punctuation once a segment has at least this many characters;
    /// `None` cuts at sentences and line breaks only.
    #[serde(default)]
    pub clause_min_chars: Option<usize>,
}

/// One complete segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// 0 for the first segment of the answer.
    pub index: u32,
    /// The segment's text, without surrounding whitespace.
    pub text: String,
    /// When the delta holding the segment's last character arrived.
    pub last_token_at_ms: f64,
    /// When the segmenter could tell the segment was complete: the arrival of the
    /// character that proved it (whitespace after a `.`, the next word after `etc.`), or
    /// the end of the stream.
    pub complete_at_ms: f64,
}

/// Incremental segmenter over visible text deltas.
#[derive(Debug, Clone, Default)]
pub struct Segmenter {
    config: SegmenterConfig,
    /// Text not yet emitted.
    pending: String,
    /// Byte offset in `pending` where scanning resumes (everything before is decided).
    scan_from: usize,
    /// (end offset in `pending`, arrival time) of each delta that contributed to it.
    arrivals: VecDeque<(usize, f64)>,
    next_index: u32,
}

/// What the text after a terminator says about it.
enum Decision {
    /// A segment ends at this byte offset.
    Cut(usize),
    /// Not an end; scanning goes on from this offset.
    Continue(usize),
    /// The characters that decide have not arrived yet.
    Wait,
}

impl Segmenter {
    pub fn new(config: SegmenterConfig) -> Self {
        Segmenter {
            config,
            ..Segmenter::default()
        }
    }

    /// Feeds one visible text delta that arrived at `at_ms`; returns the segments it
    /// completed, in order.
    pub fn push(&mut self, delta: &str, at_ms: f64) -> Vec<Segment> {
        if delta.is_empty() {
            return Vec::new();
        }
        self.pending.push_str(delta);
        self.arrivals.push_back((self.pending.len(), at_ms));
        let mut out = Vec::new();
        while let Some(cut) = self.next_cut() {
            if let Some(segment) = self.emit(cut, at_ms) {
                out.push(segment);
            }
        }
        out
    }

    /// Ends the stream at `at_ms`: the rest of the text is the last segment.
    pub fn finish(&mut self, at_ms: f64) -> Option<Segment> {
        let segment = self.emit(self.pending.len(), at_ms);
        self.scan_from = 0;
        segment
    }

    /// Segments emitted so far.
    pub fn emitted(&self) -> u32 {
        self.next_index
    }

    fn next_cut(&mut self) -> Option<usize> {
        loop {
            let (at, c) = self.pending[self.scan_from..]
                .char_indices()
                .map(|(i, c)| (i + self.scan_from, c))
                .find(|(_, c)| *c == '\n' || SENTENCE_END.contains(c) || CLAUSE_END.contains(c))?;
            match self.decide(at, c) {
                Decision::Cut(cut) => return Some(cut),
                Decision::Continue(from) => self.scan_from = from,
                Decision::Wait => {
                    self.scan_from = at;
                    return None;
                }
            }
        }
    }

    fn decide(&self, at: usize, c: char) -> Decision {
        let text = &self.pending;
        if c == '\n' {
            return Decision::Cut(at);
        }
        let clause = CLAUSE_END.contains(&c);
        let run_end = end_of_run(text, at, if clause { &CLAUSE_END } else { &SENTENCE_END });
        let end = end_of_run(text, run_end, &CLOSERS);
        let Some(next) = text[end..].chars().next() else {
            return Decision::Wait;
        };
        if !next.is_whitespace() {
            return Decision::Continue(end.max(at + c.len_utf8()));
        }
        if clause {
            let long_enough = self
                .config
                .clause_min_chars
                .is_some_and(|min| text[..end].trim().chars().count() >= min);
            return if long_enough {
                Decision::Cut(end)
            } else {
                Decision::Continue(end)
            };
        }
        let run = &text[at..run_end];
        let closed = end > run_end;
        let word = word_before(text, at);
        let needs_next_word = if run == "." {
            match classify_word(word, text[..at].trim_start().len() == word.len()) {
                Word::NeverFinal => return Decision::Continue(end),
                Word::MaybeFinal => true,
                Word::Plain => closed,
            }
        } else {
            // An ellipsis trails off or ends; `!`/`?` inside a quote may go on with
            // "she said".
            run.contains('…') || run.contains("..") || closed
        };
        if !needs_next_word {
            return Decision::Cut(end);
        }
        match text[end..].trim_start().chars().next() {
            None => Decision::Wait,
            Some(n) if n.is_uppercase() || n.is_ascii_digit() || OPENERS.contains(&n) => {
                Decision::Cut(end)
            }
            Some(_) => Decision::Continue(end),
        }
    }

    /// Emits `pending[..cut]` (when not blank) and drops it with the whitespace after it.
    fn emit(&mut self, cut: usize, complete_at_ms: f64) -> Option<Segment> {
        let text = self.pending[..cut].trim();
        let segment = (!text.is_empty()).then(|| {
            // The last character of the segment proper, trailing whitespace excluded.
            let last_byte = self.pending[..cut].trim_end().len() - 1;
            let last_token_at_ms = self
                .arrivals
                .iter()
                .find(|(end, _)| *end > last_byte)
                .map_or(complete_at_ms, |(_, at)| *at);
            let segment = Segment {
                index: self.next_index,
                text: text.to_owned(),
                last_token_at_ms,
                complete_at_ms,
            };
            self.next_index += 1;
            segment
        });
        let rest = self.pending[cut..].trim_start();
        let dropped = self.pending.len() - rest.len();
        self.pending = rest.to_owned();
        self.scan_from = 0;
        self.arrivals = self
            .arrivals
            .iter()
            .filter(|(end, _)| *end > dropped)
            .map(|(end, at)| (end - dropped, *at))
            .collect();
        segment
    }
}

/// The offset just past a run of `set` characters starting at `from`.
fn end_of_run(text: &str, from: usize, set: &[char]) -> usize {
    text[from..]
        .char_indices()
        .find(|(_, c)| !set.contains(c))
        .map_or(text.len(), |(i, _)| from + i)
}

/// The word ending just before offset `at` (back to whitespace), without opening quotes.
fn word_before(text: &str, at: usize) -> &str {
    let before = &text[..at];
    let start = before
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    before[start..].trim_start_matches(|c| OPENERS.contains(&c))
}

enum Word {
    NeverFinal,
    MaybeFinal,
    Plain,
}

/// What a `.` after `word` means; `first` says the word opens the segment.
fn classify_word(word: &str, first: bool) -> Word {
    // The word lists are ASCII; ASCII folding also keeps Unicode case tables out of the probe.
    let lower = word.to_ascii_lowercase();
    let mut chars = word.chars();
    let initial = matches!((chars.next(), chars.next()), (Some(c), None) if c.is_uppercase());
    let list_marker = first && !word.is_empty() && word.chars().all(|c| c.is_ascii_digit());
    if initial || list_marker || NEVER_FINAL.contains(&lower.as_str()) {
        Word::NeverFinal
    } else if MAYBE_FINAL.contains(&lower.as_str()) || word.contains('.') {
        Word::MaybeFinal
    } else {
        Word::Plain
    }
}

#[cfg(test)]
mod tests;
