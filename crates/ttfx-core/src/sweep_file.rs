//! The sweep file `ttfx run --sweep … --json FILE` writes (`ttfx-sweep/1`, docs/load.md),
//! read back for its curves: per load level and target, the browsers' figures (the
//! user's wait) and the load generator's (the server's door), and each budget's verdict.
//!
//! Only what the curves and their table need is read; the rest of each step (every run's
//! timeline, the load report's other figures) is skipped, so a sweep from a later ttfx
//! with more fields still reads. The counts of steps, targets, budgets and runs are
//! bounded while parsing, so a hostile file is refused before it is held, and every
//! problem is an error naming it, never a panic (the lab page reads these in wasm).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::percentile::Summary;

/// The schema this reader takes, as the file's `schema` names it.
pub const SWEEP_SCHEMA: &str = "ttfx-sweep/1";
/// Most steps read. `ttfx run` writes at most 32; more than this is not a sweep.
pub const MAX_STEPS: usize = 1_000;
/// Most targets per step (`ttfx run` writes one, or two with `--against`).
pub const MAX_TARGETS: usize = 16;
/// Most budgets per step.
pub const MAX_BUDGETS: usize = 64;
/// Most runs per browser batch (only their first paint is read).
pub const MAX_RUNS: usize = 100_000;

/// How a step's background load was held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    /// Open loop: requests arrive at a rate (requests per second).
    Rate,
    /// Closed loop: this many streams at once.
    Concurrency,
}

impl LoadKind {
    /// The name the file and the command line use.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadKind::Rate => "rate",
            LoadKind::Concurrency => "concurrency",
        }
    }

    /// What a level of this kind counts, for an axis.
    pub fn unit(self) -> &'static str {
        match self {
            LoadKind::Rate => "requests/s",
            LoadKind::Concurrency => "streams at once",
        }
    }
}

/// One step's load level.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct LoadLevel {
    pub kind: LoadKind,
    pub value: f64,
}

impl LoadLevel {
    /// `concurrency=8`, as `ttfx run` prints it.
    pub fn label(&self) -> String {
        format!("{}={}", self.kind.as_str(), self.value)
    }
}

/// A statistic's median and 90th percentile.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Quantiles {
    pub p50: f64,
    pub p90: f64,
}

impl From<Summary> for Quantiles {
    fn from(s: Summary) -> Quantiles {
        Quantiles {
            p50: s.p50,
            p90: s.p90,
        }
    }
}

/// The browsers' runs of one target at one step (their batch report's statistics).
#[derive(Debug, Clone, PartialEq)]
pub struct BrowserFigures {
    /// Runs in the batch, whatever their outcome.
    pub runs: u64,
    pub ttft_ms: Option<Quantiles>,
    pub ttft_visible_ms: Option<Quantiles>,
    /// `first_paint` in ms since the request, over the runs that painted (it is a
    /// milestone, not a batch statistic: read from each run's timeline).
    pub first_paint_ms: Option<Quantiles>,
    pub tpot_ms: Option<Quantiles>,
    /// Voice runs only.
    pub ttfa_ms: Option<Quantiles>,
    /// How long the browser held a request before sending it (its own queue: HTTP/1.1's
    /// six connections per host under `--page-streams`); absent in sweeps written before
    /// it was measured, and where the engine hides the times.
    pub request_queued_ms: Option<Quantiles>,
}

/// The load generator's own requests of one target at one step (its `ttfx load` report).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadFigures {
    pub ttft_ms: Option<Quantiles>,
    pub tpot_ms: Option<Quantiles>,
    pub e2e_ms: Option<Quantiles>,
    /// Completed requests per second.
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub errors: u64,
}

/// One target at one step.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetFigures {
    pub browser: BrowserFigures,
    pub load: LoadFigures,
}

/// A budget as the sweep states it. The parsed parts are absent in a file written
/// before they were added (its text alone then says what it is).
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetSpec {
    /// As the user wrote it: `ttft_visible.p90<=800ms`.
    pub text: String,
    /// The report's metric name (`ttft_visible_ms`).
    pub metric: Option<String>,
    /// `p50`, `p90`, …, `mean`.
    pub stat: Option<String>,
    /// `true` for a floor (`>=`), `false` for a ceiling.
    pub at_least: Option<bool>,
    /// In the metric's own unit (ms for an `_ms` metric).
    pub limit: Option<f64>,
}

impl BudgetSpec {
    /// The limit in ms, when the budget is on a millisecond metric and states it.
    pub fn limit_ms(&self) -> Option<f64> {
        let metric = self.metric.as_deref()?;
        metric.ends_with("_ms").then_some(self.limit?)
    }
}

/// How a budget fared at one step (judged on the first target's browser runs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub passed: bool,
    /// The statistic measured; `None` when no run had the metric.
    pub value: Option<f64>,
}

/// One load level's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepStep {
    pub level: LoadLevel,
    /// Warm-up start to the load's stop.
    pub seconds: f64,
    /// Per target, in [`SweepFile::targets`]' order.
    pub targets: Vec<TargetFigures>,
    /// Per budget, in [`SweepFile::budgets`]' order.
    pub verdicts: Vec<Verdict>,
    /// With two targets: their crossover at this step, as `ttfx run` wrote it.
    pub crossover: Option<String>,
}

/// A sweep file, checked: at least one step, every step of one load kind with a
/// positive level, and the same targets and budgets, in the same order, at every step.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepFile {
    pub warmup_s: f64,
    pub duration_s: f64,
    /// The targets' labels, in the order of every step's figures.
    pub targets: Vec<String>,
    pub budgets: Vec<BudgetSpec>,
    pub steps: Vec<SweepStep>,
}

impl SweepFile {
    /// Parses a sweep, checking its `schema` before anything else so that another
    /// document gets that error rather than a field error.
    pub fn from_json(text: &str) -> Result<SweepFile, SweepError> {
        if !is_object(text) {
            return Err(SweepError::NotAnObject);
        }
        let head: Head = serde_json::from_str(text).map_err(SweepError::Json)?;
        match head.schema {
            None => return Err(SweepError::MissingSchema),
            Some(serde_json::Value::String(s)) if s == SWEEP_SCHEMA => {}
            Some(other) => return Err(SweepError::UnsupportedSchema(other.to_string())),
        }
        let raw: RawSweep = serde_json::from_str(text).map_err(SweepError::Json)?;
        SweepFile::checked(raw)
    }

    /// How every step's load was held.
    pub fn kind(&self) -> LoadKind {
        // `checked` refuses a file without steps.
        self.steps
            .first()
            .map_or(LoadKind::Concurrency, |s| s.level.kind)
    }

    /// The index of the first step where budget `budget` failed, if it did.
    pub fn first_break(&self, budget: usize) -> Option<usize> {
        self.steps
            .iter()
            .position(|s| s.verdicts.get(budget).is_some_and(|v| !v.passed))
    }

    fn checked(raw: RawSweep) -> Result<SweepFile, SweepError> {
        let first = raw.steps.first().ok_or(SweepError::NoSteps)?;
        let kind = first.level.kind;
        let targets: Vec<String> = first.targets.iter().map(|t| t.target.clone()).collect();
        let budgets: Vec<BudgetSpec> = first.budgets.iter().map(RawBudget::spec).collect();
        let mut steps = Vec::with_capacity(raw.steps.len());
        for (i, step) in raw.steps.into_iter().enumerate() {
            let number = i + 1;
            if step.level.kind != kind {
                return Err(SweepError::KindsDiffer {
                    step: number,
                    kind: step.level.kind,
                    first: kind,
                });
            }
            if !(step.level.value.is_finite() && step.level.value > 0.0) {
                return Err(SweepError::BadLevel {
                    step: number,
                    value: step.level.value,
                });
            }
            if step.targets.is_empty() {
                return Err(SweepError::NoTargets { step: number });
            }
            if !step.targets.iter().map(|t| &t.target).eq(targets.iter()) {
                return Err(SweepError::TargetsDiffer { step: number });
            }
            if !step
                .budgets
                .iter()
                .map(RawBudget::spec)
                .eq(budgets.iter().cloned())
            {
                return Err(SweepError::BudgetsDiffer { step: number });
            }
            steps.push(SweepStep {
                level: step.level,
                seconds: step.seconds,
                targets: step.targets.into_iter().map(RawTarget::figures).collect(),
                verdicts: step
                    .budgets
                    .iter()
                    .map(|b| Verdict {
                        passed: b.passed,
                        value: b.value,
                    })
                    .collect(),
                crossover: step.crossover,
            });
        }
        Ok(SweepFile {
            warmup_s: raw.warmup_s,
            duration_s: raw.duration_s,
            targets,
            budgets,
            steps,
        })
    }
}

/// Whether `text` is a JSON object with a `schema` member, as a sweep is (report files
/// carry `schema_version` instead): what a reader of both asks first.
pub fn names_a_schema(text: &str) -> bool {
    is_object(text) && serde_json::from_str::<Head>(text).is_ok_and(|h| h.schema.is_some())
}

/// Serde reads a struct from a JSON array too (its fields in order); a document is an
/// object.
fn is_object(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// A sweep file that cannot be read.
#[derive(Debug)]
pub enum SweepError {
    Json(serde_json::Error),
    NotAnObject,
    MissingSchema,
    UnsupportedSchema(String),
    NoSteps,
    /// Steps are numbered from 1 here, as `ttfx run` numbers them.
    KindsDiffer {
        step: usize,
        kind: LoadKind,
        first: LoadKind,
    },
    BadLevel {
        step: usize,
        value: f64,
    },
    NoTargets {
        step: usize,
    },
    TargetsDiffer {
        step: usize,
    },
    BudgetsDiffer {
        step: usize,
    },
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Json(e) => write!(f, "not a ttfx sweep: {e}"),
            SweepError::NotAnObject => f.write_str("not a ttfx sweep: not a JSON object"),
            SweepError::MissingSchema => f.write_str("not a ttfx sweep: no schema"),
            SweepError::UnsupportedSchema(found) => write!(
                f,
                "unsupported schema {found} (this ttfx reads {SWEEP_SCHEMA} sweeps)"
            ),
            SweepError::NoSteps => f.write_str("the sweep has no steps"),
            SweepError::KindsDiffer { step, kind, first } => write!(
                f,
                "step {step} is a {} level, step 1 a {} level: a sweep holds one kind",
                kind.as_str(),
                first.as_str()
            ),
            SweepError::BadLevel { step, value } => {
                write!(f, "step {step}: level {value} is not a positive number")
            }
            SweepError::NoTargets { step } => write!(f, "step {step} has no targets"),
            SweepError::TargetsDiffer { step } => {
                write!(f, "step {step}'s targets differ from step 1's")
            }
            SweepError::BudgetsDiffer { step } => {
                write!(f, "step {step}'s budgets differ from step 1's")
            }
        }
    }
}

impl std::error::Error for SweepError {}

/// The file's first question: what it says it is (any JSON type, to name it if wrong).
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    schema: Option<serde_json::Value>,
}

// The file as written, only the fields read. Their names are `ttfx run`'s
// (sweep_output.rs), the browser batch's (report.rs) and `ttfx load`'s (its report.rs).

#[derive(Deserialize)]
struct RawSweep {
    warmup_s: f64,
    duration_s: f64,
    #[serde(deserialize_with = "at_most_steps")]
    steps: Vec<RawStep>,
}

#[derive(Deserialize)]
struct RawStep {
    level: LoadLevel,
    seconds: f64,
    #[serde(deserialize_with = "at_most_targets")]
    targets: Vec<RawTarget>,
    #[serde(deserialize_with = "at_most_budgets")]
    budgets: Vec<RawBudget>,
    #[serde(default)]
    crossover: Option<String>,
}

#[derive(Deserialize)]
struct RawTarget {
    target: String,
    browser: RawBatch,
    load: RawLoad,
}

impl RawTarget {
    fn figures(self) -> TargetFigures {
        let paints: Vec<f64> = self
            .browser
            .runs
            .iter()
            .filter_map(|r| r.timeline.milestones.first_paint)
            .collect();
        let b = self.browser.statistics;
        let l = self.load;
        TargetFigures {
            browser: BrowserFigures {
                runs: self.browser.outcomes.total,
                ttft_ms: b.ttft_ms,
                ttft_visible_ms: b.ttft_visible_ms,
                first_paint_ms: Summary::of(&paints).map(Quantiles::from),
                tpot_ms: b.tpot_ms,
                ttfa_ms: b.ttfa_ms,
                request_queued_ms: b.request_queued_ms,
            },
            load: LoadFigures {
                ttft_ms: l.metrics.ttft_ms,
                tpot_ms: l.metrics.tpot_ms,
                e2e_ms: l.metrics.e2e_ms,
                requests_per_s: l.throughput.requests_per_s,
                output_tokens_per_s: l.throughput.output_tokens_per_s,
                errors: l.errors.total,
            },
        }
    }
}

#[derive(Deserialize)]
struct RawBatch {
    outcomes: RawOutcomes,
    statistics: RawBrowserStatistics,
    #[serde(deserialize_with = "at_most_runs")]
    runs: Vec<RawRun>,
}

#[derive(Deserialize)]
struct RawOutcomes {
    total: u64,
}

/// A batch has a statistic only when a run had the metric.
#[derive(Deserialize)]
struct RawBrowserStatistics {
    #[serde(default)]
    ttft_ms: Option<Quantiles>,
    #[serde(default)]
    ttft_visible_ms: Option<Quantiles>,
    #[serde(default)]
    tpot_ms: Option<Quantiles>,
    #[serde(default)]
    ttfa_ms: Option<Quantiles>,
    #[serde(default)]
    request_queued_ms: Option<Quantiles>,
}

#[derive(Deserialize)]
struct RawRun {
    timeline: RawTimeline,
}

#[derive(Deserialize)]
struct RawTimeline {
    milestones: RawMilestones,
}

#[derive(Deserialize)]
struct RawMilestones {
    #[serde(default)]
    first_paint: Option<f64>,
}

#[derive(Deserialize)]
struct RawLoad {
    metrics: RawLoadMetrics,
    throughput: RawThroughput,
    errors: RawErrors,
}

#[derive(Deserialize)]
struct RawLoadMetrics {
    #[serde(default)]
    ttft_ms: Option<Quantiles>,
    #[serde(default)]
    tpot_ms: Option<Quantiles>,
    #[serde(default)]
    e2e_ms: Option<Quantiles>,
}

#[derive(Deserialize)]
struct RawThroughput {
    requests_per_s: f64,
    output_tokens_per_s: f64,
}

#[derive(Deserialize)]
struct RawErrors {
    total: u64,
}

#[derive(Deserialize)]
struct RawBudget {
    budget: String,
    #[serde(default)]
    metric: Option<String>,
    #[serde(default)]
    stat: Option<String>,
    #[serde(default)]
    at_least: Option<bool>,
    #[serde(default)]
    limit: Option<f64>,
    passed: bool,
    #[serde(default)]
    value: Option<f64>,
}

impl RawBudget {
    fn spec(&self) -> BudgetSpec {
        BudgetSpec {
            text: self.budget.clone(),
            metric: self.metric.clone(),
            stat: self.stat.clone(),
            at_least: self.at_least,
            limit: self.limit,
        }
    }
}

fn at_most_steps<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RawStep>, D::Error> {
    d.deserialize_seq(AtMost::new(MAX_STEPS, "steps"))
}

fn at_most_targets<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RawTarget>, D::Error> {
    d.deserialize_seq(AtMost::new(MAX_TARGETS, "targets in a step"))
}

fn at_most_budgets<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RawBudget>, D::Error> {
    d.deserialize_seq(AtMost::new(MAX_BUDGETS, "budgets in a step"))
}

fn at_most_runs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RawRun>, D::Error> {
    d.deserialize_seq(AtMost::new(MAX_RUNS, "runs in a batch"))
}

/// A sequence of at most `max` elements, refused at the first one past it: a hostile
/// list costs at most one element more than the bound before the error.
struct AtMost<T> {
    max: usize,
    what: &'static str,
    element: PhantomData<T>,
}

impl<T> AtMost<T> {
    fn new(max: usize, what: &'static str) -> AtMost<T> {
        AtMost {
            max,
            what,
            element: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for AtMost<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of at most {} {}", self.max, self.what)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        // The hint is the input's claim; the cap keeps a false one from reserving much.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max).min(64));
        while let Some(item) = seq.next_element()? {
            if out.len() == self.max {
                return Err(de::Error::custom(format_args!(
                    "more than {} {}",
                    self.max, self.what
                )));
            }
            out.push(item);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::percentile::percentile;
    use serde_json::Value;

    /// A real sweep: `ttfx run` against two simulated deployments that slow down with
    /// load (docs/load.md, "A worked sweep", gives its command), written by
    /// sweep_output.rs.
    const WORKED: &str = include_str!("../testdata/sweep/two-targets-concurrency.json");

    #[test]
    fn the_worked_sweep_reads_as_its_json_says() {
        let sweep = SweepFile::from_json(WORKED).unwrap();
        // Read the same file a second way, as plain JSON, for every figure kept.
        let doc: Value = serde_json::from_str(WORKED).unwrap();
        let steps = doc["steps"].as_array().unwrap();
        assert_eq!(sweep.steps.len(), steps.len());
        assert_eq!(sweep.kind(), LoadKind::Concurrency);
        assert_eq!(
            sweep
                .steps
                .iter()
                .map(|s| s.level.value)
                .collect::<Vec<_>>(),
            [1.0, 2.0, 4.0, 8.0]
        );
        assert_eq!(sweep.targets.len(), 2);
        assert_eq!(
            (sweep.warmup_s, sweep.duration_s),
            (
                doc["warmup_s"].as_f64().unwrap(),
                doc["duration_s"].as_f64().unwrap()
            )
        );
        let q = |v: &Value| {
            v.as_object().map(|_| Quantiles {
                p50: v["p50"].as_f64().unwrap(),
                p90: v["p90"].as_f64().unwrap(),
            })
        };
        for (step, json) in sweep.steps.iter().zip(steps) {
            assert_eq!(
                step.level.label(),
                format!("concurrency={}", json["level"]["value"].as_f64().unwrap())
            );
            for (t, (figures, target)) in step
                .targets
                .iter()
                .zip(json["targets"].as_array().unwrap())
                .enumerate()
            {
                assert_eq!(sweep.targets[t], target["target"].as_str().unwrap());
                let (browser, load) = (&target["browser"], &target["load"]);
                let stats = &browser["statistics"];
                assert_eq!(
                    figures.browser.runs,
                    browser["outcomes"]["total"].as_u64().unwrap()
                );
                assert_eq!(figures.browser.ttft_ms, q(&stats["ttft_ms"]));
                assert_eq!(
                    figures.browser.ttft_visible_ms,
                    q(&stats["ttft_visible_ms"])
                );
                assert_eq!(figures.browser.tpot_ms, q(&stats["tpot_ms"]));
                assert_eq!(figures.browser.ttfa_ms, q(&stats["ttfa_ms"]));
                assert_eq!(
                    figures.browser.request_queued_ms,
                    q(&stats["request_queued_ms"])
                );
                let paints: Vec<f64> = browser["runs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|r| r["timeline"]["milestones"]["first_paint"].as_f64())
                    .collect();
                assert!(!paints.is_empty(), "the browsers painted");
                assert_eq!(
                    figures.browser.first_paint_ms,
                    Some(Quantiles {
                        p50: percentile(&paints, 50.0).unwrap(),
                        p90: percentile(&paints, 90.0).unwrap(),
                    })
                );
                assert_eq!(figures.load.ttft_ms, q(&load["metrics"]["ttft_ms"]));
                assert_eq!(figures.load.tpot_ms, q(&load["metrics"]["tpot_ms"]));
                assert_eq!(figures.load.e2e_ms, q(&load["metrics"]["e2e_ms"]));
                assert_eq!(
                    figures.load.requests_per_s,
                    load["throughput"]["requests_per_s"].as_f64().unwrap()
                );
                assert_eq!(
                    figures.load.output_tokens_per_s,
                    load["throughput"]["output_tokens_per_s"].as_f64().unwrap()
                );
                assert_eq!(
                    figures.load.errors,
                    load["errors"]["total"].as_u64().unwrap()
                );
                assert!(
                    figures.browser.ttft_visible_ms.is_some() && figures.load.ttft_ms.is_some()
                );
            }
            for (v, json) in step
                .verdicts
                .iter()
                .zip(json["budgets"].as_array().unwrap())
            {
                assert_eq!(v.passed, json["passed"].as_bool().unwrap());
                assert_eq!(v.value, json["value"].as_f64());
            }
        }
        // The budget, parsed as `ttfx run` wrote it, breaks where the run said it did.
        assert_eq!(sweep.budgets.len(), 1);
        let budget = &sweep.budgets[0];
        assert_eq!(budget.text, "ttft_visible.p90<=800ms");
        assert_eq!(budget.metric.as_deref(), Some("ttft_visible_ms"));
        assert_eq!(
            (budget.stat.as_deref(), budget.at_least),
            (Some("p90"), Some(false))
        );
        assert_eq!(budget.limit_ms(), Some(800.0));
        let broke = sweep.first_break(0).unwrap();
        assert_eq!(sweep.steps[broke].level.label(), "concurrency=8");
        assert!(sweep.steps[broke].verdicts[0].value > Some(800.0));
        assert!(sweep.steps[..broke].iter().all(|s| s.verdicts[0].passed));
        // The first deployment's wait rises with load: the curve the page draws.
        let vis = |s: &SweepStep| s.targets[0].browser.ttft_visible_ms.unwrap().p50;
        assert!(vis(&sweep.steps[3]) > vis(&sweep.steps[0]) + 300.0);
    }

    /// A step of `kind` at `value`, `targets` targets and `budgets` (JSON text).
    fn step(kind: &str, value: f64, targets: usize, budgets: &str) -> String {
        let target = |t: usize| {
            format!(
                r#"{{"target": "t{t}",
                    "browser": {{"outcomes": {{"total": 2}}, "statistics": {{}}, "runs": [
                        {{"timeline": {{"milestones": {{"first_paint": 310.5}}}}}},
                        {{"timeline": {{"milestones": {{}}}}}}]}},
                    "load": {{"metrics": {{}}, "throughput": {{"requests_per_s": 1,
                             "output_tokens_per_s": 40}}, "errors": {{"total": 0}}}}}}"#
            )
        };
        let targets: Vec<String> = (0..targets).map(target).collect();
        format!(
            r#"{{"level": {{"kind": "{kind}", "value": {value}}}, "seconds": 4,
                "targets": [{}], "budgets": [{budgets}]}}"#,
            targets.join(",")
        )
    }

    fn file(steps: &[String]) -> String {
        format!(
            r#"{{"schema": "ttfx-sweep/1", "warmup_s": 1, "duration_s": 3, "steps": [{}]}}"#,
            steps.join(",")
        )
    }

    #[test]
    fn a_sweep_written_before_budgets_were_parsed_still_reads() {
        // Budgets as text only; a run without first_paint is left out of its percentiles.
        let budget = r#"{"budget": "ttft.p50<=220ms", "passed": false, "value": 301.0}"#;
        let sweep = SweepFile::from_json(&file(&[step("rate", 2.5, 1, budget)])).unwrap();
        assert_eq!(sweep.budgets[0].text, "ttft.p50<=220ms");
        assert_eq!(sweep.budgets[0].limit_ms(), None);
        assert_eq!(sweep.first_break(0), Some(0));
        assert_eq!(sweep.steps[0].level.label(), "rate=2.5");
        let b = &sweep.steps[0].targets[0].browser;
        assert_eq!((b.runs, b.ttft_ms), (2, None));
        assert_eq!(
            b.first_paint_ms,
            Some(Quantiles {
                p50: 310.5,
                p90: 310.5
            })
        );
        // A floor on a rate is no millisecond line.
        let floor = r#"{"budget": "output_tokens_per_s.p50>=20", "metric": "output_tokens_per_s",
            "stat": "p50", "at_least": true, "limit": 20.0, "passed": true, "value": 31.0}"#;
        let sweep = SweepFile::from_json(&file(&[step("rate", 1.0, 1, floor)])).unwrap();
        assert_eq!(sweep.budgets[0].limit_ms(), None);
        assert_eq!(sweep.first_break(0), None);
    }

    #[test]
    fn unreadable_sweeps_are_clear_errors() {
        let err = |text: &str| SweepFile::from_json(text).unwrap_err().to_string();
        assert!(err("{").starts_with("not a ttfx sweep: "), "{}", err("{"));
        assert_eq!(
            err("[\"ttfx-sweep/1\"]"),
            "not a ttfx sweep: not a JSON object"
        );
        assert!(!names_a_schema("[\"ttfx-sweep/1\"]"));
        assert!(
            names_a_schema(r#" {"schema": "x"}"#) && !names_a_schema(r#"{"schema_version": 1}"#)
        );
        assert_eq!(
            err(r#"{"schema_version": 1}"#),
            "not a ttfx sweep: no schema"
        );
        assert_eq!(
            err(r#"{"schema": "ttfx-load", "schema_version": 1}"#),
            "unsupported schema \"ttfx-load\" (this ttfx reads ttfx-sweep/1 sweeps)"
        );
        assert_eq!(
            err(r#"{"schema": 7}"#),
            "unsupported schema 7 (this ttfx reads ttfx-sweep/1 sweeps)"
        );
        // The right schema, a field missing: serde names it, and where.
        let e = err(&file(&[step("concurrency", 1.0, 1, "")]).replace(r#""seconds": 4,"#, ""));
        assert!(
            e.starts_with("not a ttfx sweep: missing field `seconds` at line"),
            "{e}"
        );
        let e = err(&file(&[step("bursts", 1.0, 1, "")]));
        assert!(
            e.starts_with("not a ttfx sweep: unknown variant `bursts`"),
            "{e}"
        );
        assert_eq!(err(&file(&[])), "the sweep has no steps");
        assert_eq!(
            err(&file(&[
                step("concurrency", 1.0, 1, ""),
                step("rate", 2.0, 1, "")
            ])),
            "step 2 is a rate level, step 1 a concurrency level: a sweep holds one kind"
        );
        assert_eq!(
            err(&file(&[step("concurrency", 0.0, 1, "")])),
            "step 1: level 0 is not a positive number"
        );
        assert_eq!(
            err(&file(&[step("rate", 1.0, 0, "")])),
            "step 1 has no targets"
        );
        assert_eq!(
            err(&file(&[step("rate", 1.0, 2, ""), step("rate", 2.0, 1, "")])),
            "step 2's targets differ from step 1's"
        );
        let budget = r#"{"budget": "ttft.p50<=220ms", "passed": true, "value": 1.0}"#;
        assert_eq!(
            err(&file(&[
                step("rate", 1.0, 1, budget),
                step("rate", 2.0, 1, "")
            ])),
            "step 2's budgets differ from step 1's"
        );
    }

    #[test]
    fn counts_past_the_bounds_are_refused_while_parsing() {
        let one = step("rate", 1.0, 1, "");
        let steps = vec![one.clone(); MAX_STEPS + 1];
        let e = SweepFile::from_json(&file(&steps)).unwrap_err().to_string();
        assert!(
            e.starts_with("not a ttfx sweep: more than 1000 steps at line"),
            "{e}"
        );
        // At the bound it reads.
        assert_eq!(
            SweepFile::from_json(&file(&steps[..MAX_STEPS]))
                .unwrap()
                .steps
                .len(),
            MAX_STEPS
        );

        let e = SweepFile::from_json(&file(&[step("rate", 1.0, MAX_TARGETS + 1, "")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 16 targets in a step"), "{e}");

        let budget = r#"{"budget": "ttft.p50<=220ms", "passed": true}"#;
        let budgets = vec![budget; MAX_BUDGETS + 1].join(",");
        let e = SweepFile::from_json(&file(&[step("rate", 1.0, 1, &budgets)]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 64 budgets in a step"), "{e}");

        let run = r#"{"timeline": {"milestones": {}}}"#;
        let runs = vec![run; MAX_RUNS + 1].join(",");
        let text = file(&[step("rate", 1.0, 1, "")]).replacen(
            r#""runs": ["#,
            &format!(r#""runs": [{runs},"#),
            1,
        );
        let e = SweepFile::from_json(&text).unwrap_err().to_string();
        assert!(e.contains("more than 100000 runs in a batch"), "{e}");
    }
}
