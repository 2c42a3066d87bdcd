//! Decimal numbers in text without core's exact float algorithms.
//!
//! `{}` on an `f64` links core's shortest-round-trip formatter and its tables (about 17 KB
//! of the browser probe's wasm) for a handful of error messages, and `str::parse::<f64>`
//! links core's correctly rounded parser and its tables (about 15 KB gzip) for the few
//! numbers in Server-Timing headers. Neither needs the last bit: messages show
//! milliseconds to the microsecond ([`Decimal`]) and header values are read with the
//! frame JSON parser's number code ([`parse`]), which ships anyway.

use std::fmt;

use crate::decode::json::{self, JsonExt};

/// `value` rounded to three decimals, trailing zeros dropped: `12.5`, `-0.001`, `3`,
/// `NaN`, `inf`; from 1e18 on only `>1e18` or `<-1e18`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decimal(pub f64);

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v.is_nan() {
            return f.write_str("NaN");
        }
        if v.is_infinite() {
            return f.write_str(if v > 0.0 { "inf" } else { "-inf" });
        }
        // Far past any time in ms, only the magnitude is told (64-bit integers keep
        // 128-bit formatting out of the probe).
        if v.abs() >= 1e18 {
            return f.write_str(if v > 0.0 { ">1e18" } else { "<-1e18" });
        }
        // From 2^53 up every double is an integer: write it whole (scaling it by 1000
        // would round it).
        if v.abs() >= 9_007_199_254_740_992.0 {
            return write!(f, "{}", v as i64);
        }
        // Below, in thousandths as an integer (under 2^63).
        let thousandths = (v * 1000.0).round() as i64;
        let sign = if thousandths < 0 { "-" } else { "" };
        let magnitude = thousandths.unsigned_abs();
        let (whole, mut frac) = (magnitude / 1000, magnitude % 1000);
        write!(f, "{sign}{whole}")?;
        if frac == 0 {
            return Ok(());
        }
        let mut digits = 3;
        while frac % 10 == 0 {
            frac /= 10;
            digits -= 1;
        }
        write!(f, ".{frac:0digits$}")
    }
}

/// A decimal number such as `12`, `-0.5`, `.5`, `5.`, `+3`, `007` or `1.5e3` (what Rust's
/// parser takes, less `inf` and `NaN`); `None` for anything else or a non-finite result.
/// Read by the JSON number reader once rewritten in JSON's stricter spelling: exact for
/// up to 15 significant digits and small exponents, else within a unit in the last place.
pub fn parse(text: &str) -> Option<f64> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => unsigned.split_at(at),
        None => (unsigned, ""),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (integer.is_empty() && fraction.is_empty()) || !digits(integer) || !digits(fraction) {
        return None;
    }
    let integer = integer.trim_start_matches('0');
    let mut json = String::with_capacity(text.len() + 2);
    if negative {
        json.push('-');
    }
    json.push_str(if integer.is_empty() { "0" } else { integer });
    if !fraction.is_empty() {
        json.push('.');
        json.push_str(fraction);
    }
    // The exponent is checked by the JSON reader: `e`, an optional sign, digits.
    json.push_str(exponent);
    json::parse(&json)
        .and_then(|v| JsonExt::as_f64(&*v))
        .filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::{Decimal, parse};

    #[test]
    fn rounds_to_thousandths_and_drops_trailing_zeros() {
        let cases = [
            (0.0, "0"),
            (-0.0, "0"),
            (3.0, "3"),
            (12.5, "12.5"),
            (0.1, "0.1"),
            (1.0005, "1.001"),
            (2.0004, "2"),
            (-0.001, "-0.001"),
            (-0.0004, "0"),
            (-12.25, "-12.25"),
            (0.05, "0.05"),
            (1.007, "1.007"),
            (1_700_000_000_123.4, "1700000000123.4"),
            (1e17, "100000000000000000"),
            (-9_007_199_254_740_993.0, "-9007199254740992"),
            (1e18, ">1e18"),
            (-1e300, "<-1e18"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, text) in cases {
            assert_eq!(Decimal(value).to_string(), text, "{value:?}");
        }
    }

    #[test]
    fn parses_what_rust_parses_but_inf_and_nan() {
        let numbers = [
            "12",
            "-0.5",
            ".5",
            "5.",
            "+3",
            "007",
            "1.5e3",
            "1E-2",
            "-0",
            "0.000",
            "123.456",
            "1733000000000.125",
            "9007199254740993",
            "1e22",
            "2.5e-300",
        ];
        for text in numbers {
            let ours = parse(text).unwrap_or_else(|| panic!("{text} not parsed"));
            let exact: f64 = text.parse().expect("valid for std");
            let error = (ours - exact).abs();
            assert!(
                error <= exact.abs() * f64::EPSILON,
                "{text}: {ours} vs {exact}"
            );
        }
        let rejected = [
            "", ".", "-", "+", "e3", "1e", "1e+", "--1", "-+1", "+-1", "1.2.3", "0x10", "1_000",
            " 1", "1 ", "inf", "-inf", "NaN", "infinity", "1e400", "1.5ms", "١٢",
        ];
        for text in rejected {
            assert_eq!(parse(text), None, "{text:?}");
        }
    }

    proptest::proptest! {
        /// Header values are durations and Unix times in ms, with any number of decimals.
        #[test]
        fn header_sized_values_are_within_one_ulp(
            whole in 0u64..10_000_000_000_000,
            fraction in 0u32..1_000_000,
            places in 0usize..7,
        ) {
            let text = if places == 0 {
                whole.to_string()
            } else {
                let fraction = format!("{fraction:06}");
                format!("{whole}.{}", &fraction[..places])
            };
            let exact: f64 = text.parse().expect("valid for std");
            let ours = parse(&text).expect("parsed");
            proptest::prop_assert!((ours - exact).abs() <= exact * f64::EPSILON, "{} vs {}", ours, exact);
        }
    }

    #[test]
    fn is_exact_for_short_decimals() {
        for thousandths in -20_000i32..20_000 {
            let text = format!("{}", f64::from(thousandths) / 1000.0);
            assert_eq!(parse(&text), text.parse().ok(), "{text}");
        }
    }

    #[test]
    fn agrees_with_std_where_three_decimals_are_exact() {
        for thousandths in -20_000i32..20_000 {
            let v = f64::from(thousandths) / 1000.0;
            assert_eq!(
                Decimal(v).to_string(),
                format!("{}", v + 0.0),
                "{thousandths}"
            );
        }
    }
}
