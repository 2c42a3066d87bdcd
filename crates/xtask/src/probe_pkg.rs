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

/// The wasm file cargo writes for the probe (the `probe` profile: release, optimized for
/// size).
pub fn cargo_wasm() -> PathBuf {
    paths::target().join("wasm32-unknown-unknown/probe/ttfx_probe.wasm")
}

/// Compiles one variant; returns the wasm cargo wrote (overwritten by the next variant).
pub fn compile(variant: &Variant) -> anyhow::Result<PathBuf> {
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
            .args(variant.features),
    )?;
    Ok(cargo_wasm())
}

/// Builds the package (both variants, as shipped) and returns its folder.
pub fn build() -> anyhow::Result<PathBuf> {
    let out = out_dir();
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    let bindgen = setup::tool_path("wasm-bindgen")
        .context("wasm-bindgen is not installed (cargo xtask setup)")?;
    for variant in &VARIANTS {
        let wasm = compile(variant)?;
        cmd::run(
            Command::new(&bindgen)
                .env("PATH", path_with_cargo_bin())
                // The name and producers sections only help debuggers; they are bytes
                // every user of the host page would download.
                .args([
                    "--target",
                    "web",
                    "--remove-name-section",
                    "--remove-producers-section",
                    "--out-dir",
                ])
                .arg(out.join(variant.subdir))
                .arg(&wasm),
        )?;
    }
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
    "./voice": {{ "types": "./voice/ttfx_probe.d.ts", "default": "./voice/ttfx_probe.js" }}
  }},
  "files": ["ttfx_probe.js", "ttfx_probe_bg.wasm", "ttfx_probe.d.ts", "ttfx_probe_bg.wasm.d.ts", "snippets/", "voice/"],
  "sideEffects": false,
  "license": "MIT OR Apache-2.0"
}}
"#
    )
}
