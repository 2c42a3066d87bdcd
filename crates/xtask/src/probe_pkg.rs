//! `cargo xtask probe-pkg`: the probe as an npm-style package folder (ES module built by
//! wasm-bindgen `--target web`, its `.d.ts`, package.json and README).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::lab::path_with_cargo_bin;
use crate::{cmd, paths, setup};

/// Where the package is written.
pub fn out_dir() -> PathBuf {
    paths::target().join("probe-pkg")
}

pub fn run() -> anyhow::Result<()> {
    setup::ensure(setup::PROBE_PKG_TOOLS)?;
    let dir = build()?;
    let tarball = pack(&dir)?;
    eprintln!(
        "xtask probe-pkg: wrote {} and {}",
        dir.display(),
        tarball.display()
    );
    Ok(())
}

/// `npm pack` of the package folder: the tarball an app installs (`npm install
/// ttfx-probe-VERSION.tgz`), written beside the folder. Returns its path.
pub fn pack(dir: &Path) -> anyhow::Result<PathBuf> {
    let destination = paths::target();
    cmd::run(
        Command::new("npm")
            .current_dir(dir)
            .args(["pack", "--silent", "--pack-destination"])
            .arg(&destination),
    )?;
    let tarball = destination.join(format!("ttfx-probe-{}.tgz", env!("CARGO_PKG_VERSION")));
    anyhow::ensure!(tarball.is_file(), "npm pack wrote no {}", tarball.display());
    Ok(tarball)
}

/// A build of the probe the package ships: its cargo features and its folder in the
/// package.
pub struct Variant {
    pub name: &'static str,
    /// Cargo feature flags.
    features: &'static [&'static str],
    /// Folder inside the package ("" for the root).
    pub subdir: &'static str,
}

/// The text probe at the package root (`import … from "ttfx-probe"`), and the probe with
/// the voice API (TtsPlayer, AudioTap, VoiceHandoff) under `voice/`
/// (`"ttfx-probe/voice"`): a chat UI does not download the voice code.
pub const VARIANTS: [Variant; 2] = [
    Variant {
        name: "text",
        features: &["--no-default-features"],
        subdir: "",
    },
    Variant {
        name: "voice",
        features: &[],
        subdir: "voice",
    },
];

/// Where cargo writes the probe's wasm (the `probe` profile: release, optimized for size).
fn cargo_out() -> PathBuf {
    paths::target().join("wasm32-unknown-unknown/probe")
}

/// `cargo build` of ttfx-probe for the browser with the `probe` profile, plus `extra`.
fn cargo_build(extra: &[&str]) -> anyhow::Result<()> {
    cmd::run(
        Command::new("cargo")
            .current_dir(paths::root())
            .args([
                "build",
                "--locked",
                "--profile",
                "probe",
                "-p",
                "ttfx-probe",
                "--target",
                "wasm32-unknown-unknown",
            ])
            .args(extra),
    )
}

/// Compiles one variant; returns the wasm cargo wrote (overwritten by the next variant).
pub fn compile(variant: &Variant) -> anyhow::Result<PathBuf> {
    cargo_build(variant.features)?;
    Ok(cargo_out().join("ttfx_probe.wasm"))
}

/// Compiles the analysis worker's wasm (`ttfx-analysis`) with the same profile; returns
/// its wasm.
pub fn compile_analysis() -> anyhow::Result<PathBuf> {
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "build",
        "--locked",
        "--profile",
        "probe",
        "-p",
        "ttfx-analysis",
        "--target",
        "wasm32-unknown-unknown",
    ]))?;
    Ok(cargo_out().join("ttfx_analysis.wasm"))
}

/// Compiles one of ttfx-probe's cdylib examples without the voice feature; returns its
/// wasm.
pub fn compile_example(name: &str) -> anyhow::Result<PathBuf> {
    cargo_build(&["--no-default-features", "--example", name])?;
    Ok(cargo_out().join("examples").join(format!("{name}.wasm")))
}

/// wasm-bindgen's ES module for `wasm` in `out`, as the package ships it.
pub fn bindgen(wasm: &Path, out: &Path) -> anyhow::Result<()> {
    let bindgen = setup::tool_path("wasm-bindgen")
        .context("wasm-bindgen is not installed (cargo xtask setup)")?;
    cmd::run(
        Command::new(bindgen)
            .env("PATH", path_with_cargo_bin())
            // The name and producers sections only help debuggers; they are bytes every
            // user of the host page would download.
            .args([
                "--target",
                "web",
                "--remove-name-section",
                "--remove-producers-section",
                "--out-dir",
            ])
            .arg(out)
            .arg(wasm),
    )
}

/// Builds the package (both variants, as shipped) and returns its folder.
pub fn build() -> anyhow::Result<PathBuf> {
    let out = out_dir();
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    for variant in &VARIANTS {
        bindgen(&compile(variant)?, &out.join(variant.subdir))?;
    }
    // The analysis for a module Worker: its wasm, its wasm-bindgen module and worker.js.
    let analysis = out.join("analysis");
    bindgen(&compile_analysis()?, &analysis)?;
    std::fs::copy(
        paths::root().join("crates/ttfx-analysis/src/worker.js"),
        analysis.join("worker.js"),
    )
    .context("cannot copy crates/ttfx-analysis/src/worker.js")?;
    let template = paths::root().join("crates/ttfx-probe/pkg-template");
    let readme = std::fs::read_to_string(template.join("README.md"))
        .context("cannot read crates/ttfx-probe/pkg-template/README.md")?;
    std::fs::write(out.join("README.md"), readme)?;
    std::fs::write(out.join("package.json"), package_json())?;
    Ok(out)
}

fn package_json() -> String {
    let version = env!("CARGO_PKG_VERSION");
    format!(
        r#"{{
  "name": "ttfx-probe",
  "version": "{version}",
  "description": "Client-side clocks for streamed LLM and TTS responses: first byte, first token, first paint, first audio.",
  "type": "module",
  "main": "ttfx_probe.js",
  "module": "ttfx_probe.js",
  "types": "ttfx_probe.d.ts",
  "exports": {{
    ".": {{ "types": "./ttfx_probe.d.ts", "default": "./ttfx_probe.js" }},
    "./voice": {{ "types": "./voice/ttfx_probe.d.ts", "default": "./voice/ttfx_probe.js" }},
    "./analysis/worker.js": "./analysis/worker.js"
  }},
  "files": ["ttfx_probe.js", "ttfx_probe_bg.wasm", "ttfx_probe.d.ts", "ttfx_probe_bg.wasm.d.ts", "snippets/", "voice/", "analysis/"],
  "sideEffects": false,
  "license": "MIT OR Apache-2.0"
}}
"#
    )
}
