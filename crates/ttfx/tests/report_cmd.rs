//! `ttfx report` as a real process over real report files.

// The helpers below are test setup: if they cannot write a file or start the binary,
// the test must stop right there.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ttfx_core::Milestone;
use ttfx_core::report::{BatchReport, ReportFile, Run, RunReport};
use ttfx_core::server_timing::Usage;
use ttfx_core::timeline::{Chunk, Timeline};

fn ttfx(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ttfx"))
        .args(args)
        .output()
        .unwrap()
}

/// A fresh folder per test under Cargo's scratch space for integration tests.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("report_cmd")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A completed run: first token at `ttft`, 5 tokens 20 ms apart; with or without usage.
fn run(ttft: f64, with_usage: bool) -> Run {
    let mut t = Timeline::default();
    for (m, at) in [
        (Milestone::FirstToken, ttft),
        (Milestone::FirstVisibleToken, ttft),
        (Milestone::LastToken, ttft + 80.0),
        (Milestone::Done, ttft + 85.0),
    ] {
        t.milestones.set(m, at);
    }
    t.chunks = (0..5)
        .map(|i| Chunk {
            at_ms: ttft + 20.0 * f64::from(i),
            bytes: 70,
            events: 1,
            visible_tokens: 1,
            reasoning_tokens: 0,
        })
        .collect();
    if with_usage {
        t.server.usage = Some(Usage {
            completion_tokens: Some(5),
            ..Usage::default()
        });
    }
    Run::new(None, Some("sim".into()), t).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Two single-run files (ttft 100, 400) and a batch of two (ttft 200, 300).
fn three_files(dir: &Path) -> Vec<String> {
    let one = |ttft| serde_json::to_string(&RunReport::new(run(ttft, true))).unwrap();
    let batch = BatchReport::from_runs(vec![run(200.0, true), run(300.0, false)], &[]);
    vec![
        write(dir, "a.json", &one(100.0)),
        write(dir, "b.json", &one(400.0)),
        write(dir, "batch.json", &serde_json::to_string(&batch).unwrap()),
    ]
}

fn row<'a>(stdout: &'a str, metric: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(metric))
        .unwrap_or_else(|| panic!("no {metric} row in:\n{stdout}"))
        .split_whitespace()
        .collect()
}

#[test]
fn table_merges_run_and_batch_files() {
    let dir = scratch("table");
    let files = three_files(&dir);
    let args: Vec<&str> = std::iter::once("report")
        .chain(files.iter().map(String::as_str))
        .collect();
    let out = ttfx(&args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("ttfx report: 4 run(s) from 3 file(s): 4 completed"),
        "{stdout}"
    );
    // ttft 100, 200, 300, 400 (numpy linear, n = 4): mean 250, p50 → h = 1.5 → 250,
    // p90 → h = 2.7 → 370, p95 → h = 2.85 → 385, p99 → h = 2.97 → 397.
    assert_eq!(
        row(&stdout, "ttft_ms"),
        [
            "ttft_ms", "4", "250.00", "250.00", "370.00", "385.00", "397.00", "100.00", "400.00"
        ]
    );
    // tpot = 80 / (5 − 1) = 20 in every run.
    assert_eq!(row(&stdout, "tpot_ms")[2], "20.00");
    // icl pools 4 gaps of 20 ms from each of the 4 runs.
    assert_eq!(row(&stdout, "icl_ms")[1], "16");
    // The run without usage is called out.
    assert!(
        stdout.contains("note: 1 run(s) had no server usage"),
        "{stdout}"
    );
}

#[test]
fn json_prints_the_merged_batch_with_goodput() {
    let dir = scratch("json");
    let files = three_files(&dir);
    let mut args = vec!["report", "--json", "--slo", "ttft_ms=250"];
    args.extend(files.iter().map(String::as_str));
    let out = ttfx(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let ReportFile::Batch(batch) = ReportFile::from_json(&text).unwrap() else {
        panic!("not a batch: {text}");
    };
    assert_eq!(batch.runs.len(), 4);
    assert!((batch.statistics["ttft_ms"].p90 - 370.0).abs() < 1e-9);
    // ttft ≤ 250: the 100 and 200 ms runs.
    let g = batch.goodput.unwrap();
    assert_eq!((g.good, g.total), (2, 4));

    // The merged batch keeps its budgets when read back without --slo.
    let merged = write(&dir, "merged.json", &text);
    let out = ttfx(&["report", &merged]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("goodput: 2/4 (50.0%) meeting ttft_ms<=250"),
        "{stdout}"
    );
}

fn assert_one_line_error(out: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(stderr.contains(expected), "{stderr:?} lacks {expected:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_files_are_one_line_errors_with_exit_code_2() {
    let dir = scratch("bad");
    let good = &three_files(&dir)[0];
    let future = write(
        &dir,
        "future.json",
        r#"{"schema_version": 9, "kind": "run"}"#,
    );
    let out = ttfx(&["report", good, &future]);
    assert_one_line_error(
        &out,
        "future.json: unsupported schema_version 9 (this ttfx reads versions 1 to 3)",
    );

    let junk = write(&dir, "junk.json", "not json at all");
    assert_one_line_error(
        &ttfx(&["report", &junk]),
        "junk.json: not a ttfx report: expected ident at line 1 column 2",
    );

    let missing = dir.join("missing.json");
    let out = ttfx(&["report", missing.to_str().unwrap()]);
    assert_one_line_error(&out, "cannot read");

    let out = ttfx(&["report", good, "--slo", "ttft=5"]);
    assert_one_line_error(&out, "unknown metric `ttft`");
}

/// What a terminal would obey: ESC, BEL, a lone CR and C1's one-character CSI.
const CONTROLS: [char; 4] = ['\x1b', '\x07', '\r', '\u{9b}'];
const HOSTILE: &str = "evil\x1b[2J\x07\r\u{9b}31m";

#[test]
fn a_report_whose_strings_clear_the_screen_prints_them_escaped() {
    let dir = scratch("controls");
    let mut run = run(100.0, true);
    run.target = Some(HOSTILE.to_owned());
    run.timeline.request.url = Some(format!("http://h/{HOSTILE}"));
    // A batch file's goodput budgets come back in the table's goodput line.
    let budget = ttfx_core::stats::Budget {
        metric: HOSTILE.to_owned(),
        limit: 1.0,
    };
    let batch = BatchReport::from_runs(vec![run.clone()], std::slice::from_ref(&budget));
    let files = [
        write(
            &dir,
            "run.json",
            &serde_json::to_string(&RunReport::new(run)).unwrap(),
        ),
        write(&dir, "batch.json", &serde_json::to_string(&batch).unwrap()),
    ];
    let shown = r"evil\x1b[2J\x07\r\u{9b}31m";
    let table = ttfx(&["report", &files[1]]);
    let stdout = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.status.success(),
        "{}",
        String::from_utf8_lossy(&table.stderr)
    );
    assert!(stdout.contains(&format!("meeting {shown}<=1")), "{stdout}");
    let json = ttfx(&["report", "--json", &files[0], &files[1]]);
    let stdout = String::from_utf8(json.stdout).unwrap();
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    assert!(
        stdout.contains(r#""target": "evil\u001b[2J\u0007\r\u009b31m""#),
        "{stdout}"
    );
    // Still the same report, strings and all.
    let ReportFile::Batch(back) = ReportFile::from_json(&stdout).unwrap() else {
        panic!("not a batch: {stdout}");
    };
    assert_eq!(back.runs[0].target.as_deref(), Some(HOSTILE));
    // An error quoting what it read (here the file's name): on stderr, escaped.
    let missing = dir.join(format!("{HOSTILE}.json"));
    let refused = ttfx(&["report", missing.to_str().unwrap()]);
    let stderr = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{shown}.json")), "{stderr}");
    for out in [&stdout, &stderr] {
        assert!(!out.contains(CONTROLS), "{out:?}");
    }
}

/// `--budget` judges the merged batch as `ttfx run` does (exit 1 when one fails), and
/// `--html` / `--summary-md` write the page and the summary with the same verdicts and
/// percentiles the table prints.
#[test]
fn budgets_judge_the_merged_batch_and_the_page_and_summary_show_them() {
    let dir = scratch("html");
    let files = three_files(&dir);
    let (html, md) = (dir.join("report.html"), dir.join("summary.md"));
    let mut args = vec![
        "report",
        "--budget",
        "ttft.p50<=300ms",
        "--budget",
        "ttft.p90<=300ms",
        "--html",
        html.to_str().unwrap(),
        "--summary-md",
        md.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    let out = ttfx(&args);
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(stderr, "ttfx report: 1 of 2 budget(s) failed\n");
    // ttft p50 250 passes, p90 370 fails by 70.
    assert!(
        row(&stdout, "ttft_ms").ends_with(&["<-", "FAIL", "ttft.p90<=300ms", "by", "70.00"]),
        "{stdout}"
    );
    assert!(stdout.contains("budgets: 1 passed, 1 failed\n"), "{stdout}");

    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h1>ttfx report: 4 run(s) from 3 file(s)</h1>"),
        "{page}"
    );
    assert_eq!(page.matches("<tr data-run=").count(), 4);
    assert!(
        page.contains("<tr class=\"pass\" data-budget=\"ttft.p50&lt;=300ms\">"),
        "{page}"
    );
    assert!(
        page.contains("<tr class=\"fail\" data-budget=\"ttft.p90&lt;=300ms\">"),
        "{page}"
    );
    assert!(
        page.contains("<td>250.00</td><td>250.00</td><td>370.00</td>"),
        "{page}"
    );

    let summary = std::fs::read_to_string(&md).unwrap();
    assert!(
        summary.contains("❌ **1 of 2 budget(s) failed.**"),
        "{summary}"
    );
    assert!(
        summary.contains("| ❌ FAIL | `ttft.p90<=300ms` |"),
        "{summary}"
    );
    assert!(
        summary.contains("| `ttft_ms` | 4 | 250.00 | 370.00 | 397.00 |"),
        "{summary}"
    );

    // Passing budgets exit 0; a budget that does not parse is refused before anything
    // is read or written.
    let mut args = vec!["report", "--budget", "ttft.p50<=300ms"];
    args.extend(files.iter().map(String::as_str));
    assert_eq!(ttfx(&args).status.code(), Some(0));
    let out = ttfx(&[
        "report",
        "--budget",
        "ttft.p42<=1",
        "--html",
        "x.html",
        "nope.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("unknown statistic `p42`"), "{stderr}");
}
