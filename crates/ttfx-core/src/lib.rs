//! ttfx-core: everything ttfx knows that does not need a browser or a server.
//!
//! This crate never depends on `web-sys` or `tokio`, so the same code decodes a stream
//! inside the browser probe (wasm32) and inside the native `ttfx` tools.
//!
//! Its modules depend one way: a module uses modules of its own layer (never in a ring)
//! or of the layers below it, from the bottom:
//! - plain data and rules over numbers: `milestone`, `server_timing`, `turn`, `segment`,
//!   `handoff`, `playback`, `selection`, `order`, `percentile`, `stall`, `target`,
//!   `printable`, `rng`;
//! - decoding: `decode` (with `decimal`), `chat_api`, `transcription`;
//! - the timeline: `timeline` and the `chunk_summary` it holds;
//! - series, metrics and statistics: `series`, `gap`, `metrics`, `stats`, and what
//!   fills or reads a timeline (`recorder`, `voice_result`, `server_record`);
//! - the report and the field: `report`, `field`, `crossover`, and `sweep_file` (a
//!   `ttfx run --sweep` file read back for its curves).
//!
//! A test in `cargo xtask test` (xtask's `module_graph`) fails on any cycle between
//! modules.

pub mod chat_api;
pub mod chunk_summary;
pub mod crossover;
pub mod decode;
pub mod field;
pub mod gap;
pub mod handoff;
pub mod metrics;
pub mod milestone;
pub mod order;
pub mod percentile;
pub mod playback;
pub mod printable;
pub mod recorder;
pub mod report;
pub mod rng;
pub mod segment;
pub mod selection;
pub mod series;
pub mod server_record;
pub mod server_timing;
pub mod stall;
pub mod stats;
pub mod sweep_file;
pub mod target;
#[cfg(test)]
mod test_support;
pub mod timeline;
pub mod transcription;
pub mod turn;
pub mod voice_result;

// Number text, read with the frame JSON parser's number code: a part of decoding.
pub use decode::decimal;

pub use chat_api::ChatApi;
pub use metrics::RequestMetrics;
pub use milestone::Milestone;
pub use recorder::Recorder;
pub use report::{BatchReport, ReportFile, RunReport};
pub use server_record::{RecordOutcome, ServerRecord};
pub use server_timing::{ServerTiming, TimingSource, Usage};
pub use timeline::Timeline;
