//! Network family: `engine_hop`, the engine's own hop from its network stack to the page,
//! and `request_queued`, how long the browser held the request before sending it.

use super::Measured;
use crate::milestone::Milestone;
use crate::timeline::{ResourceTiming, Timeline};

/// `engine_hop` = first_byte − response_start: from the engine's network stack receiving
/// the response (Resource Timing `responseStart`) to the page's reader getting the first
/// body bytes. It is the engine's hop (network process → page, a task on the page's main
/// thread) when the first body bytes arrive with the headers; a server that sends its
/// headers ahead of the body adds that wait (docs/metrics.md).
pub fn engine_hop(t: &Timeline) -> Option<Measured> {
    let start = t.milestones.get(Milestone::ResponseStart)?;
    let first_byte = t.milestones.get(Milestone::FirstByte)?;
    Some(Measured::client(first_byte - start))
}

/// `request_queued` = (requestStart − fetchStart) − DNS − connect, at least 0: how long
/// the browser held the request before it sent it ([`ResourceTiming::queued_ms`], HAR's
/// `blocked`). The Resource Timing entry's times are on the page's clock.
pub fn request_queued(t: &Timeline) -> Option<Measured> {
    t.resource_timing
        .as_ref()?
        .queued_ms()
        .map(Measured::client)
}

/// A request the browser held longer than this before sending it gets a note naming the
/// likely cause. Not queued, engines still report a few ms between `fetchStart` and
/// `requestStart` for their own set-up (the hop to their network process, cache lookup):
/// on loopback, measured on a 2-core machine (docs/metrics.md), at most 3 ms when idle
/// and up to 31 ms while it also compiled, in all three engines, on clocks of 0.1 ms
/// (Chromium) and 1 ms (Firefox, WebKit). A wait for a connection of the per-host limit
/// lasts as long as the rest of another request, hundreds of ms for an LLM reply. 50 ms
/// is above the set-up of a loaded machine and below any stream worth waiting for; a
/// shorter wait is in `request_queued_ms`, without a note.
pub const QUEUED_NOTE_MS: f64 = 50.0;

/// What the report says about the network figures: why `response_start` (and with it
/// `engine_hop_ms` and `request_queued_ms`) is missing from a page's run that got body
/// bytes, and the likely cause of a request the browser held before sending it. Runs
/// measured outside a page (no analysis site) and WebSocket messages (which have no
/// entry) get no note.
pub fn notes(t: &Timeline) -> Vec<String> {
    let in_page = t.environment.analysis.is_some();
    let websocket = t.request.transport.as_deref() == Some("websocket");
    if !in_page || websocket {
        return Vec::new();
    }
    let got_bytes = t.milestones.get(Milestone::FirstByte).is_some();
    match &t.resource_timing {
        None if got_bytes => vec![
            "no Resource Timing entry for the request: response_start, engine_hop_ms and \
             request_queued_ms are missing (the engine kept none, or the page's resource \
             timing buffer was cleared or full)"
                .into(),
        ],
        Some(entry) if got_bytes && entry.response_start_ms.is_none() => vec![
            "the request's Resource Timing entry has no responseStart (a cross-origin \
             response without Timing-Allow-Origin): response_start, engine_hop_ms and \
             request_queued_ms are missing"
                .into(),
        ],
        Some(entry) => queued_note(entry).into_iter().collect(),
        None => Vec::new(),
    }
}

/// The likely cause of a request held longer than [`QUEUED_NOTE_MS`], by the protocol
/// the engine used.
fn queued_note(entry: &ResourceTiming) -> Option<String> {
    let queued = entry.queued_ms().filter(|q| *q > QUEUED_NOTE_MS)?;
    let held = format!(
        "the browser held the request {queued:.1} ms before sending it (request_queued_ms)"
    );
    Some(match entry.next_hop_protocol.as_deref() {
        Some(p @ ("h2" | "h3")) => format!(
            "{held} over {p}: requests to one host share one connection there, so the \
             likely cause is the connection's limit on concurrent streams or the \
             browser's own scheduling, not the per-host connection limit"
        ),
        Some(p) => format!(
            "{held} over {p}: the likely cause is the per-host connection limit \
             (browsers open at most six HTTP/1.1 connections to one host; this request \
             waited for one to free)"
        ),
        None => format!(
            "{held}; the engine gave no protocol: over HTTP/1.1 the likely cause is the \
             per-host connection limit (browsers open at most six connections to one \
             host; this request waited for one to free)"
        ),
    })
}
