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
use ttfx_edge::arrival::SEED;
use ttfx_records::{Kind, Record, RecordHandle, RecordOutcome, lock};

/// The request after its queue: what the body's producer needs.
pub struct Front {
    pub record: RecordHandle,
    pub queue_end: Instant,
    /// The queue held, in ms.
    queue_ms: f64,
    arrival: Instant,
    received_unix_ms: f64,
    seed: u64,
}

/// Records the request, holds it for the profile's queue (from `queue_from`: the arrival,
/// or for an upload the moment it was complete), and answers an injected HTTP failure
/// (`Err`, ready to return) in the dialect's error shape. The record decodes what is
/// sent as `dialect`.
pub async fn hold(
    call: &Call,
    parsed: &Parsed,
    queue_from: Instant,
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
    // Records are write-once: a request naming a kept record's id is refused before it
    // queues, so it cannot stand in for the request that made that record.
    let record = match call.state.records.insert(record) {
        Ok(record) => record,
        Err(e) => {
            let status = StatusCode::CONFLICT;
            return Err(json_error(
                status,
                &error_body(status.as_u16(), &e.to_string()),
            ));
        }
    };

    super::deadline::until(queue_from + p.queue).await;
    let queue_end = Instant::now();
    let queue_ms = queue_end
        .saturating_duration_since(queue_from)
        .as_secs_f64()
        * 1000.0;
    lock(&record).duration("queue", queue_ms);
    let front = Front {
        record,
        queue_end,
        queue_ms,
        arrival: arrival.at,
        received_unix_ms: arrival.unix_ms,
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
    /// `Server-Timing` with the wall clock of now, when the headers leave: a reply whose
    /// headers wait (a whole transcription) says so, not when its queue ended.
    fn decorate(&self, res: &mut Response) {
        let sent = self.received_unix_ms
            + Instant::now()
                .saturating_duration_since(self.arrival)
                .as_secs_f64()
                * 1000.0;
        let timing = server_timing(self.queue_ms, self.received_unix_ms, sent);
        if let Ok(v) = HeaderValue::from_str(&timing) {
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
