//! Goodput's SLOs as `--goodput` writes them: `METRIC<=LIMIT` for a time or a count,
//! `METRIC>=LIMIT` for a rate (`…_per_s`), e.g. `ttft_ms<=500`, `tpot_ms<=50`,
//! `decode_tokens_per_s>=20`. `METRIC=LIMIT` (ttfx-core's budget form, whose direction
//! follows from the name) is read too. Each becomes a [`Budget`], so a request is judged
//! by the rule every ttfx report uses (`ttfx_core::stats::goodput`).

use ttfx_core::metrics::SCALAR_NAMES;
use ttfx_core::stats::Budget;

/// Why an SLO cannot be used; the text names the SLO as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SloError {
    #[error(
        "--goodput `{0}`: expected METRIC<=LIMIT (or METRIC>=LIMIT for a rate), e.g. ttft_ms<=500"
    )]
    Form(String),
    #[error(
        "--goodput `{text}`: unknown metric `{metric}` (per-request metrics: {known}, or gap.MILESTONE_ms)",
        known = SCALAR_NAMES.join(", ")
    )]
    Metric { text: String, metric: String },
    #[error("--goodput `{0}`: the limit is not a number")]
    Limit(String),
    #[error("--goodput `{0}`: the limit must not be negative")]
    Negative(String),
    #[error("--goodput `{text}`: {metric} is a rate, higher is better: write {metric}>={limit}")]
    RateIsAFloor {
        text: String,
        metric: String,
        limit: String,
    },
    #[error("--goodput `{text}`: {metric} is not a rate, lower is better: write {metric}<={limit}")]
    OthersAreCeilings {
        text: String,
        metric: String,
        limit: String,
    },
}

/// Parses one SLO.
pub fn parse(text: &str) -> Result<Budget, SloError> {
    let t = text.trim();
    let (metric, op, limit) = ["<=", ">=", "="]
        .into_iter()
        .find_map(|op| t.split_once(op).map(|(m, l)| (m.trim(), op, l.trim())))
        .ok_or_else(|| SloError::Form(text.into()))?;
    if metric.is_empty() || limit.is_empty() {
        return Err(SloError::Form(text.into()));
    }
    // `500ms` for a metric in ms reads as 500: the unit the name already says.
    let number = match limit.strip_suffix("ms") {
        Some(n) if metric.ends_with("_ms") => n.trim(),
        _ => limit,
    };
    let value: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| SloError::Limit(text.into()))?;
    if value < 0.0 {
        return Err(SloError::Negative(text.into()));
    }
    let budget = Budget::parse(&format!("{metric}={value}")).map_err(|_| SloError::Metric {
        text: text.into(),
        metric: metric.into(),
    })?;
    let misdirected = match op {
        "<=" => budget.is_minimum(),
        ">=" => !budget.is_minimum(),
        _ => false,
    };
    if misdirected {
        let (text, metric, limit) = (text.into(), metric.into(), number.into());
        return Err(if budget.is_minimum() {
            SloError::RateIsAFloor {
                text,
                metric,
                limit,
            }
        } else {
            SloError::OthersAreCeilings {
                text,
                metric,
                limit,
            }
        });
    }
    Ok(budget)
}

/// How an SLO is written back (`ttft_ms<=500`).
pub fn shown(budget: &Budget) -> String {
    let op = if budget.is_minimum() { ">=" } else { "<=" };
    format!("{}{op}{}", budget.metric, budget.limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slos_read_in_every_form_and_write_back_as_read() {
        let b = parse("ttft_ms<=500").unwrap();
        assert_eq!(
            (b.metric.as_str(), b.limit, b.is_minimum()),
            ("ttft_ms", 500.0, false)
        );
        assert_eq!(shown(&b), "ttft_ms<=500");
        assert_eq!(parse(" tpot_ms <= 50ms ").unwrap().limit, 50.0);
        assert_eq!(parse("e2e_ms=2500").unwrap().limit, 2500.0);
        let rate = parse("decode_tokens_per_s>=20.5").unwrap();
        assert!(rate.is_minimum());
        assert_eq!(shown(&rate), "decode_tokens_per_s>=20.5");
        assert_eq!(
            parse("gap.first_token_ms<=80").unwrap().metric,
            "gap.first_token_ms"
        );
    }

    #[test]
    fn a_bad_slo_says_what_is_wrong_with_it() {
        let err = |t: &str| parse(t).unwrap_err().to_string();
        assert_eq!(
            err("ttft:500"),
            "--goodput `ttft:500`: expected METRIC<=LIMIT (or METRIC>=LIMIT for a rate), e.g. ttft_ms<=500"
        );
        assert!(err("ttft<=500").starts_with(
            "--goodput `ttft<=500`: unknown metric `ttft` (per-request metrics: ttft_ms, "
        ));
        assert_eq!(
            err("ttft_ms<=fast"),
            "--goodput `ttft_ms<=fast`: the limit is not a number"
        );
        assert_eq!(
            err("ttft_ms<=inf"),
            "--goodput `ttft_ms<=inf`: the limit is not a number"
        );
        assert_eq!(
            err("ttft_ms<=-1"),
            "--goodput `ttft_ms<=-1`: the limit must not be negative"
        );
        assert_eq!(
            err("decode_tokens_per_s<=20"),
            "--goodput `decode_tokens_per_s<=20`: decode_tokens_per_s is a rate, higher is better: write decode_tokens_per_s>=20"
        );
        assert_eq!(
            err("tpot_ms>=50"),
            "--goodput `tpot_ms>=50`: tpot_ms is not a rate, lower is better: write tpot_ms<=50"
        );
        assert!(err("<=5").contains("expected METRIC<=LIMIT"));
        assert!(err("ttft_ms<=").contains("expected METRIC<=LIMIT"));
    }
}
