//! The report format: a page's recorded probe calls replayed by ttfx-analysis (the
//! code the page's Worker runs, and `ttfx run --inject`), each finished run's report
//! and, when the page asked for one, its field report, exactly as the page gets them.

use serde_json::Value;

use crate::check;

#[test]
fn replayed_page_calls_make_the_same_run_and_field_reports() {
    let text = std::fs::read_to_string(check::input("analysis_calls.json")).unwrap();
    let calls: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut runs = ttfx_analysis::Runs::default();
    let mut out = String::new();
    for call in &calls {
        if let Some(report) = ttfx_analysis::replay::apply(&mut runs, call).unwrap() {
            out.push_str(&report);
            out.push('\n');
        }
    }
    // One line per report: run 1's and its field report, run 2's, run 3's (failed).
    assert_eq!(out.lines().count(), 4, "{out}");
    check::golden("analysis_reports.replayed.jsonl", &out);
}
