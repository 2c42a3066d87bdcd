//! `ttfx decode` as a real process over the core's conformance vectors and files made
//! here.

// Helpers outside #[test] functions; a failed setup step should stop the test loudly.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

fn ttfx(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ttfx"))
        .args(args)
        .output()
        .unwrap()
}

fn vector(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ttfx-core/testdata/decode")
        .join(format!("{name}.in"))
        .to_string_lossy()
        .into_owned()
}

fn scratch_file(test: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("decode_cmd");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(test);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs `ttfx decode`, expecting success and JSON on stdout.
fn decode(args: &[&str]) -> Value {
    let mut full = vec!["decode"];
    full.extend_from_slice(args);
    let out = ttfx(&full);
    assert!(
        out.status.success(),
        "ttfx {full:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `ttfx decode`, expecting the clear-error exit; returns stderr.
fn decode_fails(args: &[&str]) -> String {
    let mut full = vec!["decode"];
    full.extend_from_slice(args);
    let out = ttfx(&full);
    assert_eq!(out.status.code(), Some(2), "ttfx {full:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn kinds(output: &Value) -> Vec<&str> {
    output["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect()
}

#[test]
fn auto_decodes_an_openai_chat_capture_the_same_at_any_chunk_size() {
    let file = vector("openai-chat-basic");
    let whole = decode(&[&file]);
    assert_eq!(whole["dialect"], "openai-chat");
    assert_eq!(whole["visible_text"], "Hello world");
    assert_eq!(whole["reasoning_text"], "");
    assert_eq!(whole["done"], true);
    assert_eq!(whole["done_reason"], "stop");
    assert_eq!(whole["usage"]["prompt_tokens"], 9);
    assert_eq!(whole["errors"], serde_json::json!([]));
    assert_eq!(whole["frames"], 6);
    assert_eq!(kinds(&whole), ["text", "text", "usage", "done"]);
    assert_eq!(whole["chunks"], 1);

    for size in ["1", "3", "17"] {
        let mut split = decode(&[&file, "--chunk-bytes", size]);
        assert!(split["chunks"].as_u64().unwrap() > 1);
        for key in ["chunks", "chunk_bytes"] {
            split[key] = whole[key].clone();
        }
        assert_eq!(split, whole, "chunk size {size}");
    }
}

#[test]
fn named_dialects_report_reasoning_usage_timings_and_server_errors() {
    let out = decode(&[
        &vector("anthropic-thinking-and-tool-use"),
        "--dialect",
        "anthropic",
    ]);
    assert_eq!(out["reasoning_text"], "The user wants weather.");
    assert_eq!(out["visible_text"], "Checking.");
    assert_eq!(out["tool_calls"][0]["arguments"], "{\"location\": \"SF\"}");
    assert_eq!(out["usage"]["completion_tokens"], 89);

    let out = decode(&[&vector("ollama-chat"), "--dialect", "ollama"]);
    assert_eq!(out["server_timings"][0]["name"], "total_duration");
    assert_eq!(out["server_timings"][0]["duration_ms"], 4883.583458);
    assert_eq!(out["server_timings"][0]["source"], "ollama_durations");

    let out = decode(&[&vector("anthropic-overloaded-error"), "--chunk-bytes", "5"]);
    assert_eq!(out["dialect"], "anthropic");
    assert_eq!(out["done"], false);
    assert_eq!(out["errors"][0]["class"], "server");
    assert_eq!(out["errors"][0]["code"], "overloaded_error");
}

#[test]
fn sse_mode_prints_frames_with_ids_and_retry() {
    let out = decode(&[
        &vector("sse-whatwg-ids-and-comments"),
        "--dialect",
        "sse",
        "--chunk-bytes",
        "2",
    ]);
    assert_eq!(out["dialect"], "sse");
    let frames = out["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 3);
    assert_eq!(frames[0]["event_type"], "message");
    assert_eq!(frames[0]["data"], "first event");
    assert_eq!(frames[0]["last_event_id"], "1");
    assert_eq!(frames[1]["last_event_id"], "");

    let out = decode(&[
        &vector("sse-line-endings-bom-retry-id-nul"),
        "--dialect",
        "sse",
        "--chunk-bytes",
        "1",
    ]);
    assert_eq!(
        out["frames"][1],
        serde_json::json!({"kind": "retry", "ms": 2500})
    );
    assert_eq!(out["frames"][3]["event_type"], "b");
}

#[test]
fn ndjson_mode_prints_lines() {
    let out = decode(&[
        &vector("ndjson-lines"),
        "--dialect",
        "ndjson",
        "--chunk-bytes",
        "4",
    ]);
    let lines: Vec<&str> = out["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["text"].as_str().unwrap())
        .collect();
    assert_eq!(lines, ["{\"a\":1}", "{\"b\":\"x\\ny\"}", "{\"c\":3}"]);
}

#[test]
fn bad_stream_content_is_reported_in_errors_and_decoding_goes_on() {
    let body = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}\n\ndata: {{\"choices\":[{{\"delta\":{{\"content\":\"after\"}}}}]}}\n\ndata: [DONE]\n\n",
        "x".repeat(100)
    );
    let file = scratch_file("overlong.sse", body.as_bytes());
    let out = decode(&[
        file.to_str().unwrap(),
        "--max-line-bytes",
        "64",
        "--content-type",
        "text/event-stream",
    ]);
    assert_eq!(out["visible_text"], "after");
    assert_eq!(out["errors"][0]["class"], "too_long");
    assert_eq!(out["done"], true);

    let wav = vector("wav-stereo-with-list-chunk");
    let out = decode(&[&wav, "--chunk-bytes", "7"]);
    assert_eq!(out["dialect"], "wav");
    assert_eq!(out["audio"]["sample_rate"], 16000);
    assert_eq!(out["audio"]["channels"], 2);
    assert_eq!(out["audio"]["samples"], 6);
    assert!(kinds(&out).contains(&"audio_samples"));
}

#[test]
fn bad_command_input_is_a_clear_error_with_exit_code_2() {
    let err = decode_fails(&["/nonexistent/capture.sse"]);
    assert!(
        err.starts_with("ttfx: cannot open /nonexistent/capture.sse"),
        "{err}"
    );

    let file = vector("openai-chat-basic");
    let err = decode_fails(&[&file, "--dialect", "grpc"]);
    assert!(
        err.contains("unknown dialect `grpc`") && err.contains("openai-responses"),
        "{err}"
    );

    let err = decode_fails(&[&file, "--chunk-bytes", "0"]);
    assert!(err.contains("--chunk-bytes must be at least 1"), "{err}");

    let err = decode_fails(&[&file, "--chunk-bytes", "many"]);
    assert!(err.contains("many"), "{err}");
}
