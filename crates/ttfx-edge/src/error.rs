//! Error answers: every server of ttfx refuses with a JSON body, so a client reads the
//! reason the same way wherever it comes from.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// An error response with a JSON body.
pub fn json_error(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}
