//! What was measured, read back for a person, offline: `ttfx report` turns report files
//! (runs or batches) into percentile tables or a merged batch, and `ttfx decode` decodes
//! a captured response body into its events. The runner prints its tables with
//! [`report_cmd::table`].
//!
//! It depends on ttfx-core only (plus the table and argument crates); it must not depend
//! on any server, the collector or the runner.

pub mod decode_cmd;
pub mod report_cmd;

pub use decode_cmd::DecodeArgs;
pub use report_cmd::ReportArgs;
