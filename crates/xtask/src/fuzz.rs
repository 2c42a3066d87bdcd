//! `cargo xtask fuzz`: every cargo-fuzz target, for minutes each; and the short smoke of
//! each that `cargo xtask test` runs.
//!
//! The targets are built on the stable toolchain a fresh machine has: without a sanitizer
//! (`-s none`) cargo-fuzz passes only stable flags (sanitizer coverage through LLVM
//! arguments), and our crates hold no `unsafe` for AddressSanitizer to watch. `--asan`
//! builds with it anyway (it needs `-Zsanitizer`, so the build runs with
//! `RUSTC_BOOTSTRAP=1`). Debug assertions and overflow checks stay on: an overflow on
//! hostile input is a bug even where the release build would wrap.

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;

use crate::cmd::{self, TestCounts};
use crate::paths;
use crate::setup::{self, Tool};

/// One cargo-fuzz target: the fuzz workspace that holds it and the seed folders its
/// corpus starts from (read only; libFuzzer reads them recursively).
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub name: &'static str,
    /// The fuzz workspace, relative to the workspace root.
    pub fuzz_dir: &'static str,
    pub seeds: &'static [&'static str],
}

/// Every fuzz target of the project. A test below checks that each `[[bin]]` of each
/// fuzz workspace is listed here, so a new target cannot be left out of the smoke.
pub const TARGETS: &[Target] = &[
    Target {
        name: "decode",
        fuzz_dir: "crates/ttfx-core/fuzz",
        seeds: &["crates/ttfx-core/testdata"],
    },
    Target {
        name: "server_timing",
        fuzz_dir: "crates/ttfx-core/fuzz",
        seeds: &[],
    },
    Target {
        name: "read",
        fuzz_dir: "crates/ttfx-import/fuzz",
        seeds: &["crates/ttfx-import/tests/fixtures"],
    },
    Target {
        name: "body",
        fuzz_dir: "crates/ttfx-collect/fuzz",
        seeds: &["crates/ttfx/tests/golden/inputs"],
    },
];

/// How long `cargo xtask test` fuzzes each target. Long enough for libFuzzer to get past
/// its seeds' first mutations (hundreds of thousands of runs for these readers), short
/// enough that the smoke adds about a minute to the suite.
pub const SMOKE_SECONDS: u32 = 15;

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Minutes per target.
    #[arg(long, default_value_t = 5.0)]
    pub minutes: f64,
    /// Only this target (default: every target).
    #[arg(long)]
    pub target: Option<String>,
    /// Build with AddressSanitizer (needs `RUSTC_BOOTSTRAP=1`, which this sets).
    #[arg(long)]
    pub asan: bool,
}

pub fn run(args: &FuzzArgs) -> anyhow::Result<()> {
    setup::ensure(&[Tool::CargoFuzz])?;
    if !(args.minutes.is_finite() && args.minutes > 0.0 && args.minutes <= 24.0 * 60.0) {
        bail!(
            "--minutes must be above 0 and at most a day, not {}",
            args.minutes
        );
    }
    let chosen: Vec<Target> = match &args.target {
        None => TARGETS.to_vec(),
        Some(name) => {
            let found: Vec<Target> = TARGETS.iter().copied().filter(|t| t.name == name).collect();
            if found.is_empty() {
                let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
                bail!("no fuzz target `{name}`; the targets: {}", names.join(", "));
            }
            found
        }
    };
    let seconds = (args.minutes * 60.0).round() as u32;
    let mut figures = Vec::new();
    for target in chosen {
        figures.push(fuzz(target, seconds.max(1), args.asan)?);
    }
    println!(
        "\n{:<14} {:>9} {:>12} {:>7} {:>7}",
        "target", "seconds", "runs", "cov", "ft"
    );
    for f in &figures {
        println!(
            "{:<14} {:>9.0} {:>12} {:>7} {:>7}",
            f.name, f.seconds, f.runs, f.coverage, f.features
        );
    }
    Ok(())
}

/// The smoke stage of `cargo xtask test`: each target for SMOKE_SECONDS; a crash fails it.
pub fn smoke() -> anyhow::Result<Option<TestCounts>> {
    // libFuzzer runs one thread: two targets at a time keep both cores busy, and the
    // smoke takes half as long (their builds share the fuzz target folder, so cargo
    // builds them one after the other).
    let queue = std::sync::Mutex::new(TARGETS.to_vec());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..SMOKE_LANES {
            scope.spawn(|| {
                while let Some(target) = queue.lock().ok().and_then(|mut q| q.pop()) {
                    let r = fuzz(target, SMOKE_SECONDS, false);
                    if let Ok(mut v) = results.lock() {
                        v.push(r);
                    }
                }
            });
        }
    });
    let mut passed = 0;
    for r in results.into_inner().unwrap_or_default() {
        let f = r?;
        eprintln!(
            "xtask fuzz: {} ran {} inputs in {:.0} s (cov {}), no crash",
            f.name, f.runs, f.seconds, f.coverage
        );
        passed += 1;
    }
    Ok(Some(TestCounts {
        passed,
        ..TestCounts::default()
    }))
}

/// Fuzz targets the smoke runs at once: one per core of the 2-core machines.
const SMOKE_LANES: usize = 2;

/// What one fuzzing session did, from libFuzzer's final lines.
#[derive(Debug, Default)]
struct Figures {
    name: &'static str,
    seconds: f64,
    runs: u64,
    coverage: u64,
    features: u64,
}

fn fuzz(target: Target, seconds: u32, asan: bool) -> anyhow::Result<Figures> {
    let root = paths::root();
    let fuzz_dir = root.join(target.fuzz_dir);
    // The lock file is committed; cargo-fuzz has no --locked, so check it is current first.
    cmd::run(
        Command::new("cargo")
            .args([
                "metadata",
                "--locked",
                "--format-version",
                "1",
                "--manifest-path",
            ])
            .arg(fuzz_dir.join("Cargo.toml"))
            .stdout(Stdio::null()),
    )?;
    // Kept between runs (a warm machine's corpus grows), outside the source tree.
    let corpus = paths::target().join("fuzz-corpus").join(target.name);
    let artifacts = paths::target().join("fuzz-artifacts").join(target.name);
    std::fs::create_dir_all(&corpus)
        .with_context(|| format!("cannot create {}", corpus.display()))?;
    std::fs::create_dir_all(&artifacts)
        .with_context(|| format!("cannot create {}", artifacts.display()))?;
    let mut c = Command::new("cargo");
    c.current_dir(&root)
        .env("CARGO_TARGET_DIR", paths::target().join("fuzz"))
        .args(["fuzz", "run", "--fuzz-dir"])
        .arg(&fuzz_dir)
        .args(["-s", if asan { "address" } else { "none" }])
        .arg(target.name)
        .arg(&corpus)
        .args(target.seeds.iter().map(|s| root.join(s)))
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-print_final_stats=1");
    if asan {
        c.env("RUSTC_BOOTSTRAP", "1");
    }
    let line = cmd::describe(&c);
    eprintln!("$ {line}");
    let start = Instant::now();
    let out = c
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("cannot start `{line}`"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // libFuzzer's report (the panic, the input's path) is at the end of its log.
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "fuzz target `{}` failed ({}); the input that did it is in {}:\n{}",
            target.name,
            out.status,
            artifacts.display(),
            tail.join("\n")
        );
    }
    let mut figures = parse_log(&log);
    figures.name = target.name;
    figures.seconds = start.elapsed().as_secs_f64();
    Ok(figures)
}

/// The last `cov:` / `ft:` status line and the `Done N runs` line of a libFuzzer log.
fn parse_log(log: &str) -> Figures {
    let field = |line: &str, key: &str| -> Option<u64> {
        let mut words = line.split_whitespace();
        words.find(|w| *w == key)?;
        words.next()?.parse().ok()
    };
    let mut f = Figures::default();
    for line in log.lines() {
        if let Some(c) = field(line, "cov:") {
            f.coverage = c;
        }
        if let Some(x) = field(line, "ft:") {
            f.features = x;
        }
        if let Some(rest) = line.strip_prefix("Done ") {
            f.runs = rest
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// The `[[bin]]` names of a fuzz workspace's manifest.
    fn manifest_targets(manifest: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(manifest).unwrap_or_default();
        let mut names = Vec::new();
        let mut in_bin = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                in_bin = line == "[[bin]]";
            } else if in_bin && let Some(value) = line.strip_prefix("name = ") {
                names.push(value.trim_matches('"').to_owned());
            }
        }
        names
    }

    /// Every fuzz workspace below `crates/` (a `fuzz/Cargo.toml` beside a crate).
    fn fuzz_manifests(root: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("fuzz").join("Cargo.toml"))
            .filter(|p| p.is_file())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn every_fuzz_target_of_every_fuzz_workspace_is_in_the_smoke() {
        let root = paths::root();
        let manifests = fuzz_manifests(&root);
        assert!(manifests.len() >= 3, "found only {manifests:?}");
        for manifest in manifests {
            let dir = manifest.parent().unwrap().strip_prefix(&root).unwrap();
            let bins = manifest_targets(&manifest);
            assert!(
                !bins.is_empty(),
                "{} declares no target",
                manifest.display()
            );
            for bin in bins {
                assert!(
                    TARGETS
                        .iter()
                        .any(|t| t.name == bin && Path::new(t.fuzz_dir) == dir),
                    "fuzz target `{bin}` of {} is not in xtask's TARGETS",
                    dir.display()
                );
            }
        }
        for t in TARGETS {
            for seed in t.seeds {
                assert!(
                    root.join(seed).is_dir(),
                    "{}: no seed folder {seed}",
                    t.name
                );
            }
        }
    }

    #[test]
    fn libfuzzer_figures_are_read_from_its_last_lines() {
        let log = "#2\tINITED cov: 10 ft: 11 corp: 1/1b exec/s: 0 rss: 30Mb\n\
                   #4096\tpulse  cov: 731 ft: 2002 corp: 90/3Kb lim: 43 exec/s: 2048 rss: 40Mb\n\
                   Done 1379620 runs in 31 second(s)\n";
        let f = parse_log(log);
        assert_eq!((f.runs, f.coverage, f.features), (1_379_620, 731, 2002));
    }
}
