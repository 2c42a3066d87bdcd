//! Percentiles computed the way vLLM's benchmark computes them so the figures compare:
//! numpy's default (`method="linear"`) interpolation, over plain or weighted values, and
//! the [`Summary`] (count, mean, extremes, percentiles) ttfx reports. Plain arithmetic
//! over numbers, below everything that summarizes a series, a metric or a batch.

use serde::{Deserialize, Serialize};

use crate::order::ascending_order;

/// The `p`-th percentile (0–100) of `values` with numpy's default linear interpolation:
/// sort, take rank h = (n − 1)·p/100, and interpolate between the values at ⌊h⌋ and ⌈h⌉.
/// Non-finite values have no rank and are skipped. `None` for no values or `p` outside
/// 0–100.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    percentile_of_sorted(&sorted_finite(values), p)
}

/// The finite values, ascending.
fn sorted_finite(values: &[f64]) -> Vec<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    ascending_order(&finite)
        .into_iter()
        .map(|i| finite[i])
        .collect()
}

fn percentile_of_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    Some(linear_at(sorted.len(), p, |i| sorted[i]))
}

/// numpy's linear rule over `n` (≥ 1) ascending values read by `at`, `p` in 0–100.
fn linear_at(n: usize, p: f64, at: impl Fn(usize) -> f64) -> f64 {
    let h = (n - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    at(lo) + (h - lo as f64) * (at(hi) - at(lo))
}

/// Values that each stand for `weight` runs, for percentiles of a sampled population
/// (a collector weights a run by the inverse of its page's sample rate).
///
/// The rule is numpy's linear one over the values expanded by weight: a value of weight
/// w counts as c = w / w_min copies (w_min the smallest weight present), the copies are
/// ranked 0 … N − 1 (N = Σ c), and the p-th percentile is read at rank h = (N − 1)·p/100
/// of the piecewise-linear function that is flat over one value's copies and rises
/// linearly over the one rank step from a value's last copy to the next value's first.
/// With integer copy counts that is exactly [`percentile`] of the expanded list; for
/// other ratios it is the same function, continued. When every weight is equal it *is*
/// [`percentile`]: the unweighted values go through the same code.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Weighted {
    /// (value, weight), ascending by value; finite values, finite positive weights.
    sorted: Vec<(f64, f64)>,
    /// Every weight is the same: the plain rule applies (found once, not per percentile).
    equal: bool,
    /// With unequal weights: the rank of each value's last copy (ascending, as the rule
    /// counts them) and N − 1, made once so each percentile is a binary search rather
    /// than a walk over every value (a million values, five percentiles, #31).
    last_ranks: Vec<f64>,
    top_rank: f64,
}

impl Weighted {
    /// The pairs (value, weight) whose value is finite and whose weight is finite and
    /// positive; the others have no rank and are skipped.
    pub fn new(pairs: &[(f64, f64)]) -> Weighted {
        let kept: Vec<(f64, f64)> = pairs
            .iter()
            .copied()
            .filter(|&(v, w)| v.is_finite() && w.is_finite() && w > 0.0)
            .collect();
        let keys: Vec<f64> = kept.iter().map(|p| p.0).collect();
        Weighted::of_sorted(
            ascending_order(&keys)
                .into_iter()
                .map(|i| kept[i])
                .collect(),
        )
    }

    /// As [`Weighted::new`], for a caller that sorted `pairs` by value already (f64's
    /// total order), with its own sort: ttfx-core's is a merge sort of indices chosen for
    /// the probe's wasm size (order.rs), several times slower than std's on the million
    /// values a collector's summary may hold. Pairs found out of order are sorted here,
    /// so a caller's mistake costs time, never a wrong percentile.
    pub fn from_ascending(mut pairs: Vec<(f64, f64)>) -> Weighted {
        pairs.retain(|&(v, w)| v.is_finite() && w.is_finite() && w > 0.0);
        if pairs.windows(2).all(|w| w[0].0.total_cmp(&w[1].0).is_le()) {
            Weighted::of_sorted(pairs)
        } else {
            Weighted::new(&pairs)
        }
    }

    fn of_sorted(sorted: Vec<(f64, f64)>) -> Weighted {
        let equal = sorted.windows(2).all(|w| w[0].1 == w[1].1);
        let (last_ranks, top_rank) = if equal {
            (Vec::new(), 0.0)
        } else {
            last_ranks(&sorted)
        };
        Weighted {
            sorted,
            equal,
            last_ranks,
            top_rank,
        }
    }

    /// How many values (runs) there are.
    pub fn count(&self) -> u64 {
        self.sorted.len() as u64
    }

    /// Σ weight: the population the values stand for.
    pub fn total_weight(&self) -> f64 {
        self.sorted.iter().map(|p| p.1).sum()
    }

    /// Σ weight·value / Σ weight; with equal weights the plain mean, as [`Summary`]'s.
    pub fn mean(&self) -> Option<f64> {
        if self.sorted.is_empty() {
            return None;
        }
        if self.equal {
            let sum: f64 = self.sorted.iter().map(|p| p.0).sum();
            return Some(sum / self.sorted.len() as f64);
        }
        let sum: f64 = self.sorted.iter().map(|&(v, w)| v * w).sum();
        Some(sum / self.total_weight())
    }

    pub fn min(&self) -> Option<f64> {
        self.sorted.first().map(|p| p.0)
    }

    pub fn max(&self) -> Option<f64> {
        self.sorted.last().map(|p| p.0)
    }

    /// The `p`-th percentile (0–100) by the rule above; `None` for no values or `p`
    /// outside 0–100.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        if self.sorted.is_empty() || !(0.0..=100.0).contains(&p) {
            return None;
        }
        if self.equal {
            return Some(linear_at(self.sorted.len(), p, |i| self.sorted[i].0));
        }
        let h = self.top_rank * p / 100.0;
        // The first value whose last copy is at or past h; the one before it ends below h.
        let j = self.last_ranks.partition_point(|&last| last < h);
        let Some(&(value, _)) = self.sorted.get(j) else {
            // Past the last copy only by rounding: the largest value.
            return self.max();
        };
        if let Some(i) = j.checked_sub(1) {
            let (before, last) = (self.sorted[i].0, self.last_ranks[i]);
            // Within the one rank step from the previous value's last copy to this
            // value's first: the rule rises linearly there.
            if h < last + 1.0 {
                return Some(before + (h - last) * (value - before));
            }
        }
        Some(value)
    }
}

/// The rank of each value's last copy when a value of weight w counts as w / w_min
/// copies, and N − 1 (N = Σ copies), summed in order as [`Weighted`]'s rule counts them.
fn last_ranks(sorted: &[(f64, f64)]) -> (Vec<f64>, f64) {
    let w_min = sorted.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let copies = |w: f64| w / w_min;
    let n: f64 = sorted.iter().map(|&(_, w)| copies(w)).sum();
    let mut first = 0.0;
    let lasts = sorted
        .iter()
        .map(|&(_, w)| {
            let last = first + copies(w) - 1.0;
            first = last + 1.0;
            last
        })
        .collect();
    (lasts, n - 1.0)
}

/// Count, mean, extremes and the percentiles ttfx reports.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Summary {
    /// Summarizes the finite values; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let sorted = sorted_finite(values);
        let p = |q| percentile_of_sorted(&sorted, q);
        Some(Summary {
            count: sorted.len() as u64,
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            min: *sorted.first()?,
            max: *sorted.last()?,
            p50: p(50.0)?,
            p90: p(90.0)?,
            p95: p(95.0)?,
            p99: p(99.0)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values are worked by hand from numpy's linear rule, h = (n − 1)·p/100.

    #[test]
    fn percentile_interpolates_like_numpy_linear() {
        let v = [15.0, 20.0, 35.0, 40.0, 50.0];
        // n = 5: p50 → h = 2 → 35; p90 → h = 3.6 → 40 + 0.6·10 = 46;
        // p95 → h = 3.8 → 48; p99 → h = 3.96 → 49.6; p25 → h = 1 → 20.
        assert_eq!(percentile(&v, 50.0), Some(35.0));
        assert!((percentile(&v, 90.0).unwrap() - 46.0).abs() < 1e-9);
        assert!((percentile(&v, 95.0).unwrap() - 48.0).abs() < 1e-9);
        assert!((percentile(&v, 99.0).unwrap() - 49.6).abs() < 1e-9);
        assert_eq!(percentile(&v, 25.0), Some(20.0));
    }

    #[test]
    fn percentile_sorts_its_input_and_handles_even_counts() {
        // Sorted: 1, 2, 3, 4 (n = 4): p50 → h = 1.5 → 2.5 (numpy's median);
        // p90 → h = 2.7 → 3.7; p10 → h = 0.3 → 1.3.
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert!((percentile(&v, 90.0).unwrap() - 3.7).abs() < 1e-9);
        assert!((percentile(&v, 10.0).unwrap() - 1.3).abs() < 1e-9);
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
    }

    #[test]
    fn percentile_edge_cases() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[1.0, 2.0], 101.0), None);
        assert_eq!(percentile(&[1.0, 2.0], -1.0), None);
        // NaN has no rank: skipped, not sorted to one end.
        assert_eq!(percentile(&[f64::NAN, 1.0, 3.0], 50.0), Some(2.0));
    }

    #[test]
    fn summary_of_ten_values() {
        // 10..=100 step 10 (n = 10): p50 → h = 4.5 → 55; p90 → h = 8.1 → 91;
        // p95 → h = 8.55 → 95.5; p99 → h = 8.91 → 99.1; mean 55.
        let v: Vec<f64> = (1..=10).rev().map(|i| f64::from(i) * 10.0).collect();
        let s = Summary::of(&v).unwrap();
        assert_eq!((s.count, s.min, s.max), (10, 10.0, 100.0));
        assert!((s.mean - 55.0).abs() < 1e-9);
        assert!((s.p50 - 55.0).abs() < 1e-9);
        assert!((s.p90 - 91.0).abs() < 1e-9);
        assert!((s.p95 - 95.5).abs() < 1e-9);
        assert!((s.p99 - 99.1).abs() < 1e-9);
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn equal_weights_are_the_unweighted_percentiles_exactly() {
        let values = [412.0, 190.25, 503.0, 88.5, 1200.75, 300.0, 301.5];
        for weight in [1.0, 4.0, 1.0 / 0.3] {
            let pairs: Vec<(f64, f64)> = values.iter().map(|&v| (v, weight)).collect();
            let w = Weighted::new(&pairs);
            for p in [0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 100.0] {
                assert_eq!(w.percentile(p), percentile(&values, p), "p{p} w{weight}");
            }
            assert_eq!(w.mean(), Summary::of(&values).map(|s| s.mean));
            assert_eq!(w.count(), 7);
        }
    }

    #[test]
    fn integer_weights_are_the_expanded_list() {
        // 10 at rate 1, 20 at rate 1/2, 30 at rate 1/4: weights 1, 2, 4, so the list
        // 10, 20, 20, 30, 30, 30, 30 (N = 7). p50: h = 3 → 30; p25: h = 1.5 → 20;
        // p10: h = 0.6 → 10 + 0.6·10 = 16; p0 → 10.
        let w = Weighted::new(&[(30.0, 4.0), (10.0, 1.0), (20.0, 2.0)]);
        assert_eq!(w.percentile(50.0), Some(30.0));
        assert_eq!(w.percentile(25.0), Some(20.0));
        assert!((w.percentile(10.0).unwrap() - 16.0).abs() < 1e-12);
        assert_eq!(w.percentile(0.0), Some(10.0));
        assert_eq!(w.total_weight(), 7.0);
        assert!((w.mean().unwrap() - 170.0 / 7.0).abs() < 1e-12);
        // Scaling every weight changes nothing: only their ratios count.
        let scaled = Weighted::new(&[(30.0, 40.0), (10.0, 10.0), (20.0, 20.0)]);
        let expanded = [10.0, 20.0, 20.0, 30.0, 30.0, 30.0, 30.0];
        for p in [
            0.0, 5.0, 10.0, 25.0, 33.0, 50.0, 75.0, 90.0, 95.0, 99.0, 100.0,
        ] {
            let want = percentile(&expanded, p).unwrap();
            assert!((w.percentile(p).unwrap() - want).abs() < 1e-9, "p{p}");
            assert!((scaled.percentile(p).unwrap() - want).abs() < 1e-9, "p{p}");
        }
    }

    /// The rule read as the doc states it, walking the values one by one: the reference
    /// the binary search must agree with.
    fn walked(sorted: &[(f64, f64)], p: f64) -> f64 {
        let w_min = sorted.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let copies = |w: f64| w / w_min;
        let n: f64 = sorted.iter().map(|&(_, w)| copies(w)).sum();
        let h = (n - 1.0) * p / 100.0;
        let mut first = 0.0;
        for (i, &(value, weight)) in sorted.iter().enumerate() {
            let last = first + copies(weight) - 1.0;
            if h <= last {
                return value;
            }
            match sorted.get(i + 1) {
                Some(&(next, _)) if h < last + 1.0 => return value + (h - last) * (next - value),
                Some(_) => first = last + 1.0,
                None => return value,
            }
        }
        f64::NAN
    }

    proptest::proptest! {
        #[test]
        fn any_weights_read_as_the_walk_reads_them(
            pairs in proptest::collection::vec((-1000.0f64..1000.0, 0.01f64..50.0), 2..40),
            p in 0.0f64..=100.0,
        ) {
            let mut sorted = pairs.clone();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            let w = Weighted::from_ascending(sorted.clone());
            for q in [p, 0.0, 50.0, 99.0, 100.0] {
                let (got, want) = (w.percentile(q).unwrap(), walked(&sorted, q));
                proptest::prop_assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "p{q}: {got} vs {want}");
            }
        }

        #[test]
        fn any_integer_weights_match_the_expanded_list(
            pairs in proptest::collection::vec((-1000i32..1000, 1u32..6), 1..20),
            p in 0.0f64..=100.0,
        ) {
            let pairs: Vec<(f64, f64)> =
                pairs.iter().map(|&(v, w)| (f64::from(v), f64::from(w))).collect();
            let min = pairs.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            let expanded: Vec<f64> = pairs
                .iter()
                .flat_map(|&(v, w)| std::iter::repeat_n(v, (w / min) as usize))
                .collect();
            // Only whole ratios expand exactly; the rest is covered above.
            proptest::prop_assume!(pairs.iter().all(|&(_, w)| (w / min).fract() == 0.0));
            let got = Weighted::new(&pairs).percentile(p).unwrap();
            let want = percentile(&expanded, p).unwrap();
            proptest::prop_assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
    }

    #[test]
    fn weighted_edge_cases() {
        let none = Weighted::new(&[(f64::NAN, 1.0), (5.0, 0.0), (6.0, f64::INFINITY)]);
        assert_eq!(none.count(), 0);
        assert_eq!(none.percentile(50.0), None);
        assert_eq!(none.mean(), None);
        let one = Weighted::new(&[(7.0, 3.0)]);
        assert_eq!(one.percentile(99.0), Some(7.0));
        assert_eq!(one.percentile(101.0), None);
        // Heavier values pull the percentiles towards them; the ends stay the extremes.
        let w = Weighted::new(&[(1.0, 1.0), (2.0, 1.5), (3.0, 1.0)]);
        assert_eq!(w.percentile(0.0), Some(1.0));
        assert_eq!(w.percentile(100.0), Some(3.0));
        assert_eq!(w.percentile(50.0), Some(2.0));
    }

    /// A caller's own sort gives the same answers; pairs handed over out of order are
    /// sorted, never read as if they were in order.
    #[test]
    fn from_ascending_agrees_with_new_sorted_or_not() {
        let unequal = vec![
            (3.0, 1.0),
            (1.0, 4.0),
            (2.0, 1.0),
            (f64::NAN, 1.0),
            (5.0, 0.0),
            (4.0, 2.0),
        ];
        let equal: Vec<(f64, f64)> = unequal.iter().map(|&(v, _)| (v, 2.0)).collect();
        for pairs in [unequal, equal] {
            let mut sorted = pairs.clone();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            let reference = Weighted::new(&pairs);
            for given in [sorted, pairs.clone()] {
                let w = Weighted::from_ascending(given);
                assert_eq!(w.count(), reference.count());
                assert_eq!(w.mean(), reference.mean());
                for p in [0.0, 10.0, 37.5, 50.0, 90.0, 99.0, 100.0] {
                    assert_eq!(w.percentile(p), reference.percentile(p), "p{p}");
                }
            }
        }
    }
}
