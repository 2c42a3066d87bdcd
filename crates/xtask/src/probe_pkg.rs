//! `cargo xtask probe-pkg`: the probe as an npm-style package folder (ES module built by
//! wasm-bindgen `--target web`, its `.d.ts`, package.json and README).

use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;

use crate::lab::path_with_cargo_bin;
use crate::{cmd, paths, setup};

/// Where the package is written.
pub fn out_dir() -> PathBuf {
    paths::target().join("probe-pkg")
}

pub fn run() -> anyhow::Result<()> {
    setup::run(&setup::SetupArgs::default())?;
    build()?;
    eprintln!("xtask probe-pkg: wrote {}", out_dir().display());
    Ok(())
}

/// Builds the package (release: what ships) and returns its folder.
pub fn build() -> anyhow::Result<PathBuf> {
    cmd::run(Command::new("cargo").current_dir(paths::root()).args([
        "build",
        "--locked",
        "--release",
        "-p",
        "ttfx-probe",
        "--target",
        "wasm32-unknown-unknown",
    ]))?;
    let wasm = paths::target().join("wasm32-unknown-unknown/release/ttfx_probe.wasm");
    let out = out_dir();
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
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
            .arg(&out)
            .arg(&wasm),
    )?;
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
  "files": ["ttfx_probe.js", "ttfx_probe_bg.wasm", "ttfx_probe.d.ts", "ttfx_probe_bg.wasm.d.ts", "snippets/"],
  "sideEffects": false,
  "license": "MIT OR Apache-2.0"
}}
"#
    )
}
