//! Which of two targets finishes first, as a function of the answer's length.
//!
//! TTFT and tokens/second are independent axes: completion(n) = ttft + n / rate. Two
//! targets cross at n* = (ttft_b − ttft_a) / (1/rate_a − 1/rate_b); below n* the one with
//! the earlier first token finishes first, above it the faster streamer does. Whether n*
//! matters depends on how long the real answers are, so the verdict is taken at the p50
//! and p90 of each target's own measured output lengths.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::metrics::{Outcome, RequestMetrics};
use crate::percentile::percentile;

/// A target as the crossover sees it: completion(n) = ttft + n / rate, and the lengths
/// its real answers had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionModel {
    pub ttft_ms: f64,
    pub tokens_per_s: f64,
    /// Output lengths (tokens) of its real answers; may be empty.
    #[serde(default)]
    pub output_tokens: Vec<f64>,
}

impl CompletionModel {
    /// Time to finish an answer of `tokens` tokens.
    pub fn completion_ms(&self, tokens: f64) -> f64 {
        self.ttft_ms + tokens * 1000.0 / self.tokens_per_s
    }

    /// A target measured by a batch: median `ttft`, median `decode_tokens_per_s`, and the
    /// output lengths of its completed runs. `None` when no run gives both medians.
    pub fn from_runs(runs: &[RequestMetrics]) -> Option<CompletionModel> {
        let ttfts: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.ttft_ms.map(|m| m.value))
            .collect();
        let rates: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.decode_tokens_per_s.map(|m| m.value))
            .collect();
        let lengths = runs
            .iter()
            .filter(|r| r.outcome == Outcome::Completed)
            .filter_map(|r| r.output_tokens.map(|m| m.value))
            .collect();
        Some(CompletionModel {
            ttft_ms: percentile(&ttfts, 50.0)?,
            tokens_per_s: percentile(&rates, 50.0)?,
            output_tokens: lengths,
        })
    }

    fn check(&self, side: Side) -> Result<(), CrossoverError> {
        if !(self.ttft_ms.is_finite() && self.ttft_ms >= 0.0) {
            return Err(CrossoverError(format!("{side}: ttft must be a number ≥ 0")));
        }
        if !(self.tokens_per_s.is_finite() && self.tokens_per_s > 0.0) {
            return Err(CrossoverError(format!(
                "{side}: tokens/s must be a number > 0"
            )));
        }
        Ok(())
    }
}

/// CompletionModel A, target B, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    A,
    B,
    Tie,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::A => "a",
            Side::B => "b",
            Side::Tie => "tie",
        })
    }
}

fn earlier(a_ms: f64, b_ms: f64) -> Side {
    match a_ms.total_cmp(&b_ms) {
        std::cmp::Ordering::Less => Side::A,
        std::cmp::Ordering::Greater => Side::B,
        std::cmp::Ordering::Equal => Side::Tie,
    }
}

/// Where the completion curves cross, if they do for some answer length > 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Crossover {
    /// Below `tokens` the `shorter` side finishes first, above it the other one.
    At {
        tokens: f64,
        shorter: Side,
        longer: Side,
    },
    /// One side (or neither) finishes first at every length.
    Never { first: Side },
}

/// The two completion times at one length.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub tokens: f64,
    pub a_ms: f64,
    pub b_ms: f64,
}

/// Who finishes first at a quantile of each side's own output lengths.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuantileVerdict {
    pub quantile: f64,
    pub a_tokens: f64,
    pub a_ms: f64,
    pub b_tokens: f64,
    pub b_ms: f64,
    pub first: Side,
}

/// The full comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub crossover: Crossover,
    /// Both curves at [`CURVE_POINTS`] evenly spaced lengths from 0 up to the longest of:
    /// twice n*, and either side's p90 length.
    pub curve: Vec<CurvePoint>,
    /// At p50 and p90, when both sides have lengths.
    pub at_quantiles: Vec<QuantileVerdict>,
}

/// Points on each curve in a [`Comparison`].
pub const CURVE_POINTS: usize = 21;

/// The targets cannot be compared.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossoverError(pub String);

impl fmt::Display for CrossoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CrossoverError {}

/// n* and which side wins on each side of it.
pub fn crossover(a: &CompletionModel, b: &CompletionModel) -> Crossover {
    let per_token = 1000.0 / a.tokens_per_s - 1000.0 / b.tokens_per_s;
    let head_start = b.ttft_ms - a.ttft_ms;
    // Equal rates: parallel lines, the earlier first token wins everywhere.
    if per_token == 0.0 {
        return Crossover::Never {
            first: earlier(a.ttft_ms, b.ttft_ms),
        };
    }
    let n_star = head_start / per_token;
    if n_star > 0.0 {
        let shorter = earlier(a.ttft_ms, b.ttft_ms);
        let longer = if shorter == Side::A { Side::B } else { Side::A };
        Crossover::At {
            tokens: n_star,
            shorter,
            longer,
        }
    } else {
        // Crossing at n ≤ 0 (or equal TTFTs): whoever leads at one token leads everywhere.
        Crossover::Never {
            first: earlier(a.completion_ms(1.0), b.completion_ms(1.0)),
        }
    }
}

/// Compares two targets: n*, the curves, and the verdict at p50 and p90 of each side's
/// own lengths.
pub fn compare(a: &CompletionModel, b: &CompletionModel) -> Result<Comparison, CrossoverError> {
    a.check(Side::A)?;
    b.check(Side::B)?;
    let crossover = crossover(a, b);
    let mut at_quantiles = Vec::new();
    for quantile in [50.0, 90.0] {
        if let (Some(a_tokens), Some(b_tokens)) = (
            percentile(&a.output_tokens, quantile),
            percentile(&b.output_tokens, quantile),
        ) {
            let (a_ms, b_ms) = (a.completion_ms(a_tokens), b.completion_ms(b_tokens));
            at_quantiles.push(QuantileVerdict {
                quantile,
                a_tokens,
                a_ms,
                b_tokens,
                b_ms,
                first: earlier(a_ms, b_ms),
            });
        }
    }
    let n_star = match crossover {
        Crossover::At { tokens, .. } => tokens,
        Crossover::Never { .. } => 0.0,
    };
    let longest = at_quantiles
        .iter()
        .flat_map(|q| [q.a_tokens, q.b_tokens])
        .fold(2.0 * n_star, f64::max)
        .max(1.0);
    let curve = (0..CURVE_POINTS)
        .map(|i| {
            let tokens = longest * i as f64 / (CURVE_POINTS - 1) as f64;
            CurvePoint {
                tokens,
                a_ms: a.completion_ms(tokens),
                b_ms: b.completion_ms(tokens),
            }
        })
        .collect();
    Ok(Comparison {
        crossover,
        curve,
        at_quantiles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(ttft_ms: f64, tokens_per_s: f64, output_tokens: Vec<f64>) -> CompletionModel {
        CompletionModel {
            ttft_ms,
            tokens_per_s,
            output_tokens,
        }
    }

    #[test]
    fn reproduces_the_design_worked_example() {
        // docs/design.md: A = 200 ms at 30 tok/s, B = 900 ms at 110 tok/s.
        let a = target(200.0, 30.0, vec![]);
        let b = target(900.0, 110.0, vec![]);
        // n* = 0.7 s / (1/30 − 1/110) s = 0.7 · 330 / 8 = 28.875 tokens.
        let Crossover::At {
            tokens,
            shorter,
            longer,
        } = crossover(&a, &b)
        else {
            panic!("the curves cross");
        };
        assert!((tokens - 28.875).abs() < 1e-9, "n* = {tokens}");
        assert_eq!((shorter, longer), (Side::A, Side::B));
        // At 600 tokens: A 0.2 + 20 = 20.2 s, B 0.9 + 5.4545… = 6.3545… s.
        assert!((a.completion_ms(600.0) - 20_200.0).abs() < 1e-6);
        assert!((b.completion_ms(600.0) - (900.0 + 600_000.0 / 110.0)).abs() < 1e-6);
        assert_eq!((b.completion_ms(600.0) / 10.0).round() / 100.0, 6.35);
        // At the crossing both finish together.
        assert!((a.completion_ms(tokens) - b.completion_ms(tokens)).abs() < 1e-9);
    }

    #[test]
    fn verdicts_use_each_side_s_own_length_quantiles() {
        // A answers short (p50 = 20, p90 = 28 by numpy linear over 10..=30 step 5:
        // n = 5, p50 → h = 2 → 20, p90 → h = 3.6 → 25 + 0.6·5 = 28).
        // B answers long (600 and 800 → p50 → h = 0.5 → 700, p90 → h = 0.9 → 780).
        let a = target(200.0, 30.0, vec![30.0, 10.0, 25.0, 15.0, 20.0]);
        let b = target(900.0, 110.0, vec![600.0, 800.0]);
        let c = compare(&a, &b).unwrap();
        let p50 = c.at_quantiles[0];
        assert_eq!(
            (p50.quantile, p50.a_tokens, p50.b_tokens),
            (50.0, 20.0, 700.0)
        );
        // A: 200 + 20/30 s = 866.67 ms; B: 900 + 700/110 s = 7263.6 ms.
        assert!((p50.a_ms - (200.0 + 20_000.0 / 30.0)).abs() < 1e-9);
        assert_eq!(p50.first, Side::A);
        let p90 = c.at_quantiles[1];
        assert!((p90.a_tokens - 28.0).abs() < 1e-9);
        assert!((p90.b_tokens - 780.0).abs() < 1e-9);
        assert_eq!(p90.first, Side::A);

        // Same targets, same lengths for both: past n* the fast streamer wins.
        let lengths = vec![500.0, 600.0, 700.0];
        let a = target(200.0, 30.0, lengths.clone());
        let b = target(900.0, 110.0, lengths);
        let c = compare(&a, &b).unwrap();
        assert!(c.at_quantiles.iter().all(|q| q.first == Side::B));
        // Curve spans 0 ..= the longest p90 (680 > 2·n*), both ends included.
        assert_eq!(c.curve.len(), CURVE_POINTS);
        assert_eq!(
            c.curve[0],
            CurvePoint {
                tokens: 0.0,
                a_ms: 200.0,
                b_ms: 900.0
            }
        );
        assert!((c.curve[CURVE_POINTS - 1].tokens - 680.0).abs() < 1e-9);
    }

    #[test]
    fn no_crossing_when_one_side_dominates_or_rates_are_equal() {
        let fast = target(100.0, 100.0, vec![]);
        let slow = target(300.0, 50.0, vec![]);
        assert_eq!(crossover(&fast, &slow), Crossover::Never { first: Side::A });
        assert_eq!(crossover(&slow, &fast), Crossover::Never { first: Side::B });
        let same_rate = target(300.0, 100.0, vec![]);
        assert_eq!(
            crossover(&fast, &same_rate),
            Crossover::Never { first: Side::A }
        );
        assert_eq!(
            crossover(&fast, &fast),
            Crossover::Never { first: Side::Tie }
        );
        // No lengths: no quantile verdicts, but the curve still spans at least one token.
        let c = compare(&fast, &slow).unwrap();
        assert!(c.at_quantiles.is_empty());
        assert_eq!(c.curve[CURVE_POINTS - 1].tokens, 1.0);
    }

    #[test]
    fn bad_targets_are_clear_errors() {
        let ok = target(100.0, 50.0, vec![]);
        let zero_rate = target(100.0, 0.0, vec![]);
        assert_eq!(
            compare(&ok, &zero_rate).unwrap_err().to_string(),
            "b: tokens/s must be a number > 0"
        );
        let negative = target(-1.0, 50.0, vec![]);
        assert_eq!(
            compare(&negative, &ok).unwrap_err().to_string(),
            "a: ttft must be a number ≥ 0"
        );
    }
}
