//! The gap between a stored benchmark and stored field runs, on a real SQLite file:
//! importing stores a file once, and the gap table is the one worked by hand in
//! docs/import.md ("A worked gap").

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rusqlite::Connection;
use serde_json::Value;
use ttfx_collect::db::{self, Row, Source};
use ttfx_collect::query::Slice;
use ttfx_collect::{bench_store, gap};
use ttfx_core::Milestone;
use ttfx_core::field::{FieldContext, FieldReport};
use ttfx_core::report::Run;
use ttfx_core::timeline::{Chunk, Timeline};

/// Field run `i` (0–4), docs/import.md: first byte 300 + 50i ms, first token 10 ms
/// later, first visible token 20 ms after the byte, first paint 16 ms after that; eleven
/// one-token chunks `g` = 20 + 5i ms apart from the first token.
fn field_run(i: usize) -> Row {
    let byte = 300.0 + 50.0 * i as f64;
    let g = 20.0 + 5.0 * i as f64;
    let first_token = byte + 10.0;
    let mut t = Timeline::default();
    t.milestones.set(Milestone::RequestStart, 0.0);
    t.milestones.set(Milestone::Headers, byte - 1.0);
    t.milestones.set(Milestone::FirstByte, byte);
    t.milestones.set(Milestone::FirstToken, first_token);
    t.milestones.set(Milestone::FirstVisibleToken, byte + 20.0);
    t.milestones.set(Milestone::FirstPaint, byte + 36.0);
    t.milestones
        .set(Milestone::LastToken, first_token + 10.0 * g);
    t.milestones
        .set(Milestone::Done, first_token + 10.0 * g + 1.0);
    t.chunks = (0..11)
        .map(|j| Chunk {
            at_ms: first_token + j as f64 * g,
            bytes: 40,
            events: 1,
            visible_tokens: 1,
            reasoning_tokens: 0,
        })
        .collect();
    let run = Run::new(None, Some("chat".into()), t).expect("a valid timeline");
    let context = FieldContext {
        page_path: Some("/chat".into()),
        sample_rate: 1.0,
    };
    Row {
        report: FieldReport::of_run(&run, &context),
        source: Source::Field,
        received_unix_ms: 1.0e12,
    }
}

/// The benchmark of docs/import.md: TTFT 100–180 ms per request, five pooled gaps of
/// 20–28 ms, TPOT and E2E from the file's summary.
const BENCH: &str = r#"{"date": "20261204-120000", "backend": "vllm", "model_id": "m", "tokenizer_id": "m",
"num_prompts": 5, "request_rate": "inf", "max_concurrency": 4, "completed": 5, "failed": 0,
"ttfts": [0.1, 0.12, 0.14, 0.16, 0.18], "itls": [[0.02, 0.022], [0.024], [0.026, 0.028], [], []],
"errors": ["", "", "", "", ""],
"median_tpot_ms": 21, "p90_tpot_ms": 25, "p99_tpot_ms": 27,
"median_e2el_ms": 400, "p90_e2el_ms": 600, "p99_e2el_ms": 700}"#;

fn open() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let conn = db::open(&dir.path().join("field.db"), true).expect("a new database");
    (dir, conn)
}

fn row<'a>(doc: &'a Value, bench: &str, field: &str) -> &'a Value {
    doc["rows"]
        .as_array()
        .and_then(|rows| {
            rows.iter()
                .find(|r| r["bench_metric"] == bench && r["field_metric"] == field)
        })
        .unwrap_or_else(|| panic!("no row {bench} / {field}"))
}

/// (p, bench, field, diff, ratio) within 1e-9.
fn check(doc: &Value, bench: &str, field: &str, want: [(f64, f64, f64, f64); 3]) {
    let r = row(doc, bench, field);
    for (i, (b, f, d, ratio)) in want.into_iter().enumerate() {
        let p = &r["percentiles"][i];
        for (key, w) in [("bench", b), ("field", f), ("diff_ms", d), ("ratio", ratio)] {
            let got = p[key].as_f64().unwrap_or(f64::NAN);
            assert!(
                (got - w).abs() < 1e-9,
                "{bench} / {field} p{}: {key} {got}, want {w}",
                p["p"]
            );
        }
    }
}

#[test]
fn the_gap_table_is_the_one_worked_by_hand() {
    let (_dir, mut conn) = open();
    let rows: Vec<Row> = (0..5).map(field_run).collect();
    db::insert(&mut conn, &rows).expect("stored");
    let file = ttfx_import::read_bytes("bench.json", BENCH.as_bytes(), None).expect("read");
    bench_store::store(&mut conn, &file, Some("vllm-c4"), 1.0e12).expect("stored");
    let bench = bench_store::select(&conn, "latest").expect("selected");
    let slice = Slice::new(None, &[], 2.0e12).expect("a slice");
    let doc = gap::gap(&conn, &bench, &gap::PAIRS, &slice).expect("a gap");
    assert_eq!(
        doc["sentence"],
        "the benchmark says p50 TTFT 140 ms; your users wait 420 ms for the first visible \
         token (+280 ms, 3.0x)"
    );
    assert_eq!(doc["runs"], 5);
    check(
        &doc,
        "ttft_ms",
        "first_byte_ms",
        [
            (140.0, 400.0, 260.0, 400.0 / 140.0),
            (172.0, 480.0, 308.0, 480.0 / 172.0),
            (179.2, 498.0, 318.8, 498.0 / 179.2),
        ],
    );
    check(
        &doc,
        "ttft_ms",
        "ttft_visible_ms",
        [
            (140.0, 420.0, 280.0, 3.0),
            (172.0, 500.0, 328.0, 500.0 / 172.0),
            (179.2, 518.0, 338.8, 518.0 / 179.2),
        ],
    );
    check(
        &doc,
        "ttft_ms",
        "first_paint_ms",
        [
            (140.0, 436.0, 296.0, 436.0 / 140.0),
            (172.0, 516.0, 344.0, 3.0),
            (179.2, 534.0, 354.8, 534.0 / 179.2),
        ],
    );
    check(
        &doc,
        "itl_ms",
        "chunk_gap_ms",
        [
            (24.0, 30.0, 6.0, 1.25),
            (27.2, 38.0, 10.8, 38.0 / 27.2),
            (27.92, 39.8, 11.88, 39.8 / 27.92),
        ],
    );
    check(
        &doc,
        "tpot_ms",
        "tpot_ms",
        [
            (21.0, 30.0, 9.0, 30.0 / 21.0),
            (25.0, 38.0, 13.0, 1.52),
            (27.0, 39.8, 12.8, 39.8 / 27.0),
        ],
    );
    check(
        &doc,
        "e2e_ms",
        "e2e_ms",
        [
            (400.0, 710.0, 310.0, 1.775),
            (600.0, 870.0, 270.0, 1.45),
            (700.0, 906.0, 206.0, 906.0 / 700.0),
        ],
    );
    assert_eq!(row(&doc, "tpot_ms", "tpot_ms")["origin"], "summary");
    assert_eq!(
        row(&doc, "ttft_ms", "ttft_visible_ms")["origin"],
        "per_request"
    );
}

#[test]
fn importing_the_same_file_twice_stores_it_once() {
    let (_dir, mut conn) = open();
    let file = ttfx_import::read_bytes("bench.json", BENCH.as_bytes(), None).expect("read");
    let first = bench_store::store(&mut conn, &file, None, 1.0).expect("stored");
    let again = ttfx_import::read_bytes("renamed.json", BENCH.as_bytes(), None).expect("read");
    let second = bench_store::store(&mut conn, &again, Some("other"), 2.0).expect("stored");
    assert!(first.new);
    assert!(!second.new);
    assert_eq!(first.ids, second.ids);
    assert_eq!(bench_store::count(&conn).expect("counted"), 1);
    let listed = bench_store::list(&conn).expect("listed");
    assert_eq!(listed[0].name, "bench.json");
}

#[test]
fn a_file_of_several_runs_names_each_and_latest_is_its_last() {
    let (_dir, mut conn) = open();
    let two = format!(
        "{}\n{}",
        BENCH.replace('\n', " "),
        BENCH
            .replace('\n', " ")
            .replace("\"max_concurrency\": 4", "\"max_concurrency\": 8")
    );
    let file = ttfx_import::read_bytes("sweep.json", two.as_bytes(), None).expect("read");
    assert_eq!(file.runs.len(), 2);
    bench_store::store(&mut conn, &file, None, 1.0).expect("stored");
    let latest = bench_store::select(&conn, "latest").expect("latest");
    assert_eq!(latest.name, "sweep.json#2");
    assert_eq!(latest.run.load, ttfx_import::Load::Concurrency(8.0));
    let e = bench_store::select(&conn, "sweep.json").expect_err("ambiguous");
    assert!(e.to_string().contains("sweep.json#1"), "{e}");
    assert!(bench_store::select(&conn, "sweep.json#1").is_ok());
    let e = bench_store::select(&conn, "nope").expect_err("unknown");
    assert!(e.to_string().contains("no benchmark named `nope`"), "{e}");
}
