//! Files as the released tools really write them, and files nobody should have
//! written: Python's bare `NaN` / `Infinity`, `"inf"`, integers for floats, failed rows
//! with zero latencies, non-ASCII text, damage, unknown content, arbitrary bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use proptest::prelude::*;
use ttfx_import::{ImportError, Load, Metric, Origin, Tool, read_bytes};

fn vllm(body: &str) -> Vec<u8> {
    format!(
        r#"{{"date": "20250601-101500", "backend": "vllm", "model_id": "Qwen/Qwen2.5-7B", "tokenizer_id": "Qwen/Qwen2.5-7B", {body}}}"#
    )
    .into_bytes()
}

#[test]
fn python_non_finite_tokens_and_inf_strings_are_read_as_floats() {
    // json.dump's default writes a float inf / nan bare; vLLM writes its rate as "inf".
    let bytes = vllm(
        r#""request_rate": Infinity, "max_concurrency": 8, "completed": 2, "std_ttft_ms": NaN,
           "mean_ttft_ms": 150, "median_ttft_ms": 150, "p99_ttft_ms": -Infinity,
           "ttfts": [0.1, 0.2], "itls": [[0.01, NaN], [0.03]]"#,
    );
    let run = &read_bytes("r.json", &bytes, None).unwrap().runs[0];
    assert_eq!(run.load, Load::Concurrency(8.0));
    let itl = run.metric(Metric::Itl).unwrap();
    assert_eq!(itl.count, Some(2), "a NaN gap has no rank");
    let rate = read_bytes(
        "r.json",
        &vllm(r#""request_rate": "inf", "completed": 1"#),
        None,
    )
    .unwrap();
    assert_eq!(rate.runs[0].load, Load::RequestRate(f64::INFINITY));
}

#[test]
fn failed_rows_with_zero_latency_are_counted_not_ranked() {
    // vLLM writes 0.0 as a failed request's TTFT and an empty list of gaps.
    let bytes = vllm(
        r#""num_prompts": 4, "completed": 3, "ttfts": [0.1, 0, 0.3, 0.2], "itls": [[0.01], [], [0.02], [0.03]],
           "errors": ["", "Bad Request", "", ""]"#,
    );
    let run = &read_bytes("r.json", &bytes, None).unwrap().runs[0];
    assert_eq!((run.completed, run.failed), (3, 1));
    let ttft = run.metric(Metric::Ttft).unwrap();
    assert_eq!(ttft.origin, Origin::PerRequest);
    assert_eq!(ttft.count, Some(3));
    assert_eq!(
        ttft.percentile(0.0),
        Some(100.0),
        "the failed row's 0 is not the minimum"
    );
}

#[test]
fn integers_where_floats_belong_and_non_ascii_text_are_read() {
    let bytes = vllm(
        r#""max_concurrency": 4, "completed": 2, "median_ttft_ms": 120, "p99_ttft_ms": 300,
           "generated_texts": ["日本茶は おいしい", "Gäste \u00e9"], "ttfts": [1, 2]"#,
    );
    let run = &read_bytes("r.json", &bytes, None).unwrap().runs[0];
    assert_eq!(
        run.metric(Metric::Ttft).unwrap().percentile(50.0),
        Some(1500.0)
    );
}

#[test]
fn json_lines_are_read_whatever_the_file_is_named() {
    // `--append-result` adds one result per line to the same .json file.
    let mut bytes = vllm(r#""max_concurrency": 1, "completed": 5, "median_ttft_ms": 100"#);
    bytes.push(b'\n');
    bytes.extend(vllm(
        r#""max_concurrency": 4, "completed": 5, "median_ttft_ms": 180"#,
    ));
    let file = read_bytes("results.json", &bytes, None).unwrap();
    assert_eq!(file.runs.len(), 2);
    assert_eq!(file.runs[1].load, Load::Concurrency(4.0));
    assert_eq!(
        file.runs[1].metric(Metric::Ttft).unwrap().percentile(50.0),
        Some(180.0)
    );
}

#[test]
fn unknown_content_names_the_file_and_what_was_tried() {
    let e = read_bytes("notes.json", br#"{"hello": "world", "n": 3}"#, None).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, ImportError::Unknown { .. }));
    for want in ["notes.json", "vllm", "guidellm", "llmperf", "hello"] {
        assert!(text.contains(want), "{text}");
    }
    let e = read_bytes("bin.dat", b"\x00\x01PK\x03", None).unwrap_err();
    assert!(e.to_string().starts_with("bin.dat: not JSON"), "{e}");
    let e = read_bytes("empty.json", b"   ", None).unwrap_err();
    assert!(e.to_string().contains("empty.json"), "{e}");
}

#[test]
fn a_damaged_file_is_an_error_naming_the_tool_and_the_place() {
    let mut bytes = vllm(r#""completed": 2, "ttfts": [0.1, 0.2], "itls": [[0.01], [0.02]]"#);
    bytes.truncate(bytes.len() - 20);
    let e = read_bytes("cut.json", &bytes, None).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with("cut.json: read as vllm, but"), "{text}");
    assert!(text.contains("line 1"), "{text}");
    let bad = vllm(r#""completed": 2, "ttfts": [0.1, Nope]"#);
    let e = read_bytes("bad.json", &bad, None).unwrap_err();
    assert!(
        e.to_string().contains("not NaN, Infinity or -Infinity"),
        "{e}"
    );
}

#[test]
fn a_forced_format_that_does_not_fit_is_an_error_not_a_guess() {
    let bytes = vllm(r#""completed": 2, "median_ttft_ms": 100"#);
    let e = read_bytes("r.json", &bytes, Some(Tool::Guidellm)).unwrap_err();
    assert!(
        e.to_string().starts_with("r.json: read as guidellm, but"),
        "{e}"
    );
}

#[test]
fn the_same_bytes_hash_the_same_and_one_byte_changes_the_hash() {
    let a = read_bytes("a.json", &vllm(r#""completed": 1"#), None).unwrap();
    let b = read_bytes("b.json", &vllm(r#""completed": 1"#), None).unwrap();
    let c = read_bytes("c.json", &vllm(r#""completed": 2"#), None).unwrap();
    assert_eq!(a.sha256, b.sha256);
    assert_ne!(a.sha256, c.sha256);
    assert_eq!(a.sha256.len(), 64);
    assert_eq!(a.bytes, vllm(r#""completed": 1"#).len() as u64);
}

/// Many tokens across the reader's 64 KiB blocks: every one is read, none is split.
#[test]
fn a_multi_megabyte_file_with_tokens_on_every_block_boundary_reads_whole() {
    let n = 400_000;
    let mut itls = String::with_capacity(n * 8);
    for i in 0..n {
        itls.push_str(if i % 7 == 0 {
            "NaN, "
        } else if i % 11 == 0 {
            "-Infinity, "
        } else {
            "0.0125, "
        });
    }
    itls.push_str("0.0125");
    let bytes = vllm(&format!(
        r#""completed": 1, "ttfts": [0.5], "itls": [[{itls}]]"#
    ));
    assert!(bytes.len() > 3_000_000);
    let run = &read_bytes("big.json", &bytes, None).unwrap().runs[0];
    let ranked = (0..=n)
        .filter(|i| i % 7 != 0 && (i % 11 != 0 || *i == n))
        .count();
    let itl = run.metric(Metric::Itl).unwrap();
    // -Infinity has no rank either: only finite values are ranked.
    assert_eq!(itl.count, Some(ranked as u64));
    assert_eq!(itl.percentile(50.0), Some(12.5));
}

fn every_format() -> Vec<Option<Tool>> {
    std::iter::once(None).chain(Tool::ALL.map(Some)).collect()
}

fn check(bytes: &[u8]) {
    for format in every_format() {
        if let Ok(file) = read_bytes("p.json", bytes, format) {
            assert!(!file.runs.is_empty());
            for run in &file.runs {
                for m in Metric::ALL {
                    if let Some(f) = run.metric(m) {
                        assert!(f.values.iter().all(|v| v.is_finite()));
                    }
                }
            }
        }
    }
}

const FIXTURES: [&str; 15] = [
    "vllm/benchmark_serving_v0.6.json",
    "vllm/serve_detailed.json",
    "vllm/append_result.json",
    "vllm/sweep_run.json",
    "vllm/sweep_summary.json",
    "sglang/bench_serving.jsonl",
    "llmperf/meta-llama-Llama-2-7b-chat-hf_550_150_summary.json",
    "llmperf/meta-llama-Llama-2-7b-chat-hf_550_150_individual_responses.json",
    "llmperf/mistralai-Mistral-7B-Instruct-v0-2_200_100_summary.json",
    "aiperf/profile_export_aiperf.json",
    "aiperf/profile_export.jsonl",
    "genai_perf/profile_export_genai_perf.json",
    "genai_perf/profile_export.json",
    "guidellm/benchmarks_v0.2.json",
    "guidellm/benchmarks_v0.4.json",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Arbitrary bytes, read as every tool's: an error or runs, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic_the_reader(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check(&bytes);
    }

    /// Each fixture cut short and with one byte changed.
    #[test]
    fn damaged_fixtures_never_panic_the_reader(
        which in 0..FIXTURES.len(),
        cut in 0.0f64..1.0,
        at in 0.0f64..1.0,
        byte in any::<u8>(),
    ) {
        let mut bytes = std::fs::read(common::fixture(FIXTURES[which])).unwrap();
        let i = ((bytes.len() - 1) as f64 * at) as usize;
        bytes[i] = byte;
        bytes.truncate(((bytes.len() as f64) * cut) as usize + 1);
        check(&bytes);
    }
}
