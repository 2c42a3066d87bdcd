//! The gap between the user's clock and the server's: per milestone, the client's time
//! minus the server's own figure for the same moment, and an estimate of how far the two
//! wall clocks are apart.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::decode::decimal::Decimal;
use crate::milestone::Milestone;
use crate::server_timing::{ServerTiming, TimingSource};
use crate::timeline::{Timeline, milestone_name};

/// Client milestone minus its server-reported counterpart. Both are durations from each
/// side's own start (the client's `request_start`, the server's receipt of the request),
/// so no clock offset enters: the gap is network, proxies and client work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    #[serde(with = "milestone_name")]
    pub milestone: Milestone,
    pub client_ms: f64,
    pub server_ms: f64,
    /// client_ms − server_ms.
    pub gap_ms: f64,
    /// The server entry compared against, as the server spelled it.
    pub server_name: String,
    pub source: TimingSource,
}

/// Which milestone a server entry measures, and whether its name says so exactly.
///
/// Entries named after a milestone (the vantage proxy's, or any ttfx-aware server's) are
/// exact. The aliases are the few single fields other servers report for the same moment;
/// llama.cpp's `prompt_ms` leaves out queueing, so its gap includes the queue.
fn counterpart(name: &str) -> Option<(Milestone, bool)> {
    if let Ok(m) = name.parse::<Milestone>() {
        return Some((m, true));
    }
    let m = match name {
        "ttft" | "time_to_first_token" | "prompt_ms" => Milestone::FirstToken,
        "ttfo" | "time_to_first_output_token" => Milestone::FirstVisibleToken,
        "e2e" | "total_duration" => Milestone::LastToken,
        _ => return None,
    };
    Some((m, false))
}

/// A record of what happened next to the endpoint beats what the server says in-band,
/// which beats what the headers could know before the body existed.
fn source_rank(source: TimingSource) -> u8 {
    match source {
        TimingSource::VantageProxy => 0,
        TimingSource::LlamaCppTimings | TimingSource::OllamaDurations | TimingSource::InBand => 1,
        TimingSource::ResourceTiming => 2,
        TimingSource::ServerTimingHeader | TimingSource::ResponseHeader => 3,
    }
}

/// The server's figure for `m`. Server entries arrive in any order (headers, in-band,
/// the proxy's record fetched later), so the choice depends only on the entries: best
/// source, then exact name over alias, then — for a duplicate — the smaller value.
fn server_value(timings: &[ServerTiming], m: Milestone) -> Option<&ServerTiming> {
    timings
        .iter()
        .filter(|t| t.duration_ms.is_some_and(f64::is_finite))
        .filter_map(|t| {
            counterpart(&t.name)
                .filter(|(cm, _)| *cm == m)
                .map(|(_, exact)| (t, exact))
        })
        .min_by(|(a, a_exact), (b, b_exact)| {
            source_rank(a.source)
                .cmp(&source_rank(b.source))
                .then(b_exact.cmp(a_exact))
                .then(
                    a.duration_ms
                        .unwrap_or(0.0)
                        .total_cmp(&b.duration_ms.unwrap_or(0.0)),
                )
        })
        .map(|(t, _)| t)
}

/// Every milestone the client observed and the server also reported.
pub fn gaps(t: &Timeline) -> Vec<Gap> {
    t.milestones
        .iter()
        .filter_map(|(m, client_ms)| {
            let server = server_value(&t.server.timings, m)?;
            let server_ms = server.duration_ms?;
            Some(Gap {
                milestone: m,
                client_ms,
                server_ms,
                gap_ms: client_ms - server_ms,
                server_name: server.name.clone(),
                source: server.source,
            })
        })
        .collect()
}

/// Server wall clock minus client wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// Add to a client wall time to get the server's reading of the same moment.
    pub offset_ms: f64,
    /// The true offset lies within ± this of `offset_ms`: half the round trip, plus one
    /// step of the client's clock (`timer_resolution_ms`), plus, for a browser page, the
    /// error of its wall-clock anchor `performance.timeOrigin` ([`PAGE_ANCHOR_MS`]).
    pub error_bound_ms: f64,
    /// Client wait minus server hold time.
    pub round_trip_ms: f64,
    pub method: ClockOffsetMethod,
    /// Where the server's wall times came from.
    pub source: TimingSource,
}

/// How the offset was estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockOffsetMethod {
    /// NTP's four timestamps: client send t0 (`request_start`), server receive t1, server
    /// send t2, client receive t3 (`headers`, else `first_byte`).
    /// offset = ((t1 − t0) + (t2 − t3)) / 2, round trip δ = (t3 − t0) − (t2 − t1),
    /// error bound δ / 2 + r + a (whatever the asymmetry of the two paths), where r is
    /// the client clock's step (t0 and t3 are read up to one step early each, which
    /// moves the estimate by up to r and shrinks δ by up to r) and a the error of the
    /// page clock's anchor on the system clock.
    NtpFourTimestamp,
}

/// The server's wall times contradict the client's.
#[derive(Debug, Clone, PartialEq)]
pub enum ClockOffsetError {
    SentBeforeReceived {
        received_unix_ms: f64,
        sent_unix_ms: f64,
    },
    NegativeRoundTrip {
        round_trip_ms: f64,
    },
}

impl fmt::Display for ClockOffsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockOffsetError::SentBeforeReceived {
                received_unix_ms,
                sent_unix_ms,
            } => write!(
                f,
                "the server reports sending ({}) before receiving ({})",
                Decimal(*sent_unix_ms),
                Decimal(*received_unix_ms)
            ),
            ClockOffsetError::NegativeRoundTrip { round_trip_ms } => write!(
                f,
                "the server held the request longer than the client waited \
                 (round trip {} ms)",
                Decimal(*round_trip_ms)
            ),
        }
    }
}

impl std::error::Error for ClockOffsetError {}

/// How far a browser page's wall-clock anchor, `performance.timeOrigin + now()`, may sit
/// from the system clock beyond its clock step: Firefox's was 0.26–0.84 ms behind on
/// cross-origin-isolated pages, per page load; Chromium's and WebKit's within one step
/// (docs/fidelity.md). The page cannot measure it finer than `Date.now()`'s 1 ms.
pub const PAGE_ANCHOR_MS: f64 = 1.0;

/// Estimates the clock offset; `Ok(None)` when the server reported no wall times or the
/// client has no wall-clock anchor or response time.
pub fn clock_offset(t: &Timeline) -> Result<Option<ClockOffset>, ClockOffsetError> {
    let (Some(server), Some(t0)) = (t.server.wall_clock, t.request_start_unix_ms) else {
        return Ok(None);
    };
    let Some(response_ms) = t
        .milestones
        .get(Milestone::Headers)
        .or_else(|| t.milestones.get(Milestone::FirstByte))
    else {
        return Ok(None);
    };
    let (t1, t2) = (server.received_unix_ms, server.sent_unix_ms);
    if t2 < t1 {
        return Err(ClockOffsetError::SentBeforeReceived {
            received_unix_ms: t1,
            sent_unix_ms: t2,
        });
    }
    // Epoch milliseconds (~1.7e12) keep only ~0.0002 ms of fraction, so the big numbers
    // are subtracted from each other first (exact for nearby values) and the client's
    // small `response_ms` (= t3 − t0) enters afterwards.
    let (t1_t0, t2_t0) = (t1 - t0, t2 - t0);
    let round_trip_ms = response_ms - (t2 - t1);
    if round_trip_ms < 0.0 {
        return Err(ClockOffsetError::NegativeRoundTrip { round_trip_ms });
    }
    // With the true offset θ, one-way delays d1, d2 ≥ 0, client readings floored by
    // e0, e3 ∈ [0, r) and the page clock off the system clock by o:
    // estimate − θ = (d1 − d2) / 2 + (e0 + e3) / 2 + o and δ = d1 + d2 + e0 − e3, so
    // −δ/2 − |o| ≤ estimate − θ < δ/2 + r + |o|. WebKit (r = 1 ms) fell outside δ/2
    // alone about one run in four.
    let page = t.environment.engine.is_some();
    let step = match t.environment.timer_resolution_ms {
        Some(r) if r.is_finite() && r >= 0.0 => r,
        // A page whose step was not measured: the coarsest step of the engines.
        _ if page => PAGE_ANCHOR_MS,
        _ => 0.0,
    };
    let anchor = if page { PAGE_ANCHOR_MS } else { 0.0 };
    Ok(Some(ClockOffset {
        offset_ms: (t1_t0 + (t2_t0 - response_ms)) / 2.0,
        error_bound_ms: round_trip_ms / 2.0 + step + anchor,
        round_trip_ms,
        method: ClockOffsetMethod::NtpFourTimestamp,
        source: server.source,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, ms: Option<f64>, source: TimingSource) -> ServerTiming {
        ServerTiming {
            name: name.into(),
            duration_ms: ms,
            description: None,
            source,
        }
    }

    #[test]
    fn counterpart_choice_ignores_arrival_order() {
        let mut entries = vec![
            entry("ttft", Some(90.0), TimingSource::InBand),
            entry("first_token", Some(120.0), TimingSource::InBand),
            entry("first_token", Some(110.0), TimingSource::InBand),
            entry("first_token", None, TimingSource::VantageProxy),
            entry("queue", Some(5.0), TimingSource::ServerTimingHeader),
        ];
        for _ in 0..entries.len() {
            entries.rotate_left(1);
            // The proxy entry has no value; among in-band ones the exact name beats the
            // alias, and the duplicate resolves to the smaller value.
            let chosen = server_value(&entries, Milestone::FirstToken).unwrap();
            assert_eq!(
                (chosen.name.as_str(), chosen.duration_ms),
                ("first_token", Some(110.0))
            );
        }
        assert!(server_value(&entries, Milestone::FirstByte).is_none());
    }

    #[test]
    fn aliases_map_to_their_milestones() {
        assert_eq!(
            counterpart("total_duration"),
            Some((Milestone::LastToken, false))
        );
        assert_eq!(
            counterpart("ttfo"),
            Some((Milestone::FirstVisibleToken, false))
        );
        assert_eq!(counterpart("headers"), Some((Milestone::Headers, true)));
        assert_eq!(counterpart("queue"), None);
    }
}
