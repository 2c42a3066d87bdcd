//! `--under-load` and `--sweep`: the background load a run's browsers measure under, as
//! the command line writes it (`rate=10`, `concurrency=1,2,4,8`).

use std::time::Duration;

/// How the background load is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadKind {
    /// Open loop: requests arrive at a rate (Poisson), whatever the answers do.
    Rate,
    /// Closed loop: this many streams at once, each sent when the last ends.
    Concurrency,
}

impl LoadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LoadKind::Rate => "rate",
            LoadKind::Concurrency => "concurrency",
        }
    }
}

/// One load level: a rate in requests per second, or a number of streams.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadLevel {
    pub kind: LoadKind,
    pub value: f64,
}

impl LoadLevel {
    /// `rate=10` → 10 req/s; `concurrency=8` → 8 streams.
    pub fn label(&self) -> String {
        format!("{}={}", self.kind.as_str(), self.value)
    }
}

/// The steps of a run under load: one (`--under-load`) or several (`--sweep`), each
/// with the load's warm-up before the browsers measure and the step's duration.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    pub levels: Vec<LoadLevel>,
    /// Load only, before the browsers' runs of the step start: the server's queue and
    /// batch fill to their level first.
    pub warmup: Duration,
    /// How long each step's load runs after its warm-up, at least: the browsers' runs
    /// are made within it, and the load goes on until they end.
    pub duration: Duration,
}

/// Highest rate a sweep may ask for: the generator's own ceiling on two cores is
/// about a thousand streams a second (docs/load.md); ten times that is a typo.
pub const MAX_RATE: f64 = 10_000.0;
/// Most streams a closed-loop level may hold open.
pub const MAX_CONCURRENCY: f64 = 4_096.0;
/// Most steps in a sweep: each costs a warm-up and a duration.
pub const MAX_STEPS: usize = 32;
/// Longest warm-up or step duration.
pub const MAX_STEP_S: f64 = 3_600.0;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadLevelError {
    #[error(
        "{flag} `{text}`: write rate=R (requests per second) or concurrency=C (streams), \
         e.g. {flag} {example}"
    )]
    Syntax {
        flag: &'static str,
        text: String,
        example: &'static str,
    },
    #[error("{flag} `{text}`: `{value}` is not a number")]
    NotANumber {
        flag: &'static str,
        text: String,
        value: String,
    },
    #[error("{flag}: a rate must be in (0, {MAX_RATE}] requests per second, not {value}")]
    Rate { flag: &'static str, value: f64 },
    #[error("{flag}: a concurrency must be a whole number in 1..={MAX_CONCURRENCY}, not {value}")]
    Concurrency { flag: &'static str, value: f64 },
    #[error("--sweep: at most {MAX_STEPS} steps, not {0}")]
    TooManySteps(usize),
    #[error("--sweep: the step {0} is given twice")]
    Repeated(String),
    #[error("give --under-load or --sweep, not both")]
    Both,
    #[error(
        "{flag} must be in [0, {MAX_STEP_S}] seconds for a warm-up, (0, {MAX_STEP_S}] for a duration"
    )]
    Seconds { flag: &'static str },
}

/// `--under-load rate=R | concurrency=C`.
pub fn parse_under_load(text: &str) -> Result<LoadLevel, LoadLevelError> {
    let flag = "--under-load";
    let (kind, values) = split(flag, text, "rate=10")?;
    if values.contains(',') {
        return Err(LoadLevelError::Syntax {
            flag,
            text: text.to_owned(),
            example: "rate=10 (a list of levels is --sweep's)",
        });
    }
    level(flag, text, kind, values)
}

/// `--sweep rate=R1,R2,… | concurrency=C1,C2,…`, in the order given.
pub fn parse_sweep(text: &str) -> Result<Vec<LoadLevel>, LoadLevelError> {
    let flag = "--sweep";
    let (kind, values) = split(flag, text, "concurrency=1,2,4,8,16")?;
    let levels: Vec<LoadLevel> = values
        .split(',')
        .map(|v| level(flag, text, kind, v))
        .collect::<Result<_, _>>()?;
    if levels.len() > MAX_STEPS {
        return Err(LoadLevelError::TooManySteps(levels.len()));
    }
    for (i, l) in levels.iter().enumerate() {
        if levels[..i].iter().any(|m| m.value == l.value) {
            return Err(LoadLevelError::Repeated(l.label()));
        }
    }
    Ok(levels)
}

/// The plan of the command line's load flags, or None when it asks for no load.
pub fn plan(
    under_load: Option<&str>,
    sweep: Option<&str>,
    warmup_s: Option<f64>,
    duration_s: Option<f64>,
) -> Result<Option<LoadPlan>, LoadLevelError> {
    let levels = match (under_load, sweep) {
        (Some(_), Some(_)) => return Err(LoadLevelError::Both),
        (Some(one), None) => vec![parse_under_load(one)?],
        (None, Some(many)) => parse_sweep(many)?,
        (None, None) => return Ok(None),
    };
    let seconds = |flag, value: Option<f64>, default: f64, zero_ok: bool| {
        let v = value.unwrap_or(default);
        let low_ok = if zero_ok { v >= 0.0 } else { v > 0.0 };
        if low_ok && v <= MAX_STEP_S {
            Ok(Duration::from_secs_f64(v))
        } else {
            Err(LoadLevelError::Seconds { flag })
        }
    };
    Ok(Some(LoadPlan {
        levels,
        warmup: seconds("--step-warmup-s", warmup_s, DEFAULT_WARMUP_S, true)?,
        duration: seconds("--step-duration-s", duration_s, DEFAULT_DURATION_S, false)?,
    }))
}

/// Defaults: long enough for a simulated server's batch to fill and for a browser's few
/// runs; a real deployment's sweep wants longer (docs/load.md).
pub const DEFAULT_WARMUP_S: f64 = 3.0;
pub const DEFAULT_DURATION_S: f64 = 15.0;

fn split<'a>(
    flag: &'static str,
    text: &'a str,
    example: &'static str,
) -> Result<(LoadKind, &'a str), LoadLevelError> {
    let syntax = || LoadLevelError::Syntax {
        flag,
        text: text.to_owned(),
        example,
    };
    let (key, values) = text.trim().split_once('=').ok_or_else(syntax)?;
    let kind = match key.trim() {
        "rate" => LoadKind::Rate,
        "concurrency" => LoadKind::Concurrency,
        _ => return Err(syntax()),
    };
    Ok((kind, values))
}

fn level(
    flag: &'static str,
    text: &str,
    kind: LoadKind,
    value: &str,
) -> Result<LoadLevel, LoadLevelError> {
    let value_text = value.trim();
    let value: f64 = value_text.parse().map_err(|_| LoadLevelError::NotANumber {
        flag,
        text: text.to_owned(),
        value: value_text.to_owned(),
    })?;
    let ok = match kind {
        LoadKind::Rate => value.is_finite() && value > 0.0 && value <= MAX_RATE,
        LoadKind::Concurrency => value.fract() == 0.0 && (1.0..=MAX_CONCURRENCY).contains(&value),
    };
    match (ok, kind) {
        (true, _) => Ok(LoadLevel { kind, value }),
        (false, LoadKind::Rate) => Err(LoadLevelError::Rate { flag, value }),
        (false, LoadKind::Concurrency) => Err(LoadLevelError::Concurrency { flag, value }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_keeps_its_levels_in_the_order_given() {
        let levels = parse_sweep("concurrency=1,2,4,8,16").unwrap();
        let values: Vec<f64> = levels.iter().map(|l| l.value).collect();
        assert_eq!(values, [1.0, 2.0, 4.0, 8.0, 16.0]);
        assert!(levels.iter().all(|l| l.kind == LoadKind::Concurrency));
        let rates = parse_sweep(" rate = 1, 5 ,10,20 ").unwrap();
        assert_eq!(
            rates[1],
            LoadLevel {
                kind: LoadKind::Rate,
                value: 5.0
            }
        );
        assert_eq!(rates[3].label(), "rate=20");
    }

    #[test]
    fn bad_levels_are_named_with_their_flag() {
        let cases = [
            ("concurrency=0", "1..=4096, not 0"),
            ("concurrency=2.5", "whole number"),
            ("rate=-1", "(0, 10000]"),
            ("rate=NaN", "(0, 10000]"),
            ("rate=inf", "(0, 10000]"),
            ("rate=1e9", "(0, 10000]"),
            ("rate=fast", "`fast` is not a number"),
            ("users=4", "write rate=R"),
            ("4", "write rate=R"),
            ("rate=1,,2", "`` is not a number"),
        ];
        for (text, expected) in cases {
            let e = parse_sweep(text).unwrap_err().to_string();
            assert!(e.starts_with("--sweep"), "{text}: {e}");
            assert!(e.contains(expected), "{text}: {e}");
        }
        let e = parse_sweep("rate=1,2,1").unwrap_err().to_string();
        assert!(e.contains("rate=1 is given twice"), "{e}");
        let many = format!(
            "rate={}",
            (1..=33)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(
            parse_sweep(&many).unwrap_err(),
            LoadLevelError::TooManySteps(33)
        );
        let e = parse_under_load("rate=1,2").unwrap_err().to_string();
        assert!(e.contains("--sweep's"), "{e}");
    }

    #[test]
    fn the_plan_takes_one_flag_and_bounded_seconds() {
        assert_eq!(plan(None, None, Some(5.0), None), Ok(None));
        assert_eq!(
            plan(Some("rate=1"), Some("rate=1,2"), None, None),
            Err(LoadLevelError::Both)
        );
        let p = plan(Some("concurrency=4"), None, Some(0.0), Some(2.5))
            .unwrap()
            .unwrap();
        assert_eq!(p.levels.len(), 1);
        assert_eq!(p.warmup, Duration::ZERO);
        assert_eq!(p.duration, Duration::from_millis(2500));
        for (w, d) in [
            (Some(-1.0), None),
            (None, Some(0.0)),
            (Some(f64::NAN), None),
            (None, Some(1e9)),
        ] {
            assert!(
                matches!(
                    plan(Some("rate=1"), None, w, d),
                    Err(LoadLevelError::Seconds { .. })
                ),
                "{w:?} {d:?}"
            );
        }
    }
}
