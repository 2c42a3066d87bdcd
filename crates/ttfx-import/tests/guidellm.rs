//! GuideLLM fixtures, written by the released tool against a loopback OpenAI-style
//! server: 0.2.1 (`src/guidellm/benchmark/output.py`, `GenerativeBenchmarksReport`,
//! two concurrent benchmarks, one errored request) and 0.4.0
//! (`src/guidellm/benchmark/schemas/generative/report.py`, constant 4 req/s, one errored
//! request). Expected figures: numpy's linear percentiles over the successful requests,
//! worked when the fixtures were made. GuideLLM's own medians snap to sample values
//! (61.96 where numpy gives 62.83), so a per-request figure shows the reader computed it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{close, expect, read};
use ttfx_import::{Load, Metric, Origin, Tool};

#[test]
fn guidellm_0_2_benchmarks_are_runs_with_per_request_percentiles() {
    let file = read("guidellm/benchmarks_v0.2.json");
    assert_eq!(file.tool, Tool::Guidellm);
    assert_eq!(file.runs.len(), 2);
    let [one, two] = [&file.runs[0], &file.runs[1]];
    assert_eq!(one.load, Load::Concurrency(1.0));
    assert_eq!(two.load, Load::Concurrency(2.0));
    assert_eq!(one.model.as_deref(), Some("mock-llama-3.1-8b"));
    assert_eq!(one.tool_version, None, "0.2 states no version");
    assert_eq!((one.completed, one.failed), (4, 1));
    assert_eq!((two.completed, two.failed), (5, 0));
    expect(
        one,
        Metric::Ttft,
        Origin::PerRequest,
        [62.833071, 66.734147, 67.382848, 67.901809],
    );
    expect(
        one,
        Metric::Tpot,
        Origin::PerRequest,
        [20.051428, 20.868617, 21.014896, 21.131919],
    );
    expect(
        one,
        Metric::E2e,
        Origin::PerRequest,
        [188.715816, 207.643700, 208.575106, 209.320230],
    );
    expect(
        two,
        Metric::Ttft,
        Origin::PerRequest,
        [59.691668, 69.732571, 69.874001, 69.987144],
    );
    assert!(
        one.metric(Metric::Itl).is_none(),
        "GuideLLM writes no per-gap ITL"
    );
}

#[test]
fn guidellm_0_4_reads_the_strategy_and_counts_under_its_new_keys() {
    let file = read("guidellm/benchmarks_v0.4.json");
    assert_eq!(file.tool, Tool::Guidellm);
    let run = &file.runs[0];
    assert_eq!(run.load, Load::RequestRate(4.0));
    assert_eq!(run.model.as_deref(), Some("mock-llama-3.1-8b"));
    assert_eq!((run.completed, run.failed), (5, 1));
    expect(
        run,
        Metric::Ttft,
        Origin::PerRequest,
        [58.422327, 60.743284, 61.405993, 61.936159],
    );
    expect(
        run,
        Metric::Tpot,
        Origin::PerRequest,
        [20.507097, 21.632524, 21.746264, 21.837255],
    );
    expect(
        run,
        Metric::E2e,
        Origin::PerRequest,
        [187.862635, 201.727200, 201.775932, 201.814919],
    );
}

/// A sampled request list (fewer than the successful count) is not the population:
/// the file's own summary stands, labelled as such.
#[test]
fn guidellm_with_sampled_requests_keeps_its_own_summary() {
    let text = std::fs::read_to_string(common::fixture("guidellm/benchmarks_v0.4.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let requests = doc["benchmarks"][0]["requests"]["successful"]
        .as_array_mut()
        .unwrap();
    requests.truncate(3);
    let bytes = serde_json::to_vec(&doc).unwrap();
    let file = ttfx_import::read_bytes("sampled.json", &bytes, None).unwrap();
    let run = &file.runs[0];
    let ttft = run.metric(Metric::Ttft).unwrap();
    assert_eq!(ttft.origin, Origin::Summary);
    close(
        ttft.percentile(50.0),
        58.42232704162598,
        "the file's median",
    );
    assert!(
        run.notes.iter().any(|n| n.contains("sample of 3 of its 5")),
        "{:?}",
        run.notes
    );
}
