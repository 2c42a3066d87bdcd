//! No module cycles: a test over the module graph of every workspace crate, run by the
//! native test stage of `cargo xtask test`.
//!
//! Not `cargo-modules`: it builds rust-analyzer's crates, minutes on 2 cores for each CI
//! run. This reads the sources with proc-macro2's tokenizer instead: `mod` items, `use`
//! items and paths that start at `crate`, `self` or `super`, resolved through re-exports.
//! What it cannot see (paths made inside a macro's output) it leaves out.

mod cycles;
mod graph;
mod scan;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use anyhow::Context;

use graph::Crate;

/// Every workspace crate, by folder (a crate added to the workspace is added here; a
/// test checks the two lists agree).
pub const CRATES: &[&str] = &[
    "crates/ttfx-core",
    "crates/ttfx-probe",
    "crates/ttfx-analysis",
    "crates/ttfx-webdriver",
    "crates/ttfx-hostaudio",
    "crates/ttfx-import",
    "crates/ttfx-edge",
    "crates/ttfx-records",
    "crates/ttfx-sim",
    "crates/ttfx-proxy",
    "crates/ttfx-serve",
    "crates/ttfx-otlp",
    "crates/ttfx-collect",
    "crates/ttfx-report",
    "crates/ttfx-run",
    "crates/ttfx-load",
    "crates/ttfx",
    "crates/xtask",
    "www",
    "e2e",
];

/// The crate roots under a crate folder's `src/`, relative to `workspace`: the library,
/// the main binary and each binary in `src/bin/`.
fn crate_roots(workspace: &Path, krate: &str) -> anyhow::Result<Vec<PathBuf>> {
    let src = Path::new(krate).join("src");
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .filter(|f| workspace.join(f).is_file())
        .collect();
    let bin = workspace.join(&src).join("bin");
    if bin.is_dir() {
        let mut bins = Vec::new();
        for entry in std::fs::read_dir(&bin).with_context(|| format!("{}", bin.display()))? {
            let name = entry?.file_name();
            let rel = src.join("bin").join(&name);
            if rel.extension().is_some_and(|e| e == "rs") {
                bins.push(rel);
            } else if workspace.join(&rel).join("main.rs").is_file() {
                bins.push(rel.join("main.rs"));
            }
        }
        bins.sort();
        roots.extend(bins);
    }
    Ok(roots)
}

/// The cycles in the crate whose root file is `root`, as messages, and its edge count.
fn crate_cycles(root: &Path, read: graph::Read) -> anyhow::Result<(Vec<String>, usize)> {
    let krate = Crate::read(root, read)?;
    let edges = krate.edges();
    let found = cycles::find(&edges)
        .iter()
        .map(|c| format!("{}: {c}", root.display()))
        .collect();
    Ok((found, edges.len()))
}
