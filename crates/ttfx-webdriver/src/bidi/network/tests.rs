use serde_json::{Value, json};

use super::*;

const URL: &str = "http://127.0.0.1:9/sim/default/v1/chat/completions";

fn event(method: &str, params: Value) -> Event {
    Event {
        method: method.to_owned(),
        params,
    }
}

/// A network event as Firefox sends it: `timeOrigin` 0, the timings epoch ms.
fn bidi(method: &str, id: &str, url: &str, verb: &str, timings: Value) -> Event {
    event(
        method,
        json!({"context": "c1", "timestamp": 1_700_000_000_000u64,
               "request": {"request": id, "url": url, "method": verb,
                           "headers": [{"name": "content-type",
                                        "value": {"type": "string", "value": "text/plain"}}],
                           "timings": timings}}),
    )
}

fn parsed(e: &Event) -> NetworkEvent {
    parse(e).unwrap().unwrap()
}

/// One request's three events: made at `at`, headers 5.25 ms later, its end 400 ms.
fn request(id: &str, url: &str, verb: &str, at: f64) -> Vec<NetworkEvent> {
    let sent = json!({"timeOrigin": 0, "requestTime": at, "responseStart": 0, "responseEnd": 0});
    let started = json!({"timeOrigin": 0, "requestTime": at, "responseStart": at + 5.25,
                         "responseEnd": 0});
    let done = json!({"timeOrigin": 0, "requestTime": at, "responseStart": at + 5.25,
                      "responseEnd": at + 400.0});
    [
        ("network.beforeRequestSent", sent),
        ("network.responseStarted", started),
        ("network.responseCompleted", done),
    ]
    .into_iter()
    .map(|(m, t)| parsed(&bidi(m, id, url, verb, t)))
    .collect()
}

#[test]
fn an_event_keeps_its_request_and_its_times_on_the_system_clock() {
    let mut e = bidi(
        "network.responseStarted",
        "7",
        URL,
        "POST",
        json!({"timeOrigin": 0, "requestTime": 1_700_000_000_000.125,
               "responseStart": 1_700_000_000_005.5, "responseEnd": 0}),
    );
    e.params["request"]["headers"] = json!([
        {"name": "X-Request-ID", "value": {"type": "string", "value": "ttfx-run-1-0"}}
    ]);
    let got = parsed(&e);
    assert_eq!(got.phase, Phase::ResponseStarted);
    assert_eq!((got.request.as_str(), got.url.as_str()), ("7", URL));
    assert_eq!(got.request_id_header.as_deref(), Some("ttfx-run-1-0"));
    assert_eq!(got.timings.request_unix_ms, Some(1_700_000_000_000.125));
    assert_eq!(
        got.timings.response_start_unix_ms,
        Some(1_700_000_000_005.5)
    );
    // 0: not reached.
    assert_eq!(got.timings.response_end_unix_ms, None);
}

#[test]
fn a_time_origin_is_added_to_each_moment() {
    // The spec's shape, where the fields count from timeOrigin (Firefox sends 0).
    let e = bidi(
        "network.responseCompleted",
        "7",
        URL,
        "GET",
        json!({"timeOrigin": 1_700_000_000_000.0, "requestTime": 2.5,
               "responseStart": 10.0, "responseEnd": 20.0}),
    );
    let t = parsed(&e).timings;
    assert_eq!(t.request_unix_ms, Some(1_700_000_000_002.5));
    assert_eq!(t.response_start_unix_ms, Some(1_700_000_000_010.0));
    assert_eq!(t.response_end_unix_ms, Some(1_700_000_000_020.0));
}

#[test]
fn events_of_other_kinds_are_not_network_records() {
    let e = event("log.entryAdded", json!({"text": "hi"}));
    assert_eq!(parse(&e), Ok(None));
}

#[test]
fn a_bad_event_is_a_clear_error_not_a_panic() {
    let ok = json!({"timeOrigin": 0, "requestTime": 5.0});
    let cases: Vec<(Event, &str)> = vec![
        (
            event("network.responseStarted", json!(null)),
            "network.responseStarted: request.request is missing or not a string",
        ),
        (
            event(
                "network.responseStarted",
                json!({"request": {"request": 7, "url": URL, "method": "GET", "timings": ok}}),
            ),
            "network.responseStarted: request.request is missing or not a string",
        ),
        (
            bidi(
                "network.beforeRequestSent",
                "1",
                &format!("{URL}?{}", "a".repeat(MAX_URL_BYTES)),
                "GET",
                ok.clone(),
            ),
            "network.beforeRequestSent: request.url is 8243 bytes, more than 8192",
        ),
        (
            bidi("network.responseStarted", "1", URL, "GET", json!([1, 2])),
            "network.responseStarted: request.timings is missing or not an object",
        ),
        (
            bidi(
                "network.responseStarted",
                "1",
                URL,
                "GET",
                json!({"responseStart": "soon"}),
            ),
            "network.responseStarted: request.timings.responseStart is missing or not a number",
        ),
        (
            bidi(
                "network.responseStarted",
                "1",
                URL,
                "GET",
                json!({"responseStart": -3.0}),
            ),
            "network.responseStarted: request.timings.responseStart = -3 is not a time \
             (finite, from 0 to 1e13 ms)",
        ),
        (
            bidi(
                "network.responseStarted",
                "1",
                URL,
                "GET",
                json!({"timeOrigin": 9e12, "responseStart": 9e12}),
            ),
            "network.responseStarted: request.timings.responseStart = 18000000000000 is not \
             a time (finite, from 0 to 1e13 ms)",
        ),
    ];
    for (e, says) in cases {
        let error = parse(&e).expect_err(says);
        assert_eq!(error.to_string(), says);
    }
}

#[test]
fn a_header_that_is_not_a_plain_short_string_is_no_id() {
    let mut e = bidi("network.beforeRequestSent", "1", URL, "GET", json!({}));
    for headers in [
        json!([{"name": "x-request-id", "value": {"type": "base64", "value": "aWQ="}}]),
        json!([{"name": "x-request-id",
                "value": {"type": "string", "value": "x".repeat(MAX_ID_BYTES + 1)}}]),
        json!({"x-request-id": "run-1"}),
        json!([{"name": 5}]),
    ] {
        e.params["request"]["headers"] = headers;
        assert_eq!(parsed(&e).request_id_header, None);
    }
}

#[test]
fn a_request_is_found_by_its_id_header() {
    let mut events = request("1", URL, "POST", 1000.0);
    let mut ours = bidi(
        "network.beforeRequestSent",
        "2",
        URL,
        "POST",
        json!({"requestTime": 2000.0}),
    );
    ours.params["request"]["headers"] =
        json!([{"name": "x-request-id", "value": {"type": "string", "value": "run-1"}}]);
    events.push(parsed(&ours));
    // Its response events carry no headers of the request: found by BiDi's id.
    events.extend(request("2", URL, "POST", 2000.0).into_iter().skip(1));
    let found = find_request(&events, "run-1").unwrap();
    assert_eq!(found.request_unix_ms, Some(2000.0));
    assert_eq!(found.response_start_unix_ms, 2005.25);
    assert_eq!(found.response_end_unix_ms, Some(2400.0));
    assert!(found.completed);
    assert_eq!(find_request(&events, "absent"), Err(Missing::NoRequest));
}

#[test]
fn a_pages_own_request_is_found_by_url_method_and_time() {
    let mut events = request("a", &format!("{URL}?seed=1"), "POST", 1_000_000.0);
    events.extend(request("b", URL, "POST", 1_010_000.0));
    events.extend(request("c", URL, "GET", 1_010_000.0));
    events.extend(request(
        "d",
        "http://127.0.0.1:9/other",
        "POST",
        1_010_000.0,
    ));
    // The second turn's: nearest in time, the query ignored, the method in any case.
    let found = find_request_by(&events, &format!("{URL}?x"), "post", 1_010_050.0).unwrap();
    assert_eq!(found.request_unix_ms, Some(1_010_000.0));
    let found = find_request_by(&events, URL, "POST", 999_990.0).unwrap();
    assert_eq!(found.request_unix_ms, Some(1_000_000.0));
    // Farther than SAME_REQUEST_MS from both: none, rather than a wrong one.
    let none = find_request_by(&events, URL, "POST", 1_005_000.0);
    assert_eq!(none, Err(Missing::NoRequest));
    let none = find_request_by(&events, "http://127.0.0.1:9/nothing", "POST", 1_010_000.0);
    assert_eq!(none, Err(Missing::NoRequest));
    // The limit itself is in; a hair past it is out.
    assert!(find_request_by(&events, URL, "GET", 1_010_000.0 + SAME_REQUEST_MS).is_ok());
    let past = find_request_by(&events, URL, "GET", 1_010_000.0 + SAME_REQUEST_MS + 0.001);
    assert_eq!(past, Err(Missing::NoRequest));
}

#[test]
fn a_request_without_its_response_yet_says_so() {
    let events = request("1", URL, "POST", 1000.0);
    // Only the request: no response start.
    let found = find_request_by(&events[..1], URL, "POST", 1000.0);
    assert_eq!(found, Err(Missing::NoResponseStart));
    // Started, not completed: the start, no end, and not final.
    let found = find_request_by(&events[..2], URL, "POST", 1000.0).unwrap();
    assert_eq!(found.response_start_unix_ms, 1005.25);
    assert_eq!(found.response_end_unix_ms, None);
    assert!(!found.completed);
}

#[test]
fn after_a_redirect_the_final_responses_times_are_taken() {
    let at = |start: f64| json!({"requestTime": 1000.0, "responseStart": start, "responseEnd": 0});
    let events: Vec<NetworkEvent> = [
        ("network.beforeRequestSent", at(0.0)),
        ("network.responseStarted", at(1003.0)),
        ("network.responseStarted", at(1009.0)),
    ]
    .into_iter()
    .map(|(m, t)| parsed(&bidi(m, "1", URL, "GET", t)))
    .collect();
    let found = find_request_by(&events, URL, "GET", 1000.0).unwrap();
    assert_eq!(found.response_start_unix_ms, 1009.0);
}
