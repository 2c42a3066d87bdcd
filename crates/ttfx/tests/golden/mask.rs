//! Masks for the only bytes of an HTTP answer that cannot be fixed by its input: clock
//! readings (when it was received or created, how long a stage took) — each mask says
//! which fields and why at its call. Everything else stays byte for byte.

/// The value (a JSON string or number) after every `"key":` of `keys` replaced by
/// `"<masked>"`; the rest of `text` unchanged.
pub fn json_values(text: &str, keys: &[&str]) -> String {
    let mut out = text.to_owned();
    for key in keys {
        let pattern = format!("\"{key}\":");
        let mut from = 0;
        while let Some(found) = out[from..].find(&pattern) {
            let start = from + found + pattern.len();
            let end = start + value_len(&out[start..]);
            out.replace_range(start..end, "\"<masked>\"");
            from = start + "\"<masked>\"".len();
        }
    }
    out
}

/// The length of the JSON value `text` starts with: a string with its escapes, an array
/// or object to its closing bracket, else a scalar up to the next `,`, `}`, `]` or
/// whitespace.
fn value_len(text: &str) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => {
                in_string = !in_string;
                if !in_string && depth == 0 {
                    return i + 1;
                }
            }
            _ if in_string => {}
            '[' | '{' => depth += 1,
            ']' | '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            ',' | '}' | ']' | ' ' | '\n' if depth == 0 => return i,
            _ => {}
        }
    }
    text.len()
}

/// A `Server-Timing` value with each `dur=` and `desc="…"` replaced by `<masked>`: the
/// names and their order stay.
pub fn server_timing(value: &str) -> String {
    value
        .split(", ")
        .map(|entry| {
            entry
                .split(';')
                .map(|part| match part.split_once('=') {
                    Some((name @ ("dur" | "desc"), _)) => format!("{name}=<masked>"),
                    _ => part.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(";")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn masks_replace_only_the_named_values() {
    let text = r#"{"a":1,"created":17,"s":"x\"y","created_at":"2026-01-01T00:00:00Z","n":[2],"c":[{"x":"]"}],"d":2}"#;
    assert_eq!(
        json_values(text, &["created", "created_at", "c"]),
        r#"{"a":1,"created":"<masked>","s":"x\"y","created_at":"<masked>","n":[2],"c":"<masked>","d":2}"#
    );
    assert_eq!(
        server_timing(r#"queue;dur=0.01, received_unix_ms;desc="1.5""#),
        "queue;dur=<masked>, received_unix_ms;desc=<masked>"
    );
}
