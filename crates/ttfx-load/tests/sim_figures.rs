//! The figures of a load against the simulator, whose timing is known, come out as the
//! simulator was told to behave; and a load in the background stops when asked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use ttfx_load::{CancellationToken, Mode};

/// `ttft=200`, 50 tokens/s, 10 tokens: TTFT 200 ms, TPOT and every gap 20 ms, e2e
/// 200 + 9 × 20 = 380 ms.
///
/// Tolerances: the simulator waits for its deadlines on a timerfd (tens of µs) and the
/// client reads over loopback (tens of µs), so on an idle machine each figure is within
/// a millisecond; the bounds allow a busy two-core machine's scheduling delays (a thread
/// not run for several ms) on the medians, and more on the tails. A figure can never be
/// early: the simulator's deadlines run from the request's arrival, after the client's
/// send, so the lower bounds are tight (less 0.5 ms for the gaps, whose two ends are
/// each late by their own delay).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_simulator_reads_as_its_timing() {
    let addr = support::sim().await;
    let url = format!(
        "http://{addr}/sim/default/v1/chat/completions?ttft_ms=200&tokens_per_second=50&output_tokens=10"
    );
    let mut spec = support::spec(url, Mode::Rate(20.0), Duration::from_secs(2));
    spec.warmup = Duration::from_millis(300);
    spec.goodput = vec![ttfx_load::slo::parse("ttft_ms<=400").unwrap()];
    let report = ttfx_load::run(spec, CancellationToken::new())
        .await
        .unwrap();

    let r = report.requests;
    assert!(r.sent >= 20, "{r:?}");
    assert_eq!(
        (r.completed, r.failed, r.cancelled),
        (r.sent, 0, 0),
        "{r:?}"
    );
    assert!(
        r.warmup > 0,
        "the warm-up's requests are counted apart: {r:?}"
    );
    let m = |name: &str| report.metrics[name];
    let within = |name: &str, v: f64, lo: f64, hi: f64| {
        assert!(
            (lo..=hi).contains(&v),
            "{name}: {v} outside [{lo}, {hi}]: {report:#?}"
        );
    };
    within("ttft_ms p50", m("ttft_ms").p50, 200.0, 210.0);
    within("ttft_ms p99", m("ttft_ms").p99, 200.0, 260.0);
    within(
        "ttft_visible_ms p50",
        m("ttft_visible_ms").p50,
        200.0,
        210.0,
    );
    within("tpot_ms p50", m("tpot_ms").p50, 19.5, 21.0);
    within("icl_ms p50", m("icl_ms").p50, 19.5, 21.5);
    within("e2e_ms p50", m("e2e_ms").p50, 380.0, 395.0);
    // Usage from the stream: exactly the asked length, whatever the timing.
    assert_eq!(
        (m("output_tokens").min, m("output_tokens").max),
        (10.0, 10.0)
    );
    assert_eq!(
        m("icl_ms").count,
        9 * r.completed,
        "nine gaps per ten-token stream"
    );
    // Every request met ttft ≤ 400 ms: goodput is the completed rate.
    let t = &report.throughput;
    let g = t.goodput.as_ref().unwrap();
    assert_eq!((g.good, g.total), (r.completed, r.sent));
    assert!((t.goodput_per_s.unwrap() - t.requests_per_s).abs() < 1e-9);
    assert!((t.output_tokens - 10.0 * r.completed as f64).abs() < 1e-9);
    // The open loop's own account is there; its bound is the bench's to judge.
    let lateness = report.generator.lateness_ms.unwrap();
    assert_eq!(lateness.count, r.sent);
    assert!(lateness.min >= 0.0 && lateness.p50 < 10.0, "{lateness:?}");
    assert!(report.generator.held.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_without_an_end_runs_in_the_background_until_stopped() {
    let addr = support::sim().await;
    let url = format!(
        "http://{addr}/sim/default/v1/chat/completions?ttft_ms=20&output_tokens=200&tokens_per_second=20"
    );
    let mut spec = support::spec(url, Mode::Concurrency(3), Duration::from_secs(1));
    spec.duration = None;
    let cancel = CancellationToken::new();
    let load = tokio::spawn(ttfx_load::run(spec, cancel.clone()));
    tokio::time::sleep(Duration::from_millis(700)).await;
    let asked = Instant::now();
    cancel.cancel();
    let report = load.await.unwrap().unwrap();
    // Ten-second streams: every one was in flight at the stop, cancelled at once.
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "the stop took {:?}",
        asked.elapsed()
    );
    assert!(report.stopped);
    assert_eq!(report.requests.cancelled, 3, "{:?}", report.requests);
    assert_eq!(report.requests.completed + report.requests.failed, 0);
    assert!((0.6..1.5).contains(&report.window_s), "{}", report.window_s);
}
