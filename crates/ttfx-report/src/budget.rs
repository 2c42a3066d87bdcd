//! Budgets on batch statistics: `ttft_visible.p90<=800ms`. A budget names a metric (the
//! report's names; `_ms` may be left off), a statistic (p50, p90, p95, p99, mean, min,
//! max), `<=` or `>=`, and a limit with an optional unit (`ms`, `s`). `ttfx run` judges
//! its batches with them (and exits 1 when one fails); `ttfx report --budget` judges a
//! batch read back the same way; the HTML page and the Markdown summary show verdicts.

use std::collections::BTreeMap;

use ttfx_core::stats::{Budget, Summary};

/// What every budget looks like, told when one does not.
const SHAPE: &str = "budgets look like ttft_visible.p90<=800ms (METRIC.STAT<=LIMIT or >=)";

/// A budget's text that does not parse: the text, then what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("budget `{text}`: {problem}")]
pub struct BudgetError {
    pub text: String,
    pub problem: BudgetProblem,
}

/// What is wrong in a budget's text.
#[derive(Debug, thiserror::Error)]
pub enum BudgetProblem {
    #[error("no <= or >=; {SHAPE}")]
    NoComparison,
    #[error("no .STAT after the metric; {SHAPE}")]
    NoStat,
    #[error("unknown statistic `{0}` (p50, p90, p95, p99, mean, min, max)")]
    UnknownStat(String),
    #[error("unknown metric `{0}`")]
    UnknownMetric(String),
    #[error("{0} is not a duration, give a plain number")]
    NotADuration(String),
    #[error("limit `{0}` is not a number")]
    NotANumber(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    P50,
    P90,
    P95,
    P99,
    Mean,
    Min,
    Max,
}

impl Stat {
    fn parse(text: &str) -> Option<Stat> {
        Some(match text {
            "p50" | "median" => Stat::P50,
            "p90" => Stat::P90,
            "p95" => Stat::P95,
            "p99" => Stat::P99,
            "mean" => Stat::Mean,
            "min" => Stat::Min,
            "max" => Stat::Max,
            _ => return None,
        })
    }

    fn of(self, s: &Summary) -> f64 {
        match self {
            Stat::P50 => s.p50,
            Stat::P90 => s.p90,
            Stat::P95 => s.p95,
            Stat::P99 => s.p99,
            Stat::Mean => s.mean,
            Stat::Min => s.min,
            Stat::Max => s.max,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stat::P50 => "p50",
            Stat::P90 => "p90",
            Stat::P95 => "p95",
            Stat::P99 => "p99",
            Stat::Mean => "mean",
            Stat::Min => "min",
            Stat::Max => "max",
        }
    }
}

/// One budget as written, and what it means.
#[derive(Debug, Clone, PartialEq)]
pub struct RunBudget {
    /// As the user wrote it (test case names, table rows).
    pub text: String,
    /// The report's metric name (`ttft_visible_ms`).
    pub metric: String,
    pub stat: Stat,
    /// `true` for `>=` (a floor), `false` for `<=` (a ceiling).
    pub at_least: bool,
    /// In the metric's own unit (ms for `_ms` metrics).
    pub limit: f64,
}

/// How one budget fared.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub budget: RunBudget,
    /// The statistic measured; `None` when no run had the metric (which fails the budget:
    /// a gate must not pass because the thing it guards was never seen).
    pub value: Option<f64>,
    pub passed: bool,
}

impl Verdict {
    /// By how much the value missed the limit (always ≥ 0), when it did.
    pub fn miss(&self) -> Option<f64> {
        let v = self.value?;
        (!self.passed).then(|| (v - self.budget.limit).abs())
    }

    /// One line for the table and the JUnit failure message.
    pub fn describe(&self) -> String {
        let b = &self.budget;
        let unit = if b.metric.ends_with("_ms") { " ms" } else { "" };
        match (self.value, self.miss()) {
            (None, _) => format!("no run reported {}", b.metric),
            (Some(v), None) => format!("{} of {} is {v:.2}{unit}", b.stat.name(), b.metric),
            (Some(v), Some(m)) => format!(
                "{} of {} is {v:.2}{unit}, {} the limit {}{unit} by {m:.2}{unit}",
                b.stat.name(),
                b.metric,
                if b.at_least { "under" } else { "over" },
                b.limit
            ),
        }
    }
}

impl RunBudget {
    pub fn parse(text: &str) -> Result<RunBudget, BudgetError> {
        let refuse = |problem| BudgetError {
            text: text.to_owned(),
            problem,
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs, at_least) = if let Some((l, r)) = compact.split_once("<=") {
            (l, r, false)
        } else if let Some((l, r)) = compact.split_once(">=") {
            (l, r, true)
        } else {
            return Err(refuse(BudgetProblem::NoComparison));
        };
        let Some((metric, stat)) = lhs.rsplit_once('.') else {
            return Err(refuse(BudgetProblem::NoStat));
        };
        let Some(stat) = Stat::parse(stat) else {
            return Err(refuse(BudgetProblem::UnknownStat(stat.to_owned())));
        };
        let metric = known_metric(metric)
            .ok_or_else(|| refuse(BudgetProblem::UnknownMetric(metric.to_owned())))?;
        let (number, scale) = if let Some(n) = rhs.strip_suffix("ms") {
            (n, 1.0)
        } else if let Some(n) = rhs.strip_suffix('s') {
            (n, 1000.0)
        } else {
            (rhs, 1.0)
        };
        if (scale != 1.0 || rhs.ends_with("ms")) && !metric.ends_with("_ms") {
            return Err(refuse(BudgetProblem::NotADuration(metric)));
        }
        let limit: f64 = number
            .parse()
            .ok()
            .filter(|l: &f64| l.is_finite())
            .ok_or_else(|| refuse(BudgetProblem::NotANumber(rhs.to_owned())))?;
        Ok(RunBudget {
            text: text.trim().to_owned(),
            metric,
            stat,
            at_least,
            limit: limit * scale,
        })
    }

    pub fn judge(&self, statistics: &BTreeMap<String, Summary>) -> Verdict {
        let value = statistics.get(&self.metric).map(|s| self.stat.of(s));
        let passed = value.is_some_and(|v| {
            if self.at_least {
                v >= self.limit
            } else {
                v <= self.limit
            }
        });
        Verdict {
            budget: self.clone(),
            value,
            passed,
        }
    }

    /// The per-request goodput budget this implies, when ttfx-core's convention (rates
    /// are floors, the rest ceilings) agrees with the direction written.
    pub fn goodput_budget(&self) -> Option<Budget> {
        let budget = Budget {
            metric: self.metric.clone(),
            limit: self.limit,
        };
        (self.metric != "icl_ms" && budget.is_minimum() == self.at_least).then_some(budget)
    }
}

/// `<- FAIL budget by X` for each failed budget on `metric` (a text table's row mark),
/// or None when none failed.
pub fn fail_marks(verdicts: &[Verdict], metric: &str) -> Option<String> {
    let marks: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.passed && v.budget.metric == metric)
        .map(|v| {
            let by = v.miss().map_or(String::new(), |m| format!(" by {m:.2}"));
            format!("<- FAIL {}{by}", v.budget.text)
        })
        .collect();
    (!marks.is_empty()).then(|| marks.join("  "))
}

/// The text tables' budget block: how many passed and failed, then one line each.
pub fn verdict_lines(verdicts: &[Verdict]) -> String {
    use std::fmt::Write as _;
    if verdicts.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    let _ = writeln!(
        out,
        "budgets: {} passed, {failed} failed",
        verdicts.len() - failed
    );
    for v in verdicts {
        let mark = if v.passed { "pass" } else { "FAIL" };
        let _ = writeln!(out, "  {mark}  {:<32} {}", v.budget.text, v.describe());
    }
    out
}

/// The report's name for `name`: as given, or with `_ms` added (`ttft_visible`).
fn known_metric(name: &str) -> Option<String> {
    let known = |n: &str| n == "icl_ms" || Budget::parse(&format!("{n}=0")).is_ok();
    if known(name) {
        return Some(name.to_owned());
    }
    let with_ms = format!("{name}_ms");
    known(&with_ms).then_some(with_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(p90: f64) -> Summary {
        Summary {
            count: 10,
            mean: p90 / 2.0,
            min: 1.0,
            max: p90 * 2.0,
            p50: p90 / 2.0,
            p90,
            p95: p90,
            p99: p90,
        }
    }

    #[test]
    fn the_issue_s_example_parses() {
        let b = RunBudget::parse("ttft_visible.p90<=800ms").unwrap();
        assert_eq!(b.metric, "ttft_visible_ms");
        assert_eq!(b.stat, Stat::P90);
        assert!(!b.at_least);
        assert_eq!(b.limit, 800.0);
        assert_eq!(
            RunBudget::parse("e2e_ms.p99 <= 2.5s").unwrap().limit,
            2500.0
        );
        let rate = RunBudget::parse("decode_tokens_per_s.p50>=20").unwrap();
        assert!(rate.at_least);
        assert_eq!(
            RunBudget::parse("gap.first_token_ms.max<=50")
                .unwrap()
                .metric,
            "gap.first_token_ms"
        );
    }

    #[test]
    fn bad_syntax_is_one_clear_line() {
        for (bad, says) in [
            ("ttft_visible.p90=800", "no <= or >="),
            ("ttft_visible<=800", "no .STAT"),
            ("ttft_visible.p42<=800", "unknown statistic `p42`"),
            ("ttft_vis.p90<=800", "unknown metric `ttft_vis`"),
            ("ttft.p90<=fast", "is not a number"),
            ("decode_tokens_per_s.p50>=20ms", "not a duration"),
        ] {
            let e = RunBudget::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert_eq!(
            RunBudget::parse("ttft_visible.p90=800")
                .unwrap_err()
                .to_string(),
            "budget `ttft_visible.p90=800`: no <= or >=; budgets look like \
             ttft_visible.p90<=800ms (METRIC.STAT<=LIMIT or >=)"
        );
    }

    #[test]
    fn a_verdict_says_by_how_much_it_missed() {
        let stats = BTreeMap::from([("ttft_visible_ms".to_owned(), summary(912.5))]);
        let v = RunBudget::parse("ttft_visible.p90<=800ms")
            .unwrap()
            .judge(&stats);
        assert!(!v.passed);
        assert_eq!(v.miss(), Some(112.5));
        assert!(
            v.describe().contains("over the limit 800 ms by 112.50 ms"),
            "{}",
            v.describe()
        );
        let ok = RunBudget::parse("ttft_visible.p90<=1s")
            .unwrap()
            .judge(&stats);
        assert!(ok.passed && ok.miss().is_none());
        let missing = RunBudget::parse("ttfa.p50<=1s").unwrap().judge(&stats);
        assert!(!missing.passed && missing.value.is_none());
    }
}
