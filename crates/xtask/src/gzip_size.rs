//! A built file's size as a page downloads it: `gzip -9` (the benches' size tables and
//! the analysis's options).

use std::path::Path;
use std::process::Command;

use anyhow::Context;

/// The bytes of `path` compressed by `gzip -9`.
pub fn of(path: &Path) -> anyhow::Result<u64> {
    let out = Command::new("gzip")
        .arg("-9c")
        .arg(path)
        .output()
        .with_context(|| format!("cannot run gzip on {}", path.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "gzip -9 of {} failed ({})",
        path.display(),
        out.status
    );
    Ok(out.stdout.len() as u64)
}
