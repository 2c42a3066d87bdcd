//! What was measured, read back for a person, offline: `ttfx report` turns report files
//! (runs or batches) into percentile tables or a merged batch, and `ttfx decode` decodes
//! a captured response body into its events. The runner prints its tables with
//! [`report_cmd::table`], judges its budgets with [`budget`], and writes the same
//! [`html`] page and [`summary_md`] summary as `ttfx report` does.
//!
//! It depends on ttfx-core only (plus the table, escaping and argument crates); it must
//! not depend on any server, the collector or the runner.

pub mod budget;
pub mod decode_cmd;
pub mod document;
pub mod html;
mod metric_rows;
pub mod report_cmd;
pub mod summary_md;
#[cfg(test)]
mod test_fixture;

pub use decode_cmd::DecodeArgs;
pub use report_cmd::ReportArgs;
