//! One request in WebDriver BiDi's `network` events (Firefox's network record, as
//! [`devtools::network`](crate::devtools::network) is Chromium's): each event is checked
//! and cut down to what a lookup needs ([`parse`]), then the request is found by the
//! `x-request-id` the caller sent ([`find_request`]) or, for a page's own request, by its
//! URL, method and start ([`find_request_by`]).
//!
//! The events come from the browser, which runs pages nobody here wrote: a page chooses
//! its URLs and headers, so every field is checked, strings are bounded, and a bad event
//! is an [`EventError`], never a panic.
//!
//! Times: an event's `request.timings` is the fetch timing info, each moment `timeOrigin`
//! plus the field, in ms. Measured in Firefox ESR 153 through geckodriver 0.37.1
//! (docs/fidelity.md): `timeOrigin` is sent as 0 and the fields are epoch ms with µs
//! digits, so `timeOrigin + field` is the system clock; a field of 0 is a moment not
//! reached. `requestTime` is when the request was made, `responseStart` the arrival of
//! the response's first byte (its headers), `responseEnd` of its last.

use serde_json::Value;

use crate::devtools::Event;
pub use crate::devtools::network::SAME_REQUEST_MS;

/// The events a lookup needs: the request (its URL, method, headers and start), its
/// response's start and its end.
pub const EVENTS: &[&str] = &[
    "network.beforeRequestSent",
    "network.responseStarted",
    "network.responseCompleted",
];

/// Longest URL kept, in bytes: a page may request URLs of megabytes, and a lookup
/// compares the URL whole (a cut one would match the wrong request).
pub const MAX_URL_BYTES: usize = 8 * 1024;
/// Longest request id or method kept, in bytes (Firefox's ids are short numbers; ours
/// are `ttfx-run-PID-N`).
pub const MAX_ID_BYTES: usize = 256;
/// The latest moment taken as a time, epoch ms (the year 2286): past it a number is not
/// a time on any clock here.
const MAX_UNIX_MS: f64 = 1e13;

/// Which of [`EVENTS`] an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    BeforeRequestSent,
    ResponseStarted,
    ResponseCompleted,
}

impl Phase {
    fn of(method: &str) -> Option<Phase> {
        match method {
            "network.beforeRequestSent" => Some(Phase::BeforeRequestSent),
            "network.responseStarted" => Some(Phase::ResponseStarted),
            "network.responseCompleted" => Some(Phase::ResponseCompleted),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Phase::BeforeRequestSent => "network.beforeRequestSent",
            Phase::ResponseStarted => "network.responseStarted",
            Phase::ResponseCompleted => "network.responseCompleted",
        }
    }
}

/// What a lookup keeps of one network event.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkEvent {
    pub phase: Phase,
    /// BiDi's id of the request (`request.request`), the same across its events.
    pub request: String,
    pub url: String,
    pub method: String,
    /// The request's `x-request-id` header, when it has one no longer than
    /// [`MAX_ID_BYTES`] (a longer one is nobody's id of ours).
    pub request_id_header: Option<String>,
    pub timings: Timings,
}

/// The moments of `request.timings` a lookup uses, each on the system clock (epoch ms,
/// `timeOrigin` added); `None`: not reached (0) or not sent.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timings {
    pub request_unix_ms: Option<f64>,
    pub response_start_unix_ms: Option<f64>,
    pub response_end_unix_ms: Option<f64>,
}

/// Why a network event could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EventError {
    #[error("{event}: {field} is missing or not {expected}")]
    Missing {
        event: &'static str,
        field: &'static str,
        expected: &'static str,
    },
    #[error("{event}: {field} is {bytes} bytes, more than {limit}")]
    TooLong {
        event: &'static str,
        field: &'static str,
        bytes: usize,
        limit: usize,
    },
    #[error("{event}: {field} = {value} is not a time (finite, from 0 to 1e13 ms)")]
    NotATime {
        event: &'static str,
        field: &'static str,
        value: f64,
    },
}

/// The event's network record, `Ok(None)` for an event of another kind.
pub fn parse(event: &Event) -> Result<Option<NetworkEvent>, EventError> {
    let Some(phase) = Phase::of(&event.method) else {
        return Ok(None);
    };
    let name = phase.name();
    let request = &event.params["request"];
    let text = |field: &'static str, key: &str, limit: usize| -> Result<String, EventError> {
        let value = request[key].as_str().ok_or(EventError::Missing {
            event: name,
            field,
            expected: "a string",
        })?;
        if value.len() > limit {
            return Err(EventError::TooLong {
                event: name,
                field,
                bytes: value.len(),
                limit,
            });
        }
        Ok(value.to_owned())
    };
    Ok(Some(NetworkEvent {
        phase,
        request: text("request.request", "request", MAX_ID_BYTES)?,
        url: text("request.url", "url", MAX_URL_BYTES)?,
        method: text("request.method", "method", MAX_ID_BYTES)?,
        request_id_header: request_id_header(&request["headers"]),
        timings: timings(name, &request["timings"])?,
    }))
}

/// `x-request-id` (any case) among BiDi's headers, `[{name, value: {type, value}}]`.
fn request_id_header(headers: &Value) -> Option<String> {
    headers.as_array()?.iter().find_map(|h| {
        let name = h["name"].as_str()?;
        let value = &h["value"];
        (name.eq_ignore_ascii_case("x-request-id") && value["type"] == "string")
            .then(|| value["value"].as_str())?
            .filter(|v| v.len() <= MAX_ID_BYTES)
            .map(str::to_owned)
    })
}

fn timings(event: &'static str, t: &Value) -> Result<Timings, EventError> {
    if !t.is_object() {
        return Err(EventError::Missing {
            event,
            field: "request.timings",
            expected: "an object",
        });
    }
    let number = |field: &'static str, key: &str| -> Result<Option<f64>, EventError> {
        match &t[key] {
            Value::Null => Ok(None),
            v => {
                let value = v.as_f64().ok_or(EventError::Missing {
                    event,
                    field,
                    expected: "a number",
                })?;
                if !(0.0..=MAX_UNIX_MS).contains(&value) {
                    return Err(EventError::NotATime {
                        event,
                        field,
                        value,
                    });
                }
                Ok(Some(value))
            }
        }
    };
    let origin = number("request.timings.timeOrigin", "timeOrigin")?.unwrap_or(0.0);
    let moment = |field: &'static str, key: &str| -> Result<Option<f64>, EventError> {
        // 0 is "not reached" in the fetch timing info, whatever the origin.
        let Some(at) = number(field, key)?.filter(|t| *t > 0.0) else {
            return Ok(None);
        };
        let unix = origin + at;
        if unix > MAX_UNIX_MS {
            return Err(EventError::NotATime {
                event,
                field,
                value: unix,
            });
        }
        Ok(Some(unix))
    };
    Ok(Timings {
        request_unix_ms: moment("request.timings.requestTime", "requestTime")?,
        response_start_unix_ms: moment("request.timings.responseStart", "responseStart")?,
        response_end_unix_ms: moment("request.timings.responseEnd", "responseEnd")?,
    })
}

/// What BiDi recorded of one request, on the system clock (epoch ms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestRecord {
    /// `requestTime`, when an event gave it.
    pub request_unix_ms: Option<f64>,
    /// `responseStart`: the response's first byte (its headers) reached the browser.
    pub response_start_unix_ms: f64,
    /// `responseEnd`, once `network.responseCompleted` came.
    pub response_end_unix_ms: Option<f64>,
    /// Whether `network.responseCompleted` came: before it, a later event may still
    /// bring the final timings.
    pub completed: bool,
}

/// Why no record was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// No event of a request that fits.
    NoRequest,
    /// The request was seen, but no response start yet (or ever: a request that failed).
    NoResponseStart,
}

/// The request that carried `x-request-id: id`.
pub fn find_request(events: &[NetworkEvent], id: &str) -> Result<RequestRecord, Missing> {
    let request = events
        .iter()
        .find(|e| e.request_id_header.as_deref() == Some(id))
        .ok_or(Missing::NoRequest)?;
    record_of(events, &request.request)
}

/// A page's own request, which carries no id of the caller's: the request to `url`
/// (the query and fragment are not compared, as reports drop them) with `method` whose
/// `requestTime` is nearest `started_unix_ms`, within [`SAME_REQUEST_MS`] (the rule of
/// the DevTools lookup).
pub fn find_request_by(
    events: &[NetworkEvent],
    url: &str,
    method: &str,
    started_unix_ms: f64,
) -> Result<RequestRecord, Missing> {
    let without_query = |u: &str| u.split(['?', '#']).next().unwrap_or(u).to_owned();
    let url = without_query(url);
    let (_, request) = events
        .iter()
        .filter(|e| without_query(&e.url) == url && e.method.eq_ignore_ascii_case(method))
        .filter_map(|e| {
            let apart = (e.timings.request_unix_ms? - started_unix_ms).abs();
            (apart <= SAME_REQUEST_MS).then_some((apart, e.request.as_str()))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .ok_or(Missing::NoRequest)?;
    record_of(events, request)
}

/// The record of BiDi request `request` from its events: the completed event's
/// timings where it came (the final ones, after any redirect), else the last started
/// event's.
fn record_of(events: &[NetworkEvent], request: &str) -> Result<RequestRecord, Missing> {
    let of_request = || events.iter().filter(|e| e.request == request);
    let request_unix_ms = of_request().find_map(|e| e.timings.request_unix_ms);
    let completed = of_request().rfind(|e| e.phase == Phase::ResponseCompleted);
    let started = of_request().rfind(|e| e.phase == Phase::ResponseStarted);
    let response_start_unix_ms = completed
        .and_then(|e| e.timings.response_start_unix_ms)
        .or_else(|| started.and_then(|e| e.timings.response_start_unix_ms))
        .ok_or(Missing::NoResponseStart)?;
    Ok(RequestRecord {
        request_unix_ms,
        response_start_unix_ms,
        response_end_unix_ms: completed.and_then(|e| e.timings.response_end_unix_ms),
        completed: completed.is_some(),
    })
}

#[cfg(test)]
mod tests;
