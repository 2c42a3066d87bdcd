//! `ttfx serve --cross-origin-isolated`: every response carries
//! `Cross-Origin-Opener-Policy: same-origin` and `Cross-Origin-Embedder-Policy:
//! require-corp`, so pages served from `--dist` are cross-origin isolated.
//!
//! Why: an isolated page's `performance.now()` steps 5 µs in Chromium instead of 100 µs,
//! which is what a lab measurement of sub-millisecond costs (the probe's own time per
//! chunk) needs. The probe reports which clock it had (`cross_origin_isolated`,
//! `timer_resolution_ms`). The headers only matter on documents; on API responses they
//! are ignored. A page that embeds cross-origin resources without CORS or CORP headers
//! stops loading them, which is why this is a flag and not the default.

use axum::Router;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;

// The http crate names neither header.
const OPENER_POLICY: HeaderName = HeaderName::from_static("cross-origin-opener-policy");
const EMBEDDER_POLICY: HeaderName = HeaderName::from_static("cross-origin-embedder-policy");

/// `app` with the two isolation headers on every response.
pub fn isolate(app: Router) -> Router {
    app.layer(axum::middleware::map_response(
        |mut response: Response| async move {
            let headers = response.headers_mut();
            headers.insert(OPENER_POLICY, HeaderValue::from_static("same-origin"));
            headers.insert(EMBEDDER_POLICY, HeaderValue::from_static("require-corp"));
            response
        },
    ))
}
