//! `ttfx decode` and `ttfx report` as processes over fixed files, and every command's
//! `--help`: their stdout (and two errors' stderr) byte for byte.

use crate::check;
use crate::{stdout_of, ttfx_in};

#[test]
fn decode_prints_the_same_events_and_summary() {
    let inputs = check::dir().join("inputs");
    let cases: [(&str, &[&str]); 3] = [
        (
            "decode.openai_chat_auto.json",
            &["decode", "openai_chat_stream.sse"],
        ),
        (
            "decode.anthropic_7_byte_chunks.json",
            &["decode", "anthropic_stream.sse", "--chunk-bytes", "7"],
        ),
        (
            "decode.openai_chat_sse_frames.json",
            &["decode", "openai_chat_stream.sse", "--dialect", "sse"],
        ),
    ];
    for (golden, args) in cases {
        check::golden(golden, &stdout_of(&inputs, args));
    }
}

/// Three run reports (a streamed chat with its reasoning, an Anthropic reply, a run
/// that failed mid-stream) and a `ttfx run --json` batch of four.
const REPORTS: [&str; 4] = [
    "run_report.openai_chat.json",
    "run_report.anthropic.json",
    "run_report.network_error.json",
    "batch_report.run_json.json",
];

#[test]
fn report_prints_the_same_table_and_merged_batch() {
    let inputs = check::dir().join("inputs");
    let with = |extra: &[&'static str]| -> Vec<&str> {
        let mut args = vec!["report"];
        args.extend(REPORTS);
        args.extend(extra);
        args
    };
    check::golden("report_stdout.table.txt", &stdout_of(&inputs, &with(&[])));
    check::golden(
        "report_stdout.slo.txt",
        &stdout_of(
            &inputs,
            &with(&["--slo", "ttft_ms=500", "--slo", "decode_tokens_per_s=20"]),
        ),
    );
    // The merged batch of the two smallest reports: the JSON of every run is long.
    let two = ["report", "--json", REPORTS[1], REPORTS[2]];
    check::golden(
        "report_json.merged_two_runs.json",
        &stdout_of(&inputs, &two),
    );
}

#[test]
fn report_refuses_a_file_of_another_schema_with_the_same_message() {
    let inputs = check::dir().join("inputs");
    let out = ttfx_in(&inputs, &["report", "report_schema_99.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    check::golden(
        "report_stderr.other_schema.txt",
        &String::from_utf8(out.stderr).unwrap(),
    );
}

/// The command line itself: each command's `--help` (its flags, their docs and
/// defaults: the options moved into each command's crate) and clap's refusal of an
/// unknown flag.
#[test]
fn every_commands_help_and_a_refusal_are_unchanged() {
    let here = check::dir();
    for command in [
        "", "serve", "run", "report", "decode", "field", "import", "load",
    ] {
        let args: Vec<&str> = [command, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let name = if command.is_empty() { "top" } else { command };
        check::golden(&format!("help.{name}.txt"), &stdout_of(&here, &args));
    }
    let refused = ttfx_in(&here, &["run", "--bogus"]);
    assert_eq!(refused.status.code(), Some(2));
    check::golden(
        "help.run_unknown_flag.stderr.txt",
        &String::from_utf8(refused.stderr).unwrap(),
    );
}
