//! Older layouts the released tools wrote, as inline documents with the keys their
//! sources give (docs/import.md names each), and ttfx's own run and batch reports.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use ttfx_import::{Load, Metric, Origin, Tool, read_bytes};

/// SGLang 0.2.0 `bench_serving.py`: its keys without the `_ms` suffix (values in ms),
/// `benchmark_duration`, no `completed`.
#[test]
fn sglang_0_2_keys_without_their_unit() {
    let doc = br#"{"backend": "sglang", "dataset_name": "sharegpt", "request_rate": 8.0,
        "total_input": 4000, "total_output": 2000, "total_output_retokenized": 1990,
        "mean_e2e_latency": 812.5, "median_e2e_latency": 790.0, "median_ttft": 95.5,
        "median_itl": 18.25, "output_token_throughput": 1500.0, "sharegpt_output_len": null,
        "random_input_len": 1024, "random_output_len": 128, "random_range_ratio": 1.0,
        "benchmark_duration": 12.5}"#;
    let file = read_bytes("sglang_0_2.jsonl", doc, None).unwrap();
    assert_eq!(file.tool, Tool::Sglang);
    let run = &file.runs[0];
    assert_eq!(run.load, Load::RequestRate(8.0));
    assert_eq!(
        run.metric(Metric::Ttft).unwrap().percentile(50.0),
        Some(95.5)
    );
    assert_eq!(
        run.metric(Metric::Itl).unwrap().percentile(50.0),
        Some(18.25)
    );
    assert_eq!(
        run.metric(Metric::E2e).unwrap().percentile(50.0),
        Some(790.0)
    );
}

/// AIPerf 0.1.1 `aiperf/exporters/json_exporter.py`: the metric objects under
/// `records`, TTFT tagged `ttft`, no version.
#[test]
fn aiperf_0_1_records_layout() {
    let doc = br#"{"records": {
        "ttft": {"tag": "ttft", "unit": "ms", "header": "Time to First Token", "avg": 60.0,
                 "min": 40.0, "max": 90.0, "p1": 41.0, "p5": 42.0, "p25": 50.0, "p50": 58.0,
                 "p75": 66.0, "p90": 80.0, "p95": 85.0, "p99": 89.0, "std": 10.0, "count": 20},
        "request_latency": {"tag": "request_latency", "unit": "ms", "avg": 900.0, "p50": 880.0,
                 "p90": 1000.0, "p95": 1100.0, "p99": 1200.0, "count": 20},
        "inter_token_latency": {"tag": "inter_token_latency", "unit": "ms", "avg": 20.0,
                 "p50": 19.0, "p90": 24.0, "p95": 25.0, "p99": 27.0, "count": 20},
        "request_count": {"tag": "request_count", "unit": "requests", "avg": 20.0}
      },
      "input_config": {"endpoint": {"model_names": ["llama"]}, "loadgen": {"request_rate": 5.0}},
      "was_cancelled": false, "error_summary": []}"#;
    let file = read_bytes("profile_export_aiperf.json", doc, None).unwrap();
    assert_eq!(file.tool, Tool::Aiperf);
    let run = &file.runs[0];
    assert_eq!(run.load, Load::RequestRate(5.0));
    assert_eq!(run.model.as_deref(), Some("llama"));
    assert_eq!(run.completed, 20);
    let ttft = run.metric(Metric::Ttft).unwrap();
    assert_eq!((ttft.origin, ttft.count), (Origin::Summary, Some(20)));
    assert_eq!(ttft.percentile(90.0), Some(80.0));
    assert_eq!(
        run.metric(Metric::Tpot).unwrap().percentile(99.0),
        Some(27.0)
    );
}

/// GenAI-Perf 0.0.12 and before: `input_config` is argparse's flat namespace (`model`
/// a list, `concurrency`, `request_rate` null); p1–p10 absent.
#[test]
fn genai_perf_flat_input_config() {
    let doc = br#"{"request_throughput": {"unit": "requests/sec", "avg": 9.5},
      "request_latency": {"unit": "ms", "avg": 420.0, "p25": 400.0, "p50": 410.0, "p75": 430.0,
                          "p90": 450.0, "p95": 470.0, "p99": 490.0, "min": 380.0, "max": 495.0, "std": 20.0},
      "time_to_first_token": {"unit": "ms", "avg": 55.0, "p25": 50.0, "p50": 54.0, "p75": 58.0,
                          "p90": 61.0, "p95": 63.0, "p99": 65.0, "min": 45.0, "max": 66.0, "std": 4.0},
      "request_count": {"unit": "count", "avg": 100},
      "input_config": {"model": ["gpt2"], "concurrency": 4, "request_rate": null,
                       "endpoint_type": "chat", "service_kind": "openai", "streaming": true}}"#;
    let file = read_bytes("profile_export_genai_perf.json", doc, None).unwrap();
    assert_eq!(file.tool, Tool::GenaiPerf);
    let run = &file.runs[0];
    assert_eq!(run.model.as_deref(), Some("gpt2"));
    assert_eq!(run.load, Load::Concurrency(4.0));
    assert_eq!(run.completed, 100);
    assert_eq!(
        run.metric(Metric::Ttft).unwrap().percentile(90.0),
        Some(61.0)
    );
}

fn golden_input(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ttfx/tests/golden/inputs")
        .join(name);
    std::fs::read(path).unwrap()
}

/// `ttfx run --json` (one run) and a batch report (keys in sorted order, so `kind`
/// comes after `generator`): read by ttfx-core's own report reader.
#[test]
fn ttfx_run_and_batch_reports() {
    let batch = read_bytes(
        "batch.json",
        &golden_input("batch_report.run_json.json"),
        None,
    )
    .unwrap();
    assert_eq!(batch.tool, Tool::Ttfx);
    let run = &batch.runs[0];
    assert_eq!(run.tool_version.as_deref(), Some("0.1.0"));
    assert_eq!((run.completed, run.failed), (3, 0));
    assert_eq!(run.metric(Metric::Ttft).unwrap().origin, Origin::PerRequest);
    let one = read_bytes(
        "run.json",
        &golden_input("run_report.openai_chat.json"),
        None,
    )
    .unwrap();
    assert_eq!(
        one.runs[0].metric(Metric::Ttft).unwrap().percentile(50.0),
        Some(250.5)
    );
    let failed = read_bytes(
        "err.json",
        &golden_input("run_report.network_error.json"),
        None,
    )
    .unwrap();
    assert_eq!((failed.runs[0].completed, failed.runs[0].failed), (0, 1));
    assert!(failed.runs[0].metric(Metric::Ttft).is_none());
}
