//! ttfx-load: a native load generator for streaming chat APIs (`ttfx load`, and the
//! background load of `ttfx run --under-load` / `--sweep`).
//!
//! Open loop: Poisson arrivals at a rate, from a seeded schedule no answer can move
//! (no coordinated omission), sent by a pacing thread whose own lateness is measured
//! and reported. Closed loop: C streams, each worker sending when its last request
//! ended. Every stream is read with ttfx-core's `Recorder` and its metrics computed by
//! `RequestMetrics::compute`, so the figures carry the same names and rules as the
//! browser probe's and every other report's (docs/metrics.md); only each request's
//! scalars are kept, never its chunks. docs/load.md says what each mode measures and
//! documents the JSON.
//!
//! It sees only URLs: starting a simulator or a proxy for `sim/` and `proxy/` targets is
//! the `ttfx` binary's job. It depends on ttfx-core alone among ttfx crates and must not
//! depend on the servers (ttfx-serve, ttfx-sim, ttfx-proxy), the runner (ttfx-run, which
//! uses it) or the binary.

mod args;
mod arrivals;
mod client;
mod command;
mod error;
mod exchange;
mod pacer;
mod report;
mod run;
mod sample;
pub mod slo;
mod spec;
mod table;
mod tally;

pub use args::{LoadArgs, parse_duration};
pub use client::{ClientError, HttpClient, new as http_client};
pub use command::Command;
pub use error::LoadError;
pub use report::{
    ACHIEVED_SHARE_MIN, Errors, Generator, LATENESS_P99_LIMIT_MS, LoadReport, ModeReport, Requests,
    SCHEMA, SCHEMA_VERSION, Throughput,
};
pub use run::run;
pub use sample::{ICL, SCALARS};
pub use slo::SloError;
pub use spec::{Endpoint, Header, LoadSpec, MAX_CONCURRENCY, MAX_RATE, Mode, SpecError};
pub use table::render;
/// Stops a load (`run`'s second argument).
pub use tokio_util::sync::CancellationToken;
