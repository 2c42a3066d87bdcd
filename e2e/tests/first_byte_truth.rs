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
/// resolves in a task; idle, that measured 0.02–0.5 ms in Chromium, 1–5 ms in WebKit and
/// 7–14 ms in Firefox (printed below), and a loaded 2-core machine running the server,
/// the driver and the browser can delay a task by tens of ms. 100 ms is far beyond that
/// and still catches a probe that timed a later event (the headers of the next request,
/// the body's end after 8 tokens at 200/s and the delay).
const LATE_BOUND_MS: f64 = 100.0;

/// How much earlier than a truth the probe may read for want of clock resolution, given
/// the page clock's step `step` (the report's `timer_resolution_ms`): the probe's reading
/// is floored to the step (up to one step early); a time placed on the system clock
/// goes through the page's offset from Date.now(), itself read on the page clock at
/// Date.now()'s step (up to one step more); 0.05 ms for the truths' own stamps (the
/// server's µs figures, DevTools' monotonic-to-wall mapping read in one call).
fn early_bound(step: f64, on_system_clock: bool) -> f64 {
    let mapping = if on_system_clock { step } else { 0.0 };
    step + mapping + 0.05
}

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
        let on_system_clock = !matches!(s.network, NetworkTruth::ResponseStart { .. });
        let early = early_bound(step, on_system_clock);
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
        let early = early_bound(step, true);
        assert!(
            server >= -early,
            "first_byte {:.3} ms before the server sent the first chunk (bound {early:.3}): {s:?}",
            -server
        );
        assert!(
            server <= LATE_BOUND_MS,
            "first_byte {server:.3} ms after the server sent it: {s:?}"
        );
        // The truths themselves: an engine cannot record bytes before the server let them
        // go. Chromium's first data is the first chunk's; BiDi's responseStart is the
        // headers' (sent a fraction of a ms before the chunk).
        match &s.network {
            NetworkTruth::DataReceived { unix_ms } => assert!(
                unix_ms - s.server_unix_ms >= -0.05,
                "DevTools saw data {:.3} ms before the server sent it: {s:?}",
                s.server_unix_ms - unix_ms
            ),
            NetworkTruth::Bidi(r) => {
                let start = r
                    .response_start_unix_ms()
                    .with_context(|| format!("no BiDi responseStart: {s:?}"))?;
                assert!(
                    start - s.server_headers_unix_ms >= -0.05,
                    "BiDi saw the response {:.3} ms before the server sent its headers: {s:?}",
                    s.server_headers_unix_ms - start
                );
            }
            NetworkTruth::ResponseStart { .. } => {}
        }
    }
    lab.close().await
}

engines!(first_byte_is_never_before_the_engines_network_record_or_the_servers_send);
