//! `cargo xtask probe-pkg`: the probe as an npm-style package folder (the front, the
//! analysis and the voice build as ES modules, wasm-bindgen `--target web` for the wasm,
//! `.d.ts` files, package.json and README) and its `npm pack` tarball.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::lab::path_with_cargo_bin;
use crate::{cmd, paths, probe_front, setup};

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

/// Compiles the voice build (ttfx-probe with its default features: the Rust API over the
/// front, the audio API, and the analysis with voice results); returns its wasm.
pub fn compile_voice() -> anyhow::Result<PathBuf> {
    cargo_build(&[])?;
    Ok(cargo_out().join("ttfx_probe.wasm"))
}

/// Compiles the analysis worker's wasm (`ttfx-analysis`) with the same profile; returns
/// its wasm.
pub fn compile_analysis() -> anyhow::Result<PathBuf> {
    compile_analysis_with(&[])
}

/// [`compile_analysis`] with cargo `--config` overrides (`KEY=VALUE`, e.g. another
/// `opt-level` for one package: `cargo xtask bench analysis-options`).
pub fn compile_analysis_with(config: &[String]) -> anyhow::Result<PathBuf> {
    let mut build = Command::new("cargo");
    build.current_dir(paths::root()).args([
        "build",
        "--locked",
        "--profile",
        "probe",
        "-p",
        "ttfx-analysis",
        // The Worker's own build: its allocator (talc) and panic hook (see the feature).
        "--features",
        "worker",
        "--target",
        "wasm32-unknown-unknown",
    ]);
    for value in config {
        build.args(["--config", value]);
    }
    cmd::run(&mut build)?;
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

/// A module as shipped: minified by esbuild (names, whitespace, comments), with a source
/// map beside it for debugging (fetched only by developer tools).
fn minify(from: &Path, to: &Path) -> anyhow::Result<()> {
    cmd::run(
        // esbuild's install puts its native binary at bin/esbuild.
        Command::new(crate::paths::esbuild())
            .arg(from)
            .args([
                "--minify",
                "--format=esm",
                "--target=es2020",
                "--sourcemap",
                "--legal-comments=none",
                "--log-level=warning",
            ])
            .arg(format!("--outfile={}", to.display())),
    )
}

/// The front as shipped: bundled and minified from its sources (`js/src/`) as the
/// committed `js/probe.js` is, with a source map that names the modules (and without the
/// committed file's header, which a page would download). From the sources, so the package
/// is what they say even before the committed bundle is remade; `cargo xtask test` checks
/// that the two agree (probe_front.rs).
fn minify_front(to: &Path) -> anyhow::Result<()> {
    cmd::run(
        probe_front::esbuild()
            .arg("--sourcemap")
            .arg(format!("--outfile={}", to.display())),
    )
}

/// The inject bundle: the committed one (`cargo xtask probe-front` makes it, and the
/// check keeps it current), which `ttfx run --inject` also carries compiled in; the
/// package's copy is what `--probe-pkg DIR` reads, and a documented file of the npm
/// package (`ttfx-probe/inject.js`): any test runner adds it before a page's scripts
/// (docs/qa.md), and `runner/` and `playwright/` read it.
fn bundle_inject(to: &Path) -> anyhow::Result<()> {
    let from = probe_front::inject_bundle_path();
    std::fs::copy(&from, to)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Binaryen's size passes over a wasm-bindgen module, with its own inlining off: the
/// wasm is already optimized for size by LLVM, and binaryen's inlining made it 3 KB gzip
/// larger (measured). Features: what rustc's wasm32 target emits.
fn wasm_opt(from: &Path, to: &Path) -> anyhow::Result<()> {
    cmd::run(
        Command::new(crate::paths::wasm_opt())
            .arg(from)
            .args([
                "-Os",
                "--one-caller-inline-max-function-size=1",
                "--always-inline-max-function-size=1",
                "--flexible-inline-max-function-size=1",
                "--enable-bulk-memory",
                "--enable-reference-types",
                "--enable-multivalue",
                "--enable-sign-ext",
                "--enable-nontrapping-float-to-int",
                "--enable-mutable-globals",
                "-o",
            ])
            .arg(to),
    )
}

/// wasm-bindgen copies every JS snippet a crate declares, used or not. The voice build
/// exports no Rust `Probe` (its `index.js` reuses the package's front), so the front's
/// copy under `snippets/` is dead weight in the package unless its glue imports it.
fn drop_unused_snippets(dir: &Path, glue: &str) -> anyhow::Result<()> {
    let snippets = dir.join("snippets");
    let glue_text = std::fs::read_to_string(dir.join(glue))
        .with_context(|| format!("cannot read {}", dir.join(glue).display()))?;
    if snippets.is_dir() && !glue_text.contains("/snippets/") {
        std::fs::remove_dir_all(&snippets)
            .with_context(|| format!("cannot remove {}", snippets.display()))?;
    }
    Ok(())
}

fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))
}

/// Builds the package and returns its folder:
/// - the root: the front (`probe.js` and its types), what a page loads before it
///   measures;
/// - `analysis/`: the analysis (ttfx-analysis as wasm), `worker.js` and the main-thread
///   fallback's `main_thread.js`, loaded lazily;
/// - `voice/`: the voice build (`ttfx-probe/voice`): the front plus the audio API, with
///   the analysis linked in (voice results need it);
/// - `inject.js`: the front as one classic script for `ttfx run --inject` and any test
///   runner (docs/qa.md);
/// - `runner/`: Node.js, any runner: a chat turn measured through the inject bundle, its
///   report made with the analysis wasm, budgets (`ttfx-probe/runner`);
/// - `playwright/`: the Playwright Test fixture and matcher over `runner/`
///   (`ttfx-probe/playwright`).
pub fn build() -> anyhow::Result<PathBuf> {
    let out = out_dir();
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot clear {}", out.display()))?;
    }
    std::fs::create_dir_all(&out)?;
    let front = probe_front::front_dir();
    minify_front(&out.join("probe.js"))?;
    copy(&front.join("probe.d.ts"), &out.join("probe.d.ts"))?;
    bundle_inject(&out.join("inject.js"))?;

    build_analysis(&out.join("analysis"), &[])?;

    let voice = out.join("voice");
    bindgen(&compile_voice()?, &voice)?;
    drop_unused_snippets(&voice, "ttfx_probe.js")?;
    copy(&front.join("voice.js"), &voice.join("index.js"))?;
    copy(&front.join("voice.d.ts"), &voice.join("index.d.ts"))?;

    let template = paths::root().join("crates/ttfx-probe/pkg-template");
    copy(&template.join("README.md"), &out.join("README.md"))?;
    for (folder, files) in QA_ENTRIES {
        std::fs::create_dir_all(out.join(folder))?;
        for file in *files {
            copy(
                &template.join(folder).join(file),
                &out.join(folder).join(file),
            )?;
        }
    }
    std::fs::write(out.join("package.json"), package_json())?;
    Ok(out)
}

/// The package's `analysis/` folder, written to `analysis` (created): its wasm and .d.ts as
/// wasm-bindgen writes them, its JS module, worker.js and the main-thread fallback's
/// main_thread.js minified like the front (the docs stay in the .d.ts). `config`: cargo
/// `--config` overrides for the wasm's build (none for the package).
pub fn build_analysis(analysis: &Path, config: &[String]) -> anyhow::Result<()> {
    let generated = paths::target().join("probe-analysis-bindgen");
    if generated.exists() {
        std::fs::remove_dir_all(&generated)
            .with_context(|| format!("cannot clear {}", generated.display()))?;
    }
    bindgen(&compile_analysis_with(config)?, &generated)?;
    std::fs::create_dir_all(analysis)?;
    for file in ["ttfx_analysis.d.ts", "ttfx_analysis_bg.wasm.d.ts"] {
        copy(&generated.join(file), &analysis.join(file))?;
    }
    wasm_opt(
        &generated.join("ttfx_analysis_bg.wasm"),
        &analysis.join("ttfx_analysis_bg.wasm"),
    )?;
    minify(
        &generated.join("ttfx_analysis.js"),
        &analysis.join("ttfx_analysis.js"),
    )?;
    // The Worker, and the main-thread fallback's scheduler (loaded only there).
    for file in ["worker.js", "main_thread.js"] {
        minify(
            &paths::root().join("crates/ttfx-analysis/src/").join(file),
            &analysis.join(file),
        )?;
    }
    Ok(())
}

/// The test runners' entries (docs/qa.md), copied from the template as written: they are
/// Node.js modules a test imports, not bytes a page downloads, so they are not minified.
const QA_ENTRIES: &[(&str, &[&str])] = &[
    (
        "runner",
        &[
            "index.js",
            "index.d.ts",
            "turn.js",
            "replay.js",
            "budget.js",
        ],
    ),
    ("playwright", &["index.js", "index.d.ts"]),
];

fn package_json() -> String {
    let version = env!("CARGO_PKG_VERSION");
    format!(
        r#"{{
  "name": "ttfx-probe",
  "version": "{version}",
  "description": "Client-side clocks for streamed LLM and TTS responses: first byte, first token, first paint, first audio.",
  "type": "module",
  "main": "probe.js",
  "module": "probe.js",
  "types": "probe.d.ts",
  "exports": {{
    ".": {{ "types": "./probe.d.ts", "default": "./probe.js" }},
    "./voice": {{ "types": "./voice/index.d.ts", "default": "./voice/index.js" }},
    "./analysis": {{ "types": "./analysis/ttfx_analysis.d.ts", "default": "./analysis/ttfx_analysis.js" }},
    "./analysis/worker.js": "./analysis/worker.js",
    "./inject.js": "./inject.js",
    "./runner": {{ "types": "./runner/index.d.ts", "default": "./runner/index.js" }},
    "./playwright": {{ "types": "./playwright/index.d.ts", "default": "./playwright/index.js" }}
  }},
  "files": ["probe.js", "probe.js.map", "probe.d.ts", "voice/", "analysis/", "inject.js", "runner/", "playwright/"],
  "peerDependencies": {{ "@playwright/test": ">=1.40" }},
  "peerDependenciesMeta": {{ "@playwright/test": {{ "optional": true }} }},
  "sideEffects": false,
  "license": "MIT OR Apache-2.0"
}}
"#
    )
}
