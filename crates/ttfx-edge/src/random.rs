//! Unpredictable 64-bit values for request ids and the simulator's fresh seeds.

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
