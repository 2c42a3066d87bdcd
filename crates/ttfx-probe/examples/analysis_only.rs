//! Not a product: the probe's analysis alone (decode a stream in any dialect, build its
//! timeline, compute metrics, write the report as JSON), with no browser code. `cargo
//! xtask bench` builds it for wasm to show how many of the probe's bytes the shared
//! ttfx-core analysis takes, the part a smaller probe could not simply leave out.

use ttfx_core::decode::{DialectKind, Limits};
use ttfx_core::recorder::Recorder;
use ttfx_core::report::{Run, RunReport};
use wasm_bindgen::prelude::*;

/// Decodes `bytes` (cut into chunks at `cuts`, arriving at `times`: headers first, then
/// one per chunk) and returns the run report as JSON, or the error's text.
#[wasm_bindgen]
pub fn analyze(
    dialect: &str,
    server_timing: &str,
    times: &[f64],
    bytes: &[u8],
    cuts: &[u32],
) -> String {
    let mut recorder = Recorder::new(dialect.parse::<DialectKind>().ok(), Limits::DEFAULT);
    let mut at = times.iter().copied();
    let mut last = at.next().unwrap_or(0.0);
    recorder.headers(last, 200, Some("text/event-stream"), &[server_timing]);
    let mut start = 0;
    for &cut in cuts {
        let end = (cut as usize).clamp(start, bytes.len());
        last = at.next().unwrap_or(last);
        recorder.chunk(last, &bytes[start..end]);
        start = end;
    }
    recorder.end(last);
    match Run::new(None, Some(dialect.to_owned()), recorder.finish()) {
        Ok(run) => serde_json::to_string(&RunReport::new(run)).unwrap_or_default(),
        Err(e) => e.to_string(),
    }
}
