//! Every metric on hand-built timelines whose answers are worked out in the comments.

use super::*;
use crate::server_timing::{ServerTiming, TimingSource, Usage};
use crate::stats::{Budget, goodput};
use crate::timeline::{
    AudioSeries, Chunk, Failure, FailureClass, ServerWallClock, Underrun, Visibility,
    VisibilityChange,
};
use Milestone::*;

fn chunk(at_ms: f64, visible_tokens: u32, reasoning_tokens: u32) -> Chunk {
    Chunk {
        at_ms,
        bytes: 64,
        events: 1,
        visible_tokens,
        reasoning_tokens,
    }
}

fn timeline(milestones: &[(Milestone, f64)], chunks: Vec<Chunk>) -> Timeline {
    let mut t = Timeline {
        chunks,
        ..Timeline::default()
    };
    for &(m, at) in milestones {
        t.milestones.set(m, at);
    }
    t
}

fn usage(completion: u64, reasoning: Option<u64>) -> Option<Usage> {
    Some(Usage {
        completion_tokens: Some(completion),
        reasoning_tokens: reasoning,
        ..Usage::default()
    })
}

/// Some note of `m` mentions `needle`.
fn assert_note(m: &RequestMetrics, needle: &str) {
    assert!(
        m.notes.iter().any(|n| n.contains(needle)),
        "no note with {needle:?}: {:?}",
        m.notes
    );
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// A plain streamed answer: 4 one-token chunks at 300, 330, 360, 420 ms; done at 430.
fn plain() -> Timeline {
    let mut t = timeline(
        &[
            (RequestStart, 0.0),
            (Headers, 120.0),
            (FirstByte, 300.0),
            (FirstToken, 300.0),
            (FirstVisibleToken, 300.0),
            (FirstDom, 304.0),
            (FirstPaint, 316.0),
            (LastToken, 420.0),
            (Done, 430.0),
        ],
        vec![
            chunk(300.0, 1, 0),
            chunk(330.0, 1, 0),
            chunk(360.0, 1, 0),
            chunk(420.0, 1, 0),
        ],
    );
    t.paint_method = Some(PaintMethod::ElementTiming);
    t.server.usage = usage(4, None);
    t
}

#[test]
fn plain_stream_gives_every_latency_and_token_metric() {
    let m = RequestMetrics::compute(&plain()).unwrap();
    assert_eq!(m.outcome, Outcome::Completed);
    assert_eq!(m.ttft_ms, Some(Measured::client(300.0)));
    assert_eq!(m.ttft_visible_ms, Some(Measured::client(300.0)));
    assert_eq!(m.e2e_ms, Some(Measured::client(420.0)));
    assert_eq!(m.icl_ms, [30.0, 30.0, 60.0]);
    // tpot = (420 − 300) / (4 − 1) = 40 ms; decode rate 1000 / 40 = 25 tok/s.
    assert_eq!(
        m.tpot_ms,
        Some(Measured {
            value: 40.0,
            source: Source::ServerUsage
        })
    );
    assert_eq!(m.decode_tokens_per_s.map(|r| r.value), Some(25.0));
    // 4 tokens over 420 ms.
    assert!(close(m.output_tokens_per_s.unwrap().value, 4000.0 / 420.0));
    assert_eq!(
        m.output_tokens,
        Some(Measured {
            value: 4.0,
            source: Source::ServerUsage
        })
    );
    assert_eq!(m.dom_lag_ms, Some(Measured::client(4.0)));
    assert_eq!(
        m.render_lag_ms,
        Some(Measured {
            value: 16.0,
            source: Source::ElementTiming
        })
    );
    // Three gaps: median 30, threshold max(120, 200) = 200; nothing above it.
    let stalls = m.stalls.unwrap();
    assert_eq!(
        (stalls.count, stalls.median_gap_ms, stalls.threshold_ms),
        (0, 30.0, 200.0)
    );
    assert_eq!(stalls.longest_gap_ms, 60.0);
    // No stall is +0 ms, not the -0.0 an empty float sum gives (it would print as "-0.0").
    assert!(stalls.stalled_ms.is_sign_positive());
    // Four visible tokens are too few to judge buffering; the share is still reported:
    // the window from 300 to 400 ms holds 3 of the 4.
    assert_eq!(m.buffered.verdict, BufferedVerdict::Undetermined);
    assert_eq!(m.buffered.burst_share, Some(0.75));
    assert_eq!(m.hidden_reasoning, None);
    assert!(m.notes.is_empty(), "{:?}", m.notes);
}

#[test]
fn single_token() {
    let mut t = timeline(
        &[
            (FirstToken, 250.0),
            (FirstVisibleToken, 250.0),
            (LastToken, 250.0),
            (Done, 260.0),
        ],
        vec![chunk(250.0, 1, 0)],
    );
    t.server.usage = usage(1, None);
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.ttft_ms.map(|v| v.value), Some(250.0));
    assert_eq!(m.e2e_ms.map(|v| v.value), Some(250.0));
    assert!(m.icl_ms.is_empty());
    // One token has no inter-token time: tpot and the decode rate do not exist.
    assert_eq!(m.tpot_ms, None);
    assert_eq!(m.decode_tokens_per_s, None);
    // 1 token in 250 ms = 4 tok/s.
    assert_eq!(m.output_tokens_per_s.map(|v| v.value), Some(4.0));
    assert_eq!(m.stalls, None);
    assert_eq!(m.buffered.verdict, BufferedVerdict::Undetermined);
}

#[test]
fn no_visible_token_reasoning_cut_off_by_max_tokens() {
    // Reasoning streamed at 200..=500 ms, then max_tokens ended the answer before any
    // visible text. Usage: 6 completion tokens, all reasoning.
    let mut t = timeline(
        &[(FirstToken, 200.0), (LastToken, 500.0), (Done, 505.0)],
        vec![
            chunk(200.0, 0, 2),
            chunk(300.0, 0, 1),
            chunk(400.0, 0, 1),
            chunk(500.0, 0, 2),
        ],
    );
    t.server.usage = usage(6, Some(6));
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.outcome, Outcome::Completed);
    assert_eq!(m.ttft_ms.map(|v| v.value), Some(200.0));
    assert_eq!(m.ttft_visible_ms, None);
    assert_eq!(m.render_lag_ms, None);
    assert_eq!(m.dom_lag_ms, None);
    assert_eq!(m.icl_ms, [100.0, 100.0, 100.0]);
    // Reasoning was streamed, so not hidden; tpot = (500 − 200) / (6 − 1) = 60.
    assert_eq!(
        m.hidden_reasoning,
        Some(HiddenReasoning {
            reported_tokens: 6,
            streamed_tokens: 6,
            hidden: false
        })
    );
    assert_eq!(m.tpot_ms.map(|v| v.value), Some(60.0));
    assert_eq!(
        m.buffered,
        Buffered {
            verdict: BufferedVerdict::Undetermined,
            visible_tokens: 0,
            burst_share: None
        }
    );
}

#[test]
fn multi_token_chunks_count_one_gap_per_chunk_and_tpot_per_token() {
    // 3 chunks of 4 tokens each at 100, 150, 200 ms; usage says 12.
    let mut t = timeline(
        &[
            (FirstToken, 100.0),
            (FirstVisibleToken, 100.0),
            (LastToken, 200.0),
            (Done, 200.0),
        ],
        vec![chunk(100.0, 4, 0), chunk(150.0, 4, 0), chunk(200.0, 4, 0)],
    );
    t.server.usage = usage(12, None);
    let m = RequestMetrics::compute(&t).unwrap();
    // icl (vLLM's ITL) is per chunk: two gaps of 50 ms.
    assert_eq!(m.icl_ms, [50.0, 50.0]);
    // tpot is per token: (200 − 100) / (12 − 1) = 9.0909… ms.
    assert!(close(m.tpot_ms.unwrap().value, 100.0 / 11.0));
    // The first token of a chunk arrives with its whole chunk, so tpot < icl.
    assert!(m.tpot_ms.unwrap().value < m.icl_ms[0]);
}

#[test]
fn usage_missing_falls_back_to_a_labelled_estimate() {
    let mut t = plain();
    t.server.usage = None;
    t.chunks[1].visible_tokens = 3; // a coalesced delta counts as what the decoder saw
    let m = RequestMetrics::compute(&t).unwrap();
    // 1 + 3 + 1 + 1 = 6 deltas counted.
    assert_eq!(
        m.output_tokens,
        Some(Measured {
            value: 6.0,
            source: Source::Estimate
        })
    );
    // tpot = 120 / 5 = 24, labelled as an estimate, and so is every rate built on it.
    assert_eq!(
        m.tpot_ms,
        Some(Measured {
            value: 24.0,
            source: Source::Estimate
        })
    );
    assert_eq!(m.decode_tokens_per_s.unwrap().source, Source::Estimate);
    assert_eq!(m.output_tokens_per_s.unwrap().source, Source::Estimate);
    assert_note(&m, "estimates");
}

#[test]
fn aborted_stream_keeps_what_was_seen_and_drops_completion_metrics() {
    let t = timeline(
        &[
            (FirstToken, 300.0),
            (FirstVisibleToken, 300.0),
            (LastToken, 360.0),
            (Aborted, 400.0),
        ],
        vec![chunk(300.0, 1, 0), chunk(330.0, 1, 0), chunk(360.0, 1, 0)],
    );
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.outcome, Outcome::Aborted);
    assert_eq!(m.ttft_ms.map(|v| v.value), Some(300.0));
    assert_eq!(m.icl_ms, [30.0, 30.0]);
    // The last token before the abort is not the end of the answer.
    assert_eq!(m.e2e_ms, None);
    assert_eq!(m.tpot_ms, None);
    assert_eq!(m.output_tokens_per_s, None);
    // An abort that makes the fetch reject is still an abort.
    let mut t = t;
    t.milestones.set(Error, 401.0);
    assert_eq!(
        RequestMetrics::compute(&t).unwrap().outcome,
        Outcome::Aborted
    );
}

#[test]
fn failures_are_failed_whichever_way_they_are_recorded() {
    let mut t = timeline(&[(Headers, 80.0), (Error, 81.0)], vec![]);
    t.failure = Some(Failure {
        class: FailureClass::HttpStatus,
        http_status: Some(429),
        detail: None,
    });
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.outcome, Outcome::Failed);
    assert_eq!((m.ttft_ms, m.e2e_ms, m.output_tokens), (None, None, None));
    // An error before the user gave up is a failure.
    t.milestones.set(Aborted, 500.0);
    assert_eq!(
        RequestMetrics::compute(&t).unwrap().outcome,
        Outcome::Failed
    );
    // A cut-off timeline with neither done nor error is incomplete, not completed.
    let t = timeline(&[(FirstToken, 10.0)], vec![chunk(10.0, 1, 0)]);
    assert_eq!(
        RequestMetrics::compute(&t).unwrap().outcome,
        Outcome::Incomplete
    );
}

fn server_timing(name: &str, ms: f64, source: TimingSource) -> ServerTiming {
    ServerTiming {
        name: name.into(),
        duration_ms: Some(ms),
        description: None,
        source,
    }
}

#[test]
fn server_data_arriving_out_of_order_gives_the_same_metrics() {
    let mut t = plain();
    t.server.timings = vec![
        // The header knew only the queue; the in-band ttft came at the end of the body;
        // the proxy's record was fetched last. Two sources report first_token.
        server_timing("queue", 12.0, TimingSource::ServerTimingHeader),
        server_timing("ttft", 230.0, TimingSource::InBand),
        server_timing("last_token", 395.0, TimingSource::VantageProxy),
        server_timing("first_token", 250.0, TimingSource::VantageProxy),
    ];
    let in_order = RequestMetrics::compute(&t).unwrap();
    // The proxy's record wins over the in-band figure: gap = 300 − 250.
    let first = in_order
        .gaps
        .iter()
        .find(|g| g.milestone == FirstToken)
        .unwrap();
    assert_eq!(
        (first.gap_ms, first.server_name.as_str()),
        (50.0, "first_token")
    );
    assert_eq!(first.source, TimingSource::VantageProxy);
    let last = in_order
        .gaps
        .iter()
        .find(|g| g.milestone == LastToken)
        .unwrap();
    assert_eq!(last.gap_ms, 25.0);
    assert_eq!(in_order.gaps.len(), 2);
    assert_eq!(in_order.scalar("gap.first_token_ms"), Some(50.0));

    // Reverse the server entries and shuffle the chunk record: nothing changes.
    let mut shuffled = t.clone();
    shuffled.server.timings.reverse();
    shuffled.chunks.swap(0, 3);
    shuffled.chunks.swap(1, 2);
    assert_eq!(RequestMetrics::compute(&shuffled).unwrap(), in_order);

    // Without the proxy, the in-band alias is the counterpart.
    t.server
        .timings
        .retain(|s| s.source != TimingSource::VantageProxy);
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.gaps.len(), 1);
    assert_eq!(
        (m.gaps[0].gap_ms, m.gaps[0].server_name.as_str()),
        (70.0, "ttft")
    );
}

#[test]
fn hidden_reasoning_is_detected_and_kept_out_of_tpot() {
    // Usage: 104 completion tokens of which 100 reasoning; only 4 visible were streamed.
    let mut t = plain();
    t.server.usage = usage(104, Some(100));
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(
        m.hidden_reasoning,
        Some(HiddenReasoning {
            reported_tokens: 100,
            streamed_tokens: 0,
            hidden: true
        })
    );
    assert_eq!(m.output_tokens.map(|v| v.value), Some(104.0));
    // The 100 hidden tokens were generated before first_token: tpot = 120 / (4 − 1).
    assert_eq!(m.tpot_ms.map(|v| v.value), Some(40.0));
    // Usage that reports no reasoning says nothing hidden.
    t.server.usage = usage(4, Some(0));
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.hidden_reasoning.map(|h| h.hidden), Some(false));
}

#[test]
fn stall_rule_compares_with_the_request_s_own_median() {
    // Gaps 30, 30, 30, 30, 1000: median 30, threshold max(120, 200) = 200 → one stall.
    let s = chunks::stalls(&[30.0, 30.0, 1000.0, 30.0, 30.0]).unwrap();
    assert_eq!((s.count, s.stalled_ms, s.threshold_ms), (1, 1000.0, 200.0));
    // A slow but steady stream: median 300, threshold 1200; 1100 is no stall, 1300 is.
    let s = chunks::stalls(&[300.0, 300.0, 1100.0, 1300.0]).unwrap();
    // Sorted 300, 300, 1100, 1300: median (h = 1.5) = 700, threshold 2800 → none.
    assert_eq!(
        (s.median_gap_ms, s.threshold_ms, s.count),
        (700.0, 2800.0, 0)
    );
    let s = chunks::stalls(&[300.0, 300.0, 300.0, 1300.0]).unwrap();
    assert_eq!((s.threshold_ms, s.count), (1200.0, 1));
    // A fast stream's 150 ms blip stays under the 200 ms floor.
    assert_eq!(chunks::stalls(&[10.0, 10.0, 10.0, 150.0]).unwrap().count, 0);
    // Two gaps are not enough to know what is typical.
    assert_eq!(chunks::stalls(&[10.0, 5000.0]), None);
}

#[test]
fn buffered_verdict_from_how_visible_tokens_spread() {
    // 40 tokens dumped at the end in two reads 5 ms apart, after a lone early token.
    let dumped = [
        chunk(100.0, 1, 0),
        chunk(3000.0, 20, 0),
        chunk(3005.0, 20, 0),
    ];
    let b = buffered::verdict(&dumped);
    // 40 of 41 tokens inside one 100 ms window: 0.9756… ≥ 0.9.
    assert_eq!(b.verdict, BufferedVerdict::Buffered);
    assert!(close(b.burst_share.unwrap(), 40.0 / 41.0));

    // 40 one-token chunks every 50 ms: a 100 ms window holds at most 3 (t, t+50, t+100).
    let streamed: Vec<Chunk> = (0..40)
        .map(|i| chunk(100.0 + 50.0 * f64::from(i), 1, 0))
        .collect();
    let b = buffered::verdict(&streamed);
    assert_eq!(b.verdict, BufferedVerdict::Streamed);
    assert!(close(b.burst_share.unwrap(), 3.0 / 40.0));

    // Reasoning tokens are not visible text: a reasoning burst decides nothing.
    let mut with_reasoning = streamed.clone();
    with_reasoning.insert(0, chunk(50.0, 0, 500));
    assert_eq!(buffered::verdict(&with_reasoning), b);

    // 31 visible tokens at once: too short to tell.
    assert_eq!(
        buffered::verdict(&[chunk(10.0, 31, 0)]).verdict,
        BufferedVerdict::Undetermined
    );
}

#[test]
fn audio_metrics() {
    let mut t = plain();
    t.milestones.set(TtsRequest, 600.0);
    t.milestones.set(FirstAudioByte, 800.0);
    t.milestones.set(FirstAudioOut, 850.0);
    t.audio_out_method = Some(AudioOutMethod::OutputTimestamp);
    t.audio = Some(AudioSeries {
        audio_ms: 2000.0,
        last_byte_at_ms: 2200.0,
        underruns: vec![
            Underrun {
                at_ms: 1500.0,
                silence_ms: 40.0,
            },
            Underrun {
                at_ms: 2100.0,
                silence_ms: 60.0,
            },
        ],
        ..AudioSeries::default()
    });
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(
        m.ttfa_ms,
        Some(Measured {
            value: 850.0,
            source: Source::OutputTimestamp
        })
    );
    assert_eq!(m.ttfa_from_tts_ms.map(|v| v.value), Some(250.0));
    // (2200 − 600) ms of wall clock for 2000 ms of audio.
    assert_eq!(m.rtf.map(|v| v.value), Some(0.8));
    assert_eq!(
        m.underruns,
        Some(Underruns {
            count: 2,
            silence_ms: 100.0
        })
    );
    let no_underruns = AudioSeries {
        underruns: vec![],
        ..t.audio.clone().unwrap()
    };
    t.audio = Some(no_underruns);
    let silence = RequestMetrics::compute(&t)
        .unwrap()
        .underruns
        .unwrap()
        .silence_ms;
    assert!(silence == 0.0 && silence.is_sign_positive());
    // A text-only request has no audio metrics at all (absent, not zero).
    let m = RequestMetrics::compute(&plain()).unwrap();
    assert_eq!((m.ttfa_ms, m.rtf, m.underruns), (None, None, None));
}

#[test]
fn paint_without_a_recorded_method_is_labelled_the_least_precise_estimate() {
    let mut t = plain();
    t.paint_method = None;
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(
        m.render_lag_ms,
        Some(Measured {
            value: 16.0,
            source: Source::RafEstimate
        })
    );
}

#[test]
fn clock_offset_by_ntp_four_timestamps() {
    // Client sends at t0 = 1_000_000 and sees headers 100 ms later. The server clock runs
    // 500 ms ahead; it receives at t1 = 1_000_540 and sends at t2 = 1_000_560.
    // offset = ((540) + (1_000_560 − 1_000_100)) / 2 = 500; δ = 100 − 20 = 80; bound 40.
    let mut t = plain();
    t.milestones.set(Headers, 100.0);
    t.request_start_unix_ms = Some(1_000_000.0);
    t.server.wall_clock = Some(ServerWallClock {
        received_unix_ms: 1_000_540.0,
        sent_unix_ms: 1_000_560.0,
        source: TimingSource::VantageProxy,
    });
    let c = RequestMetrics::compute(&t).unwrap().clock_offset.unwrap();
    assert_eq!(
        (c.offset_ms, c.error_bound_ms, c.round_trip_ms),
        (500.0, 40.0, 80.0)
    );

    // A browser page widens the bound by its clock's step (reads floor by up to a step)
    // and by its timeOrigin's error; a page whose step is unknown, by 1 ms for it.
    let mut page = t.clone();
    page.environment.engine = Some("webkit".into());
    page.environment.timer_resolution_ms = Some(0.5);
    let c = RequestMetrics::compute(&page)
        .unwrap()
        .clock_offset
        .unwrap();
    assert_eq!((c.offset_ms, c.error_bound_ms), (500.0, 41.5));
    page.environment.timer_resolution_ms = None;
    let c = RequestMetrics::compute(&page)
        .unwrap()
        .clock_offset
        .unwrap();
    assert_eq!(c.error_bound_ms, 42.0);

    // At real epoch scale (~1.7e12 ms) the arithmetic must not lose the fraction:
    // t1 − t0 = 150, t2 − t0 = 154, headers 182.4 → offset (150 + 154 − 182.4) / 2 = 60.8,
    // round trip 182.4 − 4 = 178.4.
    let mut epoch = t.clone();
    epoch.milestones.set(Headers, 182.4);
    epoch.request_start_unix_ms = Some(1_767_225_599_880.0);
    epoch.server.wall_clock = Some(ServerWallClock {
        received_unix_ms: 1_767_225_600_030.0,
        sent_unix_ms: 1_767_225_600_034.0,
        source: TimingSource::VantageProxy,
    });
    let c = RequestMetrics::compute(&epoch)
        .unwrap()
        .clock_offset
        .unwrap();
    assert!(
        close(c.offset_ms, 60.8) && close(c.round_trip_ms, 178.4),
        "{c:?}"
    );

    // Contradictory wall times are a note, not a panic and not a number.
    t.server.wall_clock = Some(ServerWallClock {
        received_unix_ms: 1_000_540.0,
        sent_unix_ms: 1_000_700.0, // held 160 ms while the client waited 100
        source: TimingSource::VantageProxy,
    });
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.clock_offset, None);
    assert_note(&m, "held the request longer");
    t.server.wall_clock = Some(ServerWallClock {
        received_unix_ms: 10.0,
        sent_unix_ms: 5.0,
        source: TimingSource::InBand,
    });
    let m = RequestMetrics::compute(&t).unwrap();
    assert_note(&m, "sending (5) before receiving (10)");
}

#[test]
fn hidden_page_is_noted() {
    let mut t = plain();
    t.environment.visibility_changes = vec![VisibilityChange {
        at_ms: 350.0,
        state: Visibility::Hidden,
    }];
    let m = RequestMetrics::compute(&t).unwrap();
    assert_note(&m, "hidden");
}

#[test]
fn invalid_timelines_are_errors_not_metrics() {
    let t = timeline(&[(FirstToken, 300.0), (LastToken, 100.0)], vec![]);
    assert_eq!(
        RequestMetrics::compute(&t).unwrap_err().to_string(),
        "last_token is recorded before first_token"
    );
}

#[test]
fn goodput_keeps_failures_in_the_denominator() {
    let good = RequestMetrics::compute(&plain()).unwrap(); // ttft 300, tpot 40
    let mut slow_t = plain();
    slow_t.milestones.set(LastToken, 900.0);
    slow_t.milestones.set(Done, 900.0); // tpot (900 − 300) / 3 = 200
    let slow = RequestMetrics::compute(&slow_t).unwrap();
    let failed = RequestMetrics::compute(&timeline(&[(Error, 50.0)], vec![])).unwrap();
    let budgets = [
        Budget::parse("ttft_ms=300").unwrap(),
        Budget::parse("tpot_ms=50").unwrap(),
    ];
    let g = goodput(&[good.clone(), slow, failed, good], &budgets);
    assert_eq!((g.good, g.total), (2, 4));
    assert_eq!(g.ratio, Some(0.5));
    // A rate budget is a floor: 25 tok/s meets 20, misses 30.
    let plain_m = RequestMetrics::compute(&plain()).unwrap();
    let floor =
        |l: &str| goodput(std::slice::from_ref(&plain_m), &[Budget::parse(l).unwrap()]).good;
    assert_eq!(
        (
            floor("decode_tokens_per_s=20"),
            floor("decode_tokens_per_s=30")
        ),
        (1, 0)
    );
    // A budget on a metric the request lacks is not met.
    assert_eq!(floor("ttfa_ms=10000"), 0);
    assert_eq!(goodput(&[], &budgets).ratio, None);
}

/// Each scalar name reads the value stored under that name: every field gets its own
/// number, and the expected value is looked up in the JSON report by the name, apart
/// from the table, so a name paired with another metric's value fails here.
#[test]
fn each_scalar_name_reads_its_own_field() {
    let mut m = RequestMetrics::compute(&plain()).unwrap();
    let measured = |value| {
        Some(Measured {
            value,
            source: Source::ClientClock,
        })
    };
    m.ttft_ms = measured(1.0);
    m.ttft_visible_ms = measured(2.0);
    m.e2e_ms = measured(3.0);
    m.tpot_ms = measured(4.0);
    m.output_tokens = measured(5.0);
    m.output_tokens_per_s = measured(6.0);
    m.decode_tokens_per_s = measured(7.0);
    m.dom_lag_ms = measured(8.0);
    m.render_lag_ms = measured(9.0);
    m.ttfa_ms = measured(10.0);
    m.ttfa_from_tts_ms = measured(11.0);
    m.rtf = measured(12.0);
    m.audio_arrival_rate = measured(13.0);
    m.audio_behind_text_ms = measured(14.0);
    m.underruns = Some(Underruns {
        count: 15,
        silence_ms: 16.0,
    });
    m.handoff = Some(Handoff {
        verdict: crate::handoff::HandoffVerdict::Streaming,
        segments: 99,
        time_lost_ms: Some(17.0),
        first_complete_ms: Some(98.0),
        first_handed_ms: Some(97.0),
        llm_end_ms: Some(96.0),
        reason: None,
    });
    m.stalls = Some(Stalls {
        count: 18,
        stalled_ms: 95.0,
        longest_gap_ms: 94.0,
        median_gap_ms: 93.0,
        threshold_ms: 92.0,
    });
    m.voice_to_voice_ms = measured(19.0);
    m.turn = Some(super::TurnBreakdown {
        voice_to_voice_ms: Some(19.0),
        stages: super::Stage::ALL
            .into_iter()
            .enumerate()
            .map(|(i, stage)| super::StageTime {
                stage,
                ms: Some(20.0 + i as f64),
                share: Some(0.5),
            })
            .collect(),
        stopped_in: None,
        overlapped: Vec::new(),
    });
    m.interrupt_ms = measured(30.0);
    m.submit_delay_ms = measured(31.0);
    m.engine_hop_ms = measured(32.0);
    m.request_queued_ms = measured(33.0);

    let json = serde_json::to_value(&m).unwrap();
    let by_name = |name: &str| {
        if let Some(stage) = name
            .strip_prefix("stage_")
            .and_then(|n| n.strip_suffix("_ms"))
        {
            let stages = json.pointer("/turn/stages")?.as_array()?;
            let entry = stages.iter().find(|s| s["stage"] == stage)?;
            return entry["ms"].as_f64();
        }
        // The four names that are not fields of their own, and where their value lives.
        let pointer = match name {
            "underrun_count" => "/underruns/count".to_owned(),
            "underrun_silence_ms" => "/underruns/silence_ms".to_owned(),
            "handoff_time_lost_ms" => "/handoff/time_lost_ms".to_owned(),
            "stall_count" => "/stalls/count".to_owned(),
            field => format!("/{field}/value"),
        };
        json.pointer(&pointer).and_then(serde_json::Value::as_f64)
    };
    let scalars = m.scalars();
    assert_eq!(scalars.len(), SCALAR_NAMES.len());
    for ((name, value), listed) in scalars.iter().zip(SCALAR_NAMES) {
        assert_eq!(*name, listed);
        assert!(value.is_some(), "{name} has no value");
        assert_eq!(*value, by_name(name), "{name} reads another metric's value");
        assert_eq!(m.scalar(name), *value);
    }
    // Distinct names, distinct values: a swap cannot go unnoticed.
    let mut values: Vec<f64> = scalars.iter().filter_map(|(_, v)| *v).collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    assert_eq!(values.len(), SCALARS.len());
    let mut names: Vec<&str> = SCALAR_NAMES.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), SCALARS.len());
}

/// A page's run (its analysis ran in a Worker) with a first byte at 120 ms.
fn page_run() -> Timeline {
    let mut t = plain();
    t.environment.analysis = Some(crate::timeline::AnalysisSite::Worker);
    t
}

#[test]
fn the_engine_hop_is_the_first_byte_after_the_network_boundary() {
    let mut t = page_run();
    let first_byte = t.milestones.get(FirstByte).unwrap();
    t.milestones.set(ResponseStart, first_byte - 4.75);
    t.resource_timing = Some(crate::timeline::ResourceTiming {
        response_start_ms: Some(first_byte - 4.75),
        ..Default::default()
    });
    let m = RequestMetrics::compute(&t).unwrap();
    let hop = m.engine_hop_ms.unwrap();
    assert!(close(hop.value, 4.75), "{hop:?}");
    assert_eq!(hop.source, Source::ClientClock);
    assert_eq!(m.scalar("engine_hop_ms"), Some(hop.value));
    assert!(
        !m.notes.iter().any(|n| n.contains("response_start")),
        "{:?}",
        m.notes
    );
}

#[test]
fn a_missing_response_start_says_why() {
    // No entry at all.
    let m = RequestMetrics::compute(&page_run()).unwrap();
    assert_eq!(m.engine_hop_ms, None);
    assert_note(&m, "no Resource Timing entry for the request");
    // An entry without responseStart: cross-origin without Timing-Allow-Origin.
    let mut t = page_run();
    t.resource_timing = Some(crate::timeline::ResourceTiming {
        response_end_ms: Some(300.0),
        ..Default::default()
    });
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.engine_hop_ms, None);
    assert_note(&m, "without Timing-Allow-Origin");
    // Not a page (ttfx bench's native client), or a WebSocket: nothing to say.
    let m = RequestMetrics::compute(&plain()).unwrap();
    assert!(
        !m.notes.iter().any(|n| n.contains("Resource Timing")),
        "{:?}",
        m.notes
    );
    let mut t = page_run();
    t.request.transport = Some("websocket".into());
    let m = RequestMetrics::compute(&t).unwrap();
    assert!(
        !m.notes.iter().any(|n| n.contains("Resource Timing")),
        "{:?}",
        m.notes
    );
}

/// A page's run whose Resource Timing entry began fetching at 0.5 ms, sent the request
/// at `request_start`, with the DNS lookup and the connection's set-up given as
/// (start, end) pairs, over `protocol`.
fn queued_run(
    request_start: f64,
    dns: (f64, f64),
    connect: (f64, f64),
    protocol: Option<&str>,
) -> Timeline {
    let mut t = page_run();
    t.resource_timing = Some(crate::timeline::ResourceTiming {
        request_start_ms: Some(request_start),
        response_start_ms: Some(request_start + 50.0),
        fetch_start_ms: Some(0.5),
        domain_lookup_start_ms: Some(dns.0),
        domain_lookup_end_ms: Some(dns.1),
        connect_start_ms: Some(connect.0),
        connect_end_ms: Some(connect.1),
        next_hop_protocol: protocol.map(str::to_owned),
        ..Default::default()
    });
    t
}

fn queued(t: &Timeline) -> Option<f64> {
    RequestMetrics::compute(t)
        .unwrap()
        .request_queued_ms
        .map(|m| m.value)
}

#[test]
fn a_reused_connection_queues_from_fetch_start_to_request_start() {
    // Reused: DNS and connect read fetchStart (0.5); the request went out at 3 ms.
    let t = queued_run(3.0, (0.5, 0.5), (0.5, 0.5), Some("http/1.1"));
    let m = RequestMetrics::compute(&t).unwrap();
    let q = m.request_queued_ms.unwrap();
    assert!(close(q.value, 2.5), "{q:?}");
    assert_eq!(q.source, Source::ClientClock);
    assert_eq!(m.scalar("request_queued_ms"), Some(2.5));
    // 2.5 ms is the engine's own set-up, not a queue: no note.
    assert!(!m.notes.iter().any(|n| n.contains("held")), "{:?}", m.notes);
}

#[test]
fn a_new_connection_and_its_dns_lookup_are_not_queueing() {
    // fetchStart 0.5, DNS 1–11 (10 ms), connect 11–41 (30 ms), sent at 43: of the 42.5 ms
    // before sending, 40 were the lookup and the set-up: 2.5 ms queued.
    let t = queued_run(43.0, (1.0, 11.0), (11.0, 41.0), Some("http/1.1"));
    assert!(close(queued(&t).unwrap(), 2.5));
    // The same wait for a connection before a lookup (HTTP/1.1's sixth in use): the
    // lookup and set-up still come out, the 300 ms before them stay.
    let t = queued_run(343.0, (301.0, 311.0), (311.0, 341.0), Some("http/1.1"));
    assert!(close(queued(&t).unwrap(), 302.5));
}

#[test]
fn a_request_held_past_the_bound_has_a_note_naming_the_likely_cause() {
    // Waited 470 ms for one of HTTP/1.1's six connections.
    let m = RequestMetrics::compute(&queued_run(470.5, (0.5, 0.5), (0.5, 0.5), Some("http/1.1")))
        .unwrap();
    assert!(close(m.request_queued_ms.unwrap().value, 470.0));
    assert_note(&m, "held the request 470.0 ms before sending it");
    assert_note(
        &m,
        "over http/1.1: the likely cause is the per-host connection limit",
    );
    // Over h2 the connection is shared: the per-host limit is not the cause.
    let m =
        RequestMetrics::compute(&queued_run(470.5, (0.5, 0.5), (0.5, 0.5), Some("h2"))).unwrap();
    assert_note(&m, "over h2: requests to one host share one connection");
    assert!(
        !m.notes
            .iter()
            .any(|n| n.contains("the likely cause is the per-host")),
        "{:?}",
        m.notes
    );
    // No protocol from the engine: said so, with HTTP/1.1's cause as the likely one.
    let m = RequestMetrics::compute(&queued_run(470.5, (0.5, 0.5), (0.5, 0.5), None)).unwrap();
    assert_note(&m, "the engine gave no protocol");
    // At the bound, no note; just past it, one.
    let at = network::QUEUED_NOTE_MS + 0.5;
    let m =
        RequestMetrics::compute(&queued_run(at, (0.5, 0.5), (0.5, 0.5), Some("http/1.1"))).unwrap();
    assert!(!m.notes.iter().any(|n| n.contains("held")), "{:?}", m.notes);
    let m = RequestMetrics::compute(&queued_run(
        at + 0.1,
        (0.5, 0.5),
        (0.5, 0.5),
        Some("http/1.1"),
    ))
    .unwrap();
    assert_note(&m, "held the request");
}

#[test]
fn hidden_cross_origin_times_leave_the_queue_absent_and_say_why() {
    // Cross-origin without Timing-Allow-Origin: requestStart, responseStart, the DNS and
    // connect times are 0, which the probe sends as absent; fetchStart is still given.
    let mut t = page_run();
    t.resource_timing = Some(crate::timeline::ResourceTiming {
        fetch_start_ms: Some(0.5),
        response_end_ms: Some(430.0),
        ..Default::default()
    });
    let m = RequestMetrics::compute(&t).unwrap();
    assert_eq!(m.request_queued_ms, None);
    assert_eq!(m.scalar("request_queued_ms"), None);
    assert_note(&m, "request_queued_ms are missing");
    assert_note(&m, "without Timing-Allow-Origin");
    // An older document: no fetchStart kept, so no figure (not 0).
    let mut t = queued_run(3.0, (0.5, 0.5), (0.5, 0.5), None);
    t.resource_timing.as_mut().unwrap().fetch_start_ms = None;
    assert_eq!(queued(&t), None);
    // A span with one end missing cannot be taken out: no figure rather than a guess.
    let mut t = queued_run(43.0, (1.0, 11.0), (11.0, 41.0), None);
    t.resource_timing.as_mut().unwrap().connect_end_ms = None;
    assert_eq!(queued(&t), None);
}

#[test]
fn negative_spans_and_waits_clamp_to_zero_and_non_finite_times_give_none() {
    // A jittered clock: requestStart a step before fetchStart, connectEnd before
    // connectStart. Each span and the result are at least 0, never negative.
    let t = queued_run(0.0, (0.5, 0.5), (2.0, 1.0), Some("http/1.1"));
    assert_eq!(queued(&t), Some(0.0));
    // A connect span longer than the wait (DNS and connect outside fetchStart …
    // requestStart): clamped to 0.
    let t = queued_run(5.0, (0.5, 0.5), (0.5, 40.0), Some("http/1.1"));
    assert_eq!(queued(&t), Some(0.0));
    // A hostile document: a time that is not finite, or a difference that overflows.
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut t = queued_run(3.0, (0.5, 0.5), (0.5, 0.5), None);
        t.resource_timing.as_mut().unwrap().domain_lookup_end_ms = Some(bad);
        assert_eq!(queued(&t), None, "{bad}");
    }
    let mut t = queued_run(1e308, (0.5, 0.5), (0.5, 0.5), None);
    t.resource_timing.as_mut().unwrap().fetch_start_ms = Some(-1e308);
    assert_eq!(queued(&t), None);
}

#[test]
fn an_older_resource_timing_entry_reads_with_the_new_fields_absent() {
    let old = r#"{"request_start_ms": 2.5, "response_start_ms": 76.25, "encoded_body_size": 9}"#;
    let e: crate::timeline::ResourceTiming = serde_json::from_str(old).unwrap();
    assert_eq!(e.fetch_start_ms, None);
    assert_eq!(e.next_hop_protocol, None);
    assert_eq!(e.queued_ms(), None);
    // Written back, the absent fields stay out: the document is what it was.
    let again: serde_json::Value = serde_json::to_value(&e).unwrap();
    assert_eq!(
        again,
        serde_json::from_str::<serde_json::Value>(old).unwrap()
    );
}
