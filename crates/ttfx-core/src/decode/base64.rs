//! Standard base64 (RFC 4648 §4) decoding for audio deltas.
//!
//! Hand-written on purpose, and size is the reason: this module ships in the probe's
//! wasm, inside other people's pages, where every kilobyte counts, and it is forty lines.
//! Native code that encodes (the `ttfx serve` TTS simulator) uses the `base64` crate.

use std::fmt;

/// The input is not standard base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base64Error {
    /// A byte outside the alphabet, at this offset.
    InvalidByte(usize),
    /// The length (without padding) leaves a lone 6-bit group.
    InvalidLength,
}

impl fmt::Display for Base64Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Base64Error::InvalidByte(at) => write!(f, "invalid base64 byte at offset {at}"),
            Base64Error::InvalidLength => f.write_str("invalid base64 length"),
        }
    }
}

impl std::error::Error for Base64Error {}

fn sextet(byte: u8) -> Option<u32> {
    let value = match byte {
        b'A'..=b'Z' => byte - b'A',
        b'a'..=b'z' => byte - b'a' + 26,
        b'0'..=b'9' => byte - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(value))
}

/// Decodes standard base64; trailing `=` padding is optional, whitespace is not allowed.
pub fn decode(input: &str) -> Result<Vec<u8>, Base64Error> {
    let bytes = input.trim_end_matches('=').as_bytes();
    if bytes.len() % 4 == 1 {
        return Err(Base64Error::InvalidLength);
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3 + 2);
    for (group_index, group) in bytes.chunks(4).enumerate() {
        let mut acc = 0u32;
        for (i, &byte) in group.iter().enumerate() {
            let value = sextet(byte).ok_or(Base64Error::InvalidByte(group_index * 4 + i))?;
            acc |= value << (18 - 6 * i);
        }
        let [_, b0, b1, b2] = acc.to_be_bytes();
        let produced = [b0, b1, b2];
        out.extend_from_slice(&produced[..group.len() - 1]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4648_test_vectors() {
        // RFC 4648 §10.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(decode(encoded).unwrap(), plain.as_bytes(), "{encoded}");
        }
        assert_eq!(decode("//79").unwrap(), [0xFF, 0xFE, 0xFD]);
    }

    #[test]
    fn junk_is_an_error() {
        assert_eq!(decode("Zm9v!"), Err(Base64Error::InvalidLength));
        assert_eq!(decode("Zm!v"), Err(Base64Error::InvalidByte(2)));
        assert_eq!(decode("Zm9vY"), Err(Base64Error::InvalidLength));
    }
}
