//! When each request of an open loop leaves: a Poisson process, fixed by its seed.
//!
//! A Poisson process at λ requests/s has independent, exponentially distributed gaps of
//! mean 1/λ: that is what many independent users sending at random look like, and what
//! vLLM's `--request-rate` sends. The gaps come from SplitMix64 (the simulator's choice
//! too: a published, tiny generator whose output for a seed never changes between
//! builds or crate versions), so a seed names one schedule, replayable. The schedule is
//! a function of seed and rate only: nothing a server answers can move an arrival.

use std::time::Duration;

use ttfx_core::rng::SplitMix64;

/// The arrivals of a Poisson process at `rate_per_s`, as offsets from its start.
#[derive(Debug, Clone)]
pub struct Poisson {
    rng: SplitMix64,
    mean_gap_s: f64,
    at_s: f64,
}

impl Poisson {
    /// `rate_per_s` must be finite and positive (the spec checks it).
    pub fn new(rate_per_s: f64, seed: u64) -> Poisson {
        Poisson {
            rng: SplitMix64::new(seed),
            mean_gap_s: 1.0 / rate_per_s,
            at_s: 0.0,
        }
    }
}

impl Iterator for Poisson {
    type Item = Duration;

    /// The next arrival: the last plus an exponential gap (inverse transform, −ln U / λ).
    /// Kept as f64 seconds and converted per arrival, so rounding never accumulates.
    fn next(&mut self) -> Option<Duration> {
        self.at_s += -self.rng.unit_open0().ln() * self.mean_gap_s;
        Duration::try_from_secs_f64(self.at_s).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_names_one_schedule_and_another_seed_another() {
        let a: Vec<Duration> = Poisson::new(100.0, 7).take(50).collect();
        let b: Vec<Duration> = Poisson::new(100.0, 7).take(50).collect();
        let c: Vec<Duration> = Poisson::new(100.0, 8).take(50).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "arrivals are in order");
    }

    #[test]
    fn gaps_are_exponential_with_the_asked_mean() {
        // 100,000 gaps at 1,000/s: the mean is 1 ms within 4 standard errors (an
        // exponential's standard deviation is its mean: 1 ms / √n = 3.2 µs), and the
        // share of gaps above the mean is e^−1 = 0.368 within 4 × √(p(1 − p)/n) = 0.006.
        let n = 100_000;
        let at: Vec<f64> = Poisson::new(1000.0, 3)
            .take(n)
            .map(|d| d.as_secs_f64())
            .collect();
        let gaps: Vec<f64> = std::iter::once(at[0])
            .chain(at.windows(2).map(|w| w[1] - w[0]))
            .collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        assert!(
            (mean - 0.001).abs() < 4.0 * 0.001 / (n as f64).sqrt(),
            "{mean}"
        );
        let above = gaps.iter().filter(|&&g| g > 0.001).count() as f64 / n as f64;
        assert!((above - (-1.0f64).exp()).abs() < 0.006, "{above}");
    }
}
