//! Ground truth: each run's probe `first_byte` beside the browser's own network record
//! of the same request (docs/run.md, "Ground truth"). Chromium's record is the DevTools
//! performance log (driver.rs, `network_times`); Firefox's is WebDriver BiDi's `network`
//! events (bidi_network.rs); WebKitWebDriver has neither. A run without an entry says
//! why in a `no_ground_truth` anomaly, as a run without its server's record says
//! `no_server_record` (record_join.rs).

use serde::Serialize;
use ttfx_core::Milestone;
use ttfx_core::report::Run;
use ttfx_core::timeline::Anomaly;
use ttfx_webdriver::bidi::network::RequestRecord;
use ttfx_webdriver::devtools::Event;

use super::driver;

/// The anomaly class of a run without ground truth.
pub const NO_GROUND_TRUTH: &str = "no_ground_truth";

/// Probe `first_byte` beside the browser's own record of the same request. Every entry
/// has `run_id`, `target`, `probe_first_byte_ms`, `source` (`devtools` or `bidi`) and
/// that source's fields, `probe_minus_<source>_ms` among them.
#[derive(Debug, Clone, Serialize)]
pub struct GroundTruth {
    pub run_id: String,
    pub target: String,
    pub probe_first_byte_ms: f64,
    #[serde(flatten)]
    pub witness: Witness,
}

/// The browser's record, in ms after the probe's `request_start`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Witness {
    /// Chromium. `requestWillBeSent` is taken as the probe's `request_start` (the probe
    /// reads `performance.now()` just before calling `fetch`, and the browser creates the
    /// request during that call); the rest count from it on DevTools' monotonic clock.
    Devtools {
        /// First `Network.dataReceived` − `Network.requestWillBeSent`.
        devtools_first_data_ms: f64,
        /// `Network.responseReceived` − `Network.requestWillBeSent`.
        devtools_response_ms: Option<f64>,
        probe_minus_devtools_ms: f64,
    },
    /// Firefox, through [`bidi_times`]: the request's `requestTime`, `responseStart` (the
    /// response's first byte, its headers: BiDi has no event per body chunk, so this is
    /// the body's first byte only where the server sends the two together) and
    /// `responseEnd`.
    Bidi {
        bidi_request_ms: Option<f64>,
        bidi_response_start_ms: f64,
        bidi_response_end_ms: Option<f64>,
        /// `probe_first_byte_ms` − `bidi_response_start_ms`.
        probe_minus_bidi_ms: f64,
    },
}

impl GroundTruth {
    /// The record's source, as `--json` names it.
    pub fn source(&self) -> &'static str {
        match self.witness {
            Witness::Devtools { .. } => "devtools",
            Witness::Bidi { .. } => "bidi",
        }
    }

    /// The probe's first byte minus the browser's record of it.
    pub fn probe_minus_witness_ms(&self) -> f64 {
        match self.witness {
            Witness::Devtools {
                probe_minus_devtools_ms,
                ..
            } => probe_minus_devtools_ms,
            Witness::Bidi {
                probe_minus_bidi_ms,
                ..
            } => probe_minus_bidi_ms,
        }
    }
}

/// The job a run was made for: the `x-request-id` the runner sent (its page's requests
/// carry it) and the target's label, which the table and `--json` group entries by.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    pub request_id: &'a str,
    pub label: &'a str,
}

/// The run's `first_byte`, which every entry is about.
pub fn probe_first_byte(run: &Run) -> Result<f64, String> {
    run.timeline
        .milestones
        .get(Milestone::FirstByte)
        .ok_or_else(|| "no ground truth: the probe saw no first byte".to_owned())
}

/// A page's own request as its report names it (URL, method, start on the system
/// clock), which the lookups match when the request carries no id of the runner's.
pub fn page_request(run: &Run) -> Option<(&str, &str, f64)> {
    let request = &run.timeline.request;
    Some((
        request.url.as_deref()?,
        request.method.as_deref()?,
        run.timeline.request_start_unix_ms?,
    ))
}

/// Chromium's entry, from the DevTools events of the performance log.
pub fn from_devtools(run: &Run, job: Job<'_>, events: &[Event]) -> Result<GroundTruth, String> {
    let probe = probe_first_byte(run)?;
    let net =
        driver::network_times(events, job.request_id, page_request(run)).ok_or_else(|| {
            if events.is_empty() {
                "no ground truth: the session's DevTools performance log was empty (a WebDriver \
             endpoint that drops goog:loggingPrefs?)"
                    .to_owned()
            } else {
                "no ground truth: DevTools recorded no request of this run with body bytes (by \
             its x-request-id, or its URL and method within 100 ms of its start)"
                    .to_owned()
            }
        })?;
    Ok(entry(
        run,
        job,
        probe,
        Witness::Devtools {
            devtools_first_data_ms: net.first_data_ms,
            devtools_response_ms: net.response_ms,
            probe_minus_devtools_ms: probe - net.first_data_ms,
        },
    ))
}

/// Firefox's entry, from BiDi's record of the run's request.
pub fn from_bidi(run: &Run, job: Job<'_>, record: &RequestRecord) -> Result<GroundTruth, String> {
    let probe = probe_first_byte(run)?;
    let start = run.timeline.request_start_unix_ms.ok_or_else(|| {
        "no ground truth: the report has no request_start on the system clock to place \
         BiDi's times by"
            .to_owned()
    })?;
    let t = bidi_times(record, start);
    Ok(entry(
        run,
        job,
        probe,
        Witness::Bidi {
            bidi_request_ms: t.request_ms,
            bidi_response_start_ms: t.response_start_ms,
            bidi_response_end_ms: t.response_end_ms,
            probe_minus_bidi_ms: probe - t.response_start_ms,
        },
    ))
}

/// BiDi's moments in ms after the probe's `request_start`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BidiTimes {
    pub request_ms: Option<f64>,
    pub response_start_ms: f64,
    pub response_end_ms: Option<f64>,
}

/// The clock conversion. BiDi's timings are the system clock (epoch ms, µs digits:
/// Firefox sends `timeOrigin` 0); the probe's milestones are its page clock, ms after
/// `request_start`, whose own system-clock reading is `request_start_unix_ms` =
/// `performance.timeOrigin + request_start`. So a BiDi moment T is `T −
/// request_start_unix_ms` ms after `request_start`.
///
/// Error bar: that of the page clock through `timeOrigin` (docs/fidelity.md, "WebKit's
/// page clock on the wall clock"): on a plain Firefox page `timeOrigin + now()` reads −2
/// to +2 ms from `Date.now()` (its 1 ms clock is jittered), on a cross-origin-isolated one
/// 0.26–0.84 ms behind it; BiDi's stamps add 0.05 ms. So ±2 ms plain, +0.9 / −0.05 ms
/// isolated. Not DevTools' tie (the request's start taken as `request_start`): Firefox
/// stamps `requestTime` in its parent process, after the content process's `fetch` has
/// crossed to it, a hop of its own; `request_ms` shows it, within the same error bar.
pub fn bidi_times(record: &RequestRecord, request_start_unix_ms: f64) -> BidiTimes {
    let after = |unix_ms: f64| unix_ms - request_start_unix_ms;
    BidiTimes {
        request_ms: record.request_unix_ms.map(after),
        response_start_ms: after(record.response_start_unix_ms),
        response_end_ms: record.response_end_unix_ms.map(after),
    }
}

fn entry(run: &Run, job: Job<'_>, probe: f64, witness: Witness) -> GroundTruth {
    GroundTruth {
        // A flow's turns are runs of one job, each with its own id.
        run_id: run.id.clone().unwrap_or_else(|| job.request_id.to_owned()),
        target: job.label.to_owned(),
        probe_first_byte_ms: probe,
        witness,
    }
}

/// `run` saying why it has no ground truth.
pub fn noted(mut run: Run, why: String) -> Run {
    run.timeline.anomalies.push(Anomaly {
        at_ms: 0.0,
        class: NO_GROUND_TRUTH.to_owned(),
        detail: why,
    });
    run
}

#[cfg(test)]
mod tests;
