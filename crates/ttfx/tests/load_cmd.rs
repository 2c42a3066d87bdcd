//! `ttfx load` as a real process: against the simulator it starts itself, it prints its
//! table and writes its JSON, and no key it was given appears anywhere; bad input is one
//! clear line and exit 2.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

fn ttfx_load(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ttfx"));
    command.arg("load").args(args);
    for (k, v) in envs {
        command.env(k, v);
    }
    command.output().unwrap()
}

#[test]
fn load_prints_its_table_and_writes_its_json_and_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let target = "sim/default?ttft_ms=50&tokens_per_second=200&output_tokens=5";
    let out = ttfx_load(
        &[
            "--target",
            target,
            "--rate",
            "20",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--goodput",
            "ttft_ms<=1000",
            "--api-key-env",
            "TTFX_LOAD_TEST_KEY",
            "--header",
            "x-extra: header-s3cret",
            "--json",
            json.to_str().unwrap(),
        ],
        &[("TTFX_LOAD_TEST_KEY", "key-s3cret")],
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for line in [
        &format!("ttfx load: {target} (openai-chat): open loop at 20 req/s (Poisson, seed 1)"),
        "metric                    count       mean        p50        p90        p99",
        "ttft_ms ",
        "icl_ms ",
        "e2e_ms ",
        "errors: none",
        "meeting ttft_ms<=1000",
        "generator: lateness p50 ",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    let text = std::fs::read_to_string(&json).unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["schema"], "ttfx-load");
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["target"], target);
    assert_eq!(report["mode"]["kind"], "rate");
    let sent = report["requests"]["sent"].as_u64().unwrap();
    assert!(sent > 0);
    assert_eq!(report["requests"]["completed"].as_u64(), Some(sent));
    let ttft = report["metrics"]["ttft_ms"]["p50"].as_f64().unwrap();
    assert!((50.0..150.0).contains(&ttft), "{ttft}");
    assert_eq!(report["throughput"]["goodput"]["good"].as_u64(), Some(sent));
    assert!(report["generator"]["lateness_ms"]["p99"].is_number());
    for shown in [&stdout, &stderr, &std::borrow::Cow::Borrowed(text.as_str())] {
        assert!(!shown.contains("s3cret"), "a secret was shown:\n{shown}");
    }
}

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    for (args, says) in [
        (
            vec!["--target", "sim/default", "--rate", "0"],
            "ttfx: rate 0: expected requests per second above 0",
        ),
        (
            vec![
                "--target",
                "sim/default",
                "--concurrency",
                "2",
                "--goodput",
                "tpot_ms>=5",
            ],
            "ttfx: --goodput `tpot_ms>=5`: tpot_ms is not a rate, lower is better: write tpot_ms<=5",
        ),
        (
            vec![
                "--target",
                "https://u:s3cret@h.invalid/x",
                "--rate",
                "1",
                "--api",
                "grpc",
            ],
            "ttfx: --api: unknown API `grpc`",
        ),
    ] {
        let out = ttfx_load(&args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with(says), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(out.stdout.is_empty());
    }
}
