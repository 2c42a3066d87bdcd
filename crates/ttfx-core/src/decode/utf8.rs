//! UTF-8 decoding the way the WHATWG Encoding standard does it: every maximal invalid
//! subpart becomes one U+FFFD (Rust's lossy decoding follows the same rule).

use std::borrow::Cow;

/// Decodes a complete line; the flag says whether anything had to be replaced.
pub(crate) fn decode_lossy(bytes: &[u8]) -> (Cow<'_, str>, bool) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (Cow::Borrowed(text), false),
        Err(_) => (String::from_utf8_lossy(bytes), true),
    }
}
