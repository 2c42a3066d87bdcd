//! `ttfx run`'s output, byte for byte, from fixed runs (issue #28: no format may change
//! in the restructure). Browsers make a real run's timings vary, so the runs here are
//! inject mode's own input: a page's recorded probe calls (`tests/golden/inputs/
//! runner_calls.json`, two targets of three runs), replayed by ttfx-analysis as `ttfx run
//! --inject` does; then budgets, ground truth and speech as `ttfx_run::run` assembles
//! them. The goldens are with the binary's others, in `crates/ttfx/tests/golden/`.

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ttfx_core::report::{BatchReport, ReportFile, Run};
use ttfx_core::selection::{ReplyChoice, Selection, StreamChoice};

use super::super::budget::{RunBudget, Verdict};
use super::super::ground_truth::{Witness, noted};
use super::super::junit;
use super::super::measure::{GroundTruth, SpeechTruth};

#[path = "../../../ttfx/tests/golden/check.rs"]
mod check;
#[path = "../../../ttfx/tests/golden/replay.rs"]
mod replay;

pub(crate) const TARGETS: [&str; 2] = ["sim/fast-start-slow-stream", "sim/slow-start-fast-stream"];

/// Two pass (the last a floor), two fail (one limit in seconds), one fails because no
/// run has its metric; each also sets a goodput budget.
const BUDGETS: [&str; 5] = [
    "ttft_visible.p90<=800ms",
    "ttft.p50<=150ms",
    "e2e.max<=0.2s",
    "ttfa.p50<=300ms",
    "decode_tokens_per_s.p50>=25",
];

/// The recorded calls replayed into runs, in run order: the first three for the first
/// target, the rest for the second.
pub(crate) fn replayed_runs() -> Vec<Run> {
    let reports = replay::finished_reports(&check::input("runner_calls.json"));
    let runs: Vec<Run> = reports
        .iter()
        .flat_map(|r| ReportFile::from_json(r).unwrap().into_runs())
        .collect();
    assert_eq!(runs.len(), 6, "the input holds three runs per target");
    runs
}

/// What inject mode adds to each run it measured: how it chose the stream and reply.
fn select(run: &mut Run, i: usize) {
    run.timeline.selection = Some(Selection {
        stream: if i.is_multiple_of(2) {
            StreamChoice::FirstStreamingAfterSubmit
        } else {
            StreamChoice::Match
        },
        requests_seen: 2,
        reply: ReplyChoice::Growth,
        reply_element: Some("div#answer.msg".to_owned()),
        reply_share: Some(0.96),
        flow_turn: None,
        probe: None,
    });
}

struct Fixed {
    batches: Vec<(String, BatchReport)>,
    verdicts: Vec<Verdict>,
    truth: Vec<GroundTruth>,
    speech: SpeechTruth,
}

/// The batches, verdicts, ground truth and speech `ttfx_run::run` hands to the output.
fn fixed() -> Fixed {
    let budgets: Vec<RunBudget> = BUDGETS
        .iter()
        .map(|b| RunBudget::parse(b).unwrap())
        .collect();
    let goodput: Vec<_> = budgets
        .iter()
        .filter_map(RunBudget::goodput_budget)
        .collect();
    let mut runs: Vec<Run> = replayed_runs()
        .into_iter()
        .enumerate()
        .map(|(i, mut run)| {
            select(&mut run, i);
            // A run of each target without ground truth, each saying why.
            match i {
                2 => noted(
                    run,
                    "no ground truth: the probe saw no first byte".to_owned(),
                ),
                5 => noted(
                    run,
                    "no ground truth: WebDriver BiDi saw the request POST \
                     http://127.0.0.1:9/v1/chat/completions but no responseStart (waited 1 s)"
                        .to_owned(),
                ),
                _ => run,
            }
        })
        .collect();
    let second = runs.split_off(3);
    let batches: Vec<(String, BatchReport)> = [runs, second]
        .into_iter()
        .zip(TARGETS)
        .map(|(runs, target)| (target.to_owned(), BatchReport::from_runs(runs, &goodput)))
        .collect();
    let verdicts = budgets
        .iter()
        .map(|b| b.judge(&batches[0].1.statistics))
        .collect();
    let truth = [
        (0, "a-1", 210.0, 208.75),
        (0, "a-2", 230.5, 231.0),
        (1, "b-4", 905.0, 901.5),
    ]
    .into_iter()
    .map(|(t, id, probe, devtools)| GroundTruth {
        run_id: id.to_owned(),
        target: TARGETS[t].to_owned(),
        probe_first_byte_ms: probe,
        witness: Witness::Devtools {
            devtools_first_data_ms: devtools,
            devtools_response_ms: (t == 0).then_some(devtools - 30.0),
            probe_minus_devtools_ms: probe - devtools,
        },
    })
    .chain([GroundTruth {
        run_id: "b-5".to_owned(),
        target: TARGETS[1].to_owned(),
        probe_first_byte_ms: 911.0,
        witness: Witness::Bidi {
            bidi_request_ms: Some(1.25),
            bidi_response_start_ms: 905.5,
            bidi_response_end_ms: None,
            probe_minus_bidi_ms: 5.5,
        },
    }])
    .collect();
    let speech = SpeechTruth {
        text: "How long do the first words take?".to_owned(),
        speech_ms: 1834.5,
        lead_ms: 1000.0,
        tail_ms: 3000.0,
    };
    Fixed {
        batches,
        verdicts,
        truth,
        speech,
    }
}

#[test]
fn the_printed_table_budgets_ground_truth_and_crossover_are_unchanged() {
    let f = fixed();
    let text = super::render(&f.batches, &f.verdicts, &f.truth, Some(&f.speech), 1);
    check::golden("run_stdout.against_budgets_truth_speech.txt", &text);
    // Without speech, one target and no budgets: the plainest table.
    let one = super::render(&f.batches[..1], &[], &[], None, 0);
    check::golden("run_stdout.one_target.txt", &one);
}

#[test]
fn the_json_batches_are_unchanged() {
    let f = fixed();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batch.json");
    super::write_json(&path, &f.batches, &f.truth, Some(&f.speech), None).unwrap();
    let first = std::fs::read_to_string(&path).unwrap();
    let against = std::fs::read_to_string(dir.path().join("batch.against.json")).unwrap();
    check::golden("run_json.first_target.json", &first);
    check::golden("run_json.against_target.json", &against);
}

#[test]
fn the_junit_xml_is_unchanged() {
    let f = fixed();
    let xml = junit::render(&[junit::Suite {
        name: &f.batches[0].0,
        verdicts: &f.verdicts,
        seconds: 12.3456,
    }]);
    check::golden("run_junit.xml", &xml);
}
