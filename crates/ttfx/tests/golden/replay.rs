//! A page's recorded probe calls (a fixed input) played through ttfx-analysis's replay,
//! the code of the page's Worker and of `ttfx run --inject`. Shared by the integration
//! test and the runner's unit test (by `#[path]`).

use std::path::Path;

use serde_json::Value;

/// What each `finish` call answered, in order: a run report's JSON, then after a
/// newline its field report's when the page asked for one.
pub fn finished_reports(calls_file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(calls_file).unwrap();
    let calls: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut runs = ttfx_analysis::Runs::default();
    calls
        .iter()
        .filter_map(|call| ttfx_analysis::replay::apply(&mut runs, call).unwrap())
        .collect()
}
