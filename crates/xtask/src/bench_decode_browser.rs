//! `cargo xtask bench decode-browser` (#35): the probe's analysis against the JavaScript
//! a team would write (npm eventsource-parser + `JSON.parse`), in every engine. The page
//! and its driver are e2e's (`e2e/src/bin/decode_browser_bench`, `e2e/pages/decode_*`);
//! this installs the peer, builds the package and a names-kept analysis for Chromium's
//! profile, and runs it. `cargo xtask bench analysis-options` runs the same bench in
//! Chromium over the analysis built at each ttfx-core `opt-level`: the size budget's
//! options, each with its size and speed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::npm_versions::EVENTSOURCE_PARSER_VERSION;
use crate::{cmd, paths, probe_pkg, setup};

/// `rounds`: alternating pairs per body; `engines`: a comma-separated subset of
/// chromium, firefox, webkit (all when `None`).
pub fn run(rounds: usize, engines: Option<&str>) -> anyhow::Result<()> {
    let peer = install_peer()?;
    let pkg = probe_pkg::build()?;
    let names = names_kept_analysis()?;
    let mut bench = bench_command(&peer, &pkg, rounds);
    bench.arg("--names").arg(&names);
    if let Some(engines) = engines {
        bench.args(["--engines", engines]);
    }
    cmd::run(&mut bench)
}

/// The bench's tools and eventsource-parser; returns the parser's package folder.
fn install_peer() -> anyhow::Result<PathBuf> {
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
    Ok(peer)
}

/// e2e's `decode_browser_bench` over the package `pkg` (its `analysis/` is what runs).
fn bench_command(peer: &Path, pkg: &Path, rounds: usize) -> Command {
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
            &rounds.to_string(),
            "--peer",
        ])
        .arg(peer)
        .env("TTFX_PROBE_PKG", pkg)
        .env("CHROMEDRIVER", setup::CHROMEDRIVER);
    bench
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

/// ttfx-core's `opt-level`s measured by default: the package's (`3`, Cargo.toml) last, so
/// the target folder ends with the shipped build's artifacts.
pub const DEFAULT_LEVELS: &str = "z,s,1,2,3";

/// One option's figures.
struct LevelFigures {
    level: String,
    wasm_gzip: u64,
    analysis_gzip: u64,
    summary: serde_json::Value,
}

/// For each ttfx-core `opt-level` in `levels` (comma-separated; the rest of the analysis
/// stays at the probe profile's `"z"`): the package's `analysis/` built with it (the same
/// wasm-bindgen and wasm-opt passes), its gzip -9 size, and the bench in Chromium; then one
/// table of the options.
pub fn options(rounds: usize, levels: &str) -> anyhow::Result<()> {
    let peer = install_peer()?;
    // Each level's folder is a package the bench takes: the front as shipped (from the
    // package, built once), and that level's `analysis/` (what the page runs).
    let front = probe_pkg::build()?.join("probe.js");
    let mut rows = Vec::new();
    for level in levels.split(',').map(str::trim).filter(|l| !l.is_empty()) {
        anyhow::ensure!(
            matches!(level, "0" | "1" | "2" | "3" | "s" | "z"),
            "unknown opt-level {level} (expected 0, 1, 2, 3, s or z)"
        );
        let value = if level.parse::<u8>().is_ok() {
            level.to_owned()
        } else {
            format!("\"{level}\"")
        };
        let pkg = paths::target().join(format!("probe-analysis-opt-{level}"));
        if pkg.exists() {
            std::fs::remove_dir_all(&pkg)
                .with_context(|| format!("cannot clear {}", pkg.display()))?;
        }
        let analysis = pkg.join("analysis");
        std::fs::create_dir_all(&pkg)?;
        std::fs::copy(&front, pkg.join("probe.js"))
            .with_context(|| format!("cannot copy {} into {}", front.display(), pkg.display()))?;
        probe_pkg::build_analysis(
            &analysis,
            &[format!("profile.probe.package.ttfx-core.opt-level={value}")],
        )?;
        let summary_file = pkg.join("summary.json");
        println!("\n# ttfx-core opt-level {value}: {}", analysis.display());
        cmd::run(
            bench_command(&peer, &pkg, rounds)
                .args(["--engines", "chromium", "--summary"])
                .arg(&summary_file),
        )?;
        let text = std::fs::read_to_string(&summary_file)
            .with_context(|| format!("the bench wrote no {}", summary_file.display()))?;
        rows.push(LevelFigures {
            level: value,
            wasm_gzip: crate::gzip_size::of(&analysis.join("ttfx_analysis_bg.wasm"))?,
            analysis_gzip: ["ttfx_analysis_bg.wasm", "ttfx_analysis.js", "worker.js"]
                .iter()
                .map(|f| crate::gzip_size::of(&analysis.join(f)))
                .sum::<anyhow::Result<u64>>()?,
            summary: serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", summary_file.display()))?,
        });
    }
    print_options(&rows);
    Ok(())
}

fn print_options(rows: &[LevelFigures]) {
    println!(
        "\n## the analysis at each ttfx-core opt-level (#35 point 5), Chromium: gzip -9 of \
         the wasm, and of what a Worker loads (wasm, ttfx_analysis.js, worker.js; budget 70 \
         KB); ratio = analysis MB/s ÷ peer MB/s (medians); a 2,000-event OpenAI reply warm \
         and its first call's run (after the load)"
    );
    println!(
        "{:<10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "opt-level",
        "wasm B",
        "loaded B",
        "openai",
        "openai",
        "anthropic",
        "ollama",
        "openai",
        "warm",
        "first",
        "load"
    );
    println!(
        "{:<10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "gzip", "gzip", "50k", "2k", "50k", "50k", "50k MB/s", "2k ms", "run ms", "ms"
    );
    for row in rows {
        let warm = |body: &str, events: u64, field: &str| {
            row.summary["warm"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|w| w["body"] == body && w["events"] == events)
                .and_then(|w| w[field].as_f64())
                .unwrap_or(f64::NAN)
        };
        let first = |field: &str| {
            row.summary["first"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|f| f["body"] == "openai-chat")
                .and_then(|f| f[field].as_f64())
                .unwrap_or(f64::NAN)
        };
        println!(
            "{:<10} {:>10} {:>10} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.1} {:>9.2} {:>9.2} {:>9.1}",
            row.level,
            row.wasm_gzip,
            row.analysis_gzip,
            warm("openai-chat", 50_000, "ratio"),
            warm("openai-chat", 2_000, "ratio"),
            warm("anthropic", 50_000, "ratio"),
            warm("ollama", 50_000, "ratio"),
            warm("openai-chat", 50_000, "analysisMBps"),
            warm("openai-chat", 2_000, "analysisMs"),
            first("analysisRunMs"),
            first("analysisLoadMs"),
        );
    }
}
