//! ttfx-core: everything ttfx knows that does not need a browser or a server.
//!
//! This crate never depends on `web-sys` or `tokio`, so the same code decodes a stream
//! inside the browser probe (wasm32) and inside the native `ttfx` tools.

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
pub mod recorder;
pub mod report;
pub mod segment;
pub mod selection;
pub mod series;
pub mod server_record;
pub mod server_timing;
pub mod stall;
pub mod stats;
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
