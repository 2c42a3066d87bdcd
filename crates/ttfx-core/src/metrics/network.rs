//! Network family: `engine_hop`, the engine's own hop from its network stack to the page.

use super::Measured;
use crate::milestone::Milestone;
use crate::timeline::Timeline;

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

/// Why `response_start` is missing from a page's run that got body bytes: the engine
/// gave no Resource Timing entry, or one without `responseStart`. Runs measured outside a
/// page (no analysis site) and WebSocket messages (which have no entry) get no note.
pub fn notes(t: &Timeline) -> Option<String> {
    let in_page = t.environment.analysis.is_some();
    let websocket = t.request.transport.as_deref() == Some("websocket");
    if !in_page || websocket || t.milestones.get(Milestone::FirstByte).is_none() {
        return None;
    }
    match &t.resource_timing {
        None => Some(
            "no Resource Timing entry for the request: response_start and engine_hop_ms \
             are missing (the engine kept none, or the page's resource timing buffer was \
             cleared or full)"
                .into(),
        ),
        Some(entry) if entry.response_start_ms.is_none() => Some(
            "the request's Resource Timing entry has no responseStart (a cross-origin \
             response without Timing-Allow-Origin): response_start and engine_hop_ms are \
             missing"
                .into(),
        ),
        Some(_) => None,
    }
}
