//! Every way a request fails is counted by its class, never a panic: HTTP statuses, an
//! in-band error, a dropped stream, a target that never answers, no server at all.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use axum::Router;
use axum::routing::post;
use ttfx_load::{CancellationToken, LoadReport, Mode};

async fn load(url: String, mode: Mode, duration: Duration, timeout: Duration) -> LoadReport {
    let mut spec = support::spec(url, mode, duration);
    spec.timeout = timeout;
    ttfx_load::run(spec, CancellationToken::new())
        .await
        .unwrap()
}

/// Each failure the simulator injects, alone: every measured request in its class.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_injected_failure_is_counted_in_its_class() {
    let addr = support::sim().await;
    for (fail, class) in [
        ("500", "http_500"),
        ("429", "http_429"),
        ("error", "in_band"),
        ("drop", "dropped"),
    ] {
        let url = format!(
            "http://{addr}/sim/default/v1/chat/completions?ttft_ms=5&tokens_per_second=500&output_tokens=6&fail={fail}&fail_after=3"
        );
        let r = load(
            url,
            Mode::Rate(40.0),
            Duration::from_millis(500),
            Duration::from_secs(5),
        )
        .await;
        let sent = r.requests.sent;
        assert!(sent > 0, "{fail}");
        assert_eq!(r.requests.failed, sent, "{fail}: {:?}", r.requests);
        assert_eq!(r.errors.total, sent, "{fail}");
        assert_eq!(
            r.errors.by_class.get(class),
            Some(&sent),
            "{fail}: {:?}",
            r.errors
        );
        assert_eq!(r.errors.by_class.len(), 1, "{fail}: {:?}", r.errors);
        assert!(
            !r.metrics.contains_key("e2e_ms"),
            "e2e is for completed requests only"
        );
        if matches!(fail, "error" | "drop") {
            // Three tokens arrived before the failure: the TTFT is still measured.
            assert_eq!(r.metrics["ttft_ms"].count, sent, "{fail}");
        }
    }
}

/// A server that takes the request and never answers: each request is a `timeout`
/// after the timeout, the ones open at the window's end awaited and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_never_answers_times_out() {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            std::future::pending::<()>().await;
        }),
    );
    let addr = support::serve(app).await;
    let url = format!("http://{addr}/v1/chat/completions");
    let started = std::time::Instant::now();
    let r = load(
        url,
        Mode::Concurrency(2),
        Duration::from_millis(500),
        Duration::from_millis(300),
    )
    .await;
    // Each worker: a request at 0 timing out at 0.3 s, its next at 0.3 s timing out at
    // 0.6 s (after the window, awaited): four in all, two after the window.
    assert_eq!(r.requests.sent, 4, "{:?}", r.requests);
    assert_eq!(r.errors.by_class.get("timeout"), Some(&4), "{:?}", r.errors);
    assert_eq!(r.requests.finished_after_window, 2);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(r.elapsed_s > r.window_s);
}

/// No server on the port: `connect`, every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_with_no_server_is_a_connect_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let r = load(
        url,
        Mode::Rate(50.0),
        Duration::from_millis(300),
        Duration::from_secs(2),
    )
    .await;
    assert!(r.requests.sent > 0);
    assert_eq!(
        r.errors.by_class.get("connect"),
        Some(&r.requests.sent),
        "{:?}",
        r.errors
    );
    assert_eq!(r.throughput.requests_per_s, 0.0);
}
