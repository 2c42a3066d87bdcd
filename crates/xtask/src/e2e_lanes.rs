//! The e2e stage's test binaries, run side by side (#32: warm `cargo xtask test` under 10
//! minutes on 2 cores). `cargo test` runs one test binary after another, and most of an
//! e2e test is waiting: for a browser to start, a page to load, an injected delay. So the
//! binaries are built once (`--no-run`), then run in `lanes` at once, the longest first;
//! each one's output is printed whole when it ends, so two never interleave.
//!
//! What keeps this honest:
//! - Every e2e test that starts a browser holds the machine lock (`ttfx_e2e::machine`),
//!   a file lock every process shares (the `engines!` tests, the lab page's, inject's,
//!   bundler's, the QA runners', run_cmd's): a test or step written `alone` (timing
//!   bounds an idle machine's: the CSP test's 4 ms slices, every inject test's turns)
//!   still runs with no other binary's browsers beside it. Only `package_types` (tsc, no
//!   browser) takes none.
//! - The binaries that measure the probe against independent witnesses with tight error
//!   bars ([`SOLO`]) run after the lanes, one at a time, as before: their bounds were set
//!   on a machine running one binary.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// How long one binary may run before it is killed and counted failed:
/// `$TTFX_E2E_BINARY_TIMEOUT_S`, else 900 s. The longest takes about 240 s on the 2-core
/// machine; a hung one must fail the stage with the names of its unfinished tests (libtest
/// prints "has been running for over 60 seconds") rather than run into CI's own limit,
/// which prints nothing of it.
pub const BINARY_TIMEOUT_ENV: &str = "TTFX_E2E_BINARY_TIMEOUT_S";

fn binary_timeout() -> Duration {
    std::env::var(BINARY_TIMEOUT_ENV)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(Duration::from_secs(900), Duration::from_secs)
}

/// Runs one binary, its output captured and printed whole at its end.
fn run_one(b: &TestBinary, dir: &Path, env: &[(OsString, OsString)]) -> Ran {
    let start = Instant::now();
    let limit = binary_timeout();
    let (stdout, mut stderr, ok) = match run_captured(b, dir, env, limit) {
        Ok((stdout, stderr, Finished::Exited(ok))) => (stdout, stderr, ok),
        Ok((stdout, mut stderr, Finished::TimedOut)) => {
            stderr.push_str(&format!(
                "xtask e2e: {} still running after {} s ({BINARY_TIMEOUT_ENV}): killed with \
                 its process group (its browsers and drivers); the tests above without a \
                 result are the ones that hung\n",
                b.name,
                limit.as_secs()
            ));
            (stdout, stderr, false)
        }
        Err(e) => (
            String::new(),
            format!("cannot run {}: {e:#}", b.path.display()),
            false,
        ),
    };
    if !stderr.is_empty() && !stderr.ends_with('\n') {
        stderr.push('\n');
    }
    let seconds = start.elapsed().as_secs_f64();
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

enum Finished {
    Exited(bool),
    TimedOut,
}

/// Runs `b` in a process group of its own with its output in files (a pipe that nobody
/// reads would block it), waiting at most `limit`; on time, the whole group is killed so
/// no browser outlives it.
fn run_captured(
    b: &TestBinary,
    dir: &Path,
    env: &[(OsString, OsString)],
    limit: Duration,
) -> anyhow::Result<(String, String, Finished)> {
    use std::os::unix::process::CommandExt;
    let out_dir =
        std::env::temp_dir().join(format!("ttfx-e2e-out-{}-{}", std::process::id(), b.name));
    std::fs::create_dir_all(&out_dir)?;
    let (out_path, err_path) = (out_dir.join("stdout"), out_dir.join("stderr"));
    let mut child = Command::new(&b.path)
        .current_dir(dir)
        .env("CARGO_MANIFEST_DIR", dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {}", b.path.display()))?;
    let deadline = Instant::now() + limit;
    let finished = loop {
        if let Some(status) = child.try_wait()? {
            break Finished::Exited(status.success());
        }
        if Instant::now() >= deadline {
            // The drivers run in process groups of their own (ttfx-webdriver), and the
            // binary killed cannot run their Drop: every group below it goes, found
            // before the kill (orphans move to init).
            let mut groups = descendant_groups(child.id());
            groups.insert(child.id());
            for group in groups {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{group}")])
                    .status();
            }
            let _ = child.wait();
            break Finished::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    let (stdout, stderr) = (read(&out_path), read(&err_path));
    let _ = std::fs::remove_dir_all(&out_dir);
    Ok((stdout, stderr, finished))
}

/// The process groups of every process below `root`, from /proc (Linux: the machines this
/// runs on).
fn descendant_groups(root: u32) -> std::collections::BTreeSet<u32> {
    // (pid, parent, group) of every process: /proc/PID/stat's fields 4 and 5, after the
    // command's parenthesis (which may itself hold spaces and parentheses).
    let table: Vec<(u32, u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let mut rest = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
            let parent = rest.nth(1)?.parse().ok()?;
            let group = rest.next()?.parse().ok()?;
            Some((pid, parent, group))
        })
        .collect();
    let mut below = vec![root];
    let mut groups = std::collections::BTreeSet::new();
    while let Some(p) = below.pop() {
        for &(pid, parent, group) in &table {
            if parent == p {
                below.push(pid);
                groups.insert(group);
            }
        }
    }
    groups
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

    /// A process's state letter, `None` once it is gone.
    fn state(pid: &str) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat[stat.rfind(')')? + 1..].trim_start().chars().next()
    }

    #[test]
    fn a_hung_binary_is_killed_on_time_with_the_groups_it_started() {
        let dir = std::env::temp_dir().join(format!("xtask-hung-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("hung");
        // A driver's way: a child in a group of its own (setsid), then the binary hangs.
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nsetsid sleep 300 &\necho $! > {}/driver\necho 'test t has been running for over 60 seconds'\nsleep 300\n",
                dir.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let b = TestBinary {
            name: "hung".into(),
            path: script,
        };
        let start = Instant::now();
        let (stdout, _, finished) = run_captured(&b, &dir, &[], Duration::from_secs(2)).unwrap();
        let took = start.elapsed();
        assert!(matches!(finished, Finished::TimedOut));
        // The limit, plus one 200 ms poll and the kill.
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(stdout.contains("has been running"), "{stdout}");
        let driver = std::fs::read_to_string(dir.join("driver")).unwrap();
        let driver = driver.trim();
        // Killed: gone, or a zombie waiting for an init that does not reap.
        let deadline = Instant::now() + Duration::from_secs(2);
        while matches!(state(driver), Some(c) if c != 'Z') && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            matches!(state(driver), None | Some('Z')),
            "{driver}: {:?}",
            state(driver)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_binary_that_ends_gives_its_status_and_output() {
        let dir = std::env::temp_dir().join(format!("xtask-ends-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("ends");
        std::fs::write(&script, "#!/bin/sh\necho out\necho err >&2\nexit 3\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let b = TestBinary {
            name: "ends".into(),
            path: script,
        };
        let (stdout, stderr, finished) =
            run_captured(&b, &dir, &[], Duration::from_secs(30)).unwrap();
        assert!(matches!(finished, Finished::Exited(false)));
        assert_eq!((stdout.as_str(), stderr.as_str()), ("out\n", "err\n"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
