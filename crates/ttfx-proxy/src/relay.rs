//! The upstream's response on its way back: its status and headers go to the client at
//! once, and each body frame is handed to the client before it is decoded for the
//! record, so the proxy adds no buffering to what it measures.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::mpsc;
use tokio::time::Instant;

use ttfx_edge::arrival::REQUEST_ID;
use ttfx_records::{RecordHandle, RecordOutcome, lock};

use crate::hop::HopByHop;
use crate::provider_timing;
use crate::upstream_conn::Sender;

/// Answers the client with the upstream's `response` and relays its body in a task of
/// its own; the record takes the headers now and the body as it passes. `connection`
/// is held until the body ends, and `idle` is the longest wait for a body frame.
pub fn respond(
    record: RecordHandle,
    response: axum::http::Response<Incoming>,
    idle: Duration,
    connection: Sender,
) -> Response {
    let status = response.status();
    let (parts, incoming) = response.into_parts();
    record_headers(&record, status, &parts.headers);
    let (tx, body) = mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let body = Body::from_stream(futures_util::stream::unfold(body, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }));
    let res = client_response(status, &parts.headers, body);
    let tap = Tap {
        record,
        failed: !status.is_success(),
        idle,
        _connection: connection,
    };
    tokio::spawn(tap.pump(incoming, tx));
    res
}

/// The response headers' moment, status and content type, and the provider's own
/// timing headers.
fn record_headers(record: &RecordHandle, status: StatusCode, headers: &HeaderMap) {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let now = Instant::now();
    let (timings, problems) = provider_timing::read(headers);
    let mut r = lock(record);
    r.headers(status.as_u16(), content_type, now);
    r.header_timings = timings;
    r.header_problems = problems;
}

/// The upstream's status and headers over `body`, less those that belong to its
/// connection or that this server answers for.
fn client_response(status: StatusCode, upstream: &HeaderMap, body: Body) -> Response {
    let mut res = Response::new(body);
    *res.status_mut() = status;
    let hop = HopByHop::of(upstream);
    for (k, v) in upstream {
        if !hop.contains(k) && !dropped_response_header(k) {
            res.headers_mut().append(k.clone(), v.clone());
        }
    }
    // The upstream's own id stays readable; ours replaces it in `x-request-id`.
    if let Some(v) = upstream.get(&REQUEST_ID) {
        res.headers_mut().insert("x-upstream-request-id", v.clone());
    }
    res
}

/// Headers the upstream may not set for this server (hop-by-hop ones go by `hop`).
fn dropped_response_header(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        // This server's CORS layer answers for the upstream.
        "access-control-allow-origin" | "access-control-expose-headers"
            | "access-control-allow-credentials"
            // The client's browser would keep them for this server's origin (the lab
            // page, the collector): an upstream must not set its cookies or wipe its
            // storage.
            | "set-cookie" | "set-cookie2" | "clear-site-data"
    )
}

/// Reads the upstream body: each frame goes to the client first, then into the record.
struct Tap {
    record: RecordHandle,
    /// An HTTP error status (a server-reported failure in the stream is the record's).
    failed: bool,
    /// Longest wait for the next body frame.
    idle: std::time::Duration,
    /// Held until the body ends: the connection is this request's alone.
    _connection: Sender,
}

impl Tap {
    /// The upstream body broke (`error`): the client's stream breaks too, as it would
    /// without the proxy, and the record ends with `outcome` and the error's text.
    async fn broken(
        &self,
        tx: &tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
        error: std::io::Error,
        outcome: RecordOutcome,
    ) {
        let now = Instant::now();
        let message = error.to_string();
        let _ = tx.send(Err(error)).await;
        let mut r = lock(&self.record);
        r.error = Some(message);
        r.end(outcome, now);
    }

    async fn pump(
        self,
        mut incoming: hyper::body::Incoming,
        tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    ) {
        loop {
            let next = match tokio::time::timeout(self.idle, incoming.frame()).await {
                Ok(next) => next,
                Err(_) => {
                    let message = format!(
                        "upstream body: no bytes for {} ms (idle_timeout_ms)",
                        self.idle.as_millis()
                    );
                    let timeout = std::io::Error::new(std::io::ErrorKind::TimedOut, message);
                    return self.broken(&tx, timeout, RecordOutcome::Timeout).await;
                }
            };
            let frame = match next {
                None => break,
                Some(Ok(frame)) => frame,
                Some(Err(e)) => {
                    let message = format!("upstream body: {e}");
                    let dropped =
                        std::io::Error::new(std::io::ErrorKind::ConnectionAborted, message);
                    return self.broken(&tx, dropped, RecordOutcome::Dropped).await;
                }
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if data.is_empty() {
                continue;
            }
            let now = Instant::now();
            let sent = tx.send(Ok(data.clone())).await;
            lock(&self.record).chunk(now, &data);
            if sent.is_err() {
                lock(&self.record).end(RecordOutcome::ClientGone, Instant::now());
                return;
            }
        }
        let outcome = if self.failed {
            RecordOutcome::Failed
        } else {
            RecordOutcome::Completed
        };
        lock(&self.record).end(outcome, Instant::now());
    }
}
