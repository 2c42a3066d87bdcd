use serde_json::{Value, json};
use ttfx_core::timeline::Timeline;

use super::*;

const URL: &str = "http://127.0.0.1:9/sim/default/v1/chat/completions";
const JOB: Job<'static> = Job {
    request_id: "ttfx-run-1-0",
    label: "page:http://127.0.0.1:9/",
};

/// A page's run: its request started at `start_unix_ms`, first byte 412.5 ms after.
fn run(start_unix_ms: Option<f64>, first_byte: Option<f64>) -> Run {
    let mut t = Timeline::default();
    if let Some(at) = first_byte {
        t.milestones.set(Milestone::FirstByte, at);
    }
    t.request.url = Some(URL.to_owned());
    t.request.method = Some("POST".to_owned());
    t.request_start_unix_ms = start_unix_ms;
    Run::new(None, Some(JOB.label.to_owned()), t).unwrap()
}

fn record(request: f64, start: f64, end: Option<f64>) -> RequestRecord {
    RequestRecord {
        request_unix_ms: Some(request),
        response_start_unix_ms: start,
        response_end_unix_ms: end,
        completed: end.is_some(),
    }
}

#[test]
fn bidi_times_count_from_the_probes_request_start_on_the_system_clock() {
    let start = 1_700_000_000_000.25;
    let t = bidi_times(
        &record(start + 1.5, start + 405.125, Some(start + 800.0)),
        start,
    );
    assert_eq!(
        t,
        BidiTimes {
            request_ms: Some(1.5),
            response_start_ms: 405.125,
            response_end_ms: Some(800.0),
        }
    );
    // Without requestTime or responseEnd, those are unknown, not 0.
    let bare = RequestRecord {
        request_unix_ms: None,
        response_end_unix_ms: None,
        ..record(0.0, start + 3.0, None)
    };
    let t = bidi_times(&bare, start);
    assert_eq!((t.request_ms, t.response_end_ms), (None, None));
    assert_eq!(t.response_start_ms, 3.0);
}

#[test]
fn a_bidi_entry_is_the_probes_first_byte_beside_bidis_response_start() {
    let start = 1_700_000_000_000.0;
    let r = run(Some(start), Some(412.5));
    let g = from_bidi(
        &r,
        JOB,
        &record(start + 1.0, start + 406.0, Some(start + 790.0)),
    )
    .unwrap();
    assert_eq!(g.probe_minus_witness_ms(), 6.5);
    let value = serde_json::to_value(&g).unwrap();
    assert_eq!(
        value,
        json!({"run_id": "ttfx-run-1-0", "target": "page:http://127.0.0.1:9/",
               "probe_first_byte_ms": 412.5, "source": "bidi", "bidi_request_ms": 1.0,
               "bidi_response_start_ms": 406.0, "bidi_response_end_ms": 790.0,
               "probe_minus_bidi_ms": 6.5})
    );
}

#[test]
fn without_a_first_byte_or_a_system_clock_start_there_is_no_bidi_entry() {
    let rec = record(1.0, 2.0, None);
    let e = from_bidi(&run(Some(0.0), None), JOB, &rec).unwrap_err();
    assert_eq!(e, "no ground truth: the probe saw no first byte");
    let e = from_bidi(&run(None, Some(5.0)), JOB, &rec).unwrap_err();
    assert!(e.contains("no request_start on the system clock"), "{e}");
}

#[test]
fn a_devtools_entry_keeps_its_fields_and_says_its_source() {
    let ev = |method: &str, params: Value| Event {
        method: method.to_owned(),
        params,
    };
    let events = vec![
        ev(
            "Network.requestWillBeSent",
            json!({"requestId": "9", "timestamp": 100.0,
                   "request": {"headers": {"x-request-id": "ttfx-run-1-0"}}}),
        ),
        ev(
            "Network.dataReceived",
            json!({"requestId": "9", "timestamp": 100.4}),
        ),
    ];
    let g = from_devtools(&run(None, Some(401.0)), JOB, &events).unwrap();
    let value = serde_json::to_value(&g).unwrap();
    assert_eq!(value["source"], "devtools");
    let d = value["probe_minus_devtools_ms"].as_f64().unwrap();
    assert!((d - 1.0).abs() < 1e-6, "{value}");
    assert!(value["devtools_response_ms"].is_null(), "{value}");
    // The same request absent, and an empty log: each says why.
    let other = Job {
        request_id: "ttfx-run-1-1",
        ..JOB
    };
    let e = from_devtools(&run(None, Some(401.0)), other, &events).unwrap_err();
    assert!(
        e.starts_with("no ground truth: DevTools recorded no request"),
        "{e}"
    );
    let e = from_devtools(&run(None, Some(401.0)), JOB, &[]).unwrap_err();
    assert!(e.contains("performance log was empty"), "{e}");
}

#[test]
fn a_run_without_ground_truth_says_why_in_an_anomaly() {
    let r = noted(run(None, None), "no ground truth: because".to_owned());
    let a = r.timeline.anomalies.last().unwrap();
    assert_eq!(
        (a.class.as_str(), a.detail.as_str()),
        (NO_GROUND_TRUTH, "no ground truth: because")
    );
}

#[test]
fn a_pages_request_is_named_only_when_the_report_has_all_three() {
    let start = 1_700_000_000_000.0;
    assert_eq!(
        page_request(&run(Some(start), None)),
        Some((URL, "POST", start))
    );
    assert_eq!(page_request(&run(None, None)), None);
}
