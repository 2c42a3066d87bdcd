//! Server-side records of simulated and proxied requests, kept by request id and served
//! at `GET /records/{request_id}`.
//!
//! A record says what this server did, on its own clock: milestones in ms since the
//! request arrived, every body chunk it sent (or, for the proxy, received from the
//! upstream), and its wall-clock receive/send times. Its `server` member has the shape of
//! `ttfx_core::timeline::ServerData`, so a client drops it straight into its timeline and
//! the gap and clock-offset metrics find what they need. Records never hold headers or
//! bodies, so no secret can reach them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use serde::Serialize;
use tokio::time::Instant;
use ttfx_core::server_timing::{ServerTiming, TimingSource, Usage};
use ttfx_core::timeline::{ServerData, ServerWallClock};

/// Records kept; the oldest goes first. At ~1 KiB per short record this bounds memory.
pub const MAX_RECORDS: usize = 10_000;
/// Chunks kept per record; later ones are counted, not kept.
pub const MAX_CHUNKS: usize = 20_000;

/// One body chunk: when it was sent (sim) or received from the upstream (proxy).
#[derive(Debug, Clone, Serialize)]
pub struct Chunk {
    pub at_ms: f64,
    pub bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    InProgress,
    Completed,
    /// An HTTP error status or an in-band error event.
    Failed,
    /// The connection was dropped mid-stream (injected, or by the upstream).
    Dropped,
    /// The client went away before the end.
    ClientGone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Sim,
    Proxy,
}

#[derive(Debug, Serialize)]
pub struct Record {
    pub request_id: String,
    pub kind: Kind,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The seed that replays this reply (simulated requests).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "seed_string"
    )]
    pub seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub received_unix_ms: f64,
    /// Milestone name → ms since the request arrived, in the order they happened.
    pub milestones: Vec<(String, f64)>,
    pub chunks: Vec<Chunk>,
    pub chunks_not_kept: u64,
    pub bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Durations that are not milestones (queue, prefill, connect), in ms.
    pub durations: Vec<(String, f64)>,
    #[serde(skip)]
    arrival: Instant,
    #[serde(skip)]
    headers_unix_ms: Option<f64>,
}

/// Seeds go out as strings: JSON numbers lose integers above 2^53 in JavaScript.
fn seed_string<S: serde::Serializer>(seed: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match seed {
        Some(v) => s.serialize_str(&v.to_string()),
        None => s.serialize_none(),
    }
}

pub fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

impl Record {
    pub fn new(request_id: &str, kind: Kind, path: &str, arrival: Instant, unix: f64) -> Self {
        Record {
            request_id: request_id.to_owned(),
            kind,
            path: path.to_owned(),
            profile: None,
            upstream: None,
            seed: None,
            status: None,
            outcome: Outcome::InProgress,
            error: None,
            received_unix_ms: unix,
            milestones: Vec::new(),
            chunks: Vec::new(),
            chunks_not_kept: 0,
            bytes: 0,
            usage: None,
            durations: Vec::new(),
            arrival,
            headers_unix_ms: None,
        }
    }

    pub fn ms(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.arrival).as_secs_f64() * 1000.0
    }

    /// Sets a milestone the first time only.
    pub fn first(&mut self, name: &str, at: Instant) {
        if !self.milestones.iter().any(|(n, _)| n == name) {
            let ms = self.ms(at);
            self.milestones.push((name.to_owned(), ms));
        }
    }

    /// Sets a milestone, replacing an earlier value (`last_token`).
    pub fn latest(&mut self, name: &str, at: Instant) {
        let ms = self.ms(at);
        match self.milestones.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = ms,
            None => self.milestones.push((name.to_owned(), ms)),
        }
    }

    /// The response headers leave now: the `headers` milestone and the wall-clock send
    /// time the clock-offset estimate needs.
    pub fn headers(&mut self, status: u16, at: Instant) {
        self.status = Some(status);
        self.first("headers", at);
        let wall = self.received_unix_ms + self.ms(at);
        self.headers_unix_ms = Some(wall);
    }

    pub fn chunk(&mut self, at: Instant, bytes: usize) {
        self.first("first_byte", at);
        self.bytes += bytes as u64;
        if self.chunks.len() < MAX_CHUNKS {
            let at_ms = self.ms(at);
            self.chunks.push(Chunk { at_ms, bytes });
        } else {
            self.chunks_not_kept += 1;
        }
    }

    pub fn end(&mut self, outcome: Outcome, at: Instant) {
        if self.outcome == Outcome::InProgress {
            self.outcome = outcome;
            self.first("done", at);
        }
    }

    pub fn duration(&mut self, name: &str, ms: f64) {
        self.durations.push((name.to_owned(), ms));
    }

    /// The record as `ServerData`: one timing per milestone and duration, the wall clock.
    pub fn server_data(&self) -> ServerData {
        let (source, description) = match self.kind {
            Kind::Proxy => (TimingSource::VantageProxy, "ttfx vantage proxy"),
            // The simulator is the server itself: what it says about its own stream is
            // in the same class as a server's in-band fields.
            Kind::Sim => (TimingSource::InBand, "ttfx sim record"),
        };
        let timings = self
            .milestones
            .iter()
            .chain(&self.durations)
            .map(|(name, ms)| ServerTiming {
                name: name.clone(),
                duration_ms: Some(*ms),
                description: Some(description.to_owned()),
                source,
            })
            .collect();
        ServerData {
            timings,
            usage: self.usage.clone(),
            wall_clock: self.headers_unix_ms.map(|sent| ServerWallClock {
                received_unix_ms: self.received_unix_ms,
                sent_unix_ms: sent,
                source,
            }),
        }
    }
}

pub type RecordHandle = Arc<Mutex<Record>>;

/// A poisoned lock only means another task panicked mid-update; the record is still
/// the best account there is.
pub fn lock(r: &RecordHandle) -> MutexGuard<'_, Record> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
pub struct Records {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, RecordHandle>,
    order: VecDeque<String>,
}

impl Records {
    /// Stores a record; a reused id replaces the older record.
    pub fn insert(&self, record: Record) -> RecordHandle {
        let id = record.request_id.clone();
        let handle = Arc::new(Mutex::new(record));
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.by_id.insert(id.clone(), handle.clone()).is_none() {
            inner.order.push_back(id);
        }
        while inner.order.len() > MAX_RECORDS {
            if let Some(old) = inner.order.pop_front() {
                inner.by_id.remove(&old);
            }
        }
        handle
    }

    pub fn get(&self, id: &str) -> Option<RecordHandle> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.by_id.get(id).cloned()
    }
}

/// The JSON served for one record.
pub fn to_json(r: &Record) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        let map = |list: &[(String, f64)]| {
            list.iter()
                .map(|(n, ms)| (n.clone(), serde_json::json!(ms)))
                .collect::<serde_json::Map<_, _>>()
        };
        obj.insert("milestones".into(), map(&r.milestones).into());
        obj.insert("durations".into(), map(&r.durations).into());
        obj.insert(
            "server".into(),
            serde_json::to_value(r.server_data()).unwrap_or_default(),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_data_carries_milestones_and_wall_clock() {
        let t0 = Instant::now();
        let mut r = Record::new("req-1", Kind::Proxy, "/proxy/x", t0, 1_000_000.0);
        r.headers(200, t0 + std::time::Duration::from_millis(5));
        r.chunk(t0 + std::time::Duration::from_millis(7), 10);
        r.first("first_token", t0 + std::time::Duration::from_millis(9));
        r.first("first_token", t0 + std::time::Duration::from_millis(50));
        let data = r.server_data();
        let ms = |n: &str| {
            data.timings
                .iter()
                .find(|t| t.name == n)
                .and_then(|t| t.duration_ms)
        };
        assert_eq!(ms("headers"), Some(5.0));
        assert_eq!(ms("first_byte"), Some(7.0));
        assert_eq!(ms("first_token"), Some(9.0), "first value kept");
        assert!(
            data.timings
                .iter()
                .all(|t| t.source == TimingSource::VantageProxy)
        );
        let wall = data.wall_clock.unwrap();
        assert_eq!(
            (wall.received_unix_ms, wall.sent_unix_ms),
            (1_000_000.0, 1_000_005.0)
        );
        let json = to_json(&r);
        assert_eq!(json["milestones"]["first_byte"], 7.0);
        assert_eq!(json["server"]["wall_clock"]["source"], "vantage_proxy");
    }

    #[test]
    fn oldest_records_go_first() {
        let records = Records::default();
        let t0 = Instant::now();
        for i in 0..MAX_RECORDS + 2 {
            records.insert(Record::new(&format!("r{i}"), Kind::Sim, "/", t0, 0.0));
        }
        assert!(records.get("r0").is_none() && records.get("r1").is_none());
        assert!(records.get("r2").is_some());
        assert!(records.get(&format!("r{}", MAX_RECORDS + 1)).is_some());
    }
}
