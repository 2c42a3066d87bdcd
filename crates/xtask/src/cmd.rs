//! Running child commands: echoed before they run, failures named after what ran.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// Describes a command the way a person would type it.
pub fn describe(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// Runs a command with inherited output; an error when it fails.
pub fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let line = describe(cmd);
    eprintln!("$ {line}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start `{line}`"))?;
    if !status.success() {
        bail!("`{line}` failed ({status})");
    }
    Ok(())
}

/// Runs a command and returns its trimmed stdout, or None when it cannot run or fails.
pub fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// What a test command reported.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TestCounts {
    pub passed: u64,
    pub failed: u64,
    pub ignored: u64,
}

/// Runs a test command, passing its output through while adding up every libtest
/// `test result:` line (cargo test and wasm-bindgen-test-runner both print them).
pub fn run_tests(cmd: &mut Command) -> anyhow::Result<TestCounts> {
    let line = describe(cmd);
    eprintln!("$ {line}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{line}`"))?;
    let mut counts = TestCounts::default();
    if let Some(stdout) = child.stdout.take() {
        for text in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("{text}");
            if let Some(c) = parse_test_result(&text) {
                counts.passed += c.passed;
                counts.failed += c.failed;
                counts.ignored += c.ignored;
            }
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("`{line}` did not finish"))?;
    if !status.success() {
        return Err(TestsFailed {
            command: line,
            status: status.to_string(),
            counts,
        }
        .into());
    }
    Ok(counts)
}

/// A test command failed; carries what it counted so the summary still adds it up.
#[derive(Debug)]
pub struct TestsFailed {
    pub command: String,
    pub status: String,
    pub counts: TestCounts,
}

impl std::fmt::Display for TestsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` failed ({}); {} passed, {} failed",
            self.command, self.status, self.counts.passed, self.counts.failed
        )
    }
}

impl std::error::Error for TestsFailed {}

/// Parses `test result: ok. 3 passed; 0 failed; 1 ignored; ...`.
pub fn parse_test_result(line: &str) -> Option<TestCounts> {
    let rest = line.trim().strip_prefix("test result: ")?;
    let mut counts = TestCounts::default();
    for part in rest.split(';') {
        let words: Vec<&str> = part.split_whitespace().collect();
        // "ok. 3 passed" or "FAILED. 3 passed" carry the verdict before the number.
        let (n, what) = match words.as_slice() {
            [_, n, what] | [n, what] => (n, what),
            _ => continue,
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match *what {
            "passed" => counts.passed = n,
            "failed" => counts.failed = n,
            "ignored" => counts.ignored = n,
            _ => {}
        }
    }
    Some(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cargo_test_result_lines() {
        let c = parse_test_result(
            "test result: ok. 12 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.31s",
        );
        assert_eq!(
            c,
            Some(TestCounts {
                passed: 12,
                failed: 0,
                ignored: 2
            })
        );
        let c = parse_test_result("test result: FAILED. 3 passed; 1 failed; 0 ignored");
        assert_eq!(
            c,
            Some(TestCounts {
                passed: 3,
                failed: 1,
                ignored: 0
            })
        );
    }

    #[test]
    fn other_lines_are_not_results() {
        assert_eq!(parse_test_result("running 3 tests"), None);
        assert_eq!(parse_test_result("test clock::works ... ok"), None);
    }
}
