//! `ttfx report FILE...`: percentiles per metric from report files (run or batch), or the
//! merged batch as JSON.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use ttfx_core::Milestone;
use ttfx_core::metrics::SCALAR_NAMES;
use ttfx_core::report::{BatchReport, ReportFile, Run};
use ttfx_core::stats::Budget;

use crate::cli::ReportArgs;

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let inputs = read_all(&args.files)?;
    let budgets = if args.slo.is_empty() {
        // Keep the budgets the inputs were judged against, but only if they all agree:
        // a goodput against a mix of budgets would mean nothing.
        common_budgets(&inputs.budgets_per_file)
    } else {
        args.slo
            .iter()
            .map(|s| Budget::parse(s))
            .collect::<Result<Vec<_>, _>>()?
    };
    let batch = BatchReport::from_runs(inputs.runs, &budgets);
    if args.json {
        let json = serde_json::to_string_pretty(&batch).context("cannot write the batch")?;
        println!("{json}");
    } else {
        let heading = format!(
            "ttfx report: {} run(s) from {} file(s)",
            batch.outcomes.total,
            args.files.len()
        );
        print!("{}", table(&batch, &heading));
    }
    Ok(())
}

/// What the input files hold between them.
struct Inputs {
    /// Every run of every file.
    runs: Vec<Run>,
    /// The goodput budgets each file carried (`None` for a file without any).
    budgets_per_file: Vec<Option<Vec<Budget>>>,
}

fn read_all(files: &[PathBuf]) -> anyhow::Result<Inputs> {
    let mut runs = Vec::new();
    let mut budgets = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let file = ReportFile::from_json(&text).with_context(|| path.display().to_string())?;
        budgets.push(match &file {
            ReportFile::Batch(b) => b.goodput.as_ref().map(|g| g.budgets.clone()),
            ReportFile::Run(_) => None,
        });
        runs.extend(file.into_runs());
    }
    Ok(Inputs {
        runs,
        budgets_per_file: budgets,
    })
}

fn common_budgets(per_file: &[Option<Vec<Budget>>]) -> Vec<Budget> {
    match per_file.first() {
        Some(Some(first)) if per_file.iter().all(|b| b.as_ref() == Some(first)) => first.clone(),
        _ => Vec::new(),
    }
}

/// Table order: the per-request metrics in their documented order (pooled `icl_ms` next
/// to `tpot_ms`), then the gaps in the order a user meets the milestones.
fn row_order(batch: &BatchReport) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for name in SCALAR_NAMES {
        names.push(name);
        if name == "tpot_ms" {
            names.push("icl_ms");
        }
    }
    let mut gaps: Vec<(Milestone, &str)> = batch
        .statistics
        .keys()
        .filter_map(|k| {
            let m = k.strip_prefix("gap.")?.strip_suffix("_ms")?.parse().ok()?;
            Some((m, k.as_str()))
        })
        .collect();
    gaps.sort();
    names.extend(gaps.into_iter().map(|(_, k)| k));
    names.retain(|n| batch.statistics.contains_key(*n));
    names
}

/// The percentile table (also `ttfx run`'s): `heading`, the outcome counts, one row per
/// metric (the `gap.*` rows are client − server), the estimate note and goodput.
pub(crate) fn table(batch: &BatchReport, heading: &str) -> String {
    let o = batch.outcomes;
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(
        out,
        "{heading}: {} completed, {} aborted, {} failed, {} incomplete",
        o.completed, o.aborted, o.failed, o.incomplete
    );
    let _ = writeln!(
        out,
        "{:<26} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "metric", "count", "mean", "p50", "p90", "p95", "p99", "min", "max"
    );
    for name in row_order(batch) {
        if let Some(s) = batch.statistics.get(name) {
            let _ = writeln!(
                out,
                "{name:<26} {:>6} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2}",
                s.count, s.mean, s.p50, s.p90, s.p95, s.p99, s.min, s.max
            );
        }
    }
    let estimated = batch
        .runs
        .iter()
        .filter(|r| {
            r.metrics
                .output_tokens
                .is_some_and(|t| t.source == ttfx_core::metrics::Source::Estimate)
        })
        .count();
    if estimated > 0 {
        let _ = writeln!(
            out,
            "note: {estimated} run(s) had no server usage; their token metrics are estimates"
        );
    }
    if let Some(g) = &batch.goodput {
        let budgets: Vec<String> = g
            .budgets
            .iter()
            .map(|b| {
                let op = if b.is_minimum() { ">=" } else { "<=" };
                format!("{}{op}{}", b.metric, b.limit)
            })
            .collect();
        let ratio = g
            .ratio
            .map_or("n/a".to_owned(), |r| format!("{:.1}%", r * 100.0));
        let _ = writeln!(
            out,
            "goodput: {}/{} ({ratio}) meeting {}",
            g.good,
            g.total,
            budgets.join(", ")
        );
    }
    out
}
