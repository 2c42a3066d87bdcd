//! The two loops as the server sees them: the open loop's arrivals at its rate, the
//! closed loop never past its concurrency.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use ttfx_load::{CancellationToken, Mode};

/// Requests the server has received.
#[derive(Default)]
struct Counts {
    arrived: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

/// Held while a reply's body is being sent: the stream's place in `in_flight`.
struct InFlight(Arc<Counts>);

impl InFlight {
    fn enter(counts: &Arc<Counts>) -> InFlight {
        counts.arrived.fetch_add(1, Ordering::SeqCst);
        let now = counts.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        counts.most_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(counts.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A chat endpoint streaming three tokens 10 ms apart, counting its streams; a stream
/// leaves the count when its body has ended (the guard lives in the body's state, and
/// the client can see the end only after that).
async fn counting_server() -> (String, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let state = counts.clone();
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let guard = InFlight::enter(&state);
            async move {
                let pieces = ["a", "b", "c"]
                    .iter()
                    .map(|t| (Duration::from_millis(10), support::sse_text(t)))
                    .chain([(Duration::ZERO, support::SSE_DONE.to_owned())])
                    .collect::<Vec<_>>();
                let body = futures_util::stream::unfold(
                    (pieces.into_iter(), Some(guard)),
                    |(mut rest, guard)| async move {
                        let Some((wait, text)) = rest.next() else {
                            drop(guard);
                            return None;
                        };
                        tokio::time::sleep(wait).await;
                        Some((Ok::<_, std::convert::Infallible>(text), (rest, guard)))
                    },
                );
                support::sse_response(axum::body::Body::from_stream(body))
            }
        }),
    );
    let addr = support::serve(app).await;
    (format!("http://{addr}/v1/chat/completions"), counts)
}

/// 200/s for 3 s: λT = 600 arrivals expected, and a Poisson count's standard deviation
/// is √(λT) ≈ 24.5, so the count is within 4σ = 98 of 600 unless the schedule or the
/// pacer is wrong (chance alone: about 6 in 100,000). The server counts them itself, and
/// the report's count must be the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_loop_sends_at_its_rate_within_poissons_spread() {
    let (url, counts) = counting_server().await;
    let (rate, seconds) = (200.0, 3.0);
    let spec = support::spec(url, Mode::Rate(rate), Duration::from_secs_f64(seconds));
    let report = ttfx_load::run(spec, CancellationToken::new())
        .await
        .unwrap();
    let arrived = counts.arrived.load(Ordering::SeqCst) as f64;
    let expected = rate * seconds;
    let bound = 4.0 * expected.sqrt();
    assert!(
        (arrived - expected).abs() <= bound,
        "{arrived} arrivals, expected {expected} ± {bound}"
    );
    assert_eq!(report.requests.sent as f64, arrived);
    assert_eq!(report.requests.completed, report.requests.sent);
    // Open loop: more streams than one at a time, whatever the replies' length.
    assert!(counts.most_in_flight.load(Ordering::SeqCst) > 1);
}

/// Four streams of ~30 ms each for 1.5 s: the server never holds a fifth, and holds four
/// (a loop that never filled its streams would pass the first check alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_closed_loop_never_holds_more_than_its_streams() {
    let (url, counts) = counting_server().await;
    let spec = support::spec(url, Mode::Concurrency(4), Duration::from_millis(1500));
    let report = ttfx_load::run(spec, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(counts.most_in_flight.load(Ordering::SeqCst), 4);
    assert_eq!(counts.in_flight.load(Ordering::SeqCst), 0);
    let arrived = counts.arrived.load(Ordering::SeqCst) as u64;
    assert_eq!(report.requests.sent, arrived);
    // 4 streams of ≥ 30 ms for 1.5 s: at most 4 × 1.5 / 0.03 = 200 requests (plus the
    // four sent last), and far more than one round.
    assert!((40..=204).contains(&arrived), "{arrived}");
    assert!(report.generator.lateness_ms.is_none() && report.generator.held.is_none());
}
