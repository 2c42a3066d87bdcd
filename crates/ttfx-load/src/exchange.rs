//! One request: sent, its stream read chunk by chunk into ttfx-core's [`Recorder`] (the
//! same milestone and metric rules as the browser probe and the servers' records), its
//! metrics computed and kept as a [`Sample`]; the chunks are dropped with the recorder.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{CONTENT_TYPE, HeaderMap};
use tokio_util::sync::CancellationToken;
use ttfx_core::decode::{DialectKind, Limits};
use ttfx_core::metrics::{RequestMetrics, Scalar};
use ttfx_core::stats::Budget;
use ttfx_core::timeline::{Failure, FailureClass};
use ttfx_core::{Milestone, Recorder};

use crate::client::HttpClient;
use crate::sample::{End, ErrorClass, Gaps, Sample};

/// What every request of a load shares.
pub struct Shared {
    pub client: HttpClient,
    pub uri: hyper::Uri,
    /// Content type, accept, and the spec's headers (values marked sensitive).
    pub headers: HeaderMap,
    /// One body per prompt, made once.
    pub bodies: Vec<Bytes>,
    pub dialect: DialectKind,
    pub timeout: Duration,
    pub budgets: Vec<Budget>,
    pub readers: Vec<Scalar>,
    pub cancel: CancellationToken,
}

/// How the exchange stopped before the stream's own end.
enum Cut {
    Connect,
    /// No answer head: the connection closed or reset after the request was written.
    NoAnswer(String),
}

/// Sends request `index` now, reads its whole stream, and returns what it left.
/// `scheduled` is the open loop's planned send time (lateness is measured against it);
/// every latency is measured from the actual send.
pub async fn one(
    shared: &Shared,
    index: u64,
    scheduled: Option<Instant>,
    measured: bool,
) -> Sample {
    let sent = Instant::now();
    let lateness_ms = scheduled.map(|s| ms(sent.saturating_duration_since(s)));
    let body = shared.bodies[(index % shared.bodies.len() as u64) as usize].clone();
    let mut request = hyper::Request::post(shared.uri.clone()).body(Full::new(body));
    if let Ok(r) = request.as_mut() {
        *r.headers_mut() = shared.headers.clone();
    }
    let Ok(request) = request else {
        // The URI and headers were checked with the spec; a request that still cannot be
        // built is reported as unreadable rather than panicking.
        return Sample::bare(
            measured,
            lateness_ms,
            sent,
            End::Failed(ErrorClass::Unreadable),
        );
    };
    let mut recorder = Recorder::new(Some(shared.dialect), Limits::default());
    let deadline = tokio::time::Instant::from_std(sent + shared.timeout);
    let talked = tokio::select! {
        r = tokio::time::timeout_at(deadline, talk(shared, request, &mut recorder, sent)) => r,
        () = shared.cancel.cancelled() => {
            return Sample::bare(measured, lateness_ms, sent, End::Cancelled);
        }
    };
    let at_ms = ms(sent.elapsed());
    let cut_class = match talked {
        Ok(Ok(())) => None,
        Ok(Err(Cut::Connect)) => Some(ErrorClass::Connect),
        Ok(Err(Cut::NoAnswer(detail))) => {
            recorder.network_error(at_ms, detail);
            None
        }
        Err(_elapsed) => {
            timed_out(&mut recorder, at_ms, shared.timeout);
            None
        }
    };
    if let Some(class) = cut_class {
        return Sample::bare(measured, lateness_ms, sent, End::Failed(class));
    }
    let timeline = recorder.finish();
    let Ok(metrics) = RequestMetrics::compute(&timeline) else {
        return Sample::bare(
            measured,
            lateness_ms,
            sent,
            End::Failed(ErrorClass::Unreadable),
        );
    };
    let end = match &timeline.failure {
        None if metrics.outcome == ttfx_core::metrics::Outcome::Completed => End::Completed,
        None => End::Failed(ErrorClass::Dropped),
        Some(f) => End::Failed(class_of(f)),
    };
    let gaps = match timeline.chunk_summary {
        Some(summary) => Gaps::Digest(summary.gaps),
        None => Gaps::List(metrics.icl_ms.clone()),
    };
    let good = ttfx_core::stats::goodput(std::slice::from_ref(&metrics), &shared.budgets).good == 1;
    Sample {
        measured,
        lateness_ms,
        sent,
        ended: Instant::now(),
        end,
        values: Sample::values_of(&shared.readers, &metrics),
        gaps,
        good,
    }
}

/// The request, its answer's head and every body chunk, each timed on arrival
/// (ms since `sent`, the recorder's `request_start`).
async fn talk(
    shared: &Shared,
    request: hyper::Request<Full<Bytes>>,
    recorder: &mut Recorder,
    sent: Instant,
) -> Result<(), Cut> {
    let response = shared.client.request(request).await.map_err(|e| {
        if e.is_connect() {
            Cut::Connect
        } else {
            Cut::NoAnswer(error_chain(&e))
        }
    })?;
    let headers = response.headers();
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let server_timing: Vec<&str> = headers
        .get_all("server-timing")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    recorder.headers(
        ms(sent.elapsed()),
        response.status().as_u16(),
        content_type,
        &server_timing,
    );
    let mut body = response.into_body();
    loop {
        match body.frame().await {
            None => {
                recorder.end(ms(sent.elapsed()));
                return Ok(());
            }
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    recorder.chunk(ms(sent.elapsed()), data);
                }
            }
            Some(Err(e)) => {
                recorder.network_error(ms(sent.elapsed()), error_chain(&e));
                return Ok(());
            }
        }
    }
}

/// The request was not done within the timeout: a failure of its own class, so the
/// timeline's outcome is `failed` and the report counts a `timeout`.
fn timed_out(recorder: &mut Recorder, at_ms: f64, timeout: Duration) {
    let timeline = recorder.timeline_mut();
    if timeline.failure.is_some() {
        return;
    }
    timeline.milestones.set(Milestone::Error, at_ms);
    timeline.failure = Some(Failure {
        class: FailureClass::Timeout,
        http_status: None,
        detail: Some(format!("not done within {} s", timeout.as_secs_f64())),
    });
}

fn class_of(failure: &Failure) -> ErrorClass {
    match failure.class {
        FailureClass::HttpStatus => ErrorClass::HttpStatus(failure.http_status.unwrap_or(0)),
        FailureClass::InBand => ErrorClass::InBand,
        // A broken connection, or a body that ended inside an event (the decoder's
        // `truncated`): either way the stream was cut off.
        FailureClass::Network | FailureClass::Decode => ErrorClass::Dropped,
        FailureClass::Timeout => ErrorClass::Timeout,
    }
}

/// An error and its causes, joined (hyper's outer text alone is often "error sending
/// request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
