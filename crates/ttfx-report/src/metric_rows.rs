//! The order every percentile table shows a batch's metrics in (`ttfx report`'s and
//! `ttfx run`'s text tables, the HTML page, the Markdown summary).

use ttfx_core::Milestone;
use ttfx_core::metrics::SCALAR_NAMES;
use ttfx_core::report::BatchReport;

/// The per-request metrics in their documented order (pooled `icl_ms` next to
/// `tpot_ms`), then the gaps in the order a user meets the milestones; only the names the
/// batch has statistics for.
pub(crate) fn row_order(batch: &BatchReport) -> Vec<&str> {
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
        .filter_map(|k| Some((gap_milestone(k)?, k.as_str())))
        .collect();
    gaps.sort();
    names.extend(gaps.into_iter().map(|(_, k)| k));
    names.retain(|n| batch.statistics.contains_key(*n));
    names
}

/// The milestone of a `gap.<milestone>_ms` statistic's name.
pub(crate) fn gap_milestone(name: &str) -> Option<Milestone> {
    name.strip_prefix("gap.")?.strip_suffix("_ms")?.parse().ok()
}
