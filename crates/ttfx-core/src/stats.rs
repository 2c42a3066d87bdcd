//! Statistics over many runs: goodput, the share of requests within every SLO budget.
//!
//! The percentile arithmetic (numpy's linear rule, [`Summary`], [`Weighted`]) is in
//! [`crate::percentile`], below the metrics that use it; re-exported here.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::metrics::{Outcome, RequestMetrics};
pub use crate::percentile::{Summary, Weighted, percentile};

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
