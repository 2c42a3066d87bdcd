//! Firefox's own network record: the WebDriver BiDi `network` events geckodriver relays.
//! `network.responseStarted` is sent when the response's headers have arrived, and its
//! `request.timings` are the request's fetch timing info; `network.responseCompleted`
//! at the end of the body, with the final timings. Measured in Firefox ESR 153 through
//! geckodriver 0.37.1: the event `timestamp` is whole epoch milliseconds; the timings
//! are epoch milliseconds with µs digits (`timeOrigin` is sent as 0, so they are absolute),
//! and `responseStart` is the arrival of the response's first byte, its headers. BiDi has
//! no event per body chunk, so the body's first byte is that time only when the headers
//! and the first chunk arrive together.

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};

use ttfx_webdriver::bidi::Bidi;
use ttfx_webdriver::devtools::Event;

/// The events subscribed to.
pub const EVENTS: &[&str] = &["network.responseStarted", "network.responseCompleted"];

/// One request's BiDi record.
#[derive(Debug, Clone, PartialEq)]
pub struct BidiResponse {
    /// `network.responseStarted`'s `timestamp`, epoch ms.
    pub started_event_unix_ms: f64,
    /// `network.responseCompleted`'s `timestamp`, epoch ms.
    pub completed_event_unix_ms: f64,
    /// The completed event's `request.timings` (fetch timing info), as sent.
    pub timings: Value,
}

impl BidiResponse {
    /// A timing of the completed request's fetch timing info, in ms; 0 (not reached) is
    /// none.
    pub fn timing(&self, name: &str) -> Option<f64> {
        self.timings[name].as_f64().filter(|t| *t > 0.0)
    }

    /// `responseStart` on the system clock (epoch ms): the timing plus its `timeOrigin`.
    pub fn response_start_unix_ms(&self) -> Option<f64> {
        let origin = self.timings["timeOrigin"].as_f64().unwrap_or(0.0);
        Some(origin + self.timing("responseStart")?)
    }
}

/// The record of the request to `url`, once both its events are in.
pub fn response(events: &[Event], url: &str) -> Option<BidiResponse> {
    let of = |method: &str| {
        events
            .iter()
            .find(|e| e.method == method && e.params["request"]["url"].as_str() == Some(url))
    };
    let started = of("network.responseStarted")?;
    let completed = of("network.responseCompleted")?;
    Some(BidiResponse {
        started_event_unix_ms: started.params["timestamp"].as_f64()?,
        completed_event_unix_ms: completed.params["timestamp"].as_f64()?,
        timings: completed.params["request"]["timings"].clone(),
    })
}

/// The session's BiDi network events, kept as they arrive.
pub struct BidiNetwork {
    _bidi: Bidi,
    receiver: Mutex<mpsc::UnboundedReceiver<Event>>,
    seen: Mutex<Vec<Event>>,
}

impl BidiNetwork {
    pub async fn attach(client: &fantoccini::Client) -> anyhow::Result<BidiNetwork> {
        let (bidi, receiver) = Bidi::attach(client.capabilities(), EVENTS)
            .await
            .context("Firefox's BiDi network events")?;
        Ok(BidiNetwork {
            _bidi: bidi,
            receiver: Mutex::new(receiver),
            seen: Mutex::new(Vec::new()),
        })
    }

    /// The record of the request to `url` (5 s at most after the page saw the body end).
    pub async fn response(&self, url: &str) -> anyhow::Result<BidiResponse> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut seen = self.seen.lock().await;
        let mut receiver = self.receiver.lock().await;
        loop {
            while let Ok(event) = receiver.try_recv() {
                seen.push(event);
            }
            if let Some(found) = response(&seen, url) {
                seen.clear();
                return Ok(found);
            }
            if tokio::time::Instant::now() >= deadline {
                let methods: Vec<&str> = seen.iter().map(|e| e.method.as_str()).collect();
                anyhow::bail!(
                    "no BiDi responseStarted/responseCompleted for {url} (events: {methods:?})"
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(method: &str, url: &str, timestamp: f64, timings: Value) -> Event {
        Event {
            method: method.to_owned(),
            params: json!({ "request": { "url": url, "timings": timings }, "timestamp": timestamp }),
        }
    }

    #[test]
    fn a_request_s_record_needs_both_events_and_its_response_start() {
        let url = "http://127.0.0.1:1/sim?seed=2";
        let timings =
            json!({ "timeOrigin": 0, "responseStart": 1_700_000_000_100.25, "responseEnd": 0 });
        let events = vec![
            ev(
                "network.responseStarted",
                "http://127.0.0.1:1/other",
                5.0,
                json!({}),
            ),
            ev(
                "network.responseStarted",
                url,
                1_700_000_000_101.0,
                timings.clone(),
            ),
        ];
        // Not yet completed: no record.
        assert_eq!(response(&events, url), None);
        let mut events = events;
        events.push(ev(
            "network.responseCompleted",
            url,
            1_700_000_000_140.0,
            timings,
        ));
        let r = response(&events, url).unwrap();
        assert_eq!(r.started_event_unix_ms, 1_700_000_000_101.0);
        assert_eq!(r.response_start_unix_ms(), Some(1_700_000_000_100.25));
        // A timing of 0 was not reached.
        assert_eq!(r.timing("responseEnd"), None);
    }
}
