//! `cargo xtask setup`: install what is missing or at the wrong version, and nothing else.
//!
//! Every tool is checked first, so a warm machine pays only for the checks. Versions come
//! from the workspace itself (the `wasm-bindgen` pin in the root manifest) so the CLI and
//! the macro cannot drift apart.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use clap::Args;

use crate::cmd;
use crate::npm_versions::{
    AI_SDK_OPENAI_COMPATIBLE_VERSION, AI_SDK_VERSION, BINARYEN_VERSION, ESBUILD_VERSION,
    OPENAI_VERSION, PLAYWRIGHT_VERSION, PUPPETEER_CORE_VERSION, REACT_VERSION, TYPESCRIPT_VERSION,
    VITE_VERSION, ZOD_VERSION,
};
use crate::paths;
use crate::webdriver_json;

/// Trunk 0.22 needs a newer rustc than these machines have; 0.21.14 builds with its lockfile.
const TRUNK_VERSION: &str = "0.21.14";
const WASM_TARGET: &str = "wasm32-unknown-unknown";
const CHROMIUM: &str = "/usr/bin/chromium";
/// Where Debian's chromium-driver puts it; the test and bench stages hand it to the tests.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// geckodriver for `ttfx run --browser firefox`, built by `cargo install` (Debian has no
/// package of it).
const GECKODRIVER_VERSION: &str = "0.37.1";

/// cargo-fuzz for the fuzz smoke of `cargo xtask test` and `cargo xtask fuzz`; its lock
/// file builds on the stable toolchain these machines have.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

#[derive(Debug, Default, Args)]
pub struct SetupArgs {
    /// `all` (what `cargo xtask test` needs: the e2e tests run in every engine):
    /// Chromium, Firefox ESR + geckodriver and WebKitGTK + WebKitWebDriver + Xvfb; or
    /// `chromium` alone (no e2e run in Firefox or WebKit then).
    #[arg(long, value_enum, default_value = "all")]
    pub browsers: Browsers,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Browsers {
    Chromium,
    #[default]
    All,
}

/// Something `cargo xtask` installs when it is missing or at the wrong version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// rustup's `wasm32-unknown-unknown` target.
    WasmTarget,
    /// `wasm-bindgen` (with `wasm-bindgen-test-runner`) at the workspace's pin.
    WasmBindgenCli,
    /// Trunk, which builds the lab page.
    Trunk,
    /// Debian's `chromium` and `chromium-driver` (root to install).
    Chromium,
    /// Debian's `nodejs` and `npm` (root to install): `npm pack` of the probe package,
    /// and the npm tools below.
    Node,
    /// TypeScript from npm, for the package type check.
    TypeScript,
    /// Vite from npm, for the test that bundles the packed probe into an app.
    Vite,
    /// esbuild from npm, which bundles and minifies the probe's front.
    Esbuild,
    /// Binaryen from npm: wasm-opt for the package's analysis wasm.
    Binaryen,
    /// The libraries of the React chat UI fixtures that Vite builds in the e2e tests, each
    /// fixture's in its own prefix: `react`, `react-dom` and `openai`
    /// (e2e/chat-uis/react-openai); `react`, `react-dom`, `ai`,
    /// `@ai-sdk/openai-compatible` and `zod` (e2e/chat-uis/react-ai-sdk). No JSX plugin:
    /// the apps call `React.createElement`, so Vite alone builds them.
    ChatUiDeps,
    /// The test runners of docs/qa.md, in one prefix: `@playwright/test` and
    /// `playwright-core` (the probe package's Playwright fixture) and `puppeteer-core` (the
    /// Puppeteer recipe), installed with their browser downloads switched off: their e2e
    /// test launches Debian's Chromium through `executablePath`.
    QaRunners,
    /// Debian's `pulseaudio` and `pulseaudio-utils` (root to install): the sound server
    /// the first-audio truth plays into (a null sink) and records (`parec`, `pacat`,
    /// `pactl`); its e2e test and bench start and stop the server themselves.
    SoundServer,
    /// Debian's `espeak-ng` (root to install): the voice-turn tests and `ttfx run
    /// --voice-turn` synthesize the user's speech with it at run time (the fake
    /// microphone plays it).
    Speech,
    /// Firefox + geckodriver, WebKitGTK + WebKitWebDriver and Xvfb: the e2e tests in
    /// those engines and `ttfx run --browser firefox|webkit` (root for the Debian
    /// packages).
    OtherBrowsers,
    /// cargo-fuzz (`cargo install`): libFuzzer over the decoders, the collector's body
    /// reader and the benchmark-file reader (crates/xtask/src/fuzz.rs).
    CargoFuzz,
}

// What each command installs, declared once here; each command ensures its own list.

/// `cargo xtask lab`: Trunk builds the page (cargo for wasm32, then wasm-bindgen) and
/// `ttfx serve` serves it. No browser, driver or Node, so nothing that needs root.
pub const LAB_TOOLS: &[Tool] = &[Tool::WasmTarget, Tool::WasmBindgenCli, Tool::Trunk];
/// `cargo xtask probe-pkg`: cargo for wasm32, then wasm-bindgen; esbuild minifies the
/// front, wasm-opt the analysis wasm; `npm pack` writes the tarball.
pub const PROBE_PKG_TOOLS: &[Tool] = &[
    Tool::WasmTarget,
    Tool::WasmBindgenCli,
    Tool::Node,
    Tool::Esbuild,
    Tool::Binaryen,
];
/// `cargo xtask probe-front`: esbuild bundles the front's sources.
pub const PROBE_FRONT_TOOLS: &[Tool] = &[Tool::Node, Tool::Esbuild];
/// `cargo xtask bench`: the lab page, the probe package and the probe's cost in
/// headless Chromium; Firefox, WebKit and the sound server for `bench fidelity`.
pub const BENCH_TOOLS: &[Tool] = &[
    Tool::WasmTarget,
    Tool::WasmBindgenCli,
    Tool::Trunk,
    Tool::Chromium,
    Tool::SoundServer,
    Tool::Speech,
    Tool::OtherBrowsers,
    Tool::Node,
    Tool::Esbuild,
    Tool::Binaryen,
];
/// `cargo xtask test` and plain `cargo xtask setup`: every stage's tools (wasm tests in
/// Chromium, e2e in Chromium, Firefox and WebKit, the package's `.d.ts` under tsc, first
/// audio against the sound server).
pub const TEST_TOOLS: &[Tool] = &[
    Tool::WasmTarget,
    Tool::WasmBindgenCli,
    Tool::Trunk,
    Tool::Chromium,
    Tool::SoundServer,
    Tool::Speech,
    Tool::OtherBrowsers,
    Tool::Node,
    Tool::TypeScript,
    Tool::Vite,
    Tool::ChatUiDeps,
    Tool::QaRunners,
    Tool::Esbuild,
    Tool::Binaryen,
    Tool::CargoFuzz,
];

pub fn run(args: &SetupArgs) -> anyhow::Result<()> {
    ensure(&setup_tools(args))?;
    // So `cargo test --target wasm32-unknown-unknown` run by hand finds Chromium's flags.
    webdriver_json::write()?;
    eprintln!("xtask setup: all tools present");
    Ok(())
}

/// What plain `cargo xtask setup` installs: the test tools, without Firefox and WebKit
/// for `--browsers chromium`.
fn setup_tools(args: &SetupArgs) -> Vec<Tool> {
    TEST_TOOLS
        .iter()
        .copied()
        .filter(|t| args.browsers == Browsers::All || *t != Tool::OtherBrowsers)
        .collect()
}

/// Installs each of `tools` that is missing or at the wrong version.
pub fn ensure(tools: &[Tool]) -> anyhow::Result<()> {
    for tool in tools {
        match tool {
            Tool::WasmTarget => ensure_wasm_target()?,
            Tool::WasmBindgenCli => ensure_wasm_bindgen_cli()?,
            Tool::Trunk => ensure_trunk()?,
            Tool::Chromium => ensure_chromium()?,
            Tool::Node => ensure_node()?,
            Tool::TypeScript => {
                ensure_npm_package("typescript", TYPESCRIPT_VERSION, &paths::tsc())?;
            }
            Tool::Vite => ensure_npm_package("vite", VITE_VERSION, &paths::vite())?,
            Tool::Esbuild => {
                ensure_npm_package("esbuild", ESBUILD_VERSION, &paths::esbuild())?;
            }
            Tool::Binaryen => {
                ensure_npm_package("binaryen", BINARYEN_VERSION, &paths::wasm_opt())?;
            }
            Tool::ChatUiDeps => {
                for (prefix, packages) in chat_ui_deps() {
                    ensure_npm_libraries(&prefix, &packages)?;
                }
            }
            Tool::QaRunners => ensure_qa_runners()?,
            Tool::SoundServer => ensure_sound_server()?,
            Tool::Speech => ensure_speech()?,
            Tool::OtherBrowsers => ensure_firefox_and_webkit()?,
            Tool::CargoFuzz => ensure_cargo_fuzz()?,
        }
    }
    Ok(())
}

/// PulseAudio's daemon and its command-line clients. Only installed: the e2e harness
/// starts a server when none answers and stops what it started (e2e/src/audio_truth).
fn ensure_sound_server() -> anyhow::Result<()> {
    let missing = missing_debs(&[
        ("/usr/bin/pulseaudio", "pulseaudio"),
        ("/usr/bin/parec", "pulseaudio-utils"),
    ]);
    if missing.is_empty() {
        eprintln!("xtask setup: pulseaudio and its tools present");
        return Ok(());
    }
    install_debs(&missing)
}

/// espeak-ng, which speaks the voice-turn tests' user (offline, deterministic).
fn ensure_speech() -> anyhow::Result<()> {
    let missing = missing_debs(&[("/usr/bin/espeak-ng", "espeak-ng")]);
    if missing.is_empty() {
        eprintln!("xtask setup: espeak-ng present");
        return Ok(());
    }
    install_debs(&missing)
}

/// The Debian packages of `debs` (binary, package) whose binary is missing.
fn missing_debs<'a>(debs: &[(&str, &'a str)]) -> Vec<&'a str> {
    debs.iter()
        .filter(|(bin, _)| !Path::new(bin).is_file())
        .map(|(_, deb)| *deb)
        .collect()
}

/// `apt-get install` of `debs`, as root (else an error naming them).
fn install_debs(debs: &[&str]) -> anyhow::Result<()> {
    if !is_root() {
        bail!(
            "missing {}; install them as root with apt-get",
            debs.join(", ")
        );
    }
    eprintln!("xtask setup: installing Debian's {}", debs.join(", "));
    cmd::run(Command::new("apt-get").arg("update").arg("-qq"))?;
    cmd::run(
        Command::new("apt-get")
            .args(["install", "-y", "-qq"])
            .args(debs)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

fn ensure_firefox_and_webkit() -> anyhow::Result<()> {
    let debs = [
        ("/usr/bin/firefox-esr", "firefox-esr"),
        ("/usr/bin/WebKitWebDriver", "webkit2gtk-driver"),
        // A virtual display: `ttfx run --browser webkit` and the e2e harness start one
        // when DISPLAY is unset.
        ("/usr/bin/Xvfb", "xvfb"),
    ];
    let missing = missing_debs(&debs);
    if !missing.is_empty() {
        install_debs(&missing)?;
    } else {
        eprintln!("xtask setup: firefox-esr, WebKitWebDriver and Xvfb present");
    }
    if installed_version("geckodriver").is_some_and(|v| v == GECKODRIVER_VERSION) {
        eprintln!("xtask setup: geckodriver {GECKODRIVER_VERSION} present");
        return Ok(());
    }
    eprintln!(
        "xtask setup: installing geckodriver {GECKODRIVER_VERSION} (a few minutes on 2 cores)"
    );
    cmd::run(Command::new("cargo").args([
        "install",
        "--locked",
        "geckodriver",
        "--version",
        GECKODRIVER_VERSION,
    ]))
}

fn ensure_cargo_fuzz() -> anyhow::Result<()> {
    if installed_version("cargo-fuzz").is_some_and(|v| v == CARGO_FUZZ_VERSION) {
        eprintln!("xtask setup: cargo-fuzz {CARGO_FUZZ_VERSION} present");
        return Ok(());
    }
    eprintln!(
        "xtask setup: installing cargo-fuzz {CARGO_FUZZ_VERSION} (about 2 minutes on 2 cores)"
    );
    cmd::run(Command::new("cargo").args([
        "install",
        "--locked",
        "cargo-fuzz",
        "--version",
        CARGO_FUZZ_VERSION,
    ]))
}

fn ensure_wasm_target() -> anyhow::Result<()> {
    let installed = cmd::output(Command::new("rustup").args(["target", "list", "--installed"]))
        .context("cannot ask rustup for installed targets (is rustup on PATH?)")?;
    if installed.lines().any(|l| l.trim() == WASM_TARGET) {
        eprintln!("xtask setup: {WASM_TARGET} target present");
        return Ok(());
    }
    eprintln!("xtask setup: adding the {WASM_TARGET} target");
    cmd::run(Command::new("rustup").args(["target", "add", WASM_TARGET]))
}

fn ensure_wasm_bindgen_cli() -> anyhow::Result<()> {
    let want = pinned_wasm_bindgen()?;
    // `wasm-bindgen --version` prints "wasm-bindgen 0.2.130"; the test runner comes with it.
    let have = installed_version("wasm-bindgen");
    let runner = tool_path("wasm-bindgen-test-runner").is_some();
    if have.as_deref() == Some(want.as_str()) && runner {
        eprintln!("xtask setup: wasm-bindgen-cli {want} present");
        return Ok(());
    }
    eprintln!(
        "xtask setup: installing wasm-bindgen-cli {want} (found {}; about 2 minutes on 2 cores)",
        have.as_deref().unwrap_or("none")
    );
    // Not --locked: the CLI's own lockfile names versions this registry snapshot lacks.
    cmd::run(Command::new("cargo").args([
        "install",
        "wasm-bindgen-cli",
        "--version",
        &want,
        "--force",
    ]))
}

fn ensure_trunk() -> anyhow::Result<()> {
    let have = installed_version("trunk");
    if have.as_deref() == Some(TRUNK_VERSION) {
        eprintln!("xtask setup: trunk {TRUNK_VERSION} present");
        return Ok(());
    }
    eprintln!(
        "xtask setup: installing trunk {TRUNK_VERSION} (found {}; about 7 minutes on 2 cores)",
        have.as_deref().unwrap_or("none")
    );
    // --locked: without it a newer dependency breaks the build on this toolchain.
    cmd::run(Command::new("cargo").args([
        "install",
        "trunk",
        "--version",
        TRUNK_VERSION,
        "--locked",
        "--force",
    ]))
}

fn ensure_chromium() -> anyhow::Result<()> {
    if Path::new(CHROMIUM).is_file() && Path::new(CHROMEDRIVER).is_file() {
        let version = cmd::output(Command::new(CHROMIUM).arg("--version")).unwrap_or_default();
        eprintln!("xtask setup: {} and chromedriver present", version.trim());
        return Ok(());
    }
    let install = "apt-get update && apt-get install -y chromium chromium-driver";
    if !is_root() {
        bail!("Chromium and chromedriver are missing; install them as root with:\n  {install}");
    }
    eprintln!("xtask setup: installing Debian's chromium and chromium-driver");
    cmd::run(Command::new("apt-get").arg("update").arg("-qq"))?;
    cmd::run(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "chromium", "chromium-driver"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    if !Path::new(CHROMEDRIVER).is_file() {
        bail!("apt-get installed chromium-driver but {CHROMEDRIVER} is still missing");
    }
    Ok(())
}

fn ensure_node() -> anyhow::Result<()> {
    if tool_path("node").is_none() || tool_path("npm").is_none() {
        let install = "apt-get update && apt-get install -y nodejs npm";
        if !is_root() {
            bail!("Node.js and npm are missing; install them as root with:\n  {install}");
        }
        eprintln!("xtask setup: installing Debian's nodejs and npm");
        cmd::run(Command::new("apt-get").arg("update").arg("-qq"))?;
        cmd::run(
            Command::new("apt-get")
                .args(["install", "-y", "-qq", "nodejs", "npm"])
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )?;
    }
    Ok(())
}

/// `npm install NAME@VERSION` into its own prefix under `~/.cache/ttfx`, unless `bin` (the
/// tool's entry point, `PREFIX/node_modules/NAME/bin/…`) is already there.
fn ensure_npm_package(name: &str, version: &str, bin: &Path) -> anyhow::Result<()> {
    if bin.is_file() {
        eprintln!("xtask setup: {name} {version} present");
        return Ok(());
    }
    ensure_node()?;
    let prefix = bin
        .ancestors()
        .nth(4)
        .with_context(|| format!("the {name} install folder has no parent"))?;
    eprintln!(
        "xtask setup: installing {name} {version} into {}",
        prefix.display()
    );
    std::fs::create_dir_all(prefix)
        .with_context(|| format!("cannot create {}", prefix.display()))?;
    cmd::run(
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(prefix)
            .arg(format!("{name}@{version}")),
    )?;
    if !bin.is_file() {
        bail!("npm installed {name} but {} is missing", bin.display());
    }
    Ok(())
}

/// Each React chat UI fixture's libraries (npm name, pinned version), and the prefix
/// they go to.
fn chat_ui_deps() -> [(std::path::PathBuf, Vec<(&'static str, &'static str)>); 2] {
    [
        (
            paths::chat_ui_deps(),
            vec![
                ("react", REACT_VERSION),
                ("react-dom", REACT_VERSION),
                ("openai", OPENAI_VERSION),
            ],
        ),
        (
            paths::ai_sdk_chat_ui_deps(),
            vec![
                ("react", REACT_VERSION),
                ("react-dom", REACT_VERSION),
                ("ai", AI_SDK_VERSION),
                (
                    "@ai-sdk/openai-compatible",
                    AI_SDK_OPENAI_COMPATIBLE_VERSION,
                ),
                ("zod", ZOD_VERSION),
            ],
        ),
    ]
}

/// The test runners of docs/qa.md (npm name, pinned version).
fn qa_runners() -> [(&'static str, &'static str); 3] {
    [
        ("@playwright/test", PLAYWRIGHT_VERSION),
        ("playwright-core", PLAYWRIGHT_VERSION),
        ("puppeteer-core", PUPPETEER_CORE_VERSION),
    ]
}

/// The test runners, without a browser: both packages would fetch one of their own at
/// install time unless told not to, and the tests must use Debian's Chromium (nothing
/// downloads but from a package registry).
fn ensure_qa_runners() -> anyhow::Result<()> {
    ensure_npm_libraries_with(
        &paths::qa_runner_deps(),
        &qa_runners(),
        &[
            ("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"),
            ("PUPPETEER_SKIP_DOWNLOAD", "1"),
        ],
    )
}

/// `npm install` of `packages` (name, version) into `prefix` in one go, unless each is
/// there already (the prefix's name carries the versions).
pub fn ensure_npm_libraries(prefix: &Path, packages: &[(&str, &str)]) -> anyhow::Result<()> {
    ensure_npm_libraries_with(prefix, packages, &[])
}

/// [`ensure_npm_libraries`] with `env` set for `npm install` (and its packages' install
/// scripts).
fn ensure_npm_libraries_with(
    prefix: &Path,
    packages: &[(&str, &str)],
    env: &[(&str, &str)],
) -> anyhow::Result<()> {
    let specs: Vec<String> = packages
        .iter()
        .map(|(name, version)| format!("{name}@{version}"))
        .collect();
    let present = packages.iter().all(|(name, _)| {
        prefix
            .join("node_modules")
            .join(name)
            .join("package.json")
            .is_file()
    });
    if present {
        eprintln!("xtask setup: {} present", specs.join(", "));
        return Ok(());
    }
    ensure_node()?;
    eprintln!(
        "xtask setup: installing {} into {}",
        specs.join(", "),
        prefix.display()
    );
    std::fs::create_dir_all(prefix)
        .with_context(|| format!("cannot create {}", prefix.display()))?;
    cmd::run(
        Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(prefix)
            .args(&specs)
            .envs(env.iter().copied()),
    )
}

/// The `wasm-bindgen = "=X"` pin of the root manifest.
pub fn pinned_wasm_bindgen() -> anyhow::Result<String> {
    let manifest = paths::root().join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    parse_pin(&text, "wasm-bindgen")
        .with_context(|| format!("{} has no `wasm-bindgen = \"=X\"` pin", manifest.display()))
}

fn parse_pin(manifest: &str, name: &str) -> Option<String> {
    manifest.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        if key.trim() != name {
            return None;
        }
        let value = value.trim().strip_prefix("\"=")?.strip_suffix('"')?;
        Some(value.to_owned())
    })
}

/// The second word of `<tool> --version`, e.g. "0.21.14" from "trunk 0.21.14".
fn installed_version(tool: &str) -> Option<String> {
    let out = cmd::output(Command::new(tool_path(tool)?).arg("--version"))?;
    out.split_whitespace().nth(1).map(str::to_owned)
}

/// A tool on PATH, or in cargo's bin folder when that is not on PATH yet (fresh machines).
pub fn tool_path(tool: &str) -> Option<std::path::PathBuf> {
    which::which(tool)
        .or_else(|_| which::which_in(tool, Some(paths::cargo_bin()), paths::root()))
        .ok()
}

fn is_root() -> bool {
    cmd::output(Command::new("id").arg("-u")).as_deref() == Some("0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_exact_pin() {
        let manifest = "[workspace.dependencies]\nwasm-bindgen-futures = \"=0.4.80\"\nwasm-bindgen = \"=0.2.130\"\n";
        assert_eq!(
            parse_pin(manifest, "wasm-bindgen").as_deref(),
            Some("0.2.130")
        );
    }

    #[test]
    fn a_caret_requirement_is_not_a_pin() {
        assert_eq!(parse_pin("wasm-bindgen = \"0.2\"\n", "wasm-bindgen"), None);
    }

    #[test]
    fn the_lab_installs_no_browser_driver_or_node() {
        // A browser, a WebDriver or Node.js (TypeScript brings it): apt-get, so root.
        let heavy: Vec<&Tool> = LAB_TOOLS
            .iter()
            .filter(|t| {
                matches!(
                    t,
                    Tool::Chromium
                        | Tool::SoundServer
                        | Tool::Speech
                        | Tool::Node
                        | Tool::TypeScript
                        | Tool::Vite
                        | Tool::ChatUiDeps
                        | Tool::QaRunners
                        | Tool::Esbuild
                        | Tool::Binaryen
                        | Tool::OtherBrowsers
                )
            })
            .collect();
        assert!(heavy.is_empty(), "{heavy:?}");
        // What Trunk needs to build the page is there.
        for tool in [Tool::WasmTarget, Tool::WasmBindgenCli, Tool::Trunk] {
            assert!(LAB_TOOLS.contains(&tool), "{tool:?}");
        }
    }

    /// Each React fixture's package.json says what setup installs into its prefix (the
    /// same libraries, at the same versions, nothing more), so the app an e2e test builds
    /// is the one described.
    #[test]
    fn the_react_chat_uis_pin_what_setup_installs() {
        let [(openai_prefix, openai), (ai_sdk_prefix, ai_sdk)] = chat_ui_deps();
        for (fixture, prefix, packages) in [
            ("react-openai", openai_prefix, openai),
            ("react-ai-sdk", ai_sdk_prefix, ai_sdk),
        ] {
            let path = crate::paths::root()
                .join("e2e/chat-uis")
                .join(fixture)
                .join("package.json");
            let text = std::fs::read_to_string(path).unwrap();
            let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
            let deps = manifest["dependencies"].as_object().unwrap();
            let pinned: std::collections::BTreeMap<&str, &str> = deps
                .iter()
                .map(|(name, version)| (name.as_str(), version.as_str().unwrap()))
                .collect();
            let installed: std::collections::BTreeMap<&str, &str> =
                packages.iter().copied().collect();
            assert_eq!(pinned, installed, "{fixture}");
            // The prefix is named by every version it holds, so a new pin installs anew.
            let name = prefix.file_name().unwrap().to_string_lossy().into_owned();
            for (_, version) in &packages {
                assert!(name.contains(version), "{fixture}: {name}");
            }
        }
        assert!(TEST_TOOLS.contains(&Tool::ChatUiDeps));
    }

    /// The test runners' prefix is named by the versions it holds (a new pin installs
    /// anew), `cargo xtask test` installs it, and e2e/playwright/package.json pins the same.
    #[test]
    fn the_qa_runners_prefix_and_the_e2e_project_name_the_pins() {
        let name = crate::paths::qa_runner_deps()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for (_, version) in qa_runners() {
            assert!(name.contains(version), "{name}");
        }
        assert!(TEST_TOOLS.contains(&Tool::QaRunners));
        // The e2e project lists the same pins (its helper finds the prefix by them).
        let path = crate::paths::root().join("e2e/playwright/package.json");
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let listed: std::collections::BTreeMap<&str, &str> = manifest["devDependencies"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(name, version)| (name.as_str(), version.as_str().unwrap()))
            .collect();
        assert_eq!(listed, qa_runners().into_iter().collect());
    }

    /// The e2e tests run in all three engines, so `test` and plain `setup` install them.
    #[test]
    fn test_and_setup_install_every_engine() {
        for tool in [
            Tool::WasmTarget,
            Tool::WasmBindgenCli,
            Tool::Trunk,
            Tool::Chromium,
            Tool::OtherBrowsers,
            Tool::TypeScript,
        ] {
            assert!(TEST_TOOLS.contains(&tool), "{tool:?}");
        }
        assert_eq!(SetupArgs::default().browsers, Browsers::All);
    }

    /// First audio against the sound server runs in the e2e tests (Chromium too, so
    /// also with `--browsers chromium`) and in `bench fidelity`.
    #[test]
    fn test_setup_and_bench_install_the_sound_server() {
        assert!(TEST_TOOLS.contains(&Tool::SoundServer));
        assert!(BENCH_TOOLS.contains(&Tool::SoundServer));
        assert!(TEST_TOOLS.contains(&Tool::Speech));
        assert!(BENCH_TOOLS.contains(&Tool::Speech));
        let args = SetupArgs {
            browsers: Browsers::Chromium,
        };
        assert!(setup_tools(&args).contains(&Tool::SoundServer));
        assert!(!setup_tools(&args).contains(&Tool::OtherBrowsers));
    }

    #[test]
    fn only_missing_packages_are_installed() {
        let debs = [("/bin/sh", "dash"), ("/nonexistent/ttfx-tool", "ttfx-deb")];
        assert_eq!(missing_debs(&debs), vec!["ttfx-deb"]);
    }

    #[test]
    fn the_workspace_pins_wasm_bindgen() {
        let pin = pinned_wasm_bindgen().unwrap();
        assert!(pin.starts_with("0.2."), "{pin}");
    }
}
