//! What `ttfx run` prints (stdout: the table, budgets, ground truth, crossover) and
//! writes (`--json`: the batch report of ttfx-core's schema).

use std::fmt::Write as _;
use std::path::Path;

use ttfx_core::Milestone;
use ttfx_core::crossover::{self, CompletionModel, Crossover};
use ttfx_core::printable::escape_line;
use ttfx_core::report::{BatchReport, Run};
use ttfx_core::stats::Summary;

use super::budget::{Verdict, fail_marks, verdict_lines};
use super::error::OutputError;
use super::ground_truth::NO_GROUND_TRUTH;
use super::measure::{GroundTruth, SpeechTruth};
use ttfx_report::report_cmd;
use ttfx_webdriver::sandbox::Sandbox;

#[cfg(test)]
pub(crate) mod golden_tests;

pub fn render(
    batches: &[(String, BatchReport)],
    verdicts: &[Verdict],
    truth: &[GroundTruth],
    speech: Option<&SpeechTruth>,
    warmup: usize,
) -> String {
    let mut out = String::new();
    for (i, (label, batch)) in batches.iter().enumerate() {
        let heading = format!(
            "ttfx run: {label}: {} run(s), {warmup} warm-up run(s) per session excluded",
            batch.outcomes.total
        );
        // Budgets judge the first target; mark their rows in its table.
        let marks: &[Verdict] = if i == 0 { verdicts } else { &[] };
        out.push_str(&report_cmd::table(batch, &heading, &|metric| {
            fail_marks(marks, metric)
        }));
        let rows: Vec<&GroundTruth> = truth.iter().filter(|g| &g.target == label).collect();
        out.push_str(&ground_truth(&rows, &batch.runs));
        if let Some(speech) = speech {
            out.push_str(&detector(batch, speech));
        }
        out.push_str(&selections(&batch.runs));
        out.push_str(&held_back(&batch.runs));
        out.push('\n');
    }
    out.push_str(&verdict_lines(verdicts));
    if let [(a_label, a), (b_label, b)] = batches {
        out.push_str(&crossover_block(a_label, a, b_label, b));
    }
    out
}

/// Inject mode: how each run's stream and reply were chosen, counted over the runs (a
/// page that sometimes streams elsewhere, or grows another element, shows here).
fn selections(runs: &[Run]) -> String {
    use ttfx_core::selection::{ReplyChoice, StreamChoice};
    let mut streams: Vec<(String, usize)> = Vec::new();
    let mut replies: Vec<(String, usize)> = Vec::new();
    let count = |list: &mut Vec<(String, usize)>, key: String| match list
        .iter_mut()
        .find(|(k, _)| *k == key)
    {
        Some((_, n)) => *n += 1,
        None => list.push((key, 1)),
    };
    let mut total = 0;
    for run in runs {
        let Some(s) = &run.timeline.selection else {
            continue;
        };
        total += 1;
        let request = &run.timeline.request;
        let how = match s.stream {
            StreamChoice::FirstStreamingAfterSubmit => {
                "the first streamed response after the submit"
            }
            StreamChoice::Match => "the first request after the submit matching --match",
        };
        let over = request
            .transport
            .as_deref()
            .map_or(String::new(), |t| format!(" over {t}"));
        count(
            &mut streams,
            // One line each: the page chose these strings, newlines included.
            escape_line(&format!(
                "{how}: {} {}{over} ({})",
                request.method.as_deref().unwrap_or("?"),
                request.url.as_deref().unwrap_or("?"),
                request.dialect.as_deref().unwrap_or("unknown dialect"),
            ))
            .into_owned(),
        );
        let reply = match (&s.reply_element, s.reply) {
            (None, _) => "no element's text grew while it streamed".to_owned(),
            (Some(e), ReplyChoice::Selector) => format!("{e}, the --reply element"),
            (Some(e), ReplyChoice::Growth) => format!(
                "{e}, holding {:.0} % of the text the page added",
                100.0 * s.reply_share.unwrap_or(0.0)
            ),
        };
        count(&mut replies, escape_line(&reply).into_owned());
    }
    if total == 0 {
        return String::new();
    }
    let mut out = String::new();
    for (label, list) in [("stream", &streams), ("reply", &replies)] {
        for (i, (text, n)) in list.iter().enumerate() {
            let head = if i == 0 { label } else { "" };
            let _ = writeln!(out, "{head:<7} {text} — {n} of {total} runs");
        }
    }
    out
}

/// The runs the browser held before sending their request longer than
/// [`QUEUED_NOTE_MS`](ttfx_core::metrics::network::QUEUED_NOTE_MS) (each such run's
/// report has a note naming the likely cause), counted with the protocols they went over:
/// the browser's own limits, said as a line of the table rather than left as noise.
fn held_back(runs: &[Run]) -> String {
    use ttfx_core::metrics::network::QUEUED_NOTE_MS;
    let mut held = 0;
    let mut longest: f64 = 0.0;
    let mut protocols: Vec<&str> = Vec::new();
    for run in runs {
        let Some(q) = run.metrics.request_queued_ms.map(|m| m.value) else {
            continue;
        };
        if q <= QUEUED_NOTE_MS {
            continue;
        }
        held += 1;
        longest = longest.max(q);
        let protocol = run
            .timeline
            .resource_timing
            .as_ref()
            .and_then(|e| e.next_hop_protocol.as_deref())
            .unwrap_or("protocol unknown");
        if !protocols.contains(&protocol) {
            protocols.push(protocol);
        }
    }
    if held == 0 {
        return String::new();
    }
    let cause = if protocols.iter().all(|p| matches!(*p, "h2" | "h3")) {
        "one shared connection: its stream limit or the browser's scheduling"
    } else {
        "over HTTP/1.1 the per-host limit of six connections"
    };
    format!(
        "browser queue: {held} of {} run(s) held by the browser over {QUEUED_NOTE_MS:.0} ms \
         before sending (request_queued_ms, longest {longest:.1} ms; {}; likely cause: \
         {cause})\n",
        runs.len(),
        // A protocol comes from the page's report: one line, whatever it holds.
        escape_line(&protocols.join(", ")),
    )
}

/// The page's detector against the recording it heard: speech_start → speech_end beside
/// the file's speech (first to last audible sample), and how long after speech_end it
/// decided (its hangover, plus up to a frame).
fn detector(batch: &BatchReport, speech: &SpeechTruth) -> String {
    let of =
        |f: &dyn Fn(&Run) -> Option<f64>| -> Vec<f64> { batch.runs.iter().filter_map(f).collect() };
    let length = |r: &Run| {
        let m = &r.timeline.milestones;
        Some(m.get(Milestone::SpeechEnd)? - m.get(Milestone::SpeechStart)?)
    };
    let errors = of(&|r| length(r).map(|l| l - speech.speech_ms));
    let decided = of(&|r| {
        let end = r.timeline.milestones.get(Milestone::SpeechEnd)?;
        Some(r.timeline.turn.as_ref()?.speech_end_detected_ms? - end)
    });
    let (Some(e), Some(d)) = (Summary::of(&errors), Summary::of(&decided)) else {
        return "detector: no turn had both speech_start and speech_end\n".to_owned();
    };
    format!(
        "detector: speech_start → speech_end − the recording's speech ({:.1} ms), {} turn(s): \
         p50 {:+.1} ms, min {:+.1} ms, max {:+.1} ms; speech_end decided p50 {:.1} ms after it \
         (min {:.1}, max {:.1})\n",
        speech.speech_ms, e.count, e.p50, e.min, e.max, d.p50, d.min, d.max
    )
}

/// What each source's line says the probe's `first_byte` is held against.
const WITNESSES: [(&str, &str); 2] = [
    (
        "devtools",
        "DevTools first dataReceived (both from requestWillBeSent = request_start)",
    ),
    (
        "bidi",
        "BiDi responseStart (the headers' arrival, on the page clock through timeOrigin, \
         ±2 ms)",
    ),
];

/// Distinct reasons for runs without ground truth printed; the rest are counted.
const REASONS_SHOWN: usize = 3;

/// The probe's `first_byte` against the browser's own record of the same request, a line
/// per source; then the runs without one, counted by why.
fn ground_truth(rows: &[&GroundTruth], runs: &[Run]) -> String {
    let mut out = String::new();
    for (source, witness) in WITNESSES {
        let diffs: Vec<f64> = rows
            .iter()
            .filter(|g| g.source() == source)
            .map(|g| g.probe_minus_witness_ms())
            .collect();
        if let Some(s) = Summary::of(&diffs) {
            let _ = writeln!(
                out,
                "ground truth: probe first_byte - {witness}, {} run(s): p50 {:.2} ms, \
                 p90 {:.2} ms, min {:.2} ms, max {:.2} ms",
                s.count, s.p50, s.p90, s.min, s.max
            );
        }
    }
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for why in runs.iter().flat_map(|r| &r.timeline.anomalies) {
        if why.class != NO_GROUND_TRUTH {
            continue;
        }
        let why = why.detail.trim_start_matches("no ground truth: ");
        match reasons.iter_mut().find(|(r, _)| *r == why) {
            Some((_, n)) => *n += 1,
            None => reasons.push((why, 1)),
        }
    }
    for (why, n) in reasons.iter().take(REASONS_SHOWN) {
        // A reason may quote the page's request URL.
        let _ = writeln!(
            out,
            "ground truth: none for {n} of {} run(s): {}",
            runs.len(),
            escape_line(why)
        );
    }
    if reasons.len() > REASONS_SHOWN {
        let more: usize = reasons[REASONS_SHOWN..].iter().map(|(_, n)| n).sum();
        let _ = writeln!(
            out,
            "ground truth: none for {more} more run(s), for {} other reason(s)",
            reasons.len() - REASONS_SHOWN
        );
    }
    out
}

fn crossover_block(a_label: &str, a: &BatchReport, b_label: &str, b: &BatchReport) -> String {
    let metrics =
        |batch: &BatchReport| -> Vec<_> { batch.runs.iter().map(|r| r.metrics.clone()).collect() };
    let (Some(ta), Some(tb)) = (
        CompletionModel::from_runs(&metrics(a)),
        CompletionModel::from_runs(&metrics(b)),
    ) else {
        return "crossover: not enough completed runs with ttft and decode rate on both sides\n"
            .to_owned();
    };
    let comparison = match crossover::compare(&ta, &tb) {
        Ok(c) => c,
        Err(e) => return format!("crossover: {e}\n"),
    };
    let name = |side: crossover::Side| match side {
        crossover::Side::A => a_label,
        crossover::Side::B => b_label,
        crossover::Side::Tie => "neither (tie)",
    };
    let mut out = String::new();
    let _ = writeln!(out, "crossover (medians; completion = ttft + n / rate):");
    let _ = writeln!(
        out,
        "  A {a_label}: ttft {:.1} ms, {:.1} tok/s\n  B {b_label}: ttft {:.1} ms, {:.1} tok/s",
        ta.ttft_ms, ta.tokens_per_s, tb.ttft_ms, tb.tokens_per_s
    );
    match comparison.crossover {
        Crossover::At {
            tokens,
            shorter,
            longer,
        } => {
            let _ = writeln!(
                out,
                "  n* = {tokens:.1} tokens: shorter answers finish first on {}, longer on {}",
                name(shorter),
                name(longer)
            );
        }
        Crossover::Never { first } => {
            let _ = writeln!(
                out,
                "  no crossover: {} finishes first at every length",
                name(first)
            );
        }
    }
    for q in &comparison.at_quantiles {
        let _ = writeln!(
            out,
            "  at p{:.0} lengths: A {:.0} tokens in {:.0} ms, B {:.0} tokens in {:.0} ms -> {} first",
            q.quantile,
            q.a_tokens,
            q.a_ms,
            q.b_tokens,
            q.b_ms,
            name(q.first)
        );
    }
    out
}

/// The first target's batch goes to `path`; with `--against`, the second target's goes
/// beside it as `STEM.against.json`. Each is a plain ttfx-core batch (so `ttfx report`
/// reads it), plus optional top-level fields that readers of the schema ignore:
/// `ground_truth` (per run: the probe's `first_byte` beside the browser's own record of
/// the request, DevTools' or BiDi's; `source` says which) and
/// `speech` (voice turns: what the fake microphone said and its true length) and
/// `sandbox` (Chromium: `{"state": "on"/"off"/"remote", "user"?, "why"?}`).
pub fn write_json(
    path: &Path,
    batches: &[(String, BatchReport)],
    truth: &[GroundTruth],
    speech: Option<&SpeechTruth>,
    sandbox: Option<&Sandbox>,
) -> Result<(), OutputError> {
    for (i, (label, batch)) in batches.iter().enumerate() {
        let target_path = if i == 0 {
            path.to_path_buf()
        } else {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("batch");
            path.with_file_name(format!("{stem}.against.json"))
        };
        let mut value = serde_json::to_value(batch).map_err(encode("batch"))?;
        let rows: Vec<&GroundTruth> = truth.iter().filter(|g| &g.target == label).collect();
        if let Some(obj) = value.as_object_mut()
            && !rows.is_empty()
        {
            obj.insert(
                "ground_truth".into(),
                serde_json::to_value(rows).map_err(encode("ground truth"))?,
            );
        }
        if let (Some(obj), Some(speech)) = (value.as_object_mut(), speech) {
            obj.insert(
                "speech".into(),
                serde_json::to_value(speech).map_err(encode("speech"))?,
            );
        }
        if let (Some(obj), Some(sandbox)) = (value.as_object_mut(), sandbox) {
            obj.insert("sandbox".into(), sandbox.to_json());
        }
        let text = serde_json::to_string_pretty(&value).map_err(encode("batch"))?;
        if let Err(cause) = std::fs::write(&target_path, text + "\n") {
            return Err(OutputError::Write {
                path: target_path,
                cause,
            });
        }
    }
    Ok(())
}

/// `what` could not be made into JSON.
fn encode(what: &'static str) -> impl FnOnce(serde_json::Error) -> OutputError {
    move |cause| OutputError::Encode { what, cause }
}
