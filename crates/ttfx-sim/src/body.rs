//! What the simulator reads from a request body, taken in one pass while the JSON is
//! parsed. No JSON tree is built: a tree costs 16 bytes or more per byte of a body of
//! small values (`[0,0,…]` is 32 bytes a value, `[{"a":0},…]` hundreds an object), so a
//! 2 MiB body could hold over 100 MB; read this way a body costs about its own bytes.
//!
//! Wrong types are ignored as a lookup in a tree would ignore them (a `model` that is
//! not a string is no model), except in the `ttfx` overrides, which are refused.

use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::limits::{MAX_OVERRIDES, MAX_STALL_AT};

/// What the simulated endpoints use from a request body.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Body {
    /// The `ttfx` object as key=value pairs: numbers and booleans as written, arrays
    /// (for `stall_at`) joined with commas; by key, a repeated key in document order.
    pub overrides: Vec<(String, String)>,
    /// Characters of every string in the prompt fields (`messages`, `input`, `prompt`,
    /// `system`, `instructions`), object keys not counted.
    pub prompt_chars: usize,
    /// `input` when it is a string (the TTS text): its characters.
    pub input_chars: Option<usize>,
    pub model: Option<String>,
    /// The client's output limit, in the first spelling present of `max_tokens`,
    /// `max_completion_tokens`, `max_output_tokens`, `options.num_predict`, `n_predict`.
    pub max_tokens: Option<u64>,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    pub response_format: Option<String>,
    pub stream_format: Option<String>,
}

/// Reads a request body; an empty one is `{}`. The error is a message for a person.
pub fn read(bytes: &[u8]) -> Result<Body, String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let mut found = Found::default();
    let result = match first {
        None => return Ok(Body::default()),
        Some(b'{') => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            de.deserialize_map(Top(&mut found)).and_then(|()| de.end())
        }
        // Valid JSON that is not an object: nothing to read from it.
        Some(_) => serde_json::from_slice::<IgnoredAny>(bytes).map(|_| ()),
    };
    result.map_err(|e| format!("request body is not JSON: {e}"))?;
    if let Some(refused) = found.refused {
        return Err(refused);
    }
    let mut body = found.body;
    body.prompt_chars = found.prompt.iter().sum();
    body.max_tokens = found.max_tokens.into_iter().flatten().next();
    // By key, as a JSON object's keys sort; a stable sort keeps a repeated key's order.
    body.overrides.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(body)
}

/// The top-level members, before the output limit's spellings are ranked.
#[derive(Default)]
struct Found {
    body: Body,
    /// In the order of [`Body::max_tokens`]'s spellings.
    max_tokens: [Option<u64>; 5],
    /// Characters of each prompt field (a repeated member counts once, its last value).
    prompt: [usize; 5],
    /// The first override refused (the rest of the body is still checked as JSON).
    refused: Option<String>,
}

/// A member name that matters, or `Other`.
enum Field {
    Ttfx,
    /// A prompt field other than `input`, by its rank in `Found::prompt`.
    Prompt(usize),
    Input,
    Model,
    MaxTokens(usize),
    Options,
    StreamOptions,
    ResponseFormat,
    StreamFormat,
    NumPredict,
    IncludeUsage,
    Other,
}

impl<'de> de::Deserialize<'de> for Field {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        struct Name;
        impl Visitor<'_> for Name {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Field, E> {
                Ok(match s {
                    "ttfx" => Field::Ttfx,
                    "messages" => Field::Prompt(0),
                    "prompt" => Field::Prompt(2),
                    "system" => Field::Prompt(3),
                    "instructions" => Field::Prompt(4),
                    "input" => Field::Input,
                    "model" => Field::Model,
                    "max_tokens" => Field::MaxTokens(0),
                    "max_completion_tokens" => Field::MaxTokens(1),
                    "max_output_tokens" => Field::MaxTokens(2),
                    "n_predict" => Field::MaxTokens(4),
                    "options" => Field::Options,
                    "stream_options" => Field::StreamOptions,
                    "response_format" => Field::ResponseFormat,
                    "stream_format" => Field::StreamFormat,
                    "num_predict" => Field::NumPredict,
                    "include_usage" => Field::IncludeUsage,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_str(Name)
    }
}

struct Top<'a>(&'a mut Found);

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let found = self.0;
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Ttfx => {
                    let mut overrides = Vec::new();
                    // A repeated member: the last one counts, as in a JSON object.
                    found.refused = map.next_value_seed(Overrides(&mut overrides))?;
                    found.body.overrides = overrides;
                }
                Field::Prompt(rank) => found.prompt[rank] = map.next_value::<Chars>()?.0,
                Field::Input => {
                    let chars = map.next_value::<Chars>()?;
                    found.prompt[1] = chars.0;
                    found.body.input_chars = chars.1.then_some(chars.0);
                }
                Field::Model => found.body.model = map.next_value::<Scalar>()?.string(),
                Field::MaxTokens(rank) => {
                    found.max_tokens[rank] = map.next_value::<Scalar>()?.u64()
                }
                Field::Options => {
                    found.max_tokens[3] = map
                        .next_value::<Members>()?
                        .num_predict
                        .and_then(Scalar::u64)
                }
                Field::StreamOptions => {
                    found.body.include_usage = matches!(
                        map.next_value::<Members>()?.include_usage,
                        Some(Scalar::Bool(true))
                    )
                }
                Field::ResponseFormat => {
                    found.body.response_format = map.next_value::<Scalar>()?.string()
                }
                Field::StreamFormat => {
                    found.body.stream_format = map.next_value::<Scalar>()?.string()
                }
                Field::NumPredict | Field::IncludeUsage | Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// One JSON value seen as a scalar; arrays and objects are skipped as `Other`.
enum Scalar {
    Str(String),
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
    Other,
}

impl Scalar {
    fn string(self) -> Option<String> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    fn u64(self) -> Option<u64> {
        match self {
            Scalar::U64(n) => Some(n),
            _ => None,
        }
    }

    /// As an override's text: numbers as serde_json writes them.
    fn text(self) -> Option<String> {
        match self {
            Scalar::Str(s) => Some(s),
            Scalar::U64(n) => Some(n.to_string()),
            Scalar::I64(n) => Some(n.to_string()),
            Scalar::F64(x) => serde_json::Number::from_f64(x).map(|n| n.to_string()),
            Scalar::Bool(b) => Some(b.to_string()),
            Scalar::Other => None,
        }
    }
}

impl<'de> de::Deserialize<'de> for Scalar {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Scalar, E> {
                Ok(Scalar::Str(s.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Scalar, E> {
                Ok(Scalar::U64(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Scalar, E> {
                Ok(Scalar::I64(n))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Scalar, E> {
                Ok(Scalar::F64(x))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Scalar, E> {
                Ok(Scalar::Bool(b))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
                Ok(Scalar::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// The members that matter of a nested object (`options.num_predict`,
/// `stream_options.include_usage`); none when it is not an object.
#[derive(Default)]
struct Members {
    num_predict: Option<Scalar>,
    include_usage: Option<Scalar>,
}

impl<'de> de::Deserialize<'de> for Members {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Members, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut found = Members::default();
                while let Some(field) = map.next_key::<Field>()? {
                    match field {
                        Field::NumPredict => found.num_predict = Some(map.next_value()?),
                        Field::IncludeUsage => found.include_usage = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(found)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Members, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Members::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Members, E> {
                Ok(Members::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Members, E> {
                Ok(Members::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Members, E> {
                Ok(Members::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Members, E> {
                Ok(Members::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Members, E> {
                Ok(Members::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Members, E> {
                Ok(Members::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// Characters of every string in a value (object keys not counted), and whether the
/// value itself is a string.
struct Chars(usize, bool);

impl<'de> de::Deserialize<'de> for Chars {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Chars, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Chars;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Chars, E> {
                Ok(Chars(s.chars().count(), true))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Chars, A::Error> {
                let mut n = 0;
                while let Some(Chars(c, _)) = seq.next_element::<Chars>()? {
                    n += c;
                }
                Ok(Chars(n, false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Chars, A::Error> {
                let mut n = 0;
                while let Some((IgnoredAny, Chars(c, _))) = map.next_entry()? {
                    n += c;
                }
                Ok(Chars(n, false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Chars, E> {
                Ok(Chars(0, false))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Chars, E> {
                Ok(Chars(0, false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Chars, E> {
                Ok(Chars(0, false))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Chars, E> {
                Ok(Chars(0, false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Chars, E> {
                Ok(Chars(0, false))
            }
        }
        d.deserialize_any(V)
    }
}

/// The `ttfx` object into `key=value` pairs; the value is the first refusal, if any. A
/// refused override stops the reading of overrides, not the check that the body is JSON.
struct Overrides<'a>(&'a mut Vec<(String, String)>);

impl<'de> DeserializeSeed<'de> for Overrides<'_> {
    type Value = Option<String>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

const NOT_AN_OBJECT: &str = "`ttfx` in the body must be an object of overrides";

impl<'de> Visitor<'de> for Overrides<'_> {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of overrides")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut refused = None;
        while let Some(key) = map.next_key::<String>()? {
            if refused.is_some() {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if self.0.len() == MAX_OVERRIDES {
                refused = Some(format!(
                    "`ttfx` in the body: more than {MAX_OVERRIDES} overrides, the cap per request"
                ));
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            match map.next_value::<Override>()? {
                Override::Text(text) => self.0.push((key, text)),
                Override::TooMany(n) => {
                    refused = Some(format!(
                        "override ttfx.{key}: {n} entries, above the cap of {MAX_STALL_AT} \
                         stalls per reply"
                    ))
                }
                Override::Invalid => {
                    refused = Some(format!(
                        "override `ttfx.{key}` must be a string, number, boolean or array of them"
                    ))
                }
            }
        }
        Ok(refused)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Some(NOT_AN_OBJECT.into()))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<String>, E> {
        Ok(Some(NOT_AN_OBJECT.into()))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<String>, E> {
        Ok(Some(NOT_AN_OBJECT.into()))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<String>, E> {
        Ok(Some(NOT_AN_OBJECT.into()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<String>, E> {
        Ok(Some(NOT_AN_OBJECT.into()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<String>, E> {
        Ok(Some(NOT_AN_OBJECT.into()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(Some(NOT_AN_OBJECT.into()))
    }
}

/// One override's value: a scalar as text, or an array of scalars joined with commas.
/// An array is counted as it is read and refused past `MAX_STALL_AT` entries (only
/// `stall_at` takes one), so a million entries never become a million strings.
enum Override {
    Text(String),
    TooMany(usize),
    Invalid,
}

impl<'de> de::Deserialize<'de> for Override {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Override, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Override;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an override value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Override, E> {
                Ok(Override::Text(s.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Override, E> {
                Ok(Override::Text(n.to_string()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Override, E> {
                Ok(Override::Text(n.to_string()))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Override, E> {
                Ok(Scalar::F64(x)
                    .text()
                    .map_or(Override::Invalid, Override::Text))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Override, E> {
                Ok(Override::Text(b.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Override, E> {
                Ok(Override::Invalid)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Override, A::Error> {
                let mut items = Vec::new();
                let mut entries = 0;
                let mut invalid = false;
                while let Some(item) = seq.next_element::<Scalar>()? {
                    entries += 1;
                    if entries > MAX_STALL_AT || invalid {
                        continue;
                    }
                    match item.text() {
                        Some(t) => items.push(t),
                        None => invalid = true,
                    }
                }
                Ok(if entries > MAX_STALL_AT {
                    Override::TooMany(entries)
                } else if invalid {
                    Override::Invalid
                } else {
                    Override::Text(items.join(","))
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Override, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Override::Invalid)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_json(v: serde_json::Value) -> Result<Body, String> {
        read(v.to_string().as_bytes())
    }

    #[test]
    fn overrides_accept_scalars_and_lists_by_key() {
        let body = read_json(serde_json::json!({"ttfx": {
            "ttft_ms": 5, "buffered": true, "fail": "drop", "stall_at": [3, 7], "jitter": 0.5
        }}))
        .unwrap();
        assert_eq!(
            body.overrides,
            [
                ("buffered".into(), "true".into()),
                ("fail".into(), "drop".into()),
                ("jitter".into(), "0.5".into()),
                ("stall_at".into(), "3,7".into()),
                ("ttft_ms".into(), "5".into()),
            ]
        );
        let err = |v| read_json(v).unwrap_err();
        assert!(err(serde_json::json!({"ttfx": {"x": {}}})).contains("`ttfx.x` must be"));
        assert!(err(serde_json::json!({"ttfx": 3})).contains("must be an object"));
        assert!(err(serde_json::json!({"ttfx": {"stall_at": [1, [2]]}})).contains("must be"));
    }

    #[test]
    fn a_long_list_is_refused_by_count_and_the_body_is_still_checked() {
        let zeros = vec![0; MAX_STALL_AT + 1];
        let e = read_json(serde_json::json!({"ttfx": {"stall_at": zeros}})).unwrap_err();
        assert!(e.contains("ttfx.stall_at: 1001 entries"), "{e}");
        assert!(e.contains("cap of 1000"), "{e}");
        let at_cap = vec![0; MAX_STALL_AT];
        assert!(read_json(serde_json::json!({"ttfx": {"stall_at": at_cap}})).is_ok());
        let broken = br#"{"ttfx": {"stall_at": [1, 2]}, "model": "#;
        assert!(
            read(broken)
                .unwrap_err()
                .starts_with("request body is not JSON")
        );
        let many: serde_json::Map<String, serde_json::Value> = (0..=MAX_OVERRIDES)
            .map(|i| (format!("k{i}"), 1.into()))
            .collect();
        let e = read_json(serde_json::json!({ "ttfx": many })).unwrap_err();
        assert!(e.contains("more than 64 overrides"), "{e}");
    }

    #[test]
    fn fields_are_read_as_a_tree_lookup_would() {
        let body = read_json(serde_json::json!({
            "model": "m-1",
            "messages": [{"role": "user", "content": "12345678"}],
            "system": "ab",
            "max_completion_tokens": 9,
            "options": {"num_predict": 7, "other": [1, 2]},
            "stream_options": {"include_usage": true},
            "response_format": {"type": "json_object"},
            "stream_format": "sse",
        }))
        .unwrap();
        assert_eq!(body.model.as_deref(), Some("m-1"));
        // "user" (4) + "12345678" (8) + "ab" (2); keys are not counted.
        assert_eq!(body.prompt_chars, 14);
        assert_eq!(body.input_chars, None);
        assert_eq!(
            body.max_tokens,
            Some(9),
            "max_completion_tokens ranks first"
        );
        assert!(body.include_usage);
        assert_eq!(body.response_format, None, "not a string");
        assert_eq!(body.stream_format.as_deref(), Some("sse"));

        let tts = read_json(serde_json::json!({"input": "héllo", "max_tokens": -1})).unwrap();
        assert_eq!((tts.input_chars, tts.prompt_chars), (Some(5), 5));
        assert_eq!(tts.max_tokens, None, "not an unsigned integer");
        let ollama = read_json(serde_json::json!({"options": {"num_predict": 7}})).unwrap();
        assert_eq!(ollama.max_tokens, Some(7));
        assert_eq!(read(b"  ").unwrap(), Body::default());
        assert_eq!(read(b"[1, 2]").unwrap(), Body::default());
        assert!(read(b"{").is_err());
        assert!(read(b"{} x").is_err(), "trailing bytes");
    }
}
