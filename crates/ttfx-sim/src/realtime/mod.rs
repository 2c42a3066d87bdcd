//! `GET /sim/{profile}/v1/realtime`: a WebSocket speaking OpenAI Realtime-style text
//! events, for chat UIs that stream over a socket. The profile and the URL's overrides
//! (`?ttft_ms=…`) time every response exactly as they time an HTTP reply (the same
//! `schedule::plan`), counted from the arrival of the client's `response.create`.
//!
//! The handshake refuses what an HTTP request would be refused (unknown profile, bad
//! override: 404/400 with OpenAI's error body; `fail=429|500|503|529`: that status), so a
//! socket that opens is a socket that answers. The socket is not a record (records
//! decode HTTP bodies) and, once upgraded, does not hold an in-flight slot.

use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::ws::WebSocketUpgrade;
use axum::http::{StatusCode, header};
use axum::response::Response;

use ttfx_core::ChatApi;

use super::dialect::ServerSide;
use super::limits::{MAX_REALTIME_MESSAGE_BYTES, MAX_REALTIME_SOCKETS};
use super::profile::Failure;
use super::{Call, Refusal, json_error, retry_after};

mod client;
mod events;
mod session;
mod turn;

/// Realtime sockets open now, in this process.
static OPEN_SOCKETS: AtomicUsize = AtomicUsize::new(0);

/// One open socket's place among [`MAX_REALTIME_SOCKETS`], given back when dropped (the
/// session ended, or the upgrade never happened).
#[must_use]
struct SocketPlace;

impl SocketPlace {
    fn take() -> Option<SocketPlace> {
        OPEN_SOCKETS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_REALTIME_SOCKETS).then_some(n + 1)
            })
            .ok()
            .map(|_| SocketPlace)
    }
}

impl Drop for SocketPlace {
    fn drop(&mut self) {
        OPEN_SOCKETS.fetch_sub(1, Ordering::AcqRel);
    }
}

pub async fn handle(ws: WebSocketUpgrade, mut call: Call) -> Response {
    let refuse = |status: StatusCode, message: &str| {
        json_error(
            status,
            &ChatApi::OpenAiChat.error_body(status.as_u16(), message),
        )
    };
    // `?model=` names the model, as on the real endpoint; it is not an override.
    let (models, overrides): (Vec<_>, Vec<_>) = std::mem::take(&mut call.query)
        .into_iter()
        .partition(|(k, _)| k == "model");
    call.query = overrides;
    let parsed = match call.parse() {
        Ok(parsed) => parsed,
        Err(Refusal(status, message)) => return refuse(status, &message),
    };
    if let Some(Failure::Status(code)) = parsed.profile.failure {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut res = refuse(status, &format!("ttfx sim: injected HTTP {code}"));
        if let Some(v) = retry_after(code) {
            res.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return res;
    }
    let model = models
        .into_iter()
        .map(|(_, m)| m)
        .next_back()
        .filter(|m| !m.is_empty() && m.len() <= 200)
        .unwrap_or_else(|| format!("ttfx-sim-{}", call.profile));
    let setup = session::Setup {
        deployment: parsed.deployment,
        profile: parsed.profile,
        seed: parsed.seed,
        model,
        request_id: call.arrival.id.clone(),
    };
    // A browser client may offer subprotocols (OpenAI's own page clients send `realtime`
    // and one carrying the key); a handshake that selects none of those it offered fails
    // in the browser, so `realtime` is taken when offered.
    let Some(place) = SocketPlace::take() else {
        let mut res = refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "ttfx sim: {MAX_REALTIME_SOCKETS} realtime sockets open, the server's limit; \
                 retry after 1 s"
            ),
        );
        res.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return res;
    };
    ws.protocols(["realtime"])
        .max_message_size(MAX_REALTIME_MESSAGE_BYTES)
        .max_frame_size(MAX_REALTIME_MESSAGE_BYTES)
        .on_upgrade(move |socket| async move {
            session::run(socket, setup).await;
            drop(place);
        })
}
