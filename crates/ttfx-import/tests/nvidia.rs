//! AIPerf and GenAI-Perf fixtures. Each was written by the released tool (AIPerf 0.6.0,
//! genai-perf 0.0.16) against a loopback OpenAI-style server; perf_analyzer's raw
//! `profile_export.json` (not on PyPI) was written to its exporter's exact shape
//! (`src/profile_data_exporter.cc`, perf_analyzer r25.08 / 2.60.0). Expected figures
//! are numpy's (`numpy.percentile`, linear) over the file's values, worked when the
//! fixtures were made; they agree with the tools' own summaries where those exist.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{close, expect, read};
use ttfx_import::{Load, Metric, Origin, Tool};

/// aiperf 0.6.0, `aiperf/exporters/metrics_json_exporter.py` (`MetricsJsonExporter`).
#[test]
fn aiperf_summary_gives_its_own_percentiles_model_load_and_counts() {
    let file = read("aiperf/profile_export_aiperf.json");
    assert_eq!(file.tool, Tool::Aiperf);
    let run = &file.runs[0];
    assert_eq!(run.tool_version.as_deref(), Some("0.6.0"));
    assert_eq!(run.model.as_deref(), Some("mock-llama-3.1-8b"));
    assert_eq!(run.load, Load::Concurrency(2.0));
    assert_eq!((run.completed, run.failed), (7, 1));
    let ttft = run.metric(Metric::Ttft).unwrap();
    assert_eq!(ttft.origin, Origin::Summary);
    close(ttft.percentile(50.0), 60.738765, "ttft p50");
    close(ttft.percentile(99.0), 66.45702438, "ttft p99");
    // AIPerf's inter_token_latency is the TPOT; its inter_chunk_latency the ITL.
    close(
        run.metric(Metric::Tpot).unwrap().percentile(99.0),
        25.404120419999998,
        "tpot p99",
    );
    close(
        run.metric(Metric::E2e).unwrap().percentile(50.0),
        201.558795,
        "e2e p50",
    );
    close(
        run.metric(Metric::Itl).unwrap().percentiles.mean,
        20.48286053191489,
        "itl mean",
    );
}

/// aiperf 0.6.0, `post_processors/record_export_results_processor.py`: one record per
/// line, a failed request with `error` and no latencies.
#[test]
fn aiperf_records_give_per_request_percentiles_and_count_the_failed_one() {
    let file = read("aiperf/profile_export.jsonl");
    assert_eq!(file.tool, Tool::Aiperf);
    assert_eq!(file.runs.len(), 1);
    let run = &file.runs[0];
    assert_eq!((run.completed, run.failed), (7, 1));
    expect(
        run,
        Metric::Ttft,
        Origin::PerRequest,
        [60.738765, 65.378819, 65.977822, 66.457024],
    );
    expect(
        run,
        Metric::Tpot,
        Origin::PerRequest,
        [22.959581, 24.731865, 25.105340, 25.404120],
    );
    expect(
        run,
        Metric::E2e,
        Origin::PerRequest,
        [201.558795, 206.327297, 207.638272, 208.687053],
    );
    expect(
        run,
        Metric::Itl,
        Origin::PerRequest,
        [20.173176, 23.587803, 23.741870, 23.949846],
    );
    assert_eq!(run.metric(Metric::Itl).unwrap().count, Some(47));
}

/// genai-perf 0.0.16, `genai_perf/export_data/json_exporter.py`; `input_config` in the
/// nested layout of 0.0.13+, the load under `perf_analyzer.stimulus`.
#[test]
fn genai_perf_summary_is_told_from_aiperf_and_reads_its_nested_config() {
    let file = read("genai_perf/profile_export_genai_perf.json");
    assert_eq!(file.tool, Tool::GenaiPerf);
    let run = &file.runs[0];
    assert_eq!(run.model.as_deref(), Some("mock-llama-3.1-8b"));
    assert_eq!(run.load, Load::Concurrency(2.0));
    assert_eq!((run.completed, run.failed), (8, 0));
    close(
        run.metric(Metric::Ttft).unwrap().percentile(50.0),
        58.905874999999995,
        "ttft p50",
    );
    close(
        run.metric(Metric::E2e).unwrap().percentile(50.0),
        194.433518,
        "e2e p50",
    );
    close(
        run.metric(Metric::Tpot).unwrap().percentile(99.0),
        26.492521019999998,
        "tpot p99",
    );
    assert!(
        run.metric(Metric::Itl).is_none(),
        "GenAI-Perf writes no per-gap ITL"
    );
}

/// perf_analyzer's raw export: ns timestamps; every request's first response is the
/// empty role chunk and its last `[DONE]`, which GenAI-Perf drops (a reader taking
/// `response_timestamps[0]` gets a TTFT of about 4 ms instead of 59).
#[test]
fn genai_perf_raw_export_drops_empty_responses_before_taking_ttft() {
    let file = read("genai_perf/profile_export.json");
    assert_eq!(file.tool, Tool::GenaiPerf);
    let run = &file.runs[0];
    assert_eq!(run.tool_version.as_deref(), Some("perf_analyzer 2.60.0"));
    assert_eq!(run.load, Load::Concurrency(2.0));
    assert_eq!(run.model.as_deref(), Some("mock-llama-3.1-8b"));
    assert_eq!(run.completed, 8);
    expect(
        run,
        Metric::Ttft,
        Origin::PerRequest,
        [58.905875, 64.987521, 65.554685, 66.008416],
    );
    expect(
        run,
        Metric::E2e,
        Origin::PerRequest,
        [194.433518, 204.070674, 206.205021, 207.912499],
    );
    expect(
        run,
        Metric::Tpot,
        Origin::PerRequest,
        [20.277649, 21.794128, 21.829689, 21.858137],
    );
    expect(
        run,
        Metric::Itl,
        Origin::PerRequest,
        [20.243282, 23.679075, 23.828978, 24.013483],
    );
}
