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
            .map(|v| {
                // The budget parsed as well as written: a reader (the lab page) draws its
                // limit without the budget grammar, which lives here.
                json!({
                    "budget": v.budget.text,
                    "metric": v.budget.metric,
                    "stat": v.budget.stat.name(),
                    "at_least": v.budget.at_least,
                    "limit": v.budget.limit,
                    "passed": v.passed,
                    "value": v.value,
                })
            })
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

#[cfg(test)]
mod tests {
    // Test code: a failed step is a failed test.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeMap;
    use std::time::Duration;

    use ttfx_core::Milestone;
    use ttfx_core::percentile::percentile;
    use ttfx_core::report::BatchReport;
    use ttfx_core::stats::Summary;
    use ttfx_core::sweep_file::{LoadKind as FileKind, SweepFile};

    use super::super::background_load::figures;
    use super::super::budget::RunBudget;
    use super::super::load_level::{LoadKind, LoadLevel, LoadPlan};
    use super::super::output::golden_tests::{TARGETS, replayed_runs};
    use super::*;

    /// What `ttfx load` reports for a step: its ttft, tpot and e2e from `ms` (scaled).
    fn load_report(scale: f64) -> ttfx_load::LoadReport {
        let summary = |base: &[f64]| {
            Summary::of(&base.iter().map(|v| v * scale).collect::<Vec<_>>()).unwrap()
        };
        ttfx_load::LoadReport {
            schema: ttfx_load::SCHEMA.to_owned(),
            schema_version: ttfx_load::SCHEMA_VERSION,
            target: "sim/default".to_owned(),
            url: "http://127.0.0.1:1/sim/default/v1/chat/completions".to_owned(),
            api: "openai-chat".to_owned(),
            mode: ttfx_load::ModeReport {
                kind: "concurrency".to_owned(),
                rate_per_s: None,
                concurrency: Some(2),
            },
            seed: 0,
            warmup_s: 1.0,
            duration_s: None,
            timeout_s: 60.0,
            window_s: 3.0,
            elapsed_s: 3.5,
            stopped: true,
            requests: ttfx_load::Requests {
                sent: 12,
                completed: 11,
                failed: 1,
                ..Default::default()
            },
            throughput: ttfx_load::Throughput {
                requests_per_s: 3.1 * scale,
                output_tokens_per_s: 120.5 * scale,
                output_tokens: 400.0,
                goodput_per_s: None,
                goodput: None,
            },
            metrics: BTreeMap::from([
                ("ttft_ms".to_owned(), summary(&[200.0, 240.0, 310.0])),
                ("tpot_ms".to_owned(), summary(&[20.0, 22.0, 30.0])),
                ("e2e_ms".to_owned(), summary(&[900.0, 1000.0, 1300.0])),
            ]),
            errors: ttfx_load::Errors {
                total: 1,
                by_class: BTreeMap::from([("http_503".to_owned(), 1)]),
            },
            generator: ttfx_load::Generator {
                lateness_ms: None,
                scheduled_per_s: None,
                achieved_per_s: 3.4,
                held: None,
            },
        }
    }

    /// Written by `json`, read back by ttfx-core's reader (the lab page's): every figure
    /// the curves draw agrees with what was written, and the budget breaks where `ttfx
    /// run` prints it does.
    #[test]
    fn the_sweep_json_reads_back_with_the_core_reader() {
        let runs = replayed_runs();
        let plan = LoadPlan {
            levels: [1.0, 4.0]
                .map(|value| LoadLevel {
                    kind: LoadKind::Concurrency,
                    value,
                })
                .to_vec(),
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(3),
        };
        let steps: Vec<Step> = plan
            .levels
            .iter()
            .enumerate()
            .map(|(i, level)| {
                // The second step's runs are the first's, later: the first token 400 ms on.
                let mut runs = runs.clone();
                for run in &mut runs {
                    for (m, at) in run.timeline.milestones.clone().iter() {
                        if m != Milestone::RequestStart {
                            run.timeline.milestones.set(m, at + 400.0 * i as f64);
                        }
                    }
                    for chunk in &mut run.timeline.chunks {
                        chunk.at_ms += 400.0 * i as f64;
                    }
                    *run = ttfx_core::report::Run::new(
                        run.id.clone(),
                        run.target.clone(),
                        run.timeline.clone(),
                    )
                    .unwrap();
                }
                let second = runs.split_off(3);
                Step {
                    level: *level,
                    batches: vec![
                        (TARGETS[0].to_owned(), BatchReport::from_runs(runs, &[])),
                        (TARGETS[1].to_owned(), BatchReport::from_runs(second, &[])),
                    ],
                    loads: vec![
                        figures(&load_report(1.0 + i as f64)),
                        figures(&load_report(2.0 + i as f64)),
                    ],
                    seconds: 4.5,
                }
            })
            .collect();
        let first_ttft = steps[0].batches[0].1.statistics["ttft_visible_ms"].p90;
        // A ceiling between the two steps' p90: it holds at the first and breaks at the
        // second.
        let budget =
            RunBudget::parse(&format!("ttft_visible.p90<={:.0}ms", first_ttft + 200.0)).unwrap();
        let verdicts = verdicts(&steps, std::slice::from_ref(&budget));
        let text = serde_json::to_string_pretty(&json(&plan, &steps, &verdicts).unwrap()).unwrap();

        let sweep = SweepFile::from_json(&text).unwrap();
        assert_eq!((sweep.warmup_s, sweep.duration_s), (1.0, 3.0));
        assert_eq!(sweep.targets, TARGETS);
        assert_eq!(sweep.kind(), FileKind::Concurrency);
        for (read, step) in sweep.steps.iter().zip(&steps) {
            assert_eq!(read.level.label(), step.level.label());
            assert_eq!(read.seconds, step.seconds);
            assert!(
                read.crossover.is_some(),
                "two targets: a crossover per step"
            );
            for (figures, ((_, batch), load)) in read
                .targets
                .iter()
                .zip(step.batches.iter().zip(&step.loads))
            {
                let stat = |name: &str| batch.statistics.get(name).map(|s| (s.p50, s.p90));
                let pair = |q: Option<ttfx_core::sweep_file::Quantiles>| q.map(|q| (q.p50, q.p90));
                assert_eq!(figures.browser.runs, batch.outcomes.total);
                assert_eq!(pair(figures.browser.ttft_ms), stat("ttft_ms"));
                assert_eq!(
                    pair(figures.browser.ttft_visible_ms),
                    stat("ttft_visible_ms")
                );
                assert_eq!(pair(figures.browser.tpot_ms), stat("tpot_ms"));
                assert_eq!(pair(figures.browser.ttfa_ms), stat("ttfa_ms"));
                assert!(figures.browser.ttft_visible_ms.is_some());
                assert!(figures.browser.first_paint_ms.is_some(), "the page painted");
                // First paint: the median `render` prints (milestone_p50), and the p90.
                let paints: Vec<f64> = batch
                    .runs
                    .iter()
                    .filter_map(|r| r.timeline.milestones.get(Milestone::FirstPaint))
                    .collect();
                assert_eq!(
                    figures.browser.first_paint_ms.map(|q| q.p50),
                    milestone_p50(batch, Milestone::FirstPaint)
                );
                assert_eq!(
                    figures.browser.first_paint_ms.map(|q| q.p90),
                    percentile(&paints, 90.0)
                );
                assert_eq!(figures.load.ttft_ms.map(|q| q.p50), load.ttft_ms[0]);
                assert_eq!(figures.load.ttft_ms.map(|q| q.p90), load.ttft_ms[1]);
                assert_eq!(figures.load.tpot_ms.map(|q| q.p50), load.tpot_ms_p50);
                assert_eq!(figures.load.e2e_ms.map(|q| q.p50), load.e2e_ms_p50);
                assert_eq!(figures.load.output_tokens_per_s, load.output_tokens_per_s);
                assert_eq!(figures.load.errors, load.errors);
            }
        }
        // The budget as parsed, its verdict per step, and the break the table prints.
        let read = &sweep.budgets[0];
        assert_eq!(read.text, budget.text);
        assert_eq!(read.metric.as_deref(), Some("ttft_visible_ms"));
        assert_eq!(read.stat.as_deref(), Some("p90"));
        assert_eq!(
            (read.at_least, read.limit_ms()),
            (Some(false), Some(budget.limit))
        );
        for (read, judged) in sweep.steps.iter().zip(&verdicts) {
            assert_eq!(read.verdicts[0].passed, judged[0].passed);
            assert_eq!(read.verdicts[0].value, judged[0].value);
        }
        let broke = sweep.first_break(0).unwrap();
        assert_eq!(broke, 1);
        let printed = breaks(&steps, &verdicts);
        assert!(
            printed.contains(&format!("breaks at {}", sweep.steps[broke].level.label())),
            "{printed}"
        );
    }
}
