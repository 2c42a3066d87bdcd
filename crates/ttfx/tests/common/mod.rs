//! Shared by the `ttfx serve` process tests: fetch a body while timing every chunk, and
//! decode it with ttfx-core as a client would.

// Test helpers: a failure here is a failed test, so unwrapping is the point.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use ttfx_core::decode::{Decoder, DialectKind, Event, Limits, Transcript};

pub fn ttfx() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_ttfx"))
}

/// The run report of docs/report.md's example (a `kind: "run"` document), read from the
/// doc itself so the doc and the tests cannot drift apart.
pub fn doc_run_report() -> String {
    let doc = include_str!("../../../../docs/report.md");
    let start = doc.find("```json\n").unwrap() + "```json\n".len();
    let len = doc[start..].find("```").unwrap();
    doc[start..start + len].to_owned()
}

/// A response with each body chunk's arrival time (since the request was sent).
pub struct Capture {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub headers_at: Duration,
    pub chunks: Vec<(Duration, Vec<u8>)>,
    /// The body ended with a transport error (a dropped connection).
    pub broken: Option<String>,
}

impl Capture {
    pub fn body(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|(_, c)| c.clone()).collect()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body()).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub async fn post(url: &str, body: &str) -> Capture {
    post_with(url, body, &[]).await
}

pub async fn post_with(url: &str, body: &str, headers: &[(&str, &str)]) -> Capture {
    let client = reqwest::Client::new();
    let mut request = client.post(url).body(body.to_owned());
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    capture(request).await
}

/// A browser's CORS preflight for a POST to `url` from `origin`, asking for
/// `request_headers` (comma-separated) when given.
pub async fn preflight(
    url: &str,
    origin: &str,
    request_headers: Option<&str>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, url)
        .header("origin", origin)
        .header("access-control-request-method", "POST");
    if let Some(headers) = request_headers {
        request = request.header("access-control-request-headers", headers);
    }
    request.send().await.unwrap()
}

/// Sends `request`, timing the headers and each chunk of the reply from just before it
/// is sent; a broken body is kept as its error.
pub async fn capture(request: reqwest::RequestBuilder) -> Capture {
    let start = Instant::now();
    let mut response = request.send().await.unwrap();
    let headers_at = start.elapsed();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut chunks = Vec::new();
    let broken = loop {
        match response.chunk().await {
            Ok(Some(c)) => chunks.push((start.elapsed(), c.to_vec())),
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    Capture {
        status,
        headers,
        headers_at,
        chunks,
        broken,
    }
}

/// What a client decoding the capture chunk by chunk sees.
pub struct Decoded {
    pub summary: Transcript,
    pub events: Vec<Event>,
    /// Arrival of the chunk that completed the first token (any channel).
    pub first_token: Option<Duration>,
    pub first_visible: Option<Duration>,
    /// Arrival time of every chunk that completed ≥ 1 token.
    pub token_chunks: Vec<Duration>,
}

pub fn decode(capture: &Capture, kind: Option<DialectKind>) -> Decoded {
    let mut decoder = match kind {
        Some(k) => Decoder::new(k, Limits::DEFAULT),
        None => Decoder::auto(capture.header("content-type"), Limits::DEFAULT),
    };
    let mut events = Vec::new();
    let (mut first_token, mut first_visible, mut token_chunks) = (None, None, Vec::new());
    for (at, chunk) in &capture.chunks {
        let got = decoder.push(chunk);
        if got.iter().any(Event::is_token) {
            first_token.get_or_insert(*at);
            token_chunks.push(*at);
        }
        if got
            .iter()
            .any(|e| matches!(e, Event::Text { text } if !text.is_empty()))
        {
            first_visible.get_or_insert(*at);
        }
        events.extend(got);
    }
    events.extend(decoder.finish());
    Decoded {
        summary: Transcript::from_events(&events),
        events,
        first_token,
        first_visible,
        token_chunks,
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

// The simulator's own word list, so the expected text cannot drift from it; what the
// tests check is that those words survive encoding, HTTP and decoding.
#[allow(unused_imports)] // not every test file compares text
pub use ttfx_sim::text::answer;

pub async fn record(base: &str, id: &str) -> serde_json::Value {
    // The record is finished just after the last byte is handed over; give the task a
    // moment to write `done`.
    for _ in 0..50 {
        let v: serde_json::Value = reqwest::get(format!("{base}records/{id}"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["outcome"] != "in_progress" {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("record {id} still in progress");
}
