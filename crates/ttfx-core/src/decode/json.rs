//! The JSON inside stream frames (chunks, events, NDJSON lines).
//!
//! Frames are parsed into miniserde's [`Value`]: one small, non-generic parser. serde_json's
//! tree deserializer was the largest single item in the browser probe's wasm, and the
//! frames only need a handful of lookups. Reports, whose types derive serde, keep
//! serde_json.

use miniserde::json::Number;
pub use miniserde::json::Value;

/// `null`, to stand in for a missing member. A static because `Value` has a `Drop` impl,
/// so `&Value::Null` is not promoted to a `'static` borrow.
pub static NULL: Value = Value::Null;

/// Parses one frame; `None` when it is not JSON. miniserde's errors carry no position, so
/// callers report the frame's text instead.
pub fn parse(text: &str) -> Option<Value> {
    miniserde::json::from_str(text).ok()
}

/// Compact JSON text of a value (object keys sorted).
pub fn to_string(value: &Value) -> String {
    miniserde::json::to_string(value)
}

/// The lookups the dialects make, named as serde_json names them.
pub trait JsonExt {
    /// An object's member.
    fn get(&self, key: &str) -> Option<&Value>;
    fn as_str(&self) -> Option<&str>;
    /// A non-negative integer (a float is not one).
    fn as_u64(&self) -> Option<u64>;
    /// Any number.
    fn as_f64(&self) -> Option<f64>;
    fn as_bool(&self) -> Option<bool>;
    fn as_array(&self) -> Option<&[Value]>;
    fn is_null(&self) -> bool;
    fn is_object(&self) -> bool;
}

impl JsonExt for Value {
    fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(object) => object.get(key),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(Number::U64(n)) => Some(*n),
            Value::Number(Number::I64(n)) => u64::try_from(*n).ok(),
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(Number::U64(n)) => Some(*n as f64),
            Value::Number(Number::I64(n)) => Some(*n as f64),
            Value::Number(Number::F64(n)) => Some(*n),
            _ => None,
        }
    }

    fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(array) => Some(array),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_follow_json_types() {
        let v = parse(r#"{"a":{"b":[1,-2,2.5,"x",true,null]},"n":18446744073709551615}"#)
            .expect("valid JSON");
        let items = v
            .get("a")
            .and_then(|a| a.get("b"))
            .and_then(Value::as_array);
        let items = items.expect("array");
        assert_eq!(items[0].as_u64(), Some(1));
        assert_eq!(items[1].as_u64(), None, "negative is not u64");
        assert_eq!(items[1].as_f64(), Some(-2.0));
        assert_eq!(items[2].as_u64(), None, "a float is not an integer");
        assert_eq!(items[2].as_f64(), Some(2.5));
        assert_eq!(items[3].as_str(), Some("x"));
        assert_eq!(items[4].as_bool(), Some(true));
        assert!(items[5].is_null());
        assert_eq!(v.get("n").and_then(Value::as_u64), Some(u64::MAX));
        assert!(v.is_object() && v.get("missing").is_none() && items[3].get("a").is_none());
    }

    #[test]
    fn bad_json_is_none_and_text_is_compact_with_sorted_keys() {
        for bad in ["", "{", r#"{"a":}"#, "[1,]", "nul", r#""\ud800""#, "{} x"] {
            assert!(parse(bad).is_none(), "{bad:?} parsed");
        }
        let v = parse(r#"{ "b" : 1, "a" : [ "é\n" ] }"#).expect("valid JSON");
        assert_eq!(to_string(&v), r#"{"a":["é\n"],"b":1}"#);
    }

    #[test]
    fn deep_nesting_is_no_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(&deep).is_some_and(|v| v.as_array().is_some()));
    }
}
