//! `cargo xtask bench`: figures, printed. Later issues add their own sections here.

use std::path::Path;
use std::process::Command;

use anyhow::Context;

use crate::lab::build_lab_page;
use crate::{cmd, paths, setup};

pub fn run() -> anyhow::Result<()> {
    decode_throughput()?;
    serve_concurrency()?;
    setup::run(&setup::SetupArgs::default())?;
    build_lab_page(true)?;
    size_table("lab page size (release)", &paths::lab_dist())?;
    let pkg = crate::probe_pkg::build()?;
    size_table("probe package size (release; target 40 KB gzip)", &pkg)?;
    probe_size_breakdown()?;
    probe_cost(&pkg)
}

/// Where the probe's bytes go: twiggy's largest items of a wasm-bindgen build that keeps
/// function names (the shipped package drops them; the input to wasm-bindgen is dominated
/// by its own metadata section, which it removes).
fn probe_size_breakdown() -> anyhow::Result<()> {
    println!("\n## probe wasm: largest items (twiggy top, names kept)");
    let (Some(twiggy), Some(bindgen)) =
        (setup::tool_path("twiggy"), setup::tool_path("wasm-bindgen"))
    else {
        println!("twiggy is not installed; `cargo install twiggy` to see the breakdown");
        return Ok(());
    };
    let wasm = paths::target().join("wasm32-unknown-unknown/release/ttfx_probe.wasm");
    let out = paths::target().join("probe-pkg-names");
    cmd::run(
        Command::new(bindgen)
            .args(["--target", "web", "--out-dir"])
            .arg(&out)
            .arg(&wasm),
    )?;
    cmd::run(
        Command::new(twiggy)
            .args(["top", "-n", "25"])
            .arg(out.join("ttfx_probe_bg.wasm")),
    )
}

/// The probe's main-thread cost and its effect on the app, in headless Chromium.
fn probe_cost(pkg: &Path) -> anyhow::Result<()> {
    let ttfx = crate::lab::build_ttfx()?;
    cmd::run(
        Command::new("cargo")
            .current_dir(paths::root())
            .args([
                "run",
                "--quiet",
                "--locked",
                "-p",
                "ttfx-e2e",
                "--bin",
                "probe_bench",
            ])
            .env("TTFX_BIN", ttfx)
            .env("TTFX_PROBE_PKG", pkg)
            .env("CHROMEDRIVER", "/usr/bin/chromedriver"),
    )
}

/// Native decode throughput (MB/s, events/s) for OpenAI-style SSE, one token per event.
/// Release profile, so the same optimisation level (`opt-level = "s"`) the probe ships.
fn decode_throughput() -> anyhow::Result<()> {
    println!("\n## decode throughput (native, release)");
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "run",
        "--quiet",
        "--release",
        "-p",
        "ttfx-core",
        "--example",
        "decode_bench",
    ]))
}

/// `ttfx serve` under concurrent SSE streams: the injected TTFT's lateness at 100 and
/// 1,000 streams and how many streams it holds. Release build of the server and of the
/// raw-socket client (`crates/ttfx/examples/serve_bench.rs`), loopback only.
fn serve_concurrency() -> anyhow::Result<()> {
    println!("\n## ttfx serve: concurrent streams (release, loopback)");
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "ttfx",
        "--bin",
        "ttfx",
        "--example",
        "serve_bench",
    ]))?;
    let release = paths::target().join("release");
    cmd::run(Command::new(release.join("examples").join("serve_bench")).arg(release.join("ttfx")))
}

/// Raw and gzip -9 size of every wasm and JS file in `dir` (and its subfolders).
fn size_table(title: &str, dir: &Path) -> anyhow::Result<()> {
    println!("\n## {title}: {}", dir.display());
    println!("{:<52} {:>10} {:>10}", "file", "raw B", "gzip -9 B");
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let (mut raw_total, mut gz_total) = (0, 0);
    for path in files {
        let raw = std::fs::metadata(&path)?.len();
        let gz = gzip_size(&path)?;
        raw_total += raw;
        gz_total += gz;
        let name = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .display()
            .to_string();
        println!("{name:<52} {raw:>10} {gz:>10}");
    }
    println!("{:<52} {raw_total:>10} {gz_total:>10}", "total");
    Ok(())
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("wasm" | "js")
        ) {
            out.push(path);
        }
    }
    Ok(())
}

fn gzip_size(path: &Path) -> anyhow::Result<u64> {
    let bytes = Command::new("gzip")
        .arg("-9c")
        .arg(path)
        .output()
        .with_context(|| format!("cannot run gzip on {}", path.display()))?
        .stdout;
    Ok(bytes.len() as u64)
}
