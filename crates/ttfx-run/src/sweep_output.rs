//! What `ttfx run --under-load / --sweep` prints and writes: per step, the load
//! generator's figures beside the browsers', the crossover of two targets at each step,
//! and the first step where each budget breaks.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};
use ttfx_core::Milestone;
use ttfx_core::crossover::{self, CompletionModel, Crossover};
use ttfx_core::report::BatchReport;

use super::background_load::LoadFigures;
use super::budget::{RunBudget, Verdict};
use super::error::OutputError;
use super::load_level::LoadPlan;
use super::sweep::Step;

/// The sweep document's schema name (docs/load.md, "The sweep's JSON").
pub const SWEEP_SCHEMA: &str = "ttfx-sweep/1";

/// Each step's budgets, judged on the first target's browser runs.
pub fn verdicts(steps: &[Step], budgets: &[RunBudget]) -> Vec<Vec<Verdict>> {
    steps
        .iter()
        .map(|s| match s.batches.first() {
            Some((_, batch)) => budgets.iter().map(|b| b.judge(&batch.statistics)).collect(),
            None => Vec::new(),
        })
        .collect()
}

fn stat(
    batch: &BatchReport,
    metric: &str,
    q: fn(&ttfx_core::percentile::Summary) -> f64,
) -> String {
    batch
        .statistics
        .get(metric)
        .map_or("—".to_owned(), |s| format!("{:.0}", q(s)))
}

/// The median of a milestone over the batch's runs (ms since `request_start`).
fn milestone_p50(batch: &BatchReport, m: Milestone) -> Option<f64> {
    let values: Vec<f64> = batch
        .runs
        .iter()
        .filter_map(|r| r.timeline.milestones.get(m))
        .collect();
    ttfx_core::percentile::percentile(&values, 50.0)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("—".to_owned(), |v| format!("{v:.digits$}"))
}

/// The table: one block per target, a row per step.
pub fn render(plan: &LoadPlan, steps: &[Step], verdicts: &[Vec<Verdict>], voice: bool) -> String {
    let mut out = String::new();
    let kind = plan.levels.first().map_or("load", |l| l.kind.as_str());
    let targets = steps.first().map_or(0, |s| s.batches.len());
    for t in 0..targets {
        let label = &steps[0].batches[t].0;
        let _ = writeln!(
            out,
            "ttfx run: {label} under load ({} step(s) of {kind}; {:.0} s warm-up, {:.0} s \
             measured per step)",
            steps.len(),
            plan.warmup.as_secs_f64(),
            plan.duration.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "  {:<18} | {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>6} {:>8} | {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}{}",
            "step",
            "load r/s",
            "ttft50",
            "ttft90",
            "tpot50",
            "e2e50",
            "tok/s",
            "goodput",
            "errors",
            "late99",
            "runs",
            "ttft50",
            "ttft90",
            "vis50",
            "vis90",
            "paint50",
            "tpot50",
            "queue90",
            "queuemx",
            if voice { "  ttfa50     rtf50" } else { "" }
        );
        for (step, _) in steps.iter().zip(verdicts) {
            let (_, batch) = &step.batches[t];
            let load = &step.loads[t];
            let voice_cols = if voice {
                format!(
                    " {:>7} {:>9}",
                    stat(batch, "ttfa_ms", |s| s.p50),
                    batch
                        .statistics
                        .get("rtf")
                        .map_or("—".to_owned(), |s| format!("{:.2}", s.p50))
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {:<18} | {:>8.1} {:>7} {:>7} {:>7} {:>7} {:>8.0} {:>8} {:>6} {:>8} | {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}{voice_cols}",
                step.level.label(),
                load.achieved_rps,
                opt(load.ttft_ms[0], 0),
                opt(load.ttft_ms[1], 0),
                opt(load.tpot_ms_p50, 1),
                opt(load.e2e_ms_p50, 0),
                load.output_tokens_per_s,
                opt(load.goodput_rps, 1),
                load.errors,
                opt(load.lateness_p99_ms, 2),
                batch.outcomes.total,
                stat(batch, "ttft_ms", |s| s.p50),
                stat(batch, "ttft_ms", |s| s.p90),
                stat(batch, "ttft_visible_ms", |s| s.p50),
                stat(batch, "ttft_visible_ms", |s| s.p90),
                opt(milestone_p50(batch, Milestone::FirstPaint), 0),
                stat(batch, "tpot_ms", |s| s.p50),
                // The browser's own queue: a few streams of a page held back (the rest
                // not) show at p90 and max, where a median would read 0.
                stat(batch, "request_queued_ms", |s| s.p90),
                stat(batch, "request_queued_ms", |s| s.max),
            );
        }
        out.push('\n');
    }
    out.push_str(
        "  (load: the load generator's own requests, from its send, ms; late99: its lateness \
         p99, ms. Browser columns: the browsers' runs only, ms; vis = ttft_visible, paint = \
         first_paint since the request; queue = request_queued_ms, the time the browser \
         held a request before sending it, p90 and max)\n",
    );
    out.push_str(&breaks(steps, verdicts));
    if targets == 2 {
        out.push_str(&crossovers(steps));
    }
    out
}

/// The first step where each budget fails, or that it held at every step.
fn breaks(steps: &[Step], verdicts: &[Vec<Verdict>]) -> String {
    let Some(first) = verdicts.first() else {
        return String::new();
    };
    let mut out = String::new();
    for (b, v) in first.iter().enumerate() {
        let broke = steps
            .iter()
            .zip(verdicts)
            .find(|(_, vs)| vs.get(b).is_some_and(|v| !v.passed));
        match broke {
            Some((step, vs)) => {
                let _ = writeln!(
                    out,
                    "budget {} breaks at {} ({})",
                    v.budget.text,
                    step.level.label(),
                    vs[b]
                        .value
                        .map_or("no value".to_owned(), |m| format!("{m:.1}"))
                );
            }
            None => {
                let _ = writeln!(out, "budget {} holds at every step", v.budget.text);
            }
        }
    }
    out
}

/// The crossover n* of the two targets' browser runs at each step.
fn crossovers(steps: &[Step]) -> String {
    let mut out =
        String::from("crossover n* per step (browser medians; completion = ttft + n / rate):\n");
    for step in steps {
        let _ = writeln!(out, "  {:<18} {}", step.level.label(), crossover_at(step));
    }
    out
}

fn crossover_at(step: &Step) -> String {
    let [(a_label, a), (b_label, b)] = &step.batches[..] else {
        return "—".to_owned();
    };
    let model = |batch: &BatchReport| {
        let runs: Vec<_> = batch.runs.iter().map(|r| r.metrics.clone()).collect();
        CompletionModel::from_runs(&runs)
    };
    let (Some(ma), Some(mb)) = (model(a), model(b)) else {
        return "not enough completed runs on both sides".to_owned();
    };
    match crossover::crossover(&ma, &mb) {
        Crossover::At {
            tokens, shorter, ..
        } => {
            let first = if shorter == crossover::Side::A {
                a_label
            } else {
                b_label
            };
            format!("{tokens:.1} tokens (shorter answers finish first on {first})")
        }
        Crossover::Never { first } => {
            let first = match first {
                crossover::Side::A => a_label.as_str(),
                crossover::Side::B => b_label.as_str(),
                crossover::Side::Tie => "neither",
            };
            format!("none: {first} finishes first at every length")
        }
    }
}

/// `--json`: every step, its load figures (the load generator's own report) and each
/// target's batch report of the browsers' runs.
pub fn json(
    plan: &LoadPlan,
    steps: &[Step],
    verdicts: &[Vec<Verdict>],
) -> Result<Value, OutputError> {
    let encode = |what| move |cause| OutputError::Encode { what, cause };
    let mut out = Vec::new();
    for (step, vs) in steps.iter().zip(verdicts) {
        let mut targets = Vec::new();
        for ((label, batch), load) in step.batches.iter().zip(&step.loads) {
            targets.push(json!({
                "target": label,
                "browser": serde_json::to_value(batch).map_err(encode("batch"))?,
                "load": load_json(load),
            }));
        }
        let budgets: Vec<Value> = vs
            .iter()
            .map(|v| json!({"budget": v.budget.text, "passed": v.passed, "value": v.value}))
            .collect();
        out.push(json!({
            "level": { "kind": step.level.kind.as_str(), "value": step.level.value },
            "seconds": step.seconds,
            "targets": targets,
            "budgets": budgets,
            "crossover": (step.batches.len() == 2).then(|| crossover_at(step)),
        }));
    }
    Ok(json!({
        "schema": SWEEP_SCHEMA,
        "warmup_s": plan.warmup.as_secs_f64(),
        "duration_s": plan.duration.as_secs_f64(),
        "steps": out,
    }))
}

fn load_json(load: &LoadFigures) -> Value {
    load.report.clone()
}

pub fn write_json(path: &Path, value: &Value) -> Result<(), OutputError> {
    let text = serde_json::to_string_pretty(value).map_err(|cause| OutputError::Encode {
        what: "sweep",
        cause,
    })?;
    std::fs::write(path, text).map_err(|cause| OutputError::Write {
        path: path.to_owned(),
        cause,
    })
}
