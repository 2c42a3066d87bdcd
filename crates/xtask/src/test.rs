//! `cargo xtask test`: every check and test, one summary line per stage.
//!
//! Stages run in order and all of them run even after a failure, as does every test
//! binary within a stage (`--no-fail-fast`), so one report shows everything that is
//! wrong; the command fails if any stage fails or a test stage ran no test at all.

use std::process::Command;
use std::time::Instant;

use anyhow::bail;

use crate::cmd::{self, TestCounts};
use crate::lab::{build_lab_page, build_ttfx, path_with_cargo_bin};
use crate::{paths, setup};

/// A stage returns the tests it ran, or None for a check that runs no tests.
type TestStage = fn() -> anyhow::Result<Option<TestCounts>>;

struct Outcome {
    stage: &'static str,
    seconds: f64,
    result: anyhow::Result<Option<TestCounts>>,
    /// The disk's free bytes after the stage (and after any folder it freed).
    free_after: Option<u64>,
}

pub fn run() -> anyhow::Result<()> {
    let free_at_start = disk_free(&paths::root());
    setup::ensure(setup::TEST_TOOLS)?;
    let stages: [(&str, TestStage); 9] = [
        ("fmt", fmt),
        ("probe front bundle", probe_front_bundle),
        ("clippy native", clippy_native),
        ("clippy wasm", clippy_wasm),
        ("native tests", native_tests),
        ("fuzz smoke (every cargo-fuzz target)", crate::fuzz::smoke),
        ("wasm tests (headless Chromium)", wasm_tests),
        ("lab page build", lab_build),
        ("e2e tests (Chromium, Firefox, WebKit)", e2e_tests),
    ];
    let mut outcomes = Vec::new();
    let mut freed = Vec::new();
    for (stage, f) in stages {
        eprintln!("\n=== xtask test: {stage}");
        let start = Instant::now();
        let result = f().and_then(|counts| match counts {
            Some(c) if c.passed == 0 => bail!("ran no test"),
            other => Ok(other),
        });
        freed.extend(free_disk_after(stage));
        let seconds = start.elapsed().as_secs_f64();
        outcomes.push(Outcome {
            stage,
            seconds,
            result,
            free_after: disk_free(&paths::root()),
        });
    }

    eprintln!("\n=== xtask test: summary");
    let gb = |b: Option<u64>| b.map_or("?".to_owned(), |b| format!("{:.1} GB", b as f64 / 1e9));
    let (mut passed, mut failed, mut broken) = (0, 0, 0);
    for o in &outcomes {
        match &o.result {
            Ok(Some(c)) => {
                passed += c.passed;
                failed += c.failed;
                println!(
                    "xtask test: {:<32} ok   {} passed, {} ignored ({:.1} s; {} free)",
                    o.stage,
                    c.passed,
                    c.ignored,
                    o.seconds,
                    gb(o.free_after)
                );
            }
            Ok(None) => println!(
                "xtask test: {:<32} ok   ({:.1} s; {} free)",
                o.stage,
                o.seconds,
                gb(o.free_after)
            ),
            Err(e) => {
                broken += 1;
                if let Some(t) = e.downcast_ref::<cmd::TestsFailed>() {
                    passed += t.counts.passed;
                    // A runner that died without a result line still failed something.
                    failed += t.counts.failed.max(1);
                }
                println!(
                    "xtask test: {:<32} FAIL {e:#} ({:.1} s; {} free)",
                    o.stage,
                    o.seconds,
                    gb(o.free_after)
                );
            }
        }
    }
    // What an engine cannot do, one line per test and engine (see e2e/src/engines.rs).
    let missing = std::fs::read_to_string(e2e_missing_file()).unwrap_or_default();
    for line in missing.lines() {
        println!("xtask test: {line}");
    }
    // Disk is a CI limit too: a fresh run's target folder once outgrew a CI machine's disk.
    let target = paths::target();
    println!(
        "xtask test: target folder                    {:.1} GB ({})",
        folder_bytes(&target) as f64 / 1e9,
        target.display()
    );
    println!(
        "xtask test: disk free                        {} at the start, {} now",
        gb(free_at_start),
        gb(disk_free(&paths::root()))
    );
    for line in freed {
        println!("xtask test: {line}");
    }
    // The closing line CI reads: every test that ran, across all stages.
    println!("{passed} passed, {failed} failed");
    if broken > 0 {
        bail!("{broken} stage(s) failed");
    }
    Ok(())
}

/// Bytes of the files under `dir`, symbolic links not followed (0 for what cannot be read).
fn folder_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// Below this much free disk after a stage, the build folders that only finished stages
/// use are removed (the next run rebuilds them). The stages still to come need about
/// 2.5 GB (wasm tests 0.7, the lab page 0.6, e2e 1.0, measured on a fresh clone) and the
/// browsers' profiles up to 1.3 GB more while they run; 4 GB here was not enough for a
/// CI run of 2026-12-05, which filled its disk in the e2e stage. A development machine
/// with room to spare keeps the folders and its warm runs.
const LOW_DISK: u64 = 8_000_000_000;

/// The build folder only `stage` uses, under the target folder.
fn stage_only_folder(stage: &str) -> Option<&'static str> {
    match stage {
        s if s.starts_with("fuzz smoke") => Some("fuzz"),
        s if s.starts_with("wasm tests") => Some("wasm32-unknown-unknown/debug"),
        _ => None,
    }
}

/// After `stage`: when the disk is low, removes the folder only it uses; what was
/// removed, for the summary.
fn free_disk_after(stage: &str) -> Option<String> {
    let folder = paths::target().join(stage_only_folder(stage)?);
    let free = disk_free(&paths::root())?;
    if free >= LOW_DISK || !folder.is_dir() {
        return None;
    }
    let bytes = folder_bytes(&folder);
    std::fs::remove_dir_all(&folder).ok()?;
    Some(format!(
        "disk low ({:.1} GB free) after \"{stage}\": removed {} ({:.1} GB; the next run rebuilds it)",
        free as f64 / 1e9,
        folder.display(),
        bytes as f64 / 1e9
    ))
}

/// Bytes free to us on the file system holding `dir`, as `df` reports them (None when
/// it cannot say).
fn disk_free(dir: &std::path::Path) -> Option<u64> {
    let out = Command::new("df").arg("-Pk").arg(dir).output().ok()?;
    parse_df_available(&String::from_utf8_lossy(&out.stdout))
}

/// `df -Pk`'s "Available" column (the fourth, in KiB) of its one data line, in bytes.
fn parse_df_available(text: &str) -> Option<u64> {
    let line = text.lines().nth(1)?;
    let kib: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    Some(kib * 1024)
}

fn cargo() -> Command {
    let mut c = Command::new("cargo");
    c.current_dir(paths::root())
        .env("PATH", path_with_cargo_bin());
    crate::lab::without_incremental(&mut c);
    c
}

/// `cargo test` as every test stage runs it: the lock file as committed, and every test
/// binary run even after one fails.
fn cargo_test() -> Command {
    let mut c = cargo();
    c.args(["test", "--locked", "--no-fail-fast"]);
    c
}

fn fmt() -> anyhow::Result<Option<TestCounts>> {
    cmd::run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    Ok(None)
}

/// The native crates (the lab page is wasm-only).
const NATIVE: &[&str] = &["--workspace", "--exclude", "ttfx-lab"];
/// The wasm crates, built for the browser.
const WASM: &[&str] = &[
    "-p",
    "ttfx-probe",
    "-p",
    "ttfx-lab",
    "--target",
    "wasm32-unknown-unknown",
];

/// The committed `js/probe.js` is what the front's sources produce (probe_front.rs).
fn probe_front_bundle() -> anyhow::Result<Option<TestCounts>> {
    crate::probe_front::check()?;
    Ok(None)
}

fn clippy(selection: &[&str]) -> anyhow::Result<Option<TestCounts>> {
    cmd::run(
        cargo()
            .args(["clippy", "--locked", "--all-targets"])
            .args(selection)
            .args(["--", "-D", "warnings"]),
    )?;
    Ok(None)
}

fn clippy_native() -> anyhow::Result<Option<TestCounts>> {
    clippy(NATIVE)
}

fn clippy_wasm() -> anyhow::Result<Option<TestCounts>> {
    clippy(WASM)?;
    // The text-only probe the package ships at its root (see probe_pkg::VARIANTS).
    clippy(&[
        "-p",
        "ttfx-probe",
        "--no-default-features",
        "--target",
        "wasm32-unknown-unknown",
    ])
}

fn native_tests() -> anyhow::Result<Option<TestCounts>> {
    // The e2e crate needs the built page and probe package: its own stage runs it.
    let mut counts = cmd::run_tests(cargo_test().args(NATIVE).args(["--exclude", "ttfx-e2e"]))?;
    // The lab page's plain `#[test]`s (formatting, targets, import, summaries) touch no
    // DOM: they run natively, where the wasm runner would skip them.
    let lab = cmd::run_tests(cargo_test().args(["-p", "ttfx-lab", "--lib"]))?;
    counts.passed += lab.passed;
    counts.failed += lab.failed;
    counts.ignored += lab.ignored;
    Ok(Some(counts))
}

fn wasm_tests() -> anyhow::Result<Option<TestCounts>> {
    // The runner (from .cargo/config.toml) drives headless Chromium through chromedriver
    // with the flags in each crate's webdriver.json, written from ttfx-webdriver's list.
    crate::webdriver_json::write()?;
    cmd::run_tests(
        cargo_test()
            .args(WASM)
            .env("CHROMEDRIVER", setup::CHROMEDRIVER)
            .env("WASM_BINDGEN_TEST_TIMEOUT", "120"),
    )
    .map(Some)
}

fn lab_build() -> anyhow::Result<Option<TestCounts>> {
    // The release build, as `cargo xtask lab` ships it: release-only steps (wasm-opt, LTO)
    // have broken the page at init before, and only a browser loading it shows that.
    build_lab_page(true)?;
    Ok(None)
}

/// Where the e2e tests record what an engine cannot do (`ttfx_e2e::engines::missing`).
fn e2e_missing_file() -> std::path::PathBuf {
    paths::target().join("e2e-missing.txt")
}

fn e2e_tests() -> anyhow::Result<Option<TestCounts>> {
    let ttfx = build_ttfx()?;
    let probe_pkg = crate::probe_pkg::build()?;
    let tarball = crate::probe_pkg::pack(&probe_pkg)?;
    let missing = e2e_missing_file();
    let _ = std::fs::remove_file(&missing);
    // Every engine's driver is found as `ttfx run` finds it (geckodriver in cargo's bin
    // folder, WebKitWebDriver in /usr/bin); WebKit gets its own Xvfb per browser.
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
        ("TTFX_E2E_MISSING".into(), missing.into()),
        ("TTFX_BIN".into(), ttfx.into()),
        ("TTFX_DIST".into(), paths::lab_dist().into()),
        ("TTFX_PROBE_PKG".into(), probe_pkg.into()),
        ("TTFX_TSC".into(), paths::tsc().into()),
        ("TTFX_PROBE_TGZ".into(), tarball.into()),
        ("TTFX_VITE".into(), paths::vite().into()),
        ("CHROMEDRIVER".into(), setup::CHROMEDRIVER.into()),
        ("PATH".into(), path_with_cargo_bin()),
    ];
    // Built once, then run side by side (e2e_lanes.rs): `cargo test` runs one binary
    // after another, and most of an e2e test is waiting.
    let binaries = crate::e2e_lanes::build({
        let mut c = cargo_test();
        c.args(["-p", "ttfx-e2e"]);
        c
    })?;
    let (lanes, solo) = crate::e2e_lanes::plan(binaries);
    let lane_count = std::env::var(crate::e2e_lanes::LANES_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    crate::e2e_lanes::run(lane_count, lanes, solo, &paths::root().join("e2e"), &env).map(Some)
}

#[cfg(test)]
mod tests {
    use super::{disk_free, folder_bytes, parse_df_available, stage_only_folder};

    #[test]
    fn folder_bytes_sums_files_in_nested_folders() -> std::io::Result<()> {
        let dir = std::env::temp_dir().join(format!("xtask-folder-bytes-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/b"))?;
        std::fs::write(dir.join("top"), [0u8; 10])?;
        std::fs::write(dir.join("a/b/deep"), [0u8; 32])?;
        let bytes = folder_bytes(&dir);
        std::fs::remove_dir_all(&dir)?;
        assert_eq!(bytes, 42);
        assert_eq!(folder_bytes(&dir), 0, "a missing folder counts as empty");
        Ok(())
    }

    #[test]
    fn df_output_gives_the_available_bytes_and_nonsense_gives_none() {
        let df = "Filesystem     1024-blocks     Used Available Capacity Mounted on\n\
                  /dev/vda         263174212 83886080  12582912      88% /\n";
        assert_eq!(parse_df_available(df), Some(12_582_912 * 1024));
        assert_eq!(parse_df_available("Filesystem\n"), None);
        assert_eq!(parse_df_available("h\n/dev/x 1 2 many 3% /\n"), None);
        // And the real df answers for the folder this test runs in.
        assert!(disk_free(std::path::Path::new(".")).is_some_and(|b| b > 0));
    }

    #[test]
    fn only_stages_whose_build_nothing_later_uses_may_be_freed() {
        assert_eq!(
            stage_only_folder("fuzz smoke (every cargo-fuzz target)"),
            Some("fuzz")
        );
        assert_eq!(
            stage_only_folder("wasm tests (headless Chromium)"),
            Some("wasm32-unknown-unknown/debug")
        );
        // The lab page's release build and the native debug build are used by e2e.
        for stage in ["native tests", "lab page build", "clippy native"] {
            assert_eq!(stage_only_folder(stage), None, "{stage}");
        }
    }
}
