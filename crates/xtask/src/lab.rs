//! `cargo xtask lab`: build the lab page and serve it with the simulated endpoints.

use std::process::Command;

use anyhow::Context;
use clap::Args;

use crate::{cmd, paths, setup};

#[derive(Debug, Args)]
pub struct LabArgs {
    /// Port on 127.0.0.1 to serve on.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
}

pub fn run(args: &LabArgs) -> anyhow::Result<()> {
    setup::ensure(setup::LAB_TOOLS)?;
    build_lab_page(true)?;
    let ttfx = build_ttfx()?;
    let addr = format!("127.0.0.1:{}", args.port);
    eprintln!("xtask lab: serving the lab page; stop with Ctrl-C");
    // exec-like: the server's own one-line errors (port taken) reach the user unchanged.
    let status = Command::new(&ttfx)
        .args(["serve", "--addr", &addr, "--dist"])
        .arg(paths::lab_dist())
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
pub fn build_ttfx() -> anyhow::Result<std::path::PathBuf> {
    cmd::run(
        Command::new("cargo")
            .current_dir(paths::root())
            .args(["build", "--locked", "-p", "ttfx"]),
    )?;
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
