//! Real servers on loopback for the load tests: the simulator's router (known timing),
//! and small axum apps for what a simulator does not do.

// Test helpers: a failure here is a failed test.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use ttfx_core::ChatApi;
use ttfx_load::{Endpoint, LoadSpec, Mode};

/// Serves `app` on an ephemeral loopback port for the rest of the test's runtime.
pub async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// The simulator mounted at /sim as `ttfx serve` mounts it (arrival stamp included).
pub async fn sim() -> SocketAddr {
    let records = Arc::new(ttfx_records::Records::default());
    let state = Arc::new(ttfx_sim::SimState::new(Vec::new(), records));
    let app = Router::new()
        .nest("/sim", ttfx_sim::router(state))
        .layer(axum::middleware::from_fn(ttfx_edge::arrival::stamp));
    serve(app).await
}

/// A spec for `url` (OpenAI chat), open loop at `rate`, no warm-up, `duration`.
pub fn spec(url: String, mode: Mode, duration: Duration) -> LoadSpec {
    LoadSpec {
        endpoint: Endpoint {
            url,
            api: ChatApi::OpenAiChat,
            headers: Vec::new(),
            ca_file: None,
        },
        label: "test".into(),
        model: "m".into(),
        prompts: vec!["hi".into()],
        mode,
        warmup: Duration::ZERO,
        duration: Some(duration),
        seed: 1,
        timeout: Duration::from_secs(10),
        goodput: Vec::new(),
    }
}

/// One OpenAI chat chunk carrying `text`.
pub fn sse_text(text: &str) -> String {
    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{text:?}}}}}]}}\n\n")
}

pub const SSE_DONE: &str = "data: [DONE]\n\n";

/// A streamed body: `pieces` each after its delay.
pub fn timed_body(pieces: Vec<(Duration, String)>) -> axum::body::Body {
    let stream = futures_util::stream::unfold(pieces.into_iter(), |mut rest| async move {
        let (wait, text) = rest.next()?;
        tokio::time::sleep(wait).await;
        Some((Ok::<_, std::convert::Infallible>(text), rest))
    });
    axum::body::Body::from_stream(stream)
}

pub fn sse_response(body: axum::body::Body) -> axum::response::Response {
    axum::response::Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .unwrap()
}
