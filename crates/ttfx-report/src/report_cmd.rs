//! `ttfx report FILE...`: percentiles per metric from report files (run or batch), or the
//! merged batch as JSON; budgets judged on it; the HTML page and the Markdown summary.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use comfy_table::{CellAlignment, ColumnConstraint, Table, Width, presets};
use ttfx_core::metrics::{Stage, StageTime, TurnBreakdown};

use crate::budget::{self, RunBudget, Verdict};
use crate::document::{Document, Section};
use crate::metric_rows::row_order;
use crate::{html, summary_md};
use ttfx_core::printable::{escape_controls, escape_json_controls};
use ttfx_core::report::{BatchReport, ReportError, ReportFile, Run};
use ttfx_core::stats::{Budget, BudgetError, Summary};

// `ttfx report`'s options (the binary's command line embeds them).
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Report files (single runs or batches), merged into one batch.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    /// Print the merged batch as JSON instead of the table.
    #[arg(long)]
    pub json: bool,

    /// An SLO budget for goodput, METRIC=LIMIT (e.g. ttft_ms=500); repeat for several.
    /// Metrics ending in _per_s are floors, the rest ceilings.
    #[arg(long = "slo", value_name = "METRIC=LIMIT")]
    pub slo: Vec<String>,

    /// A budget on the merged batch's statistics, METRIC.STAT<=LIMIT or >=, as `ttfx run
    /// --budget` (e.g. ttft_visible.p90<=800ms); repeatable. Exit 1 when one fails.
    #[arg(long, value_name = "BUDGET")]
    pub budget: Vec<String>,

    /// Write the report as one self-contained HTML page here (no network: styles and
    /// charts inline): waterfalls, percentiles with the budgets, the client/server gap.
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,

    /// Write a Markdown summary here (budgets, outcomes, p50/p90/p99; no links), e.g.
    /// $GITHUB_STEP_SUMMARY.
    #[arg(long, value_name = "OUT")]
    pub summary_md: Option<PathBuf>,
}

/// Why `ttfx report` printed nothing. Each text names the file or the option and
/// carries its cause (no `source` chain, so a `{:#}` print says it once).
#[derive(Debug, thiserror::Error)]
pub enum ReportCmdError {
    #[error("cannot read {}: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: {problem}", path.display())]
    NotAReport { path: PathBuf, problem: ReportError },
    #[error(transparent)]
    Slo(BudgetError),
    #[error(transparent)]
    Budget(budget::BudgetError),
    #[error("cannot write the batch: {0}")]
    Write(serde_json::Error),
    #[error("cannot write {}: {cause}", path.display())]
    WriteFile {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// Exit 0, or 1 when a `--budget` failed (said on stderr).
pub fn run(args: ReportArgs) -> Result<ExitCode, ReportCmdError> {
    // Every budget is checked before a file is read.
    let run_budgets = args
        .budget
        .iter()
        .map(|b| RunBudget::parse(b))
        .collect::<Result<Vec<_>, _>>()
        .map_err(ReportCmdError::Budget)?;
    let inputs = read_all(&args.files)?;
    let budgets = if args.slo.is_empty() {
        // Keep the budgets the inputs were judged against, but only if they all agree:
        // a goodput against a mix of budgets would mean nothing.
        common_budgets(&inputs.budgets_per_file)
    } else {
        args.slo
            .iter()
            .map(|s| Budget::parse(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ReportCmdError::Slo)?
    };
    let batch = BatchReport::from_runs(inputs.runs, &budgets);
    let verdicts: Vec<Verdict> = run_budgets
        .iter()
        .map(|b| b.judge(&batch.statistics))
        .collect();
    let heading = format!(
        "ttfx report: {} run(s) from {} file(s)",
        batch.outcomes.total,
        args.files.len()
    );
    if args.json {
        let json = serde_json::to_string_pretty(&batch).map_err(ReportCmdError::Write)?;
        // The files' strings (labels, models, URLs) may hold terminal controls.
        println!("{}", escape_json_controls(&json));
    } else {
        let mut text = table(&batch, &heading, &|metric| {
            budget::fail_marks(&verdicts, metric)
        });
        text.push_str(&budget::verdict_lines(&verdicts));
        print!("{}", escape_controls(&text));
    }
    let label = labels(&batch);
    let sections = [Section {
        heading: &label,
        batch: &batch,
        verdicts: &verdicts,
    }];
    let doc = Document {
        title: &heading,
        sections: &sections,
    };
    if let Some(path) = &args.html {
        write_file(path, &html::render(&doc))?;
    }
    if let Some(path) = &args.summary_md {
        write_file(path, &summary_md::render(&doc))?;
    }
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    if failed > 0 {
        eprintln!(
            "ttfx report: {failed} of {} budget(s) failed",
            verdicts.len()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What the merged runs measured: their targets, in the order first seen (a few named,
/// the rest counted), or `runs` when no run names one.
fn labels(batch: &BatchReport) -> String {
    let mut targets: Vec<&str> = Vec::new();
    for t in batch.runs.iter().filter_map(|r| r.target.as_deref()) {
        if !targets.contains(&t) {
            targets.push(t);
        }
    }
    match targets.len() {
        0 => "runs".to_owned(),
        1..=3 => targets.join(", "),
        n => format!("{} and {} more target(s)", targets[..3].join(", "), n - 3),
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), ReportCmdError> {
    std::fs::write(path, text).map_err(|cause| ReportCmdError::WriteFile {
        path: path.to_path_buf(),
        cause,
    })
}

/// What the input files hold between them.
struct Inputs {
    /// Every run of every file.
    runs: Vec<Run>,
    /// The goodput budgets each file carried (`None` for a file without any).
    budgets_per_file: Vec<Option<Vec<Budget>>>,
}

fn read_all(files: &[PathBuf]) -> Result<Inputs, ReportCmdError> {
    let mut runs = Vec::new();
    let mut budgets = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path).map_err(|cause| ReportCmdError::Read {
            path: path.clone(),
            cause,
        })?;
        let file = ReportFile::from_json(&text).map_err(|problem| ReportCmdError::NotAReport {
            path: path.clone(),
            problem,
        })?;
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

/// The percentile table (also `ttfx run`'s): `heading`, the outcome counts, one row per
/// metric (the `gap.*` rows are client − server), the estimate note and goodput.
/// `row_mark` may add text after a metric's row (`ttfx run`: its failed budgets).
pub fn table(
    batch: &BatchReport,
    heading: &str,
    row_mark: &dyn Fn(&str) -> Option<String>,
) -> String {
    let o = batch.outcomes;
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(
        out,
        "{heading}: {} completed, {} aborted, {} failed, {} incomplete",
        o.completed, o.aborted, o.failed, o.incomplete
    );
    let mut rows = Vec::new();
    for name in row_order(batch) {
        if let Some(s) = batch.statistics.get(name) {
            let mut row = vec![name.to_owned(), s.count.to_string()];
            row.extend(
                [s.mean, s.p50, s.p90, s.p95, s.p99, s.min, s.max].map(|v| format!("{v:.2}")),
            );
            row.extend(row_mark(name));
            rows.push(row);
        }
    }
    out.push_str(&stats_grid(rows));
    out.push('\n');
    out.push_str(&turn_stages(batch));
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

/// Voice turns: each stage's median and its median share of voice_to_voice_ms (the
/// rows above give their percentiles), and where turns without audio stopped.
fn turn_stages(batch: &BatchReport) -> String {
    let turns: Vec<&TurnBreakdown> = batch
        .runs
        .iter()
        .filter_map(|r| r.metrics.turn.as_ref())
        .collect();
    if turns.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let v2v: Vec<f64> = turns.iter().filter_map(|t| t.voice_to_voice_ms).collect();
    let _ = match Summary::of(&v2v) {
        Some(s) => writeln!(
            out,
            "voice turns: {} of {} reached audio; voice_to_voice_ms p50 {:.1} ms, by stage \
             (p50 ms, median share):",
            v2v.len(),
            turns.len(),
            s.p50
        ),
        None => writeln!(out, "voice turns: none of {} reached audio", turns.len()),
    };
    for stage in Stage::ALL {
        let of = |f: fn(&StageTime) -> Option<f64>| -> Vec<f64> {
            turns
                .iter()
                .filter_map(|t| t.stages.iter().find(|s| s.stage == stage).and_then(f))
                .collect()
        };
        let (Some(ms), share) = (Summary::of(&of(|s| s.ms)), Summary::of(&of(|s| s.share))) else {
            continue;
        };
        let share = share.map_or("n/a".to_owned(), |s| format!("{:.1}%", s.p50 * 100.0));
        let _ = writeln!(out, "  {:<17} {:>9.1}  {share:>6}", stage.as_str(), ms.p50);
    }
    for stage in Stage::ALL {
        let stopped = turns.iter().filter(|t| t.stopped_in == Some(stage)).count();
        if stopped > 0 {
            let _ = writeln!(
                out,
                "  {stopped} turn(s) stopped in {} ({} never came)",
                stage.as_str(),
                stage.ends_at()
            );
        }
    }
    out.push('\n');
    out
}

/// Header and rows as aligned plain text, one space between columns: the metric name
/// left-aligned in at least 26 characters (a longer name widens the column for every
/// row), the count in 6 and each value right-aligned in 10, so tables line up from one
/// run to the next; a row's optional mark follows its last value after two spaces.
fn stats_grid(rows: Vec<Vec<String>>) -> String {
    const HEADER: [&str; 9] = [
        "metric", "count", "mean", "p50", "p90", "p95", "p99", "min", "max",
    ];
    let mut grid = Table::new();
    grid.load_style(presets::NOTHING).set_header(HEADER);
    grid.add_rows(rows);
    for (i, column) in grid.column_iter_mut().enumerate() {
        // Widths count the padding: one space after each column.
        let (width, align, padding) = match i {
            0 => (Some(27), CellAlignment::Left, (0, 1)),
            1 => (Some(7), CellAlignment::Right, (0, 1)),
            i if i < HEADER.len() => (Some(11), CellAlignment::Right, (0, 1)),
            _ => (None, CellAlignment::Left, (1, 0)),
        };
        if let Some(width) = width {
            column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(width)));
        }
        column.set_padding(padding).set_cell_alignment(align);
    }
    // No right border: rows end in the padding of their last column (or an empty mark).
    grid.trim_fmt()
}

#[cfg(test)]
mod tests {
    use ttfx_core::Milestone;
    use ttfx_core::timeline::Timeline;

    use super::*;

    fn batch() -> BatchReport {
        let runs = [100.0, 300.0]
            .into_iter()
            .filter_map(|ttft| {
                let mut t = Timeline::default();
                t.milestones.set(Milestone::FirstToken, ttft);
                t.milestones.set(Milestone::FirstVisibleToken, ttft);
                t.milestones.set(Milestone::Done, ttft + 50.0);
                Run::new(None, None, t).ok()
            })
            .collect();
        BatchReport::from_runs(runs, &[])
    }

    #[test]
    fn columns_line_up_and_a_mark_ends_only_its_row() {
        let text = table(&batch(), "t", &|m| {
            (m == "ttft_ms").then(|| "<- mark".to_owned())
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "t: 2 completed, 0 aborted, 0 failed, 0 incomplete"
        );
        assert_eq!(
            lines[1],
            "metric                      count       mean        p50        p90        p95        p99        min        max"
        );
        assert_eq!(
            lines[2],
            "ttft_ms                         2     200.00     200.00     280.00     290.00     298.00     100.00     300.00  <- mark"
        );
        assert!(lines[3].starts_with("ttft_visible_ms "), "{text}");
        for line in &lines[3..] {
            assert!(!line.contains("mark"), "{text}");
            assert_eq!(line.len(), lines[1].len(), "{text}");
        }
        assert!(!text.contains("voice turns"), "{text}");
    }

    /// Two turns, one heard (1 s of silence: 400 ms endpointing, 600 ms transcription)
    /// and one that never got a transcript.
    #[test]
    fn voice_turns_show_their_stages_and_where_they_stopped() {
        let turn = |transcript: bool| {
            let mut t = Timeline::default();
            t.milestones.set(Milestone::SpeechStart, -2000.0);
            t.milestones.set(Milestone::SpeechEnd, -1000.0);
            t.turn = Some(ttfx_core::turn::TurnRecord {
                speech_end_detected_ms: Some(-600.0),
                ..Default::default()
            });
            if transcript {
                t.milestones.set(Milestone::SttFinal, 0.0);
                t.milestones.set(Milestone::RequestStart, 0.0);
                t.milestones.set(Milestone::FirstAudioOut, 0.0);
            }
            Run::new(None, None, t).unwrap()
        };
        let batch = BatchReport::from_runs(vec![turn(true), turn(false)], &[]);
        let text = table(&batch, "t", &|_| None);
        assert!(
            text.contains("voice turns: 1 of 2 reached audio; voice_to_voice_ms p50 1000.0 ms"),
            "{text}"
        );
        let row = |name: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(name))
                .unwrap_or_else(|| panic!("no {name} in {text}"))
                .split_whitespace()
                .skip(1)
                .collect::<Vec<_>>()
        };
        // Endpointing: both turns (400 ms each); its share from the heard one only.
        assert_eq!(row("endpointing"), ["400.0", "40.0%"]);
        assert_eq!(row("transcription"), ["600.0", "60.0%"]);
        assert!(
            text.contains("1 turn(s) stopped in transcription (stt_final never came)"),
            "{text}"
        );
        assert!(text.contains("voice_to_voice_ms"), "{text}");
    }
}
