//! A server's own record of one request, as `ttfx serve` keeps it for the simulator and
//! the vantage proxy and serves it at `GET /records/{request_id}`.
//!
//! The server writes it; the lab page, `ttfx run` and any other client read the same
//! type and join it to their run with [`Run::with_server`](crate::report::Run::with_server).

use serde::{Deserialize, Serialize};

use crate::timeline::ServerData;

/// How the request ended, as the server saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordOutcome {
    /// Still streaming: the record is not final yet.
    InProgress,
    Completed,
    /// An HTTP error status or an in-band error event.
    Failed,
    /// The connection was dropped mid-stream (injected, or by the upstream).
    Dropped,
    /// The client went away before the end.
    ClientGone,
    /// No connection, no response headers, or no body bytes for longer than the server
    /// allows (the proxy's configured timeouts).
    Timeout,
}

/// The part of a `/records/{id}` entry a client joins to its run. Other members of the
/// entry (chunks, durations, milestones by name) are for people reading it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    pub request_id: String,
    pub outcome: RecordOutcome,
    /// The record in the shape of the timeline's server data: one timing per server
    /// milestone and duration, and the server's wall clock.
    pub server: ServerData,
}

impl ServerRecord {
    /// Reads a `/records/{id}` entry; the error names what is wrong with it.
    pub fn from_json(text: &str) -> Result<ServerRecord, String> {
        serde_json::from_str(text).map_err(|e| format!("not a ttfx server record: {e}"))
    }

    /// Whether the server has finished the request (the record will not change).
    pub fn is_final(&self) -> bool {
        self.outcome != RecordOutcome::InProgress
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::milestone::Milestone;
    use crate::report::Run;
    use crate::server_timing::{ServerTiming, TimingSource};
    use crate::timeline::{ServerWallClock, Timeline};

    fn client_run() -> Run {
        let mut t = Timeline::default();
        for (m, at) in [
            (Milestone::RequestStart, 0.0),
            (Milestone::Headers, 30.0),
            (Milestone::FirstByte, 35.0),
            (Milestone::FirstToken, 412.0),
            (Milestone::FirstVisibleToken, 412.0),
            (Milestone::LastToken, 900.0),
            (Milestone::Done, 905.0),
        ] {
            t.milestones.set(m, at);
        }
        // What the client read from the Server-Timing header itself.
        t.server.timings.push(ServerTiming {
            name: "queue".into(),
            duration_ms: Some(2.0),
            description: None,
            source: TimingSource::ServerTimingHeader,
        });
        Run::new(Some("r1".into()), Some("sim/default".into()), t).unwrap()
    }

    fn record() -> ServerRecord {
        let text = r#"{
            "request_id": "r1", "kind": "sim", "outcome": "completed",
            "milestones": {"first_visible_token": 400.0},
            "server": {
                "timings": [
                    {"name": "first_visible_token", "duration_ms": 400.0,
                     "description": "ttfx sim record", "source": "in_band"},
                    {"name": "queue", "duration_ms": 2.0,
                     "description": "ttfx sim record", "source": "in_band"}
                ],
                "usage": {"completion_tokens": 60},
                "wall_clock": {"received_unix_ms": 1000.0, "sent_unix_ms": 1030.0,
                               "source": "in_band"}
            }
        }"#;
        ServerRecord::from_json(text).unwrap()
    }

    #[test]
    fn a_joined_record_pairs_with_the_client_milestones() {
        let record = record();
        assert!(record.is_final());
        let joined = client_run().with_server(&record.server).unwrap();
        let gap = joined
            .metrics
            .gaps
            .iter()
            .find(|g| g.milestone == Milestone::FirstVisibleToken)
            .unwrap();
        assert_eq!(
            (gap.client_ms, gap.server_ms, gap.gap_ms),
            (412.0, 400.0, 12.0)
        );
        let server = &joined.timeline.server;
        // The client's own header timing stays, the record's three join it.
        assert_eq!(server.timings.len(), 3);
        assert_eq!(server.usage.as_ref().unwrap().completion_tokens, Some(60));
        assert_eq!(
            server.wall_clock,
            Some(ServerWallClock {
                received_unix_ms: 1000.0,
                sent_unix_ms: 1030.0,
                source: TimingSource::InBand
            })
        );
    }

    #[test]
    fn merging_the_same_record_twice_changes_nothing() {
        let record = record();
        let once = client_run().with_server(&record.server).unwrap();
        let twice = once.clone().with_server(&record.server).unwrap();
        assert_eq!(once, twice);
    }

    #[test]
    fn what_the_client_read_itself_is_kept() {
        let mut run = client_run();
        let own = ServerWallClock {
            received_unix_ms: 5.0,
            sent_unix_ms: 6.0,
            source: TimingSource::ServerTimingHeader,
        };
        run.timeline.server.wall_clock = Some(own);
        let joined = run.with_server(&record().server).unwrap();
        assert_eq!(joined.timeline.server.wall_clock, Some(own));
    }

    #[test]
    fn a_record_in_progress_is_not_final_and_junk_is_named() {
        let text = r#"{"request_id":"x","outcome":"in_progress","server":{}}"#;
        assert!(!ServerRecord::from_json(text).unwrap().is_final());
        let err = ServerRecord::from_json(r#"{"request_id":"x"}"#).unwrap_err();
        assert!(err.starts_with("not a ttfx server record"), "{err}");
    }
}
