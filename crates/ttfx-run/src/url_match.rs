//! `--match`: which of a page's requests inject mode measures. A plain value is a
//! substring of the request's absolute URL, as a user types a path
//! (`/v1/chat/completions`); a regular expression only when asked for with `re:`
//! (`re:/v1/(chat|responses)` or `re:/chat\/completions$/i`). The slashes alone never
//! make a pattern: `/api/gm` is a path, not the pattern `api` with flags `g` and `m`.
//!
//! A pattern is parsed here with regress (EcmaScript syntax, the syntax the page's
//! `RegExp` reads) before any browser starts, so a bad value is an exit-2 error that names
//! `--match`, not a preload script that throws inside the page.

use serde_json::{Value, json};

/// Longer than any URL pattern a person writes; bounds what goes into every page.
const MAX_LEN: usize = 2048;

/// What `--match` selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlMatch {
    /// The URL contains this text.
    Substring(String),
    /// The URL matches this EcmaScript pattern with these flags.
    Pattern { source: String, flags: String },
}

/// Why a `--match` value was refused; the text names the value's problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    #[error("--match is empty: give a part of the URL (e.g. /v1/chat/completions) or re:PATTERN")]
    Empty,
    #[error("--match is {0} characters long; at most {MAX_LEN}")]
    TooLong(usize),
    #[error("--match {value:?} is not a valid regular expression: {reason}")]
    Pattern { value: String, reason: String },
    #[error(
        "--match {value:?}: flag {flag:?} {reason} (allowed: d, i, m, s, u, v, once each; \
         not u with v)"
    )]
    Flag {
        value: String,
        flag: char,
        reason: &'static str,
    },
}

impl UrlMatch {
    /// Reads a `--match` value.
    pub fn parse(value: &str) -> Result<UrlMatch, MatchError> {
        if value.is_empty() {
            return Err(MatchError::Empty);
        }
        let length = value.chars().count();
        if length > MAX_LEN {
            return Err(MatchError::TooLong(length));
        }
        let Some(pattern) = value.strip_prefix("re:") else {
            return Ok(UrlMatch::Substring(value.to_owned()));
        };
        let (source, flags) = split_literal(pattern).unwrap_or((pattern, ""));
        check_flags(value, flags)?;
        if source.is_empty() {
            return Err(MatchError::Pattern {
                value: value.to_owned(),
                reason: "the pattern is empty".into(),
            });
        }
        regress::Regex::with_flags(source, flags).map_err(|e| MatchError::Pattern {
            value: value.to_owned(),
            reason: e.to_string(),
        })?;
        Ok(UrlMatch::Pattern {
            source: source.to_owned(),
            flags: flags.to_owned(),
        })
    }

    /// What the injected script reads (`config.match`).
    pub fn to_config(&self) -> Value {
        match self {
            UrlMatch::Substring(s) => json!({ "substring": s }),
            UrlMatch::Pattern { source, flags } => json!({ "pattern": source, "flags": flags }),
        }
    }
}

/// `/source/flags` → (source, flags), when the text is in that form and the part after the
/// last slash is only letters; otherwise the whole text is the source.
fn split_literal(pattern: &str) -> Option<(&str, &str)> {
    let rest = pattern.strip_prefix('/')?;
    let last = rest.rfind('/')?;
    let flags = &rest[last + 1..];
    flags
        .chars()
        .all(|c| c.is_ascii_alphabetic())
        .then(|| (&rest[..last], flags))
}

fn check_flags(value: &str, flags: &str) -> Result<(), MatchError> {
    let refuse = |flag, reason| {
        Err(MatchError::Flag {
            value: value.to_owned(),
            flag,
            reason,
        })
    };
    for (i, flag) in flags.char_indices() {
        match flag {
            // `test` on a g or y pattern starts where the last match ended: one URL's
            // answer would depend on the URL before it.
            'g' | 'y' => {
                return refuse(flag, "makes a pattern's test depend on the last URL it saw");
            }
            'd' | 'i' | 'm' | 's' | 'u' | 'v' => {}
            _ => return refuse(flag, "is not a regular expression flag"),
        }
        if flags[..i].contains(flag) {
            return refuse(flag, "is given twice");
        }
    }
    if flags.contains('u') && flags.contains('v') {
        return refuse('v', "cannot go with u");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn substring(s: &str) -> UrlMatch {
        UrlMatch::Substring(s.into())
    }

    fn pattern(source: &str, flags: &str) -> UrlMatch {
        UrlMatch::Pattern {
            source: source.into(),
            flags: flags.into(),
        }
    }

    #[test]
    fn what_users_type_is_a_substring() {
        for path in [
            "/v1/chat/completions",
            // Trailing letters that are valid flags: still a path.
            "/api/gm",
            "/api/",
            "chat",
            "https://api.example.com/v1/",
            // Not a pattern without re:, whatever it holds.
            "(unbalanced",
        ] {
            assert_eq!(UrlMatch::parse(path), Ok(substring(path)), "{path}");
        }
    }

    #[test]
    fn re_makes_a_pattern_with_or_without_slashes() {
        assert_eq!(
            UrlMatch::parse("re:/v1/(chat|responses)"),
            // Not a literal: the text after its last slash is not only letters.
            Ok(pattern("/v1/(chat|responses)", ""))
        );
        assert_eq!(
            UrlMatch::parse(r"re:/chat\/completions$/i"),
            Ok(pattern(r"chat\/completions$", "i"))
        );
        assert_eq!(UrlMatch::parse("re:chat"), Ok(pattern("chat", "")));
        // The EcmaScript syntax: lookbehind and named groups are fine.
        assert_eq!(
            UrlMatch::parse("re:(?<=/v1/)(?<api>chat)"),
            Ok(pattern("(?<=/v1/)(?<api>chat)", ""))
        );
    }

    #[test]
    fn a_bad_pattern_names_match_and_the_reason() {
        for bad in ["re:(", "re:/(/i", "re:[z-a]", "re:a**"] {
            let e = UrlMatch::parse(bad).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, MatchError::Pattern { .. }), "{bad}: {text}");
            assert!(
                text.starts_with("--match ") && text.contains("not a valid regular expression: "),
                "{text}"
            );
        }
        assert!(matches!(
            UrlMatch::parse("re:"),
            Err(MatchError::Pattern { .. })
        ));
    }

    #[test]
    fn flags_are_checked_one_by_one() {
        let flag = |v: &str| match UrlMatch::parse(v) {
            Err(MatchError::Flag { flag, reason, .. }) => Some((flag, reason)),
            _ => None,
        };
        assert_eq!(flag("re:/chat/g").map(|f| f.0), Some('g'));
        assert_eq!(flag("re:/chat/y").map(|f| f.0), Some('y'));
        assert_eq!(flag("re:/chat/x").map(|f| f.0), Some('x'));
        assert_eq!(flag("re:/chat/ii"), Some(('i', "is given twice")));
        assert_eq!(flag("re:/chat/uv"), Some(('v', "cannot go with u")));
        assert_eq!(UrlMatch::parse("re:/chat/ims"), Ok(pattern("chat", "ims")));
    }

    #[test]
    fn empty_and_oversized_values_are_refused() {
        assert_eq!(UrlMatch::parse(""), Err(MatchError::Empty));
        let long = "a".repeat(MAX_LEN + 1);
        assert_eq!(
            UrlMatch::parse(&long),
            Err(MatchError::TooLong(MAX_LEN + 1))
        );
    }

    #[test]
    fn the_page_gets_a_tagged_value() {
        assert_eq!(
            UrlMatch::parse("/v1/chat").unwrap().to_config(),
            json!({"substring": "/v1/chat"})
        );
        assert_eq!(
            UrlMatch::parse("re:/chat/i").unwrap().to_config(),
            json!({"pattern": "chat", "flags": "i"})
        );
    }
}
