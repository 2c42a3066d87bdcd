//! A run report's size is bounded whatever the stream's length (#35): the recorder keeps
//! the first chunks one by one and summarizes the rest (docs/report.md, "Summarized chunk
//! series"), so a stream four times longer writes a report no larger.

// The helpers below run only inside tests; a failed call should stop the run loudly.
#![allow(clippy::expect_used)]

use ttfx_analysis::Runs;

/// An OpenAI chat stream of `events` one-token events, as the page hands it over: 1 KiB
/// chunks, 16 KiB batches, one chunk every 0.25 ms.
fn report_of(events: usize) -> String {
    let mut body = String::new();
    for i in 0..events {
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-{i}\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" t{}\"}},\"finish_reason\":null}}]}}\n\n",
            i % 97
        ));
    }
    body.push_str("data: [DONE]\n\n");
    let mut runs = Runs::default();
    runs.begin(1, Some("openai-chat")).expect("begin");
    runs.recorder(1)
        .expect("run")
        .headers(10.0, 200, Some("text/event-stream"), &[]);
    let mut at = 20.0;
    for batch in body.as_bytes().chunks(16 << 10) {
        let mut meta = Vec::new();
        for chunk in batch.chunks(1024) {
            meta.extend([at, chunk.len() as f64]);
            at += 0.25;
        }
        runs.chunks(1, &meta, batch).expect("chunks");
    }
    runs.end(1, at).expect("end");
    runs.finish(1).expect("finish").report
}

/// What a report must show of a summarized stream: every token counted (the totals are
/// exact), the kept chunks and the summary's chunks adding up to all of them.
fn check_counts(report: &str, events: usize) {
    let v: serde_json::Value = serde_json::from_str(report).expect("report JSON");
    let timeline = &v["run"]["timeline"];
    let kept = timeline["chunks"].as_array().expect("chunks").len() as u64;
    let summarized = timeline["chunk_summary"]["chunks"].as_u64().unwrap_or(0);
    let visible = timeline["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c["visible_tokens"].as_u64().unwrap_or(0))
        .sum::<u64>()
        + timeline["chunk_summary"]["visible_tokens"]
            .as_u64()
            .unwrap_or(0);
    assert_eq!(visible, events as u64, "visible tokens of {events} events");
    assert!(kept + summarized > 0);
}

#[test]
fn a_report_does_not_grow_with_its_stream() {
    let short = report_of(2_000);
    let long = report_of(50_000);
    let longer = report_of(200_000);
    eprintln!(
        "report bytes: 2,000 events {}, 50,000 {}, 200,000 {}",
        short.len(),
        long.len(),
        longer.len()
    );
    for (report, events) in [(&short, 2_000), (&long, 50_000), (&longer, 200_000)] {
        check_counts(report, events);
    }
    // Four times the stream: the kept chunks and gaps are the same number, the bins at
    // most as many; only the digits of later times and the gap digest's few buckets
    // may add bytes.
    assert!(
        longer.len() as f64 <= long.len() as f64 * 1.05,
        "{} bytes for 200,000 events against {} for 50,000",
        longer.len(),
        long.len()
    );
    // 2,048 kept chunks of about 80 B and their gaps of about 5 B, 256 bins of about
    // 110 B, a few KB of milestones and metrics: about 0.2 MB, far below the
    // collector's 1 MiB body limit.
    assert!(longer.len() < 256 << 10, "{} bytes", longer.len());
}
