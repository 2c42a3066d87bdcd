//! One request in the DevTools `Network` domain's events, found by the `x-request-id`
//! header the caller sent: when the browser sent it, when its response and its first
//! body bytes came. The runner reads these events from chromedriver's performance log
//! after a run (its ground truth); the e2e harness from its own [`Cdp`](super::Cdp)
//! client as they come. Both look the request up here.
//!
//! Times are DevTools' own: `timestamp` is Chromium's monotonic clock in seconds,
//! `wallTime` the system clock in seconds since the epoch, and a response's `timing`
//! is `requestTime` (monotonic seconds) with offsets from it in milliseconds.

use serde_json::Value;

use super::Event;

/// What DevTools recorded of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// `requestWillBeSent.timestamp`, monotonic seconds.
    pub sent_s: f64,
    /// `requestWillBeSent.wallTime`, seconds since the epoch, when given.
    pub sent_wall_s: Option<f64>,
    /// The earliest `dataReceived.timestamp`, monotonic seconds.
    pub first_data_s: f64,
    /// The earliest `responseReceived.timestamp`, monotonic seconds, when given.
    pub response_s: Option<f64>,
    /// The first `responseReceived`'s `response.timing`, when there is one.
    timing: Option<Value>,
}

impl RequestRecord {
    /// A moment of the response's `timing` on the monotonic clock, in ms:
    /// `requestTime` plus the offset named `field` (`sendStart`, `receiveHeadersStart`, …).
    pub fn timing_ms(&self, field: &str) -> Option<f64> {
        let timing = self.timing.as_ref()?;
        Some(timing["requestTime"].as_f64()? * 1000.0 + timing[field].as_f64()?)
    }
}

/// The first request that carried `x-request-id: id` (any case of the header's name) and
/// its events; `None` when there is no such request or it received no body bytes.
pub fn find_request(events: &[Event], id: &str) -> Option<RequestRecord> {
    let sent = events.iter().find_map(|e| {
        if e.method != "Network.requestWillBeSent" {
            return None;
        }
        let ours = e.params["request"]["headers"]
            .as_object()?
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("x-request-id") && v.as_str() == Some(id));
        ours.then(|| sent_of(e))?
    })?;
    record_of(events, sent)
}

/// How far apart the page's clock reading of a request's start and DevTools' `wallTime`
/// may be for the two to be one request: both read the system clock within the same
/// `fetch` call, a few ms apart at most on a busy machine; 100 ms leaves room for a
/// loaded one and still tells apart requests a page sends a turn apart.
pub const SAME_REQUEST_MS: f64 = 100.0;

/// A page's own request, which carries no id of the caller's (#36): the request to `url`
/// (origin and path; the query is not compared, as reports drop it) with `method` whose
/// `wallTime` is nearest to `started_unix_ms`, within [`SAME_REQUEST_MS`]; `None` when
/// there is none or it received no body bytes.
pub fn find_request_by(
    events: &[Event],
    url: &str,
    method: &str,
    started_unix_ms: f64,
) -> Option<RequestRecord> {
    let without_query = |u: &str| u.split(['?', '#']).next().unwrap_or(u).to_owned();
    let url = without_query(url);
    let sent = events
        .iter()
        .filter(|e| e.method == "Network.requestWillBeSent")
        .filter(|e| {
            let r = &e.params["request"];
            r["url"].as_str().map(without_query).as_deref() == Some(url.as_str())
                && r["method"]
                    .as_str()
                    .is_some_and(|m| m.eq_ignore_ascii_case(method))
        })
        .filter_map(sent_of)
        .filter_map(|sent| {
            let apart = (sent.2? * 1000.0 - started_unix_ms).abs();
            (apart <= SAME_REQUEST_MS).then_some((apart, sent))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))?
        .1;
    record_of(events, sent)
}

/// A `requestWillBeSent`'s request id, monotonic and wall time.
fn sent_of(e: &Event) -> Option<(String, f64, Option<f64>)> {
    let p = &e.params;
    Some((
        p["requestId"].as_str()?.to_owned(),
        p["timestamp"].as_f64()?,
        p["wallTime"].as_f64(),
    ))
}

/// The record of the request `sent` names, from its events.
fn record_of(
    events: &[Event],
    (request_id, sent_s, sent_wall_s): (String, f64, Option<f64>),
) -> Option<RequestRecord> {
    let request_id = request_id.as_str();
    let of_request = |method: &'static str| {
        events
            .iter()
            .filter(move |e| e.method == method && e.params["requestId"] == request_id)
    };
    let earliest = |method: &'static str| {
        of_request(method)
            .filter_map(|e| e.params["timestamp"].as_f64())
            .min_by(f64::total_cmp)
    };
    Some(RequestRecord {
        sent_s,
        sent_wall_s,
        first_data_s: earliest("Network.dataReceived")?,
        response_s: earliest("Network.responseReceived"),
        timing: of_request("Network.responseReceived")
            .next()
            .map(|e| e.params["response"]["timing"].clone()),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(method: &str, params: Value) -> Event {
        Event {
            method: method.to_owned(),
            params,
        }
    }

    /// `requestWillBeSent` for request `id` with one header.
    fn sent(id: &str, at_s: f64, wall_s: f64, header: (&str, &str)) -> Event {
        let (name, value) = header;
        let params = json!({"requestId": id, "timestamp": at_s, "wallTime": wall_s,
                            "request": {"headers": {name: value}}});
        event("Network.requestWillBeSent", params)
    }

    /// `method` for request `id` at `at_s`.
    fn at(method: &str, id: &str, at_s: f64) -> Event {
        event(method, json!({"requestId": id, "timestamp": at_s}))
    }

    /// Two requests; ours is named with another case of the header, its data arrives
    /// out of order, and the other request's data comes first.
    fn two_requests() -> Vec<Event> {
        let data = "Network.dataReceived";
        let mut response = at("Network.responseReceived", "9", 100.25);
        response.params["response"] = json!({"timing":
            {"requestTime": 100.0, "sendStart": 0.5, "receiveHeadersStart": 240.0}});
        vec![
            sent("7", 10.0, 1000.0, ("x-request-id", "other")),
            sent("9", 100.0, 1_700_000_000.5, ("X-Request-Id", "run-1")),
            at(data, "7", 100.1),
            response,
            at(data, "9", 100.5),
            at(data, "9", 100.3),
        ]
    }

    #[test]
    fn finds_our_request_its_response_and_its_earliest_data() {
        let events = two_requests();
        let found = find_request(&events, "run-1").unwrap();
        assert_eq!(found.sent_s, 100.0);
        assert_eq!(found.sent_wall_s, Some(1_700_000_000.5));
        assert_eq!(found.first_data_s, 100.3);
        assert_eq!(found.response_s, Some(100.25));
        assert_eq!(found.timing_ms("receiveHeadersStart"), Some(100_240.0));
        assert_eq!(found.timing_ms("sendStart"), Some(100_000.5));
        assert_eq!(found.timing_ms("connectStart"), None);
        assert_eq!(find_request(&events, "absent"), None);
    }

    /// A request to `url` with no id header, sent at `wall_s`, with its data.
    fn page_request(id: &str, url: &str, method: &str, at_s: f64, wall_s: f64) -> Vec<Event> {
        vec![
            event(
                "Network.requestWillBeSent",
                json!({"requestId": id, "timestamp": at_s, "wallTime": wall_s,
                       "request": {"url": url, "method": method, "headers": {}}}),
            ),
            at("Network.dataReceived", id, at_s + 0.3),
        ]
    }

    #[test]
    fn a_pages_own_request_is_found_by_url_method_and_time() {
        let url = "http://127.0.0.1:9/sim/default/v1/chat/completions";
        let mut events = page_request("a", &format!("{url}?seed=1"), "POST", 10.0, 1000.0);
        events.extend(page_request("b", url, "POST", 20.0, 1010.0));
        events.extend(page_request("c", url, "GET", 20.0, 1010.0));
        events.extend(page_request(
            "d",
            "http://127.0.0.1:9/other",
            "POST",
            20.0,
            1010.0,
        ));
        // The second turn's request: nearest in time, the query ignored.
        let found = find_request_by(&events, &format!("{url}?x"), "post", 1_010_050.0).unwrap();
        assert_eq!(found.sent_s, 20.0);
        let found = find_request_by(&events, url, "POST", 999_990.0).unwrap();
        assert_eq!(found.sent_s, 10.0);
        // Farther than SAME_REQUEST_MS from both: none, rather than a wrong one.
        assert!(find_request_by(&events, url, "POST", 1_005_000.0).is_none());
        assert!(
            find_request_by(&events, "http://127.0.0.1:9/nothing", "POST", 1_010_000.0).is_none()
        );
    }

    #[test]
    fn a_request_without_body_bytes_is_not_found() {
        let events = two_requests();
        assert_eq!(find_request(&events[..4], "run-1"), None);
    }

    #[test]
    fn a_response_without_timestamp_or_timing_leaves_them_unknown() {
        let mut events = two_requests();
        events[3] = event("Network.responseReceived", json!({"requestId": "9"}));
        let found = find_request(&events, "run-1").unwrap();
        assert_eq!(found.response_s, None);
        assert_eq!(found.timing_ms("sendStart"), None);
        assert_eq!(found.first_data_s, 100.3);
    }
}
