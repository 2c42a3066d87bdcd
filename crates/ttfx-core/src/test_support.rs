//! What the crate's tests share: deterministic random numbers and a relative comparison.

/// Deterministic streams for tests, over the crate's SplitMix64.
pub(crate) struct Rng(crate::rng::SplitMix64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(crate::rng::SplitMix64::new(seed))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `lo..hi`.
    pub(crate) fn below(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }

    /// True once in `n`.
    pub(crate) fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }
}

/// `a` is within `rel` of `b`, relative to `b` (plus float noise).
pub(crate) fn within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs() + 1e-9
}
