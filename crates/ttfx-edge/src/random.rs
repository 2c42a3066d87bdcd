//! Unpredictable values: 64-bit ones for the simulator's fresh seeds, and ids and tokens
//! drawn from the OS's CSPRNG for what must not be guessed (a record's id, the proxy
//! token).

/// A value different at each call and unpredictable across processes.
pub fn fresh_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS once per process; hashing a counter gives
    // distinct, unpredictable values without another dependency.
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    RandomState::new().hash_one(n)
}

/// Bits of a server-made record id: 128, so no client can guess another's id and read
/// or pre-empt its record (a birthday collision needs about 2^64 ids).
pub const ID_BITS: usize = 128;

/// The OS's random source failed (no entropy to be had): nothing secret can be made.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the OS random source failed: {0}")]
pub struct NoRandomness(String);

/// `bytes` bytes from the OS's CSPRNG, as lowercase hex.
pub fn secret_hex(bytes: usize) -> Result<String, NoRandomness> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| NoRandomness(e.to_string()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// A fresh id of [`ID_BITS`] random bits: 32 hex digits.
pub fn unguessable_id() -> Result<String, NoRandomness> {
    secret_hex(ID_BITS / 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_128_random_bits_and_differ() {
        let a = unguessable_id().unwrap_or_default();
        let b = unguessable_id().unwrap_or_default();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
