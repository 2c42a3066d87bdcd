//! Goodput against a server whose replies alternate fast and slow first tokens: the
//! report's figure is the server's own count of fast replies.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use ttfx_load::{CancellationToken, Mode};

/// Reply n has its first token after 5 ms when n is even, 150 ms when odd; replies
/// divisible by 7 are a 503 instead (failed, so never good, but in the denominator).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goodput_is_the_hand_count_of_replies_within_every_slo() {
    let served = Arc::new(AtomicUsize::new(0));
    let fast = Arc::new(AtomicUsize::new(0));
    let (s, f) = (served.clone(), fast.clone());
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let n = s.fetch_add(1, Ordering::SeqCst);
            let f = f.clone();
            async move {
                if n % 7 == 0 {
                    return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response_();
                }
                let first = if n % 2 == 0 {
                    f.fetch_add(1, Ordering::SeqCst);
                    5
                } else {
                    150
                };
                support::sse_response(support::timed_body(vec![
                    (Duration::from_millis(first), support::sse_text("a")),
                    (Duration::from_millis(5), support::sse_text("b")),
                    (Duration::ZERO, support::SSE_DONE.to_owned()),
                ]))
            }
        }),
    );
    let addr = support::serve(app).await;
    let mut spec = support::spec(
        format!("http://{addr}/v1/chat/completions"),
        Mode::Concurrency(3),
        Duration::from_millis(1200),
    );
    spec.goodput = vec![
        ttfx_load::slo::parse("ttft_ms<=80").unwrap(),
        ttfx_load::slo::parse("e2e_ms<=1000").unwrap(),
    ];
    let r = ttfx_load::run(spec, CancellationToken::new())
        .await
        .unwrap();
    let served = served.load(Ordering::SeqCst) as u64;
    let fast = fast.load(Ordering::SeqCst) as u64;
    let g = r.throughput.goodput.as_ref().unwrap();
    assert_eq!(r.requests.sent, served);
    assert_eq!((g.good, g.total), (fast, served));
    assert!(fast > 0 && fast < served);
    assert!((g.ratio.unwrap() - fast as f64 / served as f64).abs() < 1e-12);
    assert!((r.throughput.goodput_per_s.unwrap() - fast as f64 / r.elapsed_s).abs() < 1e-9);
    assert_eq!(
        r.errors.by_class.get("http_503").copied(),
        Some(served.div_ceil(7))
    );
}

/// `StatusCode` into a plain response (the handler's two arms share one type).
trait IntoResponse_ {
    fn into_response_(self) -> axum::response::Response;
}

impl IntoResponse_ for axum::http::StatusCode {
    fn into_response_(self) -> axum::response::Response {
        axum::response::IntoResponse::into_response(self)
    }
}
