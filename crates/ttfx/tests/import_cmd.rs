//! `ttfx import` and `ttfx field --bench` as processes, on the reader's fixtures and a
//! real SQLite file: what is printed, what is stored, and what is refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ttfx-import/tests/fixtures")
        .join(rel)
}

fn ttfx(args: &[&str]) -> Output {
    Command::new(common::ttfx()).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn benchmarks(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT COUNT(*) FROM benchmarks", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn import_prints_each_file_and_stores_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("field.db");
    let guidellm = fixture("guidellm/benchmarks_v0.2.json");
    let aiperf = fixture("aiperf/profile_export_aiperf.json");
    let args = [
        guidellm.to_str().unwrap(),
        aiperf.to_str().unwrap(),
        "--into",
        db.to_str().unwrap(),
    ];
    let first = ttfx(&[&["import"][..], &args].concat());
    assert!(first.status.success(), "{}", text(&first.stderr));
    let out = text(&first.stdout);
    for want in [
        "benchmarks_v0.2.json: guidellm (2 runs",
        "run 2: guidellm, model mock-llama-3.1-8b, concurrency 2; 5 completed, 0 failed",
        "profile_export_aiperf.json: aiperf (1 run",
        "run 1: aiperf 0.6.0, model mock-llama-3.1-8b, concurrency 2; 7 completed, 1 failed",
        "stored as benchmark id 1, 2",
        "stored as benchmark id 3",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
    assert_eq!(benchmarks(&db), 3);
    let again = ttfx(&[&["import"][..], &args].concat());
    assert!(again.status.success());
    assert!(text(&again.stdout).contains("already stored (same SHA-256) as benchmark id 1, 2"));
    assert_eq!(benchmarks(&db), 3, "nothing stored twice");

    let gap = ttfx(&["field", db.to_str().unwrap(), "--bench", "latest"]);
    assert!(gap.status.success(), "{}", text(&gap.stderr));
    let gap = text(&gap.stdout);
    assert!(
        gap.starts_with("the benchmark says p50 TTFT 61 ms; no field run has"),
        "{gap}"
    );
    assert!(
        gap.contains("benchmark profile_export_aiperf.json (id 3): aiperf 0.6.0"),
        "{gap}"
    );
}

#[test]
fn one_unknown_file_exits_2_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("field.db");
    let unknown = dir.path().join("notes.json");
    std::fs::write(&unknown, r#"{"hello": "world"}"#).unwrap();
    let good = fixture("aiperf/profile_export.jsonl");
    let out = ttfx(&[
        "import",
        good.to_str().unwrap(),
        unknown.to_str().unwrap(),
        "--into",
        db.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("notes.json: not a benchmark file ttfx knows: tried vllm"),
        "{err}"
    );
    assert!(!db.exists(), "the database is not even created");
    let forced = ttfx(&["import", good.to_str().unwrap(), "--format", "guidellm"]);
    assert_eq!(forced.status.code(), Some(2));
    assert!(text(&forced.stderr).contains("profile_export.jsonl: read as guidellm, but"));
    let bad = ttfx(&["import", good.to_str().unwrap(), "--format", "jmeter"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("--format `jmeter`: expected one of vllm, sglang"));
}

#[test]
fn import_json_has_every_run_and_its_percentiles() {
    let out = ttfx(&[
        "import",
        fixture("guidellm/benchmarks_v0.4.json").to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &doc[0]["file"]["runs"][0];
    assert_eq!(doc[0]["file"]["tool"], "guidellm");
    assert_eq!(
        run["load"],
        serde_json::json!({"kind": "request_rate", "value": 4.0})
    );
    assert_eq!(run["ttft"]["origin"], "per_request");
    let p50 = run["ttft"]["percentiles"]["p50"].as_f64().unwrap();
    assert!((p50 - 58.422327).abs() < 5e-7, "{p50}");
    assert_eq!(doc[0]["stored"], serde_json::Value::Null);
}
