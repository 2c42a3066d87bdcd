//! `cargo xtask bench`: figures, printed. Later issues add their own sections here.

use std::path::Path;
use std::process::Command;

use anyhow::Context;

use crate::lab::build_lab_page;
use crate::{cmd, paths, setup};

pub fn run() -> anyhow::Result<()> {
    decode_throughput()?;
    setup::run(&setup::SetupArgs {})?;
    lab_page_size()
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

/// Raw and gzip -9 size of every wasm and JS file in the release lab page.
fn lab_page_size() -> anyhow::Result<()> {
    build_lab_page(true)?;
    let dist = paths::lab_dist();
    println!("\n## lab page size (release, {})", dist.display());
    println!("{:<44} {:>10} {:>10}", "file", "raw B", "gzip -9 B");
    let mut entries: Vec<_> = std::fs::read_dir(&dist)
        .with_context(|| format!("cannot list {}", dist.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("wasm" | "js")))
        .collect();
    entries.sort();
    let (mut raw_total, mut gz_total) = (0, 0);
    for path in entries {
        let raw = std::fs::metadata(&path)?.len();
        let gz = gzip_size(&path)?;
        raw_total += raw;
        gz_total += gz;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        println!("{name:<44} {raw:>10} {gz:>10}");
    }
    println!("{:<44} {raw_total:>10} {gz_total:>10}", "total");
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
