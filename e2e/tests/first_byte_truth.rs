//! First byte against each engine's own network record (issue #18 point 2): the probe's
//! `first_byte` against Chromium's DevTools `Network.dataReceived`, Firefox's WebDriver
//! BiDi `responseStart`, WebKit's Resource Timing `responseStart`, and in every engine the
//! server's wall-clock send of the first body chunk (same machine, same system clock).
//! The distribution is the bench's (`first_byte_bench`); here a few runs per engine.

use anyhow::Context;
use ttfx_e2e::engines;
use ttfx_e2e::engines::Engine;
use ttfx_e2e::net_truth::{NetLab, NetSample, NetworkTruth};

/// Injected delays (ms), before the headers and the first chunk alike.
const DELAYS: [u32; 3] = [40, 97, 154];

/// How late after a truth the probe may name the first byte: the bytes travel from the
/// engine's network stack (its network process in Chromium and WebKit, the parent
/// process's socket thread in Firefox) to the page's main thread, where the probe's read
/// resolves in a task. The bench measured (100 runs each) p99 0.4–0.7 ms behind DevTools'
/// dataReceived, 3–17 ms behind Firefox's BiDi responseStart (once 54 ms) and 1–20 ms
/// behind WebKit's Resource Timing (once 84 ms), on a 2-core machine running the server,
/// the driver and the browser; 150 ms, the bound the probe tests give loopback
/// milestones, still catches a probe that timed another event (the stream's end, a
/// later request).
const LATE_BOUND_MS: f64 = 150.0;

/// How much earlier than a truth the probe may read for want of clock resolution, given
/// the page clock's step `step` (the report's `timer_resolution_ms`): the probe's reading
/// is coarsened to the step (up to one step early); a time placed on the system clock
/// goes through the page's offset from Date.now(), itself read on the page clock at
/// Date.now()'s step (up to one step off); plus `truth_ms`, the truth's own error.
fn early_bound(step: f64, on_system_clock: bool, truth_ms: f64) -> f64 {
    let mapping = if on_system_clock { step } else { 0.0 };
    step + mapping + truth_ms
}

/// The truth's own error, given the page clock's step. DevTools: its monotonic
/// `dataReceived` is placed on the page clock where the response's `receiveHeadersStart`
/// and the page's Resource Timing `responseStart` name the same moment, the latter
/// coarsened to the step (the same tie made at `sendStart` / `requestStart` agreed within
/// one step in the bench). The server's and BiDi's stamps are µs figures (0.05 ms).
/// Resource Timing: none (the page's own clock, coarsened like the probe's).
fn truth_error_ms(s: &NetSample, step: f64) -> f64 {
    match &s.network {
        NetworkTruth::DataReceived { .. } => step,
        NetworkTruth::Bidi(_) => 0.05,
        NetworkTruth::ResponseStart { .. } => 0.0,
    }
}

/// The server's send stamps: µs figures taken just after the chunk was handed to hyper.
const SERVER_STAMP_MS: f64 = 0.05;

fn print(s: &NetSample) {
    println!(
        "{} delay {:3} ms: probe − network record {:+8.3} ms, probe − server send {:+8.3} ms \
         (timeOrigin alone {:+8.3}), probe − Resource Timing responseStart {:?}, skew {:+.3} ms, \
         step {:?} ms",
        s.engine.name(),
        s.delay_ms,
        s.probe_minus_network_ms().unwrap_or(f64::NAN),
        s.probe_minus_server_ms(),
        s.origin_minus_server_ms(),
        s.response_start_page_ms.map(|r| s.probe_page_ms - r),
        s.skew_ms,
        s.step_ms
    );
    println!(
        "  response_start − its network record {:+8.3} ms (server's headers send {:+8.3}), \
         first_byte − the app's own first read {:+8.3} ms, engine_hop_ms {:?}",
        s.response_start_minus_network_ms().unwrap_or(f64::NAN),
        s.response_start_minus_server_ms().unwrap_or(f64::NAN),
        s.first_byte_minus_app_read_ms(),
        s.engine_hop_ms
    );
}

async fn first_byte_is_never_before_the_engines_network_record_or_the_servers_send(
    engine: Engine,
) -> anyhow::Result<()> {
    let lab = NetLab::start(engine, &[]).await?;
    for delay in DELAYS {
        let s = lab.run(delay).await?;
        print(&s);
        let step = s.step_ms.unwrap_or(1.0);
        // The engine's record, on its own clock.
        let network = s
            .probe_minus_network_ms()
            .with_context(|| format!("no network truth: {s:?}"))?;
        let on_system_clock = !s.network_on_page_clock();
        let early = early_bound(step, on_system_clock, truth_error_ms(&s, step));
        assert!(
            network >= -early,
            "first_byte {:.3} ms before the engine's network record (bound {early:.3}): {s:?}",
            -network
        );
        assert!(
            network <= LATE_BOUND_MS,
            "first_byte {network:.3} ms after the engine's network record: {s:?}"
        );
        // The server's send, on the system clock.
        let server = s.probe_minus_server_ms();
        let early = early_bound(step, true, SERVER_STAMP_MS);
        assert!(
            server >= -early,
            "first_byte {:.3} ms before the server sent the first chunk (bound {early:.3}): {s:?}",
            -server
        );
        assert!(
            server <= LATE_BOUND_MS,
            "first_byte {server:.3} ms after the server sent it: {s:?}"
        );
        // The network boundary (`response_start`) against the engine's record of the
        // response's start (Chromium: DevTools' receiveHeadersStart, tied at the send;
        // Firefox: BiDi's responseStart; WebKit: the server's headers send through
        // timeOrigin, whose 1 ms floor is allowed).
        let start = s
            .response_start_minus_network_ms()
            .with_context(|| format!("no response_start or its witness: {s:?}"))?;
        let early = early_bound(step, !s.network_on_page_clock(), truth_error_ms(&s, step))
            + s.response_start_floor_ms()
            + match s.network {
                NetworkTruth::ResponseStart { .. } => SERVER_STAMP_MS,
                _ => 0.0,
            };
        assert!(
            start >= -early,
            "response_start {:.3} ms before the engine's record of the response (bound \
             {early:.3}): {s:?}",
            -start
        );
        assert!(
            start <= LATE_BOUND_MS,
            "response_start {start:.3} ms after the engine's record: {s:?}"
        );
        // The app's own reader gets the bytes from the probe, so never before the probe
        // read them (one clock, read in that order).
        assert!(
            s.first_byte_minus_app_read_ms() <= 0.0,
            "the app read the first bytes before the probe: {s:?}"
        );
        // The truths themselves: an engine cannot record bytes before the server let them
        // go. Chromium's first data is the first chunk's (placed on the system clock as the
        // probe's time is: the tie's step, the mapping's step); BiDi's responseStart is
        // the headers' (sent a fraction of a ms before the chunk).
        match &s.network {
            NetworkTruth::DataReceived { page_ms, .. } => {
                let page_ms = page_ms.with_context(|| format!("no DevTools tie: {s:?}"))?;
                let unix_ms = s.time_origin + page_ms - s.skew_ms;
                let early = early_bound(step, true, SERVER_STAMP_MS);
                assert!(
                    unix_ms - s.server_unix_ms >= -early,
                    "DevTools saw data {:.3} ms before the server sent it (bound {early:.3}): {s:?}",
                    s.server_unix_ms - unix_ms
                );
            }
            NetworkTruth::Bidi(r) => {
                let start = r
                    .response_start_unix_ms()
                    .with_context(|| format!("no BiDi responseStart: {s:?}"))?;
                assert!(
                    start - s.server_headers_unix_ms >= -SERVER_STAMP_MS,
                    "BiDi saw the response {:.3} ms before the server sent its headers: {s:?}",
                    s.server_headers_unix_ms - start
                );
            }
            NetworkTruth::ResponseStart { .. } => {}
        }
    }
    // first_byte against the app's own reader: bodies 30 ms after their headers, so the
    // app is already waiting on its read when the bytes come. The probe reads first and
    // hands the chunk on in microtasks of the same task, so the app's read resolves within
    // one clock step of the probe's (0.1 % over it: two float renderings of one step).
    // The median of the three: a garbage collection can still land between the two reads.
    let mut lags = Vec::new();
    for delay in DELAYS {
        let s = lab.run_with_body_gap(delay, 30).await?;
        let d = s.first_byte_minus_app_read_ms();
        println!(
            "{} app waiting: first_byte − the app's first read {d:+.3} ms",
            engine.name()
        );
        assert!(
            d <= 0.0,
            "the app read the first bytes before the probe: {s:?}"
        );
        lags.push((d, s.step_ms.unwrap_or(1.0)));
    }
    lags.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (median, step) = lags[lags.len() / 2];
    assert!(
        median >= -step * 1.001,
        "the app's reader got the first bytes {:.3} ms after the probe (median of {lags:?}), \
         more than one clock step ({step} ms)",
        -median
    );
    lab.close().await
}

engines!(first_byte_is_never_before_the_engines_network_record_or_the_servers_send);
