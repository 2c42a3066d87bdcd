//! `cargo xtask bench decode-browser` (#35): the probe's analysis against the JavaScript
//! a team would write (npm eventsource-parser + `JSON.parse`), in every engine. The page
//! and its driver are e2e's (`e2e/src/bin/decode_browser_bench`, `e2e/pages/decode_*`);
//! this installs the peer, builds the package and a names-kept analysis for Chromium's
//! profile, and runs it.

use std::path::PathBuf;
use std::process::Command;

use crate::npm_versions::EVENTSOURCE_PARSER_VERSION;
use crate::{cmd, paths, probe_pkg, setup};

/// `rounds`: alternating pairs per body; `engines`: a comma-separated subset of
/// chromium, firefox, webkit (all when `None`).
pub fn run(rounds: usize, engines: Option<&str>) -> anyhow::Result<()> {
    setup::ensure(setup::BENCH_TOOLS)?;
    let peer = paths::eventsource_parser();
    let prefix = peer
        .ancestors()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| peer.clone());
    setup::ensure_npm_libraries(
        &prefix,
        &[("eventsource-parser", EVENTSOURCE_PARSER_VERSION)],
    )?;
    let pkg = probe_pkg::build()?;
    let names = names_kept_analysis()?;
    let rounds = rounds.to_string();
    let mut bench = Command::new("cargo");
    bench
        .current_dir(paths::root())
        .args([
            "run",
            "--quiet",
            "--locked",
            "-p",
            "ttfx-e2e",
            "--bin",
            "decode_browser_bench",
            "--",
            "--rounds",
            &rounds,
            "--peer",
        ])
        .arg(&peer)
        .arg("--names")
        .arg(&names)
        .env("TTFX_PROBE_PKG", &pkg)
        .env("CHROMEDRIVER", setup::CHROMEDRIVER);
    if let Some(engines) = engines {
        bench.args(["--engines", engines]);
    }
    cmd::run(&mut bench)
}

/// The analysis as the package builds it (same profile, wasm-bindgen's JS) but with its
/// wasm function names kept and no wasm-opt pass, so a CPU profile names Rust functions
/// (the package strips the names: bytes every user would download).
fn names_kept_analysis() -> anyhow::Result<PathBuf> {
    let bindgen = setup::tool_path("wasm-bindgen")
        .ok_or_else(|| anyhow::anyhow!("wasm-bindgen is not installed (cargo xtask setup)"))?;
    let wasm = probe_pkg::compile_analysis()?;
    let out = paths::target().join("probe-analysis-names");
    cmd::run(
        Command::new(bindgen)
            .args(["--target", "web", "--out-dir"])
            .arg(&out)
            .arg(&wasm),
    )?;
    Ok(out)
}
