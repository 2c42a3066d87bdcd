//! Text from outside (a page, a report file, the collector's database) made safe to
//! print on a terminal, and cut to a size fit for a message.
//!
//! A string a page chose can hold terminal control sequences: `ESC [ 2 J` clears the
//! screen, `ESC ] 52` writes the clipboard, a lone `CR` overwrites the line before it,
//! and C1's `U+009B` is a one-character `ESC [` to many terminals. Every tool that prints
//! such a string passes it through [`escape_controls`] first.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character written out as an escape, so a terminal shows
/// it instead of obeying it: C0 controls (`U+0000`–`U+001F`) but newline and tab as
/// `\x1b` (carriage return as `\r`), DEL as `\x7f`, and C1 controls
/// (`U+0080`–`U+009F`) as `\u{9b}`. Text without any is borrowed as it is.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if c == '\r' {
            out.push_str("\\r");
        } else if u32::from(c) < 0x80 {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
    Cow::Owned(out)
}

/// [`escape_controls`], with newline and tab escaped too: for one line of a table or
/// a log, where a page's newline would start a line the reader takes for the tool's.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    if !text
        .chars()
        .any(|c| needs_escape(c) || c == '\n' || c == '\t')
    {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&escape_controls(c.encode_utf8(&mut [0; 4]))),
        }
    }
    Cow::Owned(out)
}

/// JSON text with DEL and the C1 controls written as `\u007f`, `\u009b`, …: JSON
/// writers escape C0 in strings but leave these as they are, and a terminal obeys
/// `U+009B`. Outside strings JSON has none of them, so the text stays the same JSON.
pub fn escape_json_controls(json: &str) -> Cow<'_, str> {
    let is_raw = |c: char| ('\u{7f}'..='\u{9f}').contains(&c);
    if !json.chars().any(is_raw) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        if is_raw(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
}

/// `text` cut to its first `chars` characters, `…` marking a cut: a value another
/// party chose the size of, quoted in a message.
pub fn cut(text: &str, chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(chars) {
        Some((end, _)) => Cow::Owned(format!("{}…", &text[..end])),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_that_clears_the_screen_rings_or_rewrites_the_line_prints_escaped() {
        assert_eq!(
            escape_controls("a\x1b[2Jb\x07c\rd\u{9b}31me\x7f\0"),
            "a\\x1b[2Jb\\x07c\\rd\\u{9b}31me\\x7f\\x00"
        );
        assert_eq!(
            escape_controls("\u{80}\u{9f}\u{a0}é"),
            "\\u{80}\\u{9f}\u{a0}é"
        );
        // Lines and tabs of a multi-line message stay as they are.
        assert_eq!(escape_controls("one\n\ttwo"), "one\n\ttwo");
        assert_eq!(escape_line("one\n\ttwo\x1b"), "one\\n\\ttwo\\x1b");
        // Every control but newline and tab is escaped, and nothing else is.
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            let shown = escape_controls(c.encode_utf8(&mut [0; 4])).into_owned();
            let control = u32::from(c) < 0x20 || (0x7f..=0x9f).contains(&u32::from(c));
            let kept = c == '\n' || c == '\t' || !control;
            assert_eq!(shown == c.to_string(), kept, "{c:?} shown as {shown:?}");
            assert!(!shown.chars().any(needs_escape), "{c:?} shown as {shown:?}");
        }
    }

    #[test]
    fn json_with_a_c1_control_prints_it_escaped_and_stays_the_same_json() {
        let value = serde_json::json!({ "label": "a\u{9b}2J\x1b[2J\u{7f}\r" });
        let text = serde_json::to_string(&value).expect("JSON");
        let shown = escape_json_controls(&text);
        assert_eq!(shown, r#"{"label":"a\u009b2J\u001b[2J\u007f\r"}"#);
        assert!(!shown.chars().any(needs_escape), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).expect("still JSON");
        assert_eq!(back, value);
    }

    #[test]
    fn plain_text_is_not_copied() {
        assert!(matches!(escape_controls("model 🚀 ok"), Cow::Borrowed(_)));
        assert!(matches!(escape_line("model ok"), Cow::Borrowed(_)));
        assert!(matches!(cut("short", 5), Cow::Borrowed(_)));
    }

    #[test]
    fn a_value_of_megabytes_is_cut_to_its_first_characters() {
        let huge = "é".repeat(1 << 20);
        let shown = cut(&huge, 10);
        assert_eq!(shown, format!("{}…", "é".repeat(10)));
        assert_eq!(cut("abc", 2), "ab…");
        assert_eq!(cut("", 0), "");
    }
}
