//! `cargo xtask`: the project's own build tool. `main` only dispatches.
//!
//! It builds and tests the workspace from outside: it depends on ttfx-webdriver only
//! (Chromium's flags for the wasm tests' webdriver.json) and runs everything else as
//! commands, so no product crate depends on it or is built for it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[cfg(test)]
mod architecture_doc;
mod bench;
mod bench_decode_browser;
mod bench_sweep;
mod cmd;
mod e2e_lanes;
mod fuzz;
mod gzip_size;
mod lab;
#[cfg(test)]
mod module_graph;
mod npm_versions;
mod paths;
mod probe_front;
mod probe_pkg;
mod setup;
mod test;
mod webdriver_json;

/// Build, serve and test ttfx.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Install every tool the tests use that is missing or at the wrong version (idempotent).
    Setup(setup::SetupArgs),
    /// Build the probe and the lab page, then serve them with the simulated endpoints.
    /// Installs only what the build needs: no browser, driver or Node, no root.
    Lab(lab::LabArgs),
    /// Build the probe as an npm-style package folder in target/probe-pkg.
    ProbePkg,
    /// Bundle the probe's front (crates/ttfx-probe/js/src) into crates/ttfx-probe/js/probe.js.
    ProbeFront(probe_front::ProbeFrontArgs),
    /// Every check and test: fmt, clippy, native, wasm in headless Chromium, e2e.
    Test,
    /// Print performance, size and accuracy figures.
    Bench(bench::BenchArgs),
    /// Run every cargo-fuzz target (decoders, collector body, benchmark files) for minutes.
    Fuzz(fuzz::FuzzArgs),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Setup(args) => setup::run(&args),
        Command::Lab(args) => lab::run(&args),
        Command::ProbePkg => probe_pkg::run(),
        Command::ProbeFront(args) => probe_front::run(&args),
        Command::Test => test::run(),
        Command::Bench(args) => bench::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
