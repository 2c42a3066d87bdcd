//! Numbers as the tools really write them. Python's `json.dump` writes a float NaN or
//! infinity as a bare `NaN` / `Infinity` token ([`crate::nonfinite`] turns those into
//! strings before serde sees them); some tools write `"inf"` themselves (vLLM's request
//! rate); integers stand where floats are meant. All of them are read here.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// A number, `null`, or a string naming a number or a non-finite value. `None` for null.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_any(Lenient)
}

/// Like [`lenient`], for `#[serde(deserialize_with)]` on an `f64` with a default.
pub fn lenient_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    lenient(d).map(|v| v.unwrap_or(f64::NAN))
}

struct Lenient;

impl<'de> Visitor<'de> for Lenient {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, null, or \"inf\" / \"nan\"")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v as f64))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v as f64))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(Lenient)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        parse_text(v)
            .map(Some)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
    }
}

/// The spellings of a number in a string: what Python's `float()` accepts for
/// non-finite values (`inf`, `Infinity`, `nan`, any case, signed), the placeholder
/// strings of [`crate::nonfinite`], and plain decimal text.
pub fn parse_text(text: &str) -> Option<f64> {
    let t = text.trim();
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    let lower = rest.to_ascii_lowercase();
    match lower.as_str() {
        "inf" | "infinity" => Some(sign * f64::INFINITY),
        "nan" | "n" => Some(f64::NAN),
        _ => t.parse::<f64>().ok(),
    }
}

/// A count: a non-negative whole number, possibly written as a float (`12.0`).
pub fn lenient_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match lenient(d)? {
        None => Ok(None),
        Some(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 2f64.powi(53) => {
            Ok(Some(v as u64))
        }
        Some(v) => Err(de::Error::custom(format!("{v} is not a count"))),
    }
}

/// Appends to a list of per-request values, growing it by a quarter at a time instead of
/// doubling: a file's millions of gaps then never hold twice their size in memory.
pub fn push_value(values: &mut Vec<f64>, v: f64) {
    if values.len() == values.capacity() {
        values.reserve_exact((values.capacity() / 4).max(1024));
    }
    values.push(v);
}

/// A list of numbers read leniently; a null element is NaN (it has no rank).
pub fn lenient_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    d.deserialize_seq(List)
}

struct List;

impl<'de> Visitor<'de> for List {
    type Value = Vec<f64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of numbers")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<f64>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element::<Number>()? {
            push_value(&mut out, v.0);
        }
        Ok(out)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<f64>, E> {
        Ok(Vec::new())
    }
}

/// One lenient number as a type (for lists and maps); null is NaN.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number(pub f64);

impl<'de> serde::Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        lenient_or_nan(d).map(Number)
    }
}

/// A list of lists of numbers (vLLM's `itls`: each request's gaps), read leniently.
pub fn lenient_lists<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Inner(#[serde(deserialize_with = "lenient_list")] Vec<f64>);
    let lists: Option<Vec<Inner>> = serde::Deserialize::deserialize(d)?;
    Ok(lists.unwrap_or_default().into_iter().map(|i| i.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct One {
        #[serde(deserialize_with = "lenient")]
        v: Option<f64>,
    }

    fn read(json: &str) -> Option<f64> {
        serde_json::from_str::<One>(json)
            .map(|o| o.v)
            .ok()
            .flatten()
    }

    #[test]
    fn integers_strings_and_non_finite_spellings_are_numbers() {
        assert_eq!(read(r#"{"v": 3}"#), Some(3.0));
        assert_eq!(read(r#"{"v": 2.5}"#), Some(2.5));
        assert_eq!(read(r#"{"v": "inf"}"#), Some(f64::INFINITY));
        assert_eq!(read(r#"{"v": "-Infinity"}"#), Some(f64::NEG_INFINITY));
        assert!(read(r#"{"v": "NaN"}"#).is_some_and(f64::is_nan));
        assert_eq!(read(r#"{"v": "12.5"}"#), Some(12.5));
        assert_eq!(read(r#"{"v": null}"#), None);
        assert!(serde_json::from_str::<One>(r#"{"v": "fast"}"#).is_err());
        assert!(serde_json::from_str::<One>(r#"{"v": [1]}"#).is_err());
    }
}
