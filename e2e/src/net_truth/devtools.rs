//! Chromium's own network record: the DevTools `Network` domain of the page the session
//! drives (the events chromedriver's performance log carries, which `ttfx run` reads),
//! here on a DevTools client of its own so each run's events are read as they come.
//!
//! `Network.dataReceived` is the renderer's loader receiving body bytes from the network
//! service; its `timestamp` is Chromium's monotonic clock in seconds. Two ways to set it
//! beside the page: the response's `timing` (`requestTime` + `receiveHeadersStart`) is the
//! moment the page's Resource Timing entry names `responseStart`, which ties the monotonic
//! clock to the page clock to within the page clock's step (checked by making the same tie
//! at `sendStart` / `requestStart`: within one step in every run of the bench); and the
//! request's `Network.requestWillBeSent` carries `timestamp` beside `wallTime` (the system
//! clock), a mapping kept for comparison only: against the tie it places `dataReceived`
//! late, by up to 0.9 ms in one 100-run bench and 4.9 ms in another (`wallTime` is read
//! after `timestamp`, more so on a loaded machine).

use std::time::Duration;

use anyhow::Context;
use serde_json::json;
use tokio::sync::{Mutex, mpsc};

use ttfx_webdriver::devtools::{Cdp, Event, network};

/// The first body bytes of one request as DevTools saw them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FirstData {
    /// `requestWillBeSent.wallTime`, epoch ms.
    pub request_unix_ms: f64,
    /// The first `dataReceived`, epoch ms (through the request's wallTime).
    pub first_data_unix_ms: f64,
    /// `requestWillBeSent` on the monotonic clock, ms.
    pub request_ticks_ms: f64,
    /// The first `dataReceived` on the monotonic clock, ms.
    pub first_data_ticks_ms: f64,
    /// `responseReceived`'s `response.timing.requestTime` plus its `receiveHeadersStart`,
    /// monotonic ms: the moment Resource Timing names `responseStart`, which ties the
    /// monotonic clock to the page's.
    pub headers_start_ticks_ms: Option<f64>,
    /// The same plus `sendStart`: Resource Timing's `requestStart` (the tie's check).
    pub send_start_ticks_ms: Option<f64>,
}

/// The request that carried `x-request-id: id`, and its first `dataReceived`
/// (ttfx-webdriver's lookup, the runner's too), placed on both clocks.
pub fn first_data(events: &[Event], id: &str) -> Option<FirstData> {
    let record = network::find_request(events, id)?;
    let wall = record.sent_wall_s?;
    let (sent, first) = (record.sent_s, record.first_data_s);
    Some(FirstData {
        request_unix_ms: wall * 1000.0,
        first_data_unix_ms: (wall + (first - sent)) * 1000.0,
        request_ticks_ms: sent * 1000.0,
        first_data_ticks_ms: first * 1000.0,
        headers_start_ticks_ms: record.timing_ms("receiveHeadersStart"),
        send_start_ticks_ms: record.timing_ms("sendStart"),
    })
}

/// The `Network` domain switched on for the session's page, its events kept.
pub struct DevToolsNetwork {
    _cdp: Cdp,
    receiver: Mutex<mpsc::UnboundedReceiver<Event>>,
    seen: Mutex<Vec<Event>>,
}

impl DevToolsNetwork {
    pub async fn attach(client: &fantoccini::Client) -> anyhow::Result<DevToolsNetwork> {
        let (cdp, receiver) = Cdp::attach(client.capabilities()).await?;
        cdp.call("Network.enable", json!({}))
            .await
            .context("DevTools Network.enable")?;
        Ok(DevToolsNetwork {
            _cdp: cdp,
            receiver: Mutex::new(receiver),
            seen: Mutex::new(Vec::new()),
        })
    }

    /// The first data of request `id`, once its events have arrived (they trail the page
    /// by the WebSocket's delivery; 5 s at most). The events read are then dropped.
    pub async fn first_data(&self, id: &str) -> anyhow::Result<FirstData> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut seen = self.seen.lock().await;
        let mut receiver = self.receiver.lock().await;
        loop {
            while let Ok(event) = receiver.try_recv() {
                if event.method.starts_with("Network.") {
                    seen.push(event);
                }
            }
            if let Some(found) = first_data(&seen, id) {
                seen.clear();
                return Ok(found);
            }
            if tokio::time::Instant::now() >= deadline {
                let methods: Vec<&str> = seen.iter().map(|e| e.method.as_str()).collect();
                anyhow::bail!("no DevTools dataReceived for request {id} (events: {methods:?})");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn ev(method: &str, params: Value) -> Event {
        Event {
            method: method.to_owned(),
            params,
        }
    }

    /// The lookup is ttfx-webdriver's (`devtools::network`, tested there); here its
    /// record is placed on the wall clock through the request's `wallTime`.
    #[test]
    fn first_data_is_placed_on_the_wall_clock_through_its_request() {
        let request = |wall: Value| {
            ev(
                "Network.requestWillBeSent",
                json!({"requestId": "9", "timestamp": 100.0, "wallTime": wall,
                       "request": {"headers": {"x-request-id": "run-1"}}}),
            )
        };
        let mut events = vec![
            request(json!(1_700_000_000.5)),
            ev(
                "Network.dataReceived",
                json!({"requestId": "9", "timestamp": 100.25}),
            ),
            ev(
                "Network.responseReceived",
                json!({"requestId": "9", "response": {"timing":
                    {"requestTime": 100.0, "sendStart": 0.5, "receiveHeadersStart": 240.0}}}),
            ),
        ];
        let found = first_data(&events, "run-1").unwrap();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-3;
        assert!(
            near(found.request_unix_ms, 1_700_000_000_500.0),
            "{found:?}"
        );
        assert!(
            near(found.first_data_unix_ms, 1_700_000_000_750.0),
            "{found:?}"
        );
        assert!(near(found.first_data_ticks_ms, 100_250.0), "{found:?}");
        assert!(near(found.request_ticks_ms, 100_000.0), "{found:?}");
        assert_eq!(found.headers_start_ticks_ms, Some(100_240.0));
        assert_eq!(found.send_start_ticks_ms, Some(100_000.5));
        // Without the request's wallTime there is no wall clock to place it on.
        events[0] = request(Value::Null);
        assert_eq!(first_data(&events, "run-1"), None);
    }
}
