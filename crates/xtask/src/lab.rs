//! `cargo xtask lab`: build the lab page and serve it with the simulated endpoints and a
//! collector, so the Field view, the benchmark gap and the lab's own runs (stored as
//! source `lab`) are there on a first run.

use std::process::Command;

use anyhow::Context;
use clap::Args;

use crate::{cmd, paths, setup};

#[derive(Debug, Args)]
pub struct LabArgs {
    /// Port on 127.0.0.1 to serve on.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The collector's SQLite file (created if missing; default target/lab/field.db).
    #[arg(long, value_name = "FILE.db")]
    pub collect: Option<std::path::PathBuf>,
}

pub fn run(args: &LabArgs) -> anyhow::Result<()> {
    setup::ensure(setup::LAB_TOOLS)?;
    build_lab_page(true)?;
    let ttfx = build_ttfx()?;
    let addr = format!("127.0.0.1:{}", args.port);
    let db = args.collect.clone().unwrap_or_else(paths::lab_db);
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    eprintln!(
        "xtask lab: serving the lab page with a collector on {} (the lab's runs are stored \
         there as source lab; `ttfx import FILE --into {}` adds a benchmark); stop with Ctrl-C",
        db.display(),
        db.display()
    );
    // exec-like: the server's own one-line errors (port taken, a refused file) reach the
    // user unchanged.
    let status = Command::new(&ttfx)
        .args(["serve", "--addr", &addr, "--dist"])
        .arg(paths::lab_dist())
        .arg("--collect")
        .arg(&db)
        .status()
        .with_context(|| format!("cannot start {}", ttfx.display()))?;
    if !status.success() {
        anyhow::bail!("ttfx serve exited ({status})");
    }
    Ok(())
}

/// Builds www/ with Trunk into `target/lab-dist`.
pub fn build_lab_page(release: bool) -> anyhow::Result<()> {
    let trunk = setup::tool_path("trunk").context("trunk is not installed (cargo xtask setup)")?;
    let mut trunk = Command::new(trunk);
    trunk.current_dir(paths::root()).arg("build");
    if release {
        trunk.arg("--release");
    }
    // Trunk looks for wasm-bindgen on PATH; on a fresh machine cargo's bin folder may not
    // be there yet.
    trunk.env("PATH", path_with_cargo_bin());
    cmd::run(&mut trunk)
}

/// Builds the `ttfx` binary (debug: it only serves files and timers) and returns its path.
/// Debug builds of xtask's own making keep no incremental state (unless CARGO_INCREMENTAL
/// says otherwise): it is most of a debug build's size (3.9 of 10.9 GB in one target
/// folder here) and buys nothing on a fresh CI checkout, whose disk a run once filled.
pub fn without_incremental(cargo: &mut Command) {
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        cargo.env("CARGO_INCREMENTAL", "0");
    }
}

pub fn build_ttfx() -> anyhow::Result<std::path::PathBuf> {
    let mut cargo = Command::new("cargo");
    cargo
        .current_dir(paths::root())
        .args(["build", "--locked", "-p", "ttfx"]);
    without_incremental(&mut cargo);
    cmd::run(&mut cargo)?;
    Ok(paths::target().join("debug").join("ttfx"))
}

/// PATH with cargo's bin folder appended.
pub fn path_with_cargo_bin() -> std::ffi::OsString {
    let mut dirs: Vec<_> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push(paths::cargo_bin());
    std::env::join_paths(dirs).unwrap_or_default()
}
