//! What the HTML page and the Markdown summary show: one or more batches, each with the
//! budgets judged on it. `ttfx run` makes one section per target (or per target and
//! sweep step), `ttfx report` one for the merged batch.

use ttfx_core::Milestone;
use ttfx_core::report::BatchReport;
use ttfx_core::stats::Summary;

use crate::budget::Verdict;

/// A whole report: a title and its sections, in order.
#[derive(Debug, Clone, Copy)]
pub struct Document<'a> {
    /// What made it: `ttfx run`, `ttfx report: 2 file(s)`. Shown, so escaped.
    pub title: &'a str,
    pub sections: &'a [Section<'a>],
}

/// One batch of runs and what was judged on it.
#[derive(Debug, Clone, Copy)]
pub struct Section<'a> {
    /// What the runs measured (a target's label, a sweep step). A page or a report file
    /// may have chosen it, so it is escaped wherever it is shown.
    pub heading: &'a str,
    pub batch: &'a BatchReport,
    /// The budgets judged on this batch's statistics (none for a comparison target).
    pub verdicts: &'a [Verdict],
}

impl Document<'_> {
    /// Every verdict of every section.
    pub fn verdicts(&self) -> impl Iterator<Item = &Verdict> {
        self.sections.iter().flat_map(|s| s.verdicts.iter())
    }
}

/// One milestone the client and the server both timed, over a batch's runs: the
/// client's time, the server's and their gap (client − server), each summarized over the
/// runs that had the pair.
#[derive(Debug, Clone, PartialEq)]
pub struct GapRow {
    pub milestone: Milestone,
    pub client: Summary,
    pub server: Summary,
    pub gap: Summary,
}

/// The batch's client/server pairs, in the order a user meets the milestones (the gaps
/// `ttfx report` tabulates as `gap.*`, with both sides' times beside them).
pub fn gap_rows(batch: &BatchReport) -> Vec<GapRow> {
    Milestone::ALL
        .into_iter()
        .filter_map(|m| {
            let pairs: Vec<(f64, f64, f64)> = batch
                .runs
                .iter()
                .flat_map(|r| r.metrics.gaps.iter())
                .filter(|g| g.milestone == m)
                .map(|g| (g.client_ms, g.server_ms, g.gap_ms))
                .collect();
            let of = |f: fn(&(f64, f64, f64)) -> f64| {
                Summary::of(&pairs.iter().map(f).collect::<Vec<_>>())
            };
            Some(GapRow {
                milestone: m,
                client: of(|p| p.0)?,
                server: of(|p| p.1)?,
                gap: of(|p| p.2)?,
            })
        })
        .collect()
}
