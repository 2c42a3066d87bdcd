//! The OTLP export's losses, from `GET /field/health`: a line in the Field view when the
//! collector dropped runs from a full export backlog or the receiver refused some, so
//! they are never lost silently (docs/field.md, "OTLP export").

use serde::Deserialize;

/// The part of `/field/health` this view reads (`otlp`; absent from older collectors).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Health {
    #[serde(default)]
    pub otlp: Option<Export>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Export {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub dropped: u64,
    #[serde(default)]
    pub refused: u64,
    #[serde(default)]
    pub pending: u64,
}

/// The sentence the view shows, or None when nothing was lost.
pub fn warning(h: &Health) -> Option<String> {
    let e = h.otlp.as_ref()?;
    let mut parts = Vec::new();
    if e.dropped > 0 {
        parts.push(format!(
            "{} run(s) dropped from a full backlog (--otlp-max-backlog)",
            e.dropped
        ));
    }
    if e.refused > 0 {
        parts.push(format!("{} run(s) refused by the receiver", e.refused));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "OTLP export: {}; {} waiting (ttfx field FILE.db --health)",
        parts.join(", "),
        e.pending
    ))
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    use super::*;
    use crate::field::api::parse;

    #[wasm_bindgen_test]
    fn dropped_runs_are_said_and_a_clean_export_says_nothing() {
        let h: Health = parse(
            "health",
            r#"{"runs": 9, "file_bytes": 4096, "max_bytes": null, "refused_full": 0,
               "otlp": {"enabled": true, "exported": 4, "pending": 2, "dropped": 3,
                        "refused": 0, "rejected": 0, "last_error": "HTTP 503",
                        "last_error_unix_ms": 1.0}}"#,
        )
        .unwrap();
        assert_eq!(
            warning(&h).as_deref(),
            Some(
                "OTLP export: 3 run(s) dropped from a full backlog (--otlp-max-backlog); 2 \
                 waiting (ttfx field FILE.db --health)"
            )
        );
        let clean: Health = parse("health", r#"{"runs": 1, "otlp": {"enabled": true}}"#).unwrap();
        assert_eq!(warning(&clean), None);
        let old: Health = parse("health", r#"{"runs": 1}"#).unwrap();
        assert_eq!(warning(&old), None);
    }
}
