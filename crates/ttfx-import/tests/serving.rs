//! vLLM, SGLang and LLMPerf fixtures, written to each tool's writer as its source has
//! it (the figures synthetic, the summary keys recomputed from the arrays with the
//! tool's own arithmetic): vLLM 0.6.6 `benchmarks/benchmark_serving.py`, vLLM 0.34.0 and
//! 0.11.0 `vllm/benchmarks/serve.py` (`--save-detailed`, `--append-result`), vLLM 0.34.0
//! `vllm bench sweep` (`run=N.json`, `summary.json`), SGLang 0.5.10
//! `sglang/bench_serving.py`, LLMPerf v2.0 (1eac866) `token_benchmark_ray.py`. Expected
//! figures: numpy's linear percentiles over the arrays (failed requests left out, vLLM's
//! ITL pooled), printed to 3 or 6 decimals; docs/import.md names each source.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::read;
use ttfx_import::{Load, Metric, Origin, Tool};

/// Within half of the last printed digit (3 decimals).
fn near(got: Option<f64>, want: f64, what: &str) {
    let got = got.unwrap_or(f64::NAN);
    assert!((got - want).abs() <= 5e-4, "{what}: got {got}, want {want}");
}

fn p(run: &ttfx_import::BenchRun, m: Metric, origin: Origin, want: [(f64, f64); 4]) {
    let f = run
        .metric(m)
        .unwrap_or_else(|| panic!("{} missing", m.name()));
    assert_eq!(f.origin, origin, "{}", m.name());
    for (q, w) in want {
        near(f.percentile(q), w, &format!("{} p{q}", m.name()));
    }
}

/// v0.6.6: `"request_goodput:"` with its colon, `max_concurrency: null`, no `failed`
/// key, the arrays always written; one HTTP failure (TTFT 0, no gaps).
#[test]
fn vllm_0_6_script_result_with_its_arrays() {
    let file = read("vllm/benchmark_serving_v0.6.json");
    assert_eq!(file.tool, Tool::Vllm);
    let run = &file.runs[0];
    assert_eq!(
        run.model.as_deref(),
        Some("meta-llama/Meta-Llama-3-8B-Instruct")
    );
    assert_eq!(run.load, Load::RequestRate(4.0));
    assert_eq!((run.completed, run.failed), (5, 1));
    p(
        run,
        Metric::Ttft,
        Origin::PerRequest,
        [
            (50.0, 125.354),
            (90.0, 151.365),
            (95.0, 153.221),
            (99.0, 154.706),
        ],
    );
    p(
        run,
        Metric::Itl,
        Origin::PerRequest,
        [
            (50.0, 16.389),
            (90.0, 18.252),
            (95.0, 34.079),
            (99.0, 46.870),
        ],
    );
    assert_eq!(run.metric(Metric::Itl).unwrap().count, Some(89));
    // TPOT cannot be rebuilt (no latencies): the file's own keys.
    let tpot = run.metric(Metric::Tpot).unwrap();
    assert_eq!(tpot.origin, Origin::Summary);
    near(tpot.percentile(50.0), 17.534, "tpot p50");
    near(tpot.percentile(99.0), 22.277, "tpot p99");
    assert!(run.metric(Metric::E2e).is_none(), "e2el was not selected");
}

/// 0.34.0 `--save-detailed`: rate `"inf"`, two failures, one of them mid-stream (a
/// TTFT and three gaps that must not be counted); TPOT rebuilt from the latencies.
#[test]
fn vllm_serve_detailed_leaves_out_a_request_that_failed_mid_stream() {
    let run = &read("vllm/serve_detailed.json").runs[0];
    assert_eq!(run.model.as_deref(), Some("Qwen/Qwen2.5-0.5B-Instruct"));
    assert_eq!(run.load, Load::Concurrency(4.0));
    assert_eq!((run.completed, run.failed), (6, 2));
    p(
        run,
        Metric::Ttft,
        Origin::PerRequest,
        [
            (50.0, 101.762),
            (90.0, 126.903),
            (95.0, 129.402),
            (99.0, 131.401),
        ],
    );
    p(
        run,
        Metric::Itl,
        Origin::PerRequest,
        [
            (50.0, 18.883),
            (90.0, 21.040),
            (95.0, 46.878),
            (99.0, 49.940),
        ],
    );
    assert_eq!(run.metric(Metric::Itl).unwrap().count, Some(76));
    p(
        run,
        Metric::Tpot,
        Origin::PerRequest,
        [
            (50.0, 20.313),
            (90.0, 24.329),
            (95.0, 25.399),
            (99.0, 26.254),
        ],
    );
    p(
        run,
        Metric::E2e,
        Origin::PerRequest,
        [
            (50.0, 387.320),
            (90.0, 433.983),
            (95.0, 436.751),
            (99.0, 438.965),
        ],
    );
}

/// 0.11.0 `--append-result`: three results on three lines in a `.json` file, no final
/// newline, summaries only.
#[test]
fn vllm_appended_results_are_three_runs() {
    let file = read("vllm/append_result.json");
    let loads: Vec<Load> = file.runs.iter().map(|r| r.load).collect();
    assert_eq!(
        loads,
        [
            Load::Concurrency(1.0),
            Load::Concurrency(4.0),
            Load::Concurrency(16.0)
        ]
    );
    for (run, (ttft50, ttft99, itl99)) in file.runs.iter().zip([
        (50.063, 66.750, 41.753),
        (71.257, 103.043, 43.895),
        (196.628, 273.970, 52.943),
    ]) {
        assert_eq!(run.completed, 16);
        let ttft = run.metric(Metric::Ttft).unwrap();
        assert_eq!(ttft.origin, Origin::Summary);
        near(ttft.percentile(50.0), ttft50, "ttft p50");
        near(ttft.percentile(99.0), ttft99, "ttft p99");
        near(
            run.metric(Metric::Itl).unwrap().percentile(99.0),
            itl99,
            "itl p99",
        );
        assert_eq!(ttft.percentile(90.0), None, "the file states no p90");
    }
}

/// `vllm bench sweep`: a run file keeps `latencies` without `--save-detailed`, and the
/// summary is a list of runs.
#[test]
fn vllm_sweep_run_and_summary() {
    let run = &read("vllm/sweep_run.json").runs[0];
    assert_eq!(run.load, Load::Concurrency(8.0));
    p(
        run,
        Metric::E2e,
        Origin::PerRequest,
        [
            (50.0, 752.545),
            (90.0, 786.856),
            (95.0, 797.649),
            (99.0, 806.284),
        ],
    );
    near(
        run.metric(Metric::Ttft).unwrap().percentile(50.0),
        164.987,
        "ttft p50",
    );
    let summary = read("vllm/sweep_summary.json");
    assert_eq!(summary.tool, Tool::Vllm);
    assert_eq!(summary.runs.len(), 2);
    near(
        summary.runs[1]
            .metric(Metric::Ttft)
            .unwrap()
            .percentile(50.0),
        156.920,
        "run 1 ttft p50",
    );
    near(
        summary.runs[1]
            .metric(Metric::E2e)
            .unwrap()
            .percentile(99.0),
        826.477,
        "run 1 e2e p99",
    );
}

/// SGLang 0.5.10: a bare `Infinity` rate; line 2 has `--output-details` with one
/// failure; model and version only inside `server_info`.
#[test]
fn sglang_lines_with_and_without_details() {
    let file = read("sglang/bench_serving.jsonl");
    assert_eq!(file.tool, Tool::Sglang);
    let [one, two] = [&file.runs[0], &file.runs[1]];
    assert_eq!(one.model.as_deref(), Some("Qwen/Qwen2.5-7B-Instruct"));
    assert_eq!(one.tool_version.as_deref(), Some("0.5.10"));
    assert_eq!(one.load, Load::Concurrency(8.0));
    assert_eq!(one.completed, 10);
    near(
        one.metric(Metric::Ttft).unwrap().percentile(99.0),
        130.039,
        "ttft p99",
    );
    near(
        one.metric(Metric::Itl).unwrap().percentile(95.0),
        15.954,
        "itl p95",
    );
    near(
        one.metric(Metric::E2e).unwrap().percentile(90.0),
        333.080,
        "e2e p90",
    );
    assert_eq!(two.load, Load::RequestRate(4.0));
    assert_eq!((two.completed, two.failed), (5, 1));
    p(
        two,
        Metric::Ttft,
        Origin::PerRequest,
        [
            (50.0, 98.392),
            (90.0, 124.523),
            (95.0, 124.597),
            (99.0, 124.655),
        ],
    );
    p(
        two,
        Metric::Itl,
        Origin::PerRequest,
        [
            (50.0, 14.110),
            (90.0, 15.964),
            (95.0, 16.008),
            (99.0, 16.054),
        ],
    );
    near(
        two.metric(Metric::E2e).unwrap().percentile(99.0),
        336.568,
        "e2e p99 (summary)",
    );
}

/// LLMPerf v2.0: the summary (seconds, quantiles), and the individual responses with
/// one 429 whose latencies are the integer 0.
#[test]
fn llmperf_summary_and_individual_responses_agree() {
    let summary = read("llmperf/meta-llama-Llama-2-7b-chat-hf_550_150_summary.json");
    assert_eq!(summary.tool, Tool::Llmperf);
    let s = &summary.runs[0];
    assert_eq!(s.model.as_deref(), Some("meta-llama/Llama-2-7b-chat-hf"));
    assert_eq!(s.load, Load::Concurrency(2.0));
    assert_eq!((s.completed, s.failed), (5, 1));
    let each = read("llmperf/meta-llama-Llama-2-7b-chat-hf_550_150_individual_responses.json");
    assert_eq!(each.tool, Tool::Llmperf);
    let i = &each.runs[0];
    assert_eq!((i.completed, i.failed), (5, 1));
    p(
        i,
        Metric::Ttft,
        Origin::PerRequest,
        [
            (50.0, 245.250),
            (90.0, 277.538),
            (95.0, 282.688),
            (99.0, 286.808),
        ],
    );
    p(
        i,
        Metric::E2e,
        Origin::PerRequest,
        [
            (50.0, 3157.442),
            (90.0, 3362.195),
            (95.0, 3364.076),
            (99.0, 3365.582),
        ],
    );
    p(
        i,
        Metric::Tpot,
        Origin::PerRequest,
        [
            (50.0, 20.843),
            (90.0, 21.357),
            (95.0, 21.463),
            (99.0, 21.548),
        ],
    );
    for m in [Metric::Ttft, Metric::Tpot, Metric::E2e] {
        for q in [50.0, 90.0, 95.0, 99.0] {
            near(
                s.metric(m).unwrap().percentile(q),
                i.metric(m).unwrap().percentile(q).unwrap(),
                "summary = responses",
            );
        }
    }
    let one = &read("llmperf/mistralai-Mistral-7B-Instruct-v0-2_200_100_summary.json").runs[0];
    assert_eq!((one.completed, one.failed), (1, 0));
    near(
        one.metric(Metric::Ttft).unwrap().percentile(99.0),
        245.250,
        "one request's TTFT",
    );
}
