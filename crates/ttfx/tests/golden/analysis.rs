//! The report format: a page's recorded probe calls replayed by ttfx-analysis (the
//! code the page's Worker runs, and `ttfx run --inject`), each finished run's report
//! and, when the page asked for one, its field report, exactly as the page gets them.

use crate::{check, replay};

#[test]
fn replayed_page_calls_make_the_same_run_and_field_reports() {
    let reports = replay::finished_reports(&check::input("analysis_calls.json"));
    let out: String = reports.iter().map(|r| format!("{r}\n")).collect();
    // One line per report: run 1's and its field report, run 2's, run 3's (failed).
    assert_eq!(out.lines().count(), 4, "{out}");
    check::golden("analysis_reports.replayed.jsonl", &out);
}
