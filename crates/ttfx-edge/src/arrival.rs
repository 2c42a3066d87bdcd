//! The first thing every request meets: its arrival time and request id, and the
//! headers every response needs so a page on another origin can read the timings.

use std::time::SystemTime;

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use tokio::time::Instant;
use tower_http::cors::{Any, CorsLayer};

use crate::clock::unix_ms;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const SEED: HeaderName = HeaderName::from_static("x-ttfx-seed");

/// When and as what a request arrived; an extension on every request.
#[derive(Debug, Clone)]
pub struct Arrival {
    pub id: String,
    pub at: Instant,
    pub unix_ms: f64,
}

/// A client-chosen id is kept when it is short and plain (so it is safe in a URL and a
/// header); otherwise the server makes one.
fn client_id(value: &HeaderValue) -> Option<String> {
    let s = value.to_str().ok()?;
    ttfx_core::recorder::plain_record_id(s).then(|| s.to_owned())
}

/// A server-made id: `ttfx-` and [`crate::random::ID_BITS`] random bits, so the record
/// kept under it cannot be guessed, read or pre-empted by another client.
fn new_id() -> Result<String, crate::random::NoRandomness> {
    Ok(format!("ttfx-{}", crate::random::unguessable_id()?))
}

pub async fn stamp(mut req: Request, next: Next) -> Response {
    let at = Instant::now();
    let unix = unix_ms(SystemTime::now());
    let client = req.headers().get(&REQUEST_ID).and_then(client_id);
    let id = match client.map_or_else(new_id, Ok) {
        Ok(id) => id,
        Err(e) => {
            let body = serde_json::json!({ "error": { "message": e.to_string() } });
            return crate::error::json_error(axum::http::StatusCode::SERVICE_UNAVAILABLE, &body);
        }
    };
    req.extensions_mut().insert(Arrival {
        id: id.clone(),
        at,
        unix_ms: unix,
    });
    let mut res = next.run(req).await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID, v);
    }
    // The record's id again where a probe reads it: a page's own request carries no id
    // of the runner's, and a probe reads Server-Timing, not x-request-id. The runner
    // that measured the page joins `/records/{id}` by it; reports never hold it
    // (ttfx-core keeps it out of the timings). Appended: the simulator's own
    // Server-Timing stays as it is.
    if let Ok(v) =
        HeaderValue::from_str(&format!("{};desc={id}", ttfx_core::recorder::RECORD_TIMING))
    {
        res.headers_mut()
            .append(HeaderName::from_static("server-timing"), v);
    }
    // Resource Timing hides a cross-origin response's timings without this.
    res.headers_mut().insert(
        HeaderName::from_static("timing-allow-origin"),
        HeaderValue::from_static("*"),
    );
    res
}

/// Any origin may call: the lab page may be served elsewhere, and nothing here is
/// behind a cookie. The exposed headers are the ones a probe reads.
pub fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods(Any)
        .allow_headers(Any)
        .expose_headers([
            HeaderName::from_static("server-timing"),
            REQUEST_ID,
            SEED,
            header::RETRY_AFTER,
            header::CONTENT_TYPE,
        ])
}
