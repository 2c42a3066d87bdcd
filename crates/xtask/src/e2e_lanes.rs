//! The e2e stage's test binaries, run side by side (#32: warm `cargo xtask test` under 10
//! minutes on 2 cores). `cargo test` runs one test binary after another, and most of an
//! e2e test is waiting: for a browser to start, a page to load, an injected delay. So the
//! binaries are built once (`--no-run`), then run in `lanes` at once, the longest first;
//! each one's output is printed whole when it ends, so two never interleave.
//!
//! What keeps this honest:
//! - Every e2e test holds the machine lock (`ttfx_e2e::machine`), a file lock every
//!   process shares: a test written `alone` still runs with nothing beside it, in any
//!   binary.
//! - The binaries that measure the probe against independent witnesses with tight error
//!   bars ([`SOLO`]) run after the lanes, one at a time, as before: their bounds were set
//!   on a machine running one binary.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::Context;

use crate::cmd::{self, TestCounts, TestsFailed};

/// Binaries run alone after the lanes: the witnesses' error bars (docs/fidelity.md).
pub const SOLO: &[&str] = &["audio_truth", "paint_truth", "first_byte_truth"];

/// The longest binaries first (measured: probe 181 s, inject 116, run_cmd 115, lab_page
/// 54, chat_uis 35, bundler 10 on the 2-core machine), so the lanes end together; the
/// rest follow in the order cargo built them.
const LONGEST_FIRST: &[&str] = &[
    "probe", "inject", "run_cmd", "lab_page", "chat_uis", "bundler",
];

/// How many binaries run at once: `$TTFX_E2E_LANES`, else 2.
pub const LANES_ENV: &str = "TTFX_E2E_LANES";

/// One test executable cargo built.
#[derive(Debug, Clone, PartialEq)]
pub struct TestBinary {
    /// The target's name (`probe` for tests/probe.rs, `ttfx_e2e` for the library).
    pub name: String,
    pub path: PathBuf,
}

/// Builds `package`'s test binaries through `cargo` (a `cargo test` command without
/// its subcommand's run) and returns them.
pub fn build(mut cargo_test: Command) -> anyhow::Result<Vec<TestBinary>> {
    cargo_test.args(["--no-run", "--message-format=json-render-diagnostics"]);
    let line = cmd::describe(&cargo_test);
    eprintln!("$ {line}");
    let out = cargo_test
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start `{line}`"))?;
    if !out.status.success() {
        anyhow::bail!("`{line}` failed ({})", out.status);
    }
    Ok(parse_artifacts(&String::from_utf8_lossy(&out.stdout)))
}

/// The test executables in cargo's JSON messages.
fn parse_artifacts(json_lines: &str) -> Vec<TestBinary> {
    json_lines
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| {
            Some(TestBinary {
                name: m["target"]["name"].as_str()?.to_owned(),
                path: PathBuf::from(m["executable"].as_str()?),
            })
        })
        .collect()
}

/// The order the binaries run in: the lanes' (longest first), then the solo ones.
pub fn plan(binaries: Vec<TestBinary>) -> (Vec<TestBinary>, Vec<TestBinary>) {
    let (mut solo, mut lanes): (Vec<_>, Vec<_>) = binaries
        .into_iter()
        .partition(|b| SOLO.contains(&b.name.as_str()));
    let rank = |b: &TestBinary| {
        LONGEST_FIRST
            .iter()
            .position(|n| *n == b.name)
            .unwrap_or(LONGEST_FIRST.len())
    };
    lanes.sort_by_key(rank);
    solo.sort_by_key(|b| SOLO.iter().position(|n| *n == b.name));
    (lanes, solo)
}

/// What one binary did.
struct Ran {
    name: String,
    seconds: f64,
    counts: TestCounts,
    ok: bool,
}

/// Runs `binaries` in `lanes` at once with `env`, in `dir` (the package's folder, as
/// cargo runs them), then `solo` one at a time; every binary runs even after one fails.
pub fn run(
    lanes: usize,
    binaries: Vec<TestBinary>,
    solo: Vec<TestBinary>,
    dir: &Path,
    env: &[(OsString, OsString)],
) -> anyhow::Result<TestCounts> {
    let queue = Mutex::new(binaries.into_iter().collect::<VecDeque<_>>());
    let ran = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..lanes.max(1) {
            scope.spawn(|| {
                while let Some(b) = queue.lock().map(|mut q| q.pop_front()).ok().flatten() {
                    let r = run_one(&b, dir, env);
                    ran.lock().map(|mut v| v.push(r)).ok();
                }
            });
        }
    });
    let mut ran = ran.into_inner().unwrap_or_default();
    for b in &solo {
        ran.push(run_one(b, dir, env));
    }
    let mut counts = TestCounts::default();
    let mut failed = Vec::new();
    for r in &ran {
        eprintln!(
            "xtask e2e: {:<20} {:>6.1} s  {} passed, {} failed, {} ignored{}",
            r.name,
            r.seconds,
            r.counts.passed,
            r.counts.failed,
            r.counts.ignored,
            if r.ok { "" } else { "  FAILED" }
        );
        counts.passed += r.counts.passed;
        counts.failed += r.counts.failed;
        counts.ignored += r.counts.ignored;
        if !r.ok {
            failed.push(r.name.clone());
        }
    }
    if !failed.is_empty() {
        return Err(TestsFailed {
            command: format!("e2e test binaries {}", failed.join(", ")),
            status: "failed".into(),
            counts,
        }
        .into());
    }
    Ok(counts)
}

/// Runs one binary, its output captured and printed whole at its end.
fn run_one(b: &TestBinary, dir: &Path, env: &[(OsString, OsString)]) -> Ran {
    let start = Instant::now();
    let out = Command::new(&b.path)
        .current_dir(dir)
        .env("CARGO_MANIFEST_DIR", dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output();
    let seconds = start.elapsed().as_secs_f64();
    let (stdout, stderr, ok) = match &out {
        Ok(o) => (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
            o.status.success(),
        ),
        Err(e) => (
            String::new(),
            format!("cannot start {}: {e}", b.path.display()),
            false,
        ),
    };
    let mut counts = TestCounts::default();
    for line in stdout.lines() {
        if let Some(c) = cmd::parse_test_result(line) {
            counts.passed += c.passed;
            counts.failed += c.failed;
            counts.ignored += c.ignored;
        }
    }
    // One binary's output at a time: the lock is stdout's own.
    let lock = std::io::stdout().lock();
    println!(
        "     Running {} ({}) [{seconds:.1} s]",
        b.name,
        b.path.display()
    );
    print!("{stdout}");
    eprint!("{stderr}");
    drop(lock);
    Ran {
        name: b.name.clone(),
        seconds,
        counts,
        ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(name: &str) -> TestBinary {
        TestBinary {
            name: name.into(),
            path: PathBuf::from(format!("/t/{name}-1")),
        }
    }

    #[test]
    fn cargos_messages_give_the_test_executables_only() {
        let lines = r#"{"reason":"compiler-artifact","profile":{"test":true},"target":{"name":"probe","kind":["test"]},"executable":"/t/probe-abc"}
{"reason":"compiler-artifact","profile":{"test":false},"target":{"name":"ttfx_e2e","kind":["lib"]},"executable":null}
{"reason":"build-finished","success":true}
not json
{"reason":"compiler-artifact","profile":{"test":true},"target":{"name":"ttfx_e2e","kind":["lib"]},"executable":"/t/ttfx_e2e-1"}"#;
        assert_eq!(
            parse_artifacts(lines),
            [
                TestBinary {
                    name: "probe".into(),
                    path: "/t/probe-abc".into()
                },
                TestBinary {
                    name: "ttfx_e2e".into(),
                    path: "/t/ttfx_e2e-1".into()
                },
            ]
        );
    }

    #[test]
    fn the_longest_run_first_and_the_witnesses_alone_last() {
        let (lanes, solo) = plan(
            [
                "ttfx_e2e",
                "paint_truth",
                "bundler",
                "probe",
                "audio_truth",
                "run_cmd",
            ]
            .map(bin)
            .to_vec(),
        );
        let names = |v: &[TestBinary]| v.iter().map(|b| b.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&lanes), ["probe", "run_cmd", "bundler", "ttfx_e2e"]);
        assert_eq!(names(&solo), ["audio_truth", "paint_truth"]);
    }
}
