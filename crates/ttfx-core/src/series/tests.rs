//! The summarized series against the series kept whole: exact where the module says
//! exact, within [`GAP_RELATIVE_ERROR`] where it says so, and bounded in memory.

use super::*;
use crate::Milestone;
use crate::Recorder;
use crate::decode::{DialectKind, Limits};
use crate::metrics::{RequestMetrics, buffered};
use crate::percentile::Summary;
use crate::report::{BatchReport, ReportFile, Run, RunReport};
use crate::test_support::{Rng, within};
use crate::timeline::Timeline;

fn chunk(at_ms: f64, visible_tokens: u32) -> Chunk {
    Chunk {
        at_ms,
        bytes: 100,
        events: 1,
        visible_tokens,
        reasoning_tokens: 0,
    }
}

// ---------------------------------------------------------------------------------
// The summarizer on chunk series, against the metrics' own rules.

#[test]
fn the_burst_window_gives_the_buffered_rule_s_largest_window() {
    let mut rng = Rng::new(5);
    for round in 0..200 {
        // Times on a 12.5 ms grid put many chunks exactly 100 ms apart (the window's
        // edge), and repeated times come up often.
        let mut at = 0.0;
        let chunks: Vec<Chunk> = (0..rng.below(1, 120))
            .map(|_| {
                at += 12.5 * rng.below(0, 12) as f64;
                chunk(at, rng.below(0, 4) as u32)
            })
            .collect();
        let kept = rng.below(0, chunks.len() as u64 + 1) as usize;
        let (mut s, mut summary) = Summarizer::start(&chunks[..kept], SeriesBound::keeping(kept));
        for c in &chunks[kept..] {
            assert!(s.push(&mut summary, c));
        }
        let total: u64 = chunks.iter().map(|c| u64::from(c.visible_tokens)).sum();
        assert_eq!(
            buffered::of_counts(summary.burst_visible_tokens, total),
            buffered::verdict(&chunks),
            "round {round}: {chunks:?}"
        );
        assert!(!summary.burst_lower_bound);
    }
}

#[test]
fn an_overfull_burst_window_stays_bounded_and_says_its_count_is_a_lower_bound() {
    // 6,000 visible chunks 10 µs apart: all inside one 100 ms window.
    let chunks: Vec<Chunk> = (0..6_000).map(|i| chunk(f64::from(i) / 100.0, 1)).collect();
    let (mut s, mut summary) = Summarizer::start(&[], SeriesBound::keeping(0));
    for c in &chunks {
        s.push(&mut summary, c);
    }
    assert!(summary.burst_lower_bound);
    assert!(s.held_bytes() <= BURST_TIMES_MAX * 16, "{}", s.held_bytes());
    let exact = buffered::verdict(&chunks);
    let kept = buffered::of_counts(summary.burst_visible_tokens, 6_000);
    assert!(kept.burst_share <= exact.burst_share);
    // Here nothing left the window early, so the bound is the value.
    assert_eq!(kept, exact);
}

#[test]
fn bins_hold_equal_numbers_of_chunks_and_every_byte() {
    let bound = SeriesBound::keeping(32); // at most 4 bins
    let (mut s, mut summary) = Summarizer::start(&[], bound);
    for n in 1..=75u32 {
        let mut c = chunk(f64::from(n), n % 3);
        c.bytes = u64::from(n);
        s.push(&mut summary, &c);
        let bins = &summary.bins;
        assert!(bins.len() <= 4, "{n}: {bins:?}");
        let width = bins[0].chunks;
        assert!(width.is_power_of_two());
        assert!(bins[..bins.len() - 1].iter().all(|b| b.chunks == width));
        assert!(bins.last().unwrap().chunks <= width);
        assert_eq!(bins.iter().map(|b| b.chunks).sum::<u64>(), u64::from(n));
        assert_eq!(
            bins.iter().map(|b| b.bytes).sum::<u64>(),
            u64::from(n * (n + 1) / 2)
        );
        assert!(bins.windows(2).all(|w| w[0].to_ms < w[1].from_ms));
    }
    // 75 chunks in bins of 32: 32, 32, 11.
    let widths: Vec<u64> = summary.bins.iter().map(|b| b.chunks).collect();
    assert_eq!(widths, [32, 32, 11]);
    assert_eq!(summary.bins[2].from_ms, 65.0);
    assert_eq!(summary.bins[2].to_ms, 75.0);
}

fn sse(content: &str) -> String {
    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{content:?}}}}}]}}\n\n")
}

#[test]
fn a_chunk_timed_before_an_earlier_one_is_an_anomaly_and_counts_as_arriving_with_it() {
    let mut r = Recorder::new(None, Limits::DEFAULT).with_chunk_limit(2);
    r.headers(1.0, 200, Some("text/event-stream"), &[]);
    for at in [10.0, 20.0, 30.0, 25.0, 40.0] {
        r.chunk(at, sse("w").as_bytes());
    }
    let t = r.finish();
    let s = t.chunk_summary.as_ref().unwrap();
    assert_eq!(t.anomalies[0].class, "chunk_out_of_order");
    // Gaps 10, 10, 0 (25 counted at 30), 10.
    assert_eq!((s.gaps.count, s.gaps.min_ms, s.gaps.sum_ms), (4, 0.0, 30.0));
    // The bins keep the times as they came: the first bin spans 25–30.
    assert_eq!(
        (s.bins[0].from_ms, s.bins.last().unwrap().to_ms),
        (25.0, 40.0)
    );
}

#[test]
fn the_bound_is_exact_a_series_one_chunk_longer_is_summarized() {
    let run = |n: u32| {
        let mut r = Recorder::new(None, Limits::DEFAULT).with_chunk_limit(16);
        r.headers(1.0, 200, Some("text/event-stream"), &[]);
        for i in 0..n {
            r.chunk(10.0 * f64::from(i + 1), sse("w").as_bytes());
        }
        r.end(10.0 * f64::from(n + 1));
        let t = r.finish();
        let json = serde_json::to_string(&RunReport::of_timeline(None, None, t.clone()).unwrap());
        (t, json.unwrap())
    };
    let (t, json) = run(16);
    assert_eq!(t.chunks.len(), 16);
    assert!(t.chunk_summary.is_none());
    // Nothing new in the report of a series kept whole: it is a version-1 document.
    assert!(
        !json.contains("chunk_summary") && !json.contains("icl_summary"),
        "{json}"
    );
    assert!(json.starts_with(r#"{"schema_version":1,"#), "{json}");

    let (t, json) = run(17);
    assert_eq!(t.chunks.len(), 16);
    assert_eq!(t.chunk_summary.as_ref().map(|s| s.chunks), Some(1));
    assert!(json.starts_with(r#"{"schema_version":2,"#), "{json}");
    assert!(json.contains(r#""icl_summary":{"count":16,"#), "{json}");
}

// ---------------------------------------------------------------------------------
// Long streams through the recorder.

/// A deterministic chat stream of `n` chunks fed to every recorder in `rs`: a role
/// chunk, reasoning, then visible text; gaps of 10–30 ms on a 0.1 ms clock (the
/// page's coarsened `performance.now()`), with keep-alive comments, coalesced events,
/// chunks that arrive together, and stalls of 0.3–3 s; usage and `[DONE]` at the end.
/// `slow` makes a stream whose median gap is ~500 ms (stall threshold above the floor)
/// and whose stalls last 2–10 s. With `usage` the stream ends with the server's token
/// counts; without, token counts are the recorder's estimate. Returns every chunk as
/// the generator knows it (bytes, events and tokens), a reference that owes nothing to
/// the recorder, and the end time.
fn chat_stream(
    rs: &mut [&mut Recorder],
    n: usize,
    seed: u64,
    slow: bool,
    usage: bool,
) -> (Vec<Chunk>, f64) {
    let word = sse(" word");
    let two = format!("{}{}", sse(" two"), sse(" more"));
    // (body, events, visible tokens, reasoning tokens)
    let role: (&[u8], u32, u32, u32) = (
        b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
        1,
        0,
        0,
    );
    let think: (&[u8], u32, u32, u32) = (
        b"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n",
        1,
        0,
        1,
    );
    let ping: (&[u8], u32, u32, u32) = (b": keep-alive\n\n", 0, 0, 0);
    let end: (&[u8], u32, u32, u32) = if usage {
        (
            b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":400000,\
              \"completion_tokens_details\":{\"reasoning_tokens\":199}}}\n\ndata: [DONE]\n\n",
            2,
            0,
            0,
        )
    } else {
        (b"data: [DONE]\n\n", 1, 0, 0)
    };
    let mut rng = Rng::new(seed);
    let mut ticks: u64 = 3_000; // 0.1 ms each: the first chunk at 300 ms
    let mut sent = Vec::with_capacity(n);
    for r in rs.iter_mut() {
        r.headers(150.0, 200, Some("text/event-stream"), &["queue;dur=4"]);
    }
    for i in 0..n {
        let (body, events, visible_tokens, reasoning_tokens) = match i {
            0 => role,
            _ if i == n - 1 => end,
            _ if i < 200 => think,
            _ if rng.one_in(100) => ping,
            _ if rng.one_in(20) => (two.as_bytes(), 2, 2, 0),
            _ => (word.as_bytes(), 1, 1, 0),
        };
        let at_ms = ticks as f64 / 10.0;
        for r in rs.iter_mut() {
            r.chunk(at_ms, body);
        }
        sent.push(Chunk {
            at_ms,
            bytes: body.len() as u64,
            events,
            visible_tokens,
            reasoning_tokens,
        });
        ticks += if rng.one_in(1_500) {
            // A stall.
            if slow {
                rng.below(20_000, 100_000)
            } else {
                rng.below(3_000, 30_000)
            }
        } else if rng.one_in(50) {
            0 // read together with the next
        } else if slow {
            rng.below(4_000, 6_000)
        } else {
            rng.below(100, 300)
        };
    }
    let done = ticks as f64 / 10.0 + 5.0;
    for r in rs.iter_mut() {
        r.end(done);
    }
    (sent, done)
}

/// The summarized run's metrics with the fields that are not exact replaced by the
/// reference's: what is left must be equal, field for field.
fn with_estimates_replaced(mut m: RequestMetrics, reference: &RequestMetrics) -> RequestMetrics {
    m.icl_ms.clone_from(&reference.icl_ms);
    m.icl_summary = None;
    if let (Some(s), Some(r)) = (m.stalls.as_mut(), reference.stalls) {
        s.median_gap_ms = r.median_gap_ms;
    }
    m.notes
        .retain(|n| !n.starts_with("chunk series summarized"));
    m
}

#[test]
fn two_hours_at_50_chunks_per_second_keep_every_metric() {
    const CHUNKS: usize = 360_000;
    let mut recorder = Recorder::new(None, Limits::DEFAULT);
    let (sent, done) = chat_stream(&mut [&mut recorder], CHUNKS, 2024, false, false);
    let held = recorder.held();
    let t = recorder.finish();

    // The milestones are the generator's, and the kept chunks are its first chunks.
    let first = |keep: fn(&Chunk) -> bool| sent.iter().find(|c| keep(c)).map(|c| c.at_ms);
    let last_token = sent.iter().rev().find(|c| c.tokens() > 0).map(|c| c.at_ms);
    for (milestone, at) in [
        (Milestone::FirstByte, Some(sent[0].at_ms)),
        (Milestone::FirstEvent, first(|c| c.events > 0)),
        (Milestone::FirstToken, first(|c| c.tokens() > 0)),
        (
            Milestone::FirstVisibleToken,
            first(|c| c.visible_tokens > 0),
        ),
        (Milestone::LastToken, last_token),
        (Milestone::Done, Some(done)),
    ] {
        assert_eq!(t.milestones.get(milestone), at, "{milestone}");
    }
    assert_eq!(t.chunks.len(), KEPT_CHUNKS);
    assert_eq!(t.chunks[..], sent[..KEPT_CHUNKS]);
    // The reference: the same timeline with every chunk kept.
    let reference = Timeline {
        chunks: sent.clone(),
        chunk_summary: None,
        ..t.clone()
    };

    // The series is bounded: the first chunks exactly, then bins.
    let s = t.chunk_summary.as_ref().unwrap();
    assert_eq!(s.chunks as usize, CHUNKS - KEPT_CHUNKS);
    assert!(s.bins.len() <= KEPT_CHUNKS / 8 && s.bins.len() > KEPT_CHUNKS / 16);
    assert!(held.chunks <= KEPT_CHUNKS * 32, "{held:?}");
    assert!(held.bins <= KEPT_CHUNKS / 8 * 56, "{held:?}");
    assert!(held.gap_buckets <= 4_096 * 16, "{held:?}");
    assert!(held.burst_window <= BURST_TIMES_MAX * 16, "{held:?}");
    // Totals are exact, and the bins hold every chunk not kept, in order.
    let rest = &sent[KEPT_CHUNKS..];
    let sum = |f: fn(&Chunk) -> u64| rest.iter().map(f).sum::<u64>();
    assert_eq!(s.bytes, sum(|c| c.bytes));
    assert_eq!(s.events, sum(|c| u64::from(c.events)));
    assert_eq!(s.visible_tokens, sum(|c| u64::from(c.visible_tokens)));
    assert_eq!(s.reasoning_tokens, sum(|c| u64::from(c.reasoning_tokens)));
    assert_eq!(s.bins.iter().map(|b| b.chunks).sum::<u64>(), s.chunks);
    assert_eq!(s.bins.iter().map(|b| b.bytes).sum::<u64>(), s.bytes);
    assert_eq!(s.bins[0].from_ms, rest[0].at_ms);
    assert_eq!(s.bins.last().unwrap().to_ms, rest.last().unwrap().at_ms);

    let m = RequestMetrics::compute(&t).unwrap();
    let r = RequestMetrics::compute(&reference).unwrap();
    // The stream is what it claims: long, with stalls under the 200 ms floor rule.
    let stalls = r.stalls.unwrap();
    assert!(
        stalls.count > 100 && stalls.threshold_ms == 200.0,
        "{stalls:?}"
    );
    assert!(r.e2e_ms.unwrap().value > 7_000_000.0);
    assert_eq!(
        r.buffered.verdict,
        crate::metrics::BufferedVerdict::Streamed
    );

    // Exact: everything but the gaps' order statistics, field for field (token
    // counts, tpot, rates, the buffered verdict, stall count and total, longest gap…).
    assert_eq!(with_estimates_replaced(m.clone(), &r), r);
    // icl_ms lists the kept chunks' gaps, which are the stream's first gaps.
    assert_eq!(m.icl_ms[..], r.icl_ms[..m.icl_ms.len()]);
    assert!(m.icl_ms.len() + 1 >= KEPT_CHUNKS - 200 && m.icl_ms.len() < KEPT_CHUNKS);
    // Within the stated error: every percentile of every gap.
    let icl = m.icl_summary.unwrap();
    let exact = Summary::of(&r.icl_ms).unwrap();
    assert_eq!(
        (icl.count, icl.min, icl.max),
        (exact.count, exact.min, exact.max)
    );
    assert!(within(icl.mean, exact.mean, 1e-12));
    for (p, estimate, exact) in [
        (50, icl.p50, exact.p50),
        (90, icl.p90, exact.p90),
        (95, icl.p95, exact.p95),
        (99, icl.p99, exact.p99),
    ] {
        assert!(
            within(estimate, exact, GAP_RELATIVE_ERROR),
            "p{p}: {estimate} vs {exact}"
        );
    }
    let median = m.stalls.unwrap().median_gap_ms;
    assert!(within(median, stalls.median_gap_ms, GAP_RELATIVE_ERROR));
    assert!(
        m.notes
            .iter()
            .any(|n| n.starts_with(&format!("chunk series summarized after {KEPT_CHUNKS}")))
    );

    // The report says so, reads back, and its metrics recompute from its timeline.
    let report = RunReport::of_timeline(None, None, t).unwrap();
    assert_eq!(report.schema_version, 2);
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.len() < 2_000_000, "{} bytes", json.len());
    let ReportFile::Run(back) = ReportFile::from_json(&json).unwrap() else {
        panic!("a run report");
    };
    assert_eq!(*back, report);
    assert_eq!(
        RequestMetrics::compute(&back.run.timeline).unwrap(),
        back.run.metrics
    );

    // A batch pools the digest with a run kept whole: within the stated error of
    // pooling every gap of both.
    let mut short = reference.clone();
    short.chunks.truncate(3_000);
    let short = Run::new(None, None, short).unwrap();
    let whole = Run {
        id: None,
        target: None,
        timeline: reference,
        metrics: r,
    };
    let batch = BatchReport::from_runs(vec![report.run, short.clone()], &[]);
    let exact_batch = BatchReport::from_runs(vec![whole, short], &[]);
    assert_eq!(batch.schema_version, 2);
    let (pooled, exact) = (batch.statistics["icl_ms"], exact_batch.statistics["icl_ms"]);
    assert_eq!(
        (pooled.count, pooled.min, pooled.max),
        (exact.count, exact.min, exact.max)
    );
    assert!(within(pooled.mean, exact.mean, 1e-12));
    for (estimate, exact) in [
        (pooled.p50, exact.p50),
        (pooled.p90, exact.p90),
        (pooled.p95, exact.p95),
        (pooled.p99, exact.p99),
    ] {
        assert!(
            within(estimate, exact, GAP_RELATIVE_ERROR),
            "{estimate} vs {exact}"
        );
    }
    assert_eq!(
        batch.statistics["stall_count"],
        exact_batch.statistics["stall_count"]
    );
}

#[test]
fn a_slow_stream_s_stalls_above_the_floor_are_within_the_stated_error() {
    // Median gap ~500 ms: the threshold (~2 s) comes from the digest's median. The
    // reasoning (chunks 1–199) spans the bound, so hidden_reasoning needs the totals.
    let mut summarized = Recorder::new(None, Limits::DEFAULT).with_chunk_limit(100);
    let mut whole = Recorder::new(None, Limits::DEFAULT).with_chunk_limit(usize::MAX);
    let (sent, _) = chat_stream(&mut [&mut summarized, &mut whole], 30_000, 99, true, true);
    let (t, reference) = (summarized.finish(), whole.finish());
    assert_eq!(t.chunks.len(), 100);
    assert_eq!(reference.chunks, sent);
    let m = RequestMetrics::compute(&t).unwrap();
    let r = RequestMetrics::compute(&reference).unwrap();
    // Everything but the stall figures and the gaps' order statistics is exact.
    let mut exact_part = with_estimates_replaced(m.clone(), &r);
    exact_part.stalls = r.stalls;
    assert_eq!(exact_part, r);
    assert_eq!(r.hidden_reasoning.map(|h| h.streamed_tokens), Some(199));
    assert_eq!(
        r.output_tokens.map(|o| o.source),
        Some(crate::metrics::Source::ServerUsage)
    );
    let (s, exact) = (m.stalls.unwrap(), r.stalls.unwrap());
    assert!(exact.threshold_ms > 1_500.0 && exact.count > 5, "{exact:?}");
    assert!(within(
        s.median_gap_ms,
        exact.median_gap_ms,
        GAP_RELATIVE_ERROR
    ));
    assert!(within(
        s.threshold_ms,
        exact.threshold_ms,
        GAP_RELATIVE_ERROR
    ));
    assert_eq!(s.longest_gap_ms, exact.longest_gap_ms);
    // Only gaps within 2 % of the threshold may be counted differently; every other
    // stall adds its bucket's middle, within the stated error of its length.
    let near: Vec<f64> = r
        .icl_ms
        .iter()
        .copied()
        .filter(|g| within(*g, exact.threshold_ms, 0.02))
        .collect();
    assert!(
        s.count.abs_diff(exact.count) as usize <= near.len(),
        "{s:?} vs {exact:?}"
    );
    let slack = near.iter().sum::<f64>() * (1.0 + GAP_RELATIVE_ERROR);
    assert!(
        (s.stalled_ms - exact.stalled_ms).abs()
            <= GAP_RELATIVE_ERROR * exact.stalled_ms + slack + 1e-9,
        "{s:?} vs {exact:?}, {} gaps near the threshold",
        near.len()
    );
}

#[test]
fn a_512_mib_body_leaves_the_recorder_s_memory_bounded() {
    // 32,768 reads of 16 KiB (a browser's usual read size), made of one reused buffer:
    // a token event, then a comment line padding the read (as servers pad against
    // buffering proxies). The last 2,048 reads (32 MiB) are one line that never ends.
    const READS: u32 = 32_768;
    const READ_BYTES: usize = 16 * 1024;
    let mut padded = sse("w").into_bytes();
    padded.extend_from_slice(b": ");
    padded.resize(READ_BYTES - 1, b'p');
    padded.push(b'\n');
    let endless = vec![b'x'; READ_BYTES];
    let mut r = Recorder::new(Some(DialectKind::OpenAiChat), Limits::DEFAULT);
    r.headers(10.0, 200, Some("text/event-stream"), &[]);
    let (mut most_decoder, mut most_series) = (0, 0);
    for i in 0..READS {
        let read = if i < READS - 2_048 { &padded } else { &endless };
        r.chunk(20.0 + f64::from(i) * 0.5, read);
        let held = r.held();
        most_decoder = most_decoder.max(held.decoder.unwrap());
        most_series =
            most_series.max(held.chunks + held.bins + held.gap_buckets + held.burst_window);
    }
    let held = r.held();
    r.end(20.0 + f64::from(READS) * 0.5);
    let t = r.finish();

    // The series: the first chunks, then at most 1,024 bins, whatever the body size.
    assert_eq!(t.chunks.len(), KEPT_CHUNKS);
    let s = t.chunk_summary.as_ref().unwrap();
    assert_eq!(s.chunks, u64::from(READS) - KEPT_CHUNKS as u64);
    assert!(s.bins.len() <= KEPT_CHUNKS / 8);
    let total: u64 = t.chunks.iter().map(|c| c.bytes).sum::<u64>() + s.bytes;
    assert_eq!(total, u64::from(READS) * READ_BYTES as u64);
    assert_eq!(
        t.chunks
            .iter()
            .map(|c| u64::from(c.visible_tokens))
            .sum::<u64>()
            + s.visible_tokens,
        u64::from(READS) - 2_048
    );
    assert!(held.chunks <= KEPT_CHUNKS * 32 && held.bins <= KEPT_CHUNKS / 8 * 56);
    // The series' state never passed the documented 440 KiB.
    assert!(most_series <= 440 * 1024, "{most_series}");
    // The decoder did buffer the unterminated line, up to its line limit and no
    // further (a Vec may reserve up to twice what it holds), and gave the memory back
    // once the line passed the limit.
    let limits = Limits::DEFAULT;
    assert!(most_decoder >= limits.max_line_bytes, "{most_decoder}");
    assert!(
        most_decoder <= 2 * (limits.max_line_bytes + limits.max_event_bytes),
        "{most_decoder}"
    );
    assert!(held.decoder.unwrap() < 64 * 1024, "{held:?}");
    // The line that never ended was dropped and reported, not kept.
    assert!(
        t.anomalies.iter().any(|a| a.class == "too_long"),
        "{:?}",
        t.anomalies
    );
}
