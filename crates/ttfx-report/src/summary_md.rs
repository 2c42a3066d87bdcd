//! The report as a short Markdown summary (`ttfx run --summary-md`, `ttfx report
//! --summary-md`), fit for a CI job's summary page (GitHub's `$GITHUB_STEP_SUMMARY`,
//! GitLab's and others' Markdown reports): the budgets passed and failed, the runs'
//! outcomes and the key metrics' p50/p90/p99, in tables.
//!
//! It holds no link and nothing that could become one: every string a report or the
//! user chose (a target's label, a budget's text) is in a code span, where Markdown makes
//! no link, emphasis or HTML, with its pipes escaped for the table and its line breaks
//! and control characters written out; the rest is the summary's own words and numbers.
//! Its length is bounded: a fixed set of metrics per batch, at most
//! [`MAX_SECTIONS`] batches.

use std::fmt::Write as _;

use ttfx_core::printable::{cut, escape_line};
use ttfx_core::report::BatchReport;

use crate::budget::Verdict;
use crate::document::{Document, Section};
use crate::metric_rows::{gap_milestone, row_order};

/// The metrics every summary shows when the batch has them: what a user waits for first
/// and last, and how fast the rest streams.
const KEY_METRICS: [&str; 8] = [
    "ttft_ms",
    "ttft_visible_ms",
    "e2e_ms",
    "tpot_ms",
    "icl_ms",
    "decode_tokens_per_s",
    "ttfa_ms",
    "voice_to_voice_ms",
];

/// Batches summarized (a sweep has one per step and target); the rest are counted.
pub const MAX_SECTIONS: usize = 32;

/// Characters of a label or budget text shown.
const MAX_TEXT_CHARS: usize = 200;

/// `value` as a Markdown code span that is safe in a table cell: on one line (control
/// characters and line breaks written out), cut, its pipes escaped (GitHub's tables split
/// cells at a bare `|`, even inside a code span), fenced by more backticks than it holds.
pub(crate) fn code(value: &str) -> String {
    let one_line = escape_line(&cut(value, MAX_TEXT_CHARS)).replace('|', "\\|");
    let longest_run = one_line
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    // A span that starts or ends with a backtick needs a space inside its fence.
    let pad = if one_line.starts_with('`') || one_line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{one_line}{pad}{fence}")
}

/// The summary's own text with Markdown's punctuation escaped, for the sentences that
/// quote metric names (`ttft_visible_ms` must not turn italic) and numbers.
fn plain(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in escape_line(value).chars() {
        if "\\`*_{}[]()<>#|!~&".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "–".to_owned()
    }
}

pub fn render(doc: &Document<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {}\n", plain(doc.title));
    let verdicts: Vec<&Verdict> = doc.verdicts().collect();
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    let _ = if verdicts.is_empty() {
        writeln!(out, "No budgets were given.\n")
    } else if failed == 0 {
        writeln!(out, "✅ **All {} budget(s) passed.**\n", verdicts.len())
    } else {
        writeln!(
            out,
            "❌ **{failed} of {} budget(s) failed.**\n",
            verdicts.len()
        )
    };
    for section in doc.sections.iter().take(MAX_SECTIONS) {
        out.push_str(&render_section(section));
    }
    if doc.sections.len() > MAX_SECTIONS {
        let _ = writeln!(
            out,
            "{} more batch(es) not summarized here; the HTML and JSON reports hold them.\n",
            doc.sections.len() - MAX_SECTIONS
        );
    }
    out
}

fn render_section(section: &Section<'_>) -> String {
    let batch = section.batch;
    let o = batch.outcomes;
    let mut out = String::new();
    let _ = writeln!(out, "### {}\n", code(section.heading));
    let _ = writeln!(
        out,
        "**Runs:** {} — {} completed, {} aborted, {} failed, {} incomplete\n",
        o.total, o.completed, o.aborted, o.failed, o.incomplete
    );
    if !section.verdicts.is_empty() {
        let failed = section.verdicts.iter().filter(|v| !v.passed).count();
        let _ = writeln!(
            out,
            "**Budgets:** {} passed, {failed} failed\n\n| verdict | budget | measured |\n\
             |---|---|---|",
            section.verdicts.len() - failed
        );
        for v in section.verdicts {
            let mark = if v.passed { "✅ PASS" } else { "❌ FAIL" };
            let _ = writeln!(
                out,
                "| {mark} | {} | {} |",
                code(&v.budget.text),
                plain(&v.describe())
            );
        }
        out.push('\n');
    }
    if let Some(g) = &batch.goodput {
        let ratio = g
            .ratio
            .map_or("n/a".to_owned(), |r| format!("{:.1} %", r * 100.0));
        let _ = writeln!(
            out,
            "**Goodput:** {} of {} run(s) ({}) met every per-request budget\n",
            g.good,
            g.total,
            plain(&ratio)
        );
    }
    out.push_str(&metrics(batch, section.verdicts));
    out
}

/// The key metrics, the budgeted ones and the gaps, with p50/p90/p99.
fn metrics(batch: &BatchReport, verdicts: &[Verdict]) -> String {
    let shown: Vec<&str> = row_order(batch)
        .into_iter()
        .filter(|name| {
            KEY_METRICS.contains(name)
                || gap_milestone(name).is_some()
                || verdicts.iter().any(|v| v.budget.metric == *name)
        })
        .collect();
    if shown.is_empty() {
        return "No run reported a metric.\n\n".to_owned();
    }
    let mut out = String::from("| metric | count | p50 | p90 | p99 |\n|---|--:|--:|--:|--:|\n");
    for name in shown {
        if let Some(s) = batch.statistics.get(name) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                code(name),
                s.count,
                num(s.p50),
                num(s.p90),
                num(s.p99)
            );
        }
    }
    out.push_str("\nDurations in ms; `gap.*` rows are client − server for the same milestone.\n\n");
    out
}

#[cfg(test)]
mod tests;
