//! Golden files for issue #28's promise: the restructure changes no format. Each test
//! makes an output from fixed input and compares it byte for byte with a file under
//! `tests/golden/`, written from the code before the restructure (ab20dad):
//!
//! - `analysis`: a page's recorded probe calls → the run and field reports (the report
//!   format, through the same code as the page's Worker);
//! - `cli`: `ttfx decode` and `ttfx report` (table, `--json`, `--slo`, an error);
//! - `collector`: `ttfx serve --collect`'s `/field/…` answers and `ttfx field` over a
//!   SQLite file made here from fixed beacons;
//! - `simulator`: the simulated endpoints' headers and streamed bodies for a fixed seed
//!   (chat dialects, TTS, STT) and one request's record.
//!
//! `ttfx run`'s printed table and `--json` are a unit test beside their code
//! (`crates/ttfx-run/src/output/golden_tests.rs`), on the same files and helper. A mismatch
//! names the first differing line and how to regenerate (`TTFX_BLESS=1`, never by
//! default). Fixed inputs are in `tests/golden/inputs/` and are never rewritten.

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[path = "golden/analysis.rs"]
mod analysis;
#[path = "golden/check.rs"]
mod check;
#[path = "golden/cli.rs"]
mod cli;
#[path = "golden/collector.rs"]
mod collector;
#[path = "golden/mask.rs"]
mod mask;
#[path = "golden/replay.rs"]
mod replay;
#[path = "golden/simulator.rs"]
mod simulator;

use std::path::Path;
use std::process::Output;

/// `ttfx ARGS` run in `dir`, so file names in its messages are the relative ones given.
fn ttfx_in(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(common::ttfx())
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

/// stdout of a `ttfx` command that must succeed.
fn stdout_of(dir: &Path, args: &[&str]) -> String {
    let out = ttfx_in(dir, args);
    assert!(
        out.status.success(),
        "ttfx {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
