//! Statistics over many runs, computed the way vLLM's benchmark computes them so the
//! figures compare: percentiles use numpy's default (`method="linear"`) interpolation.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::metrics::{Outcome, RequestMetrics};
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
    let h = (sorted.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
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

/// One SLO budget on one metric of the report (`ttft_ms`, `tpot_ms`, …). Metrics whose
/// name ends in `_per_s` are rates, so their budget is a minimum; every other budget is a
/// maximum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    pub metric: String,
    pub limit: f64,
}

impl Budget {
    /// Is a rate (higher is better), so the limit is a floor.
    pub fn is_minimum(&self) -> bool {
        self.metric.ends_with("_per_s")
    }

    fn met_by(&self, value: f64) -> bool {
        if self.is_minimum() {
            value >= self.limit
        } else {
            value <= self.limit
        }
    }

    /// Parses `metric=limit` (e.g. `ttft_ms=500`), checking the metric name.
    pub fn parse(text: &str) -> Result<Budget, BudgetError> {
        let (metric, limit) = text
            .split_once('=')
            .ok_or_else(|| BudgetError(format!("budget `{text}` is not METRIC=LIMIT")))?;
        let metric = metric.trim();
        if !is_budget_metric(metric) {
            return Err(BudgetError(format!(
                "budget `{text}`: unknown metric `{metric}`"
            )));
        }
        let limit: f64 = limit
            .trim()
            .parse()
            .ok()
            .filter(|l: &f64| l.is_finite())
            .ok_or_else(|| BudgetError(format!("budget `{text}`: limit is not a number")))?;
        Ok(Budget {
            metric: metric.to_owned(),
            limit,
        })
    }
}

fn is_budget_metric(name: &str) -> bool {
    let per_request = crate::metrics::SCALAR_NAMES.contains(&name);
    let gap = name
        .strip_prefix("gap.")
        .and_then(|n| n.strip_suffix("_ms"))
        .is_some_and(|m| m.parse::<crate::milestone::Milestone>().is_ok());
    per_request || gap
}

/// A budget that cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetError(pub String);

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BudgetError {}

/// Share of requests that met every budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    pub budgets: Vec<Budget>,
    /// Requests that completed and met every budget.
    pub good: u64,
    /// Every request, failed, aborted and incomplete ones included.
    pub total: u64,
    /// good / total; `None` for no requests.
    pub ratio: Option<f64>,
}

/// Goodput: a request is good only if it completed and every budgeted metric is present
/// and within its budget. Failed, aborted and incomplete requests stay in the denominator
/// (they are simply not good), so failures cannot flatter the figure.
pub fn goodput(requests: &[RequestMetrics], budgets: &[Budget]) -> Goodput {
    let good = requests
        .iter()
        .filter(|r| r.outcome == Outcome::Completed)
        .filter(|r| {
            budgets
                .iter()
                .all(|b| r.scalar(&b.metric).is_some_and(|v| b.met_by(v)))
        })
        .count() as u64;
    let total = requests.len() as u64;
    Goodput {
        budgets: budgets.to_vec(),
        good,
        total,
        ratio: (total > 0).then(|| good as f64 / total as f64),
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
    fn budgets_parse_and_reject_clearly() {
        assert_eq!(
            Budget::parse("ttft_ms=500").unwrap(),
            Budget {
                metric: "ttft_ms".into(),
                limit: 500.0
            }
        );
        assert!(Budget::parse("gap.first_token_ms = 80").is_ok());
        assert!(
            Budget::parse("decode_tokens_per_s=20")
                .unwrap()
                .is_minimum()
        );
        assert_eq!(
            Budget::parse("ttft=500").unwrap_err().to_string(),
            "budget `ttft=500`: unknown metric `ttft`"
        );
        assert_eq!(
            Budget::parse("ttft_ms").unwrap_err().to_string(),
            "budget `ttft_ms` is not METRIC=LIMIT"
        );
        assert!(Budget::parse("ttft_ms=fast").is_err());
        assert!(Budget::parse("gap.first_pixel_ms=1").is_err());
    }
}
