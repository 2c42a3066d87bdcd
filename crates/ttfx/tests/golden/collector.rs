//! The collector's HTTP answers and `ttfx field` over one SQLite file, made here by
//! posting fixed beacons (and a run report) to a real `ttfx serve --collect`. Runs carry
//! their own `request_start_unix_ms` (January 2026, `at_unix_ms`), retention is off, and
//! every answer is fixed except what depends on when each row arrived: its
//! `received_unix_ms` and a series bucket's start (masked, see `answers`).

use std::fmt::Write as _;

use ttfx_e2e::ServeProcess;

use crate::check;
use crate::common::ttfx;
use crate::mask;
use crate::stdout_of;

/// A beacon the collector must refuse: its sample rate is not a number.
const BAD_BEACON: &str = r#"{"schema_version":1,"kind":"field","run":{"sample_rate":"half"}}"#;

/// The `/field/…` queries answered: every endpoint, a grouping, filters, an error.
const QUERIES: [&str; 8] = [
    "field/summary",
    "field/summary?metric=ttft_visible_ms&by=label",
    "field/summary?outcome=failed&engine=chromium",
    "field/series?metric=ttft_visible_ms&bucket=1w&by=label",
    "field/histogram?metric=ttft_visible_ms&bins=4&by=label",
    "field/slowest?metric=ttft_visible_ms&limit=2",
    "field/dimensions",
    "field/summary?metric=ttft",
];

/// `METHOD PATH → STATUS CONTENT-TYPE`, then the body, then a blank line.
fn section(out: &mut String, request: &str, status: u16, content_type: &str, body: &str) {
    let _ = writeln!(out, "{request} -> {status} {content_type}\n{body}\n");
}

async fn post(out: &mut String, server: &ServeProcess, what: &str, body: String) {
    let response = reqwest::Client::new()
        .post(format!("{}collect", server.url))
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = header(&response, "content-type");
    let text = response.text().await.unwrap();
    section(
        out,
        &format!("POST /collect ({what})"),
        status,
        &content_type,
        &text,
    );
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .map_or("-".to_owned(), |v| v.to_str().unwrap().to_owned())
}

/// What the collector answers, in order. `received_unix_ms` (in `slowest`) is the
/// collector's wall clock when the beacon came, and a series places runs by it
/// (`start_unix_ms`): masked, the only values that are a time by construction.
async fn answers(server: &ServeProcess) -> String {
    let mut out = String::new();
    let beacons = std::fs::read_to_string(check::input("field_beacons.ndjson")).unwrap();
    post(&mut out, server, "six field beacons, NDJSON", beacons).await;
    let report = std::fs::read_to_string(check::input("run_report.openai_chat.json")).unwrap();
    post(&mut out, server, "a run report", report).await;
    post(&mut out, server, "a bad beacon", BAD_BEACON.to_owned()).await;
    for query in QUERIES {
        let response = reqwest::get(format!("{}{query}", server.url))
            .await
            .unwrap();
        let status = response.status().as_u16();
        let content_type = header(&response, "content-type");
        let body = mask::json_values(
            &response.text().await.unwrap(),
            &["received_unix_ms", "start_unix_ms"],
        );
        section(
            &mut out,
            &format!("GET /{query}"),
            status,
            &content_type,
            &body,
        );
    }
    out
}

#[tokio::test]
async fn the_field_answers_and_ttfx_field_are_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("field.db");
    let db = db.to_str().unwrap();
    let server =
        ServeProcess::start(ttfx(), &["--collect", db, "--collect-retention-days", "0"]).unwrap();
    check::golden("collector_http.field_answers.txt", &answers(&server).await);
    drop(server);

    // Relative to the temp dir, where it runs: the table names the file.
    let field = |args: &[&str]| {
        let mut all = vec!["field", "field.db"];
        all.extend(args);
        stdout_of(dir.path(), &all)
    };
    check::golden("field_stdout.table.txt", &field(&[]));
    check::golden("field_json.summary.json", &field(&["--json"]));
    check::golden(
        "field_stdout.by_label_visible_only.txt",
        &field(&[
            "--metric",
            "ttft_visible_ms",
            "--by",
            "label",
            "--where",
            "hidden=false",
        ]),
    );
}
