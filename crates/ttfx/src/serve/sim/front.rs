//! Everything before a simulated body: the record, the queue, an injected HTTP error, and
//! the response headers with the measured queue in `Server-Timing`.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;
use tokio::time::Instant;
use ttfx_core::decode::DialectKind;

use super::profile::Failure;
use super::{Call, Parsed, json_error, retry_after};
use crate::serve::arrival::SEED;
use crate::serve::records::{Kind, Record, RecordHandle, RecordOutcome, lock};

/// The request after its queue: what the body's producer needs.
pub struct Front {
    pub record: RecordHandle,
    pub queue_end: Instant,
    timing: String,
    seed: u64,
}

/// Records the request, holds it for the profile's queue, and answers an injected HTTP
/// failure (`Err`, ready to return) in the dialect's error shape. The record decodes
/// what is sent as `dialect`.
pub async fn hold(
    call: &Call,
    parsed: &Parsed,
    dialect: DialectKind,
    error_body: impl FnOnce(u16, &str) -> Value,
) -> Result<Front, Response> {
    let (arrival, p, seed) = (&call.arrival, &parsed.profile, parsed.seed);
    let mut record = Record::new(
        &arrival.id,
        Kind::Sim,
        &call.path,
        Some(dialect),
        arrival.at,
        arrival.unix_ms,
    );
    record.profile = Some(call.profile.clone());
    record.seed = Some(seed);
    let record = call.state.records.insert(record);

    super::deadline::until(arrival.at + p.queue).await;
    let queue_end = Instant::now();
    let queue_ms = {
        let mut r = lock(&record);
        let ms = r.ms(queue_end);
        r.duration("queue", ms);
        ms
    };
    let front = Front {
        timing: server_timing(queue_ms, arrival.unix_ms, arrival.unix_ms + queue_ms),
        record,
        queue_end,
        seed,
    };
    let Some(Failure::Status(code)) = p.failure else {
        return Ok(front);
    };
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = format!("ttfx sim: injected HTTP {code}");
    let mut res = json_error(status, &error_body(code, &message));
    if let Some(v) = retry_after(code) {
        res.headers_mut().insert(header::RETRY_AFTER, v);
    }
    front.decorate(&mut res);
    let mut r = lock(&front.record);
    r.headers(code, Some("application/json"), Instant::now());
    r.error = Some(message);
    r.end(RecordOutcome::Failed, Instant::now());
    Err(res)
}

impl Front {
    fn decorate(&self, res: &mut Response) {
        if let Ok(v) = HeaderValue::from_str(&self.timing) {
            res.headers_mut().insert("server-timing", v);
        }
        res.headers_mut().insert(SEED, HeaderValue::from(self.seed));
    }

    /// A 200 streaming response; its headers are recorded as sent now.
    pub fn stream(&self, content_type: &'static str, body: Body) -> Response {
        let mut res = Response::new(body);
        let headers = res.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        self.decorate(&mut res);
        lock(&self.record).headers(200, Some(content_type), Instant::now());
        res
    }
}

/// The `Server-Timing` value: the queue (all that is known before the headers) and the
/// wall-clock receive/send times a client needs for the clock offset.
pub fn server_timing(queue_ms: f64, received_unix_ms: f64, sent_unix_ms: f64) -> String {
    format!(
        "queue;dur={queue_ms:.3}, received_unix_ms;desc=\"{received_unix_ms:.3}\", \
         sent_unix_ms;desc=\"{sent_unix_ms:.3}\""
    )
}
