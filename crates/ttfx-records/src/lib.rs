//! Server-side records of simulated and proxied requests, kept by request id and served
//! at `GET /records/{request_id}`: the server's own clock, which the simulator and the
//! vantage proxy write and `ttfx serve` serves.
//!
//! It depends on ttfx-core only (the record's shape is its `ServerData`); it must not
//! depend on the simulator, the proxy or the server that use it.
//!
//! A record says what this server did, on its own clock: milestones in ms since the
//! request arrived, every body chunk it sent (or, for the proxy, received from the
//! upstream), and its wall-clock receive/send times. Its `server` member has the shape of
//! `ttfx_core::timeline::ServerData`, so a client drops it straight into its timeline and
//! the gap and clock-offset metrics find what they need. Records never hold headers or
//! bodies, so no secret can reach them.

use std::collections::{HashMap, VecDeque};
use std::mem::size_of;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value, json};
use tokio::time::Instant;
use ttfx_core::decode::{DialectKind, Limits};
use ttfx_core::series::{BURST_TIMES_MAX, ChunkBin};
pub use ttfx_core::server_record::RecordOutcome;
use ttfx_core::server_timing::{ServerTiming, TimingSource, Usage};
use ttfx_core::timeline::{Chunk, FailureClass, ServerData, ServerWallClock};
use ttfx_core::{Milestone, Recorder};

/// Records kept; the oldest goes first. A short record holds about 5 KiB (1.8 KiB of
/// itself, 2 KiB of chunks).
pub const MAX_RECORDS: usize = 10_000;
/// Bytes of records kept, by [`Record::held_bytes`]'s estimate; past it the oldest go
/// first, as past [`MAX_RECORDS`]. Count alone does not bound memory: a record of a long
/// stream holds 40–170 KiB (below), so 10,000 of them would be up to 1.7 GB. 64 MiB keeps
/// the 10,000 short records of the count cap (about 50 MB) or several hundred long
/// ones, enough for any page or benchmark to read its records back after a run, and is
/// small beside the memory of a machine that serves a thousand streams. A record keeps
/// growing while its request streams: the growth is counted as it happens and evicts at
/// the next insert, so the store passes the budget by at most what the requests in flight
/// add.
pub const MAX_RECORD_BYTES: usize = 64 << 20;
/// What a recorder keeps privately on the heap, beside what [`Record::held_bytes`] can
/// see: a few small strings, and while the stream is open the decoder's line and event
/// buffers (a few hundred bytes for a simulated or typical upstream stream).
const RECORDER_PRIVATE: usize = 1 << 10;
/// Chunks kept one by one per record (a simulated reply has a few hundred); later ones
/// are summarized by the probe's own rule (`ttfx_core::series`): a record of a long
/// stream holds about 40 KiB (32 KiB of chunks, 128 bins, a gap digest of a few KiB;
/// ~170 KiB at worst) however long the stream, where 20,000 kept chunks were 640 KiB.
pub const MAX_CHUNKS: usize = 1_024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sim,
    Proxy,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Sim => "sim",
            Kind::Proxy => "proxy",
        }
    }
}

pub struct Record {
    pub request_id: String,
    pub kind: Kind,
    pub path: String,
    pub profile: Option<String>,
    pub upstream: Option<String>,
    /// The seed that replays this reply (simulated requests).
    pub seed: Option<u64>,
    pub status: Option<u16>,
    pub outcome: RecordOutcome,
    pub error: Option<String>,
    pub received_unix_ms: f64,
    pub bytes: u64,
    /// Token counts the server knows itself (the simulator); otherwise those the stream
    /// reported.
    pub usage: Option<Usage>,
    /// Durations that are not milestones (queue, prefill; the proxy's tcp_connect,
    /// tls_handshake and connect, their sum), in ms.
    pub durations: Vec<(String, f64)>,
    /// Moments the server knows that the stream's bytes do not show (the simulated
    /// transcription's `upload_complete`, `stt_first_partial`, `stt_final`), in ms since
    /// the request arrived, like the milestones; named as the client's milestones for the
    /// same moments will be, so a gap pairs them by name.
    pub moments: Vec<(String, f64)>,
    /// What the upstream's response headers said about its own time (proxy records;
    /// `provider_timing.rs`), each with its source.
    pub header_timings: Vec<ServerTiming>,
    /// Timing headers that were present but could not be read.
    pub header_problems: Vec<String>,
    /// The HTTP version the proxy spoke to the upstream, as ALPN names it (`h2`,
    /// `http/1.1`).
    pub protocol: Option<&'static str>,
    /// The stream's milestones and chunk series, derived by the probe's own rules from
    /// the bytes as they left (sim) or arrived from the upstream (proxy).
    recorder: Recorder,
    arrival: Instant,
    headers_unix_ms: Option<f64>,
    /// The store's byte count while the store keeps this record (see [`Records`]).
    ledger: Option<Arc<AtomicUsize>>,
    /// What this record last added to the ledger.
    accounted: usize,
}

impl Record {
    /// A record of a request that arrived at `arrival`; its body decodes as `dialect`,
    /// or (`None`) as the content type and first frames say.
    pub fn new(
        request_id: &str,
        kind: Kind,
        path: &str,
        dialect: Option<DialectKind>,
        arrival: Instant,
        unix: f64,
    ) -> Self {
        Record {
            request_id: request_id.to_owned(),
            kind,
            path: path.to_owned(),
            profile: None,
            upstream: None,
            seed: None,
            status: None,
            outcome: RecordOutcome::InProgress,
            error: None,
            received_unix_ms: unix,
            bytes: 0,
            usage: None,
            durations: Vec::new(),
            moments: Vec::new(),
            header_timings: Vec::new(),
            header_problems: Vec::new(),
            protocol: None,
            recorder: Recorder::new(dialect, Limits::DEFAULT).with_chunk_limit(MAX_CHUNKS),
            arrival,
            headers_unix_ms: None,
            ledger: None,
            accounted: 0,
        }
    }

    /// An estimate of the bytes this record holds: itself, its strings, its kept chunks,
    /// the summary of the rest (its bins and gap buckets, and the burst window behind it
    /// at its largest), and [`RECORDER_PRIVATE`]. O(1): it is updated with every chunk.
    pub fn held_bytes(&self) -> usize {
        let timeline = self.recorder.timeline();
        let strings = self.request_id.capacity()
            + self.path.capacity()
            + self.profile.as_ref().map_or(0, String::capacity)
            + self.upstream.as_ref().map_or(0, String::capacity)
            + self.error.as_ref().map_or(0, String::capacity);
        let named = |list: &Vec<(String, f64)>| {
            list.capacity() * size_of::<(String, f64)>()
                + list.iter().map(|(n, _)| n.capacity()).sum::<usize>()
        };
        let durations = named(&self.durations) + named(&self.moments);
        let summary = timeline.chunk_summary.as_ref().map_or(0, |s| {
            s.bins.capacity() * size_of::<ChunkBin>()
                + s.gaps.buckets.capacity() * size_of::<(f64, u64)>()
                + BURST_TIMES_MAX * size_of::<(f64, u64)>()
        });
        size_of::<Record>()
            + strings
            + durations
            + timeline.chunks.capacity() * size_of::<Chunk>()
            + summary
            + RECORDER_PRIVATE
    }

    /// Brings the store's byte count up to date with this record's size.
    fn account(&mut self) {
        let now = self.held_bytes();
        if let Some(ledger) = &self.ledger {
            if now >= self.accounted {
                ledger.fetch_add(now - self.accounted, Ordering::Relaxed);
            } else {
                ledger.fetch_sub(self.accounted - now, Ordering::Relaxed);
            }
        }
        self.accounted = now;
    }

    pub fn ms(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.arrival).as_secs_f64() * 1000.0
    }

    /// The response headers leave (sim) or arrive (proxy) now: the `headers` milestone,
    /// and the wall-clock send time the clock-offset estimate needs.
    pub fn headers(&mut self, status: u16, content_type: Option<&str>, at: Instant) {
        self.status = Some(status);
        let ms = self.ms(at);
        self.recorder.headers(ms, status, content_type, &[]);
        self.headers_unix_ms = Some(self.received_unix_ms + ms);
        self.account();
    }

    /// A body chunk left (sim) or arrived (proxy) now.
    pub fn chunk(&mut self, at: Instant, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        let ms = self.ms(at);
        self.recorder.chunk(ms, bytes);
        self.account();
    }

    /// The request is over. An error the stream itself reported becomes the record's
    /// error when none was set, and a server-reported failure fails a completed stream.
    pub fn end(&mut self, outcome: RecordOutcome, at: Instant) {
        if self.outcome != RecordOutcome::InProgress {
            return;
        }
        let ms = self.ms(at);
        self.recorder.end(ms);
        let failure = self.recorder.timeline().failure.as_ref();
        let in_band =
            failure.filter(|f| matches!(f.class, FailureClass::InBand | FailureClass::Decode));
        if let Some(detail) = in_band.and_then(|f| f.detail.as_ref()) {
            self.error.get_or_insert_with(|| detail.clone());
        }
        let server_failed = failure.is_some_and(|f| f.class == FailureClass::InBand);
        self.outcome = if outcome == RecordOutcome::Completed && server_failed {
            RecordOutcome::Failed
        } else {
            outcome
        };
        self.account();
    }

    pub fn duration(&mut self, name: &str, ms: f64) {
        self.durations.push((name.to_owned(), ms));
        self.account();
    }

    /// A moment the bytes do not show happened at `at` (see [`Record::moments`]).
    pub fn moment(&mut self, name: &str, at: Instant) {
        let ms = self.ms(at);
        self.moments.push((name.to_owned(), ms));
        self.account();
    }

    /// The milestones this server observed, in ms since the request arrived.
    /// `request_start` (the arrival itself, 0) is left out: it has no counterpart gap.
    pub fn milestones(&self) -> impl Iterator<Item = (Milestone, f64)> + '_ {
        self.recorder
            .timeline()
            .milestones
            .iter()
            .filter(|(m, _)| *m != Milestone::RequestStart)
    }

    fn usage(&self) -> Option<&Usage> {
        self.usage
            .as_ref()
            .or(self.recorder.timeline().server.usage.as_ref())
    }

    /// The record as `ServerData`: one timing per milestone and duration, the wall clock.
    pub fn server_data(&self) -> ServerData {
        let (source, description) = match self.kind {
            Kind::Proxy => (TimingSource::VantageProxy, "ttfx vantage proxy"),
            // The simulator is the server itself: what it says about its own stream is
            // in the same class as a server's in-band fields.
            Kind::Sim => (TimingSource::InBand, "ttfx sim record"),
        };
        let milestones = self.milestones().map(|(m, ms)| (m.as_str().to_owned(), ms));
        let timings = milestones
            .chain(self.moments.iter().cloned())
            .chain(self.durations.iter().cloned())
            .map(|(name, ms)| ServerTiming {
                name,
                duration_ms: Some(ms),
                description: Some(description.to_owned()),
                source,
            })
            .chain(self.header_timings.iter().cloned())
            .collect();
        ServerData {
            timings,
            usage: self.usage().cloned(),
            wall_clock: self.headers_unix_ms.map(|sent| ServerWallClock {
                received_unix_ms: self.received_unix_ms,
                sent_unix_ms: sent,
                source,
            }),
            record_id: None,
        }
    }
}

pub type RecordHandle = Arc<Mutex<Record>>;

/// A poisoned lock only means another task panicked mid-update; the record is still
/// the best account there is.
pub fn lock(r: &RecordHandle) -> MutexGuard<'_, Record> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// The records by id, the oldest evicted first past [`MAX_RECORDS`] records or
/// [`MAX_RECORD_BYTES`] bytes. Each kept record adds its size to `bytes` as it grows,
/// and takes it back when it is evicted (it may live on, unaccounted, with its request).
#[derive(Default)]
pub struct Records {
    inner: Mutex<Inner>,
    bytes: Arc<AtomicUsize>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, RecordHandle>,
    order: VecDeque<String>,
}

impl Records {
    /// Stores a record under its id, unless a kept record holds that id: records are
    /// write-once, so a request that names another's id (a client chooses its own with
    /// `x-request-id`) cannot replace, and so falsify, the record that request made. An
    /// evicted record's id is free again. The oldest records go while there are more
    /// than [`MAX_RECORDS`] or they hold more than [`MAX_RECORD_BYTES`]; the new one
    /// always stays.
    pub fn insert(&self, mut record: Record) -> Result<RecordHandle, IdInUse> {
        let id = record.request_id.clone();
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.by_id.contains_key(&id) {
            return Err(IdInUse { id });
        }
        record.ledger = Some(self.bytes.clone());
        record.accounted = 0;
        record.account();
        let handle = Arc::new(Mutex::new(record));
        inner.by_id.insert(id.clone(), handle.clone());
        inner.order.push_back(id);
        while inner.order.len() > MAX_RECORDS
            || (inner.order.len() > 1 && self.bytes() > MAX_RECORD_BYTES)
        {
            let Some(old) = inner.order.pop_front() else {
                break;
            };
            if let Some(evicted) = inner.by_id.remove(&old) {
                release(&evicted);
            }
        }
        Ok(handle)
    }

    /// Bytes the kept records hold, by [`Record::held_bytes`]'s estimate.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Records kept.
    #[cfg(test)]
    pub fn kept(&self) -> usize {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.order.len()
    }

    pub fn get(&self, id: &str) -> Option<RecordHandle> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.by_id.get(id).cloned()
    }
}

/// A request named the id of a record still kept ([`Records::insert`]); its text is
/// the 409's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "request id `{id}` belongs to an earlier request's record, and records are write-once: \
     send a fresh x-request-id (or none, and the server makes one)"
)]
pub struct IdInUse {
    pub id: String,
}

/// A record leaves the store: its size leaves the store's count.
fn release(handle: &RecordHandle) {
    let mut r = lock(handle);
    if let Some(ledger) = r.ledger.take() {
        ledger.fetch_sub(r.accounted, Ordering::Relaxed);
    }
}

/// The JSON served for one record (its `server` member is what clients join; the rest
/// is for people reading it).
pub fn to_json(r: &Record) -> Value {
    let mut v = Map::new();
    v.insert("request_id".into(), json!(r.request_id));
    v.insert("kind".into(), json!(r.kind.as_str()));
    v.insert("path".into(), json!(r.path));
    if let Some(p) = &r.profile {
        v.insert("profile".into(), json!(p));
    }
    if let Some(u) = &r.upstream {
        v.insert("upstream".into(), json!(u));
    }
    if let Some(p) = r.protocol {
        v.insert("protocol".into(), json!(p));
    }
    // Seeds go out as strings: JSON numbers lose integers above 2^53 in JavaScript.
    if let Some(seed) = r.seed {
        v.insert("seed".into(), json!(seed.to_string()));
    }
    if let Some(s) = r.status {
        v.insert("status".into(), json!(s));
    }
    v.insert("outcome".into(), json!(r.outcome));
    if let Some(e) = &r.error {
        v.insert("error".into(), json!(e));
    }
    v.insert("received_unix_ms".into(), json!(r.received_unix_ms));
    let milestones: Map<String, Value> = r
        .milestones()
        .map(|(m, ms)| (m.as_str().to_owned(), json!(ms)))
        .collect();
    v.insert("milestones".into(), milestones.into());
    let chunks: Vec<Value> = r
        .recorder
        .timeline()
        .chunks
        .iter()
        .map(|c| json!({ "at_ms": c.at_ms, "bytes": c.bytes }))
        .collect();
    v.insert("chunks".into(), chunks.into());
    v.insert(
        "chunks_not_kept".into(),
        json!(r.recorder.chunks_not_kept()),
    );
    v.insert("bytes".into(), json!(r.bytes));
    if let Some(u) = r.usage() {
        v.insert("usage".into(), json!(u));
    }
    let durations: Map<String, Value> = r
        .durations
        .iter()
        .map(|(n, ms)| (n.clone(), json!(ms)))
        .collect();
    v.insert("durations".into(), durations.into());
    if !r.moments.is_empty() {
        let moments: Map<String, Value> = r
            .moments
            .iter()
            .map(|(n, ms)| (n.clone(), json!(ms)))
            .collect();
        v.insert("moments".into(), moments.into());
    }
    if !r.header_problems.is_empty() {
        v.insert("header_problems".into(), json!(r.header_problems));
    }
    v.insert("server".into(), json!(r.server_data()));
    v.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(content: &str) -> String {
        format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{content:?}}}}}]}}\n\n")
    }

    #[test]
    fn server_data_carries_milestones_and_wall_clock() {
        let t0 = Instant::now();
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        let mut r = Record::new("req-1", Kind::Proxy, "/proxy/x", None, t0, 1_000_000.0);
        r.headers(200, Some("text/event-stream"), at(5));
        r.chunk(at(7), b": keep-alive\n\n");
        r.chunk(at(9), sse("Hi").as_bytes());
        r.chunk(at(50), sse(" there").as_bytes());
        r.end(RecordOutcome::Completed, at(60));
        let data = r.server_data();
        let ms = |n: &str| {
            data.timings
                .iter()
                .find(|t| t.name == n)
                .and_then(|t| t.duration_ms)
        };
        assert_eq!(ms("headers"), Some(5.0));
        assert_eq!(ms("first_byte"), Some(7.0));
        assert_eq!(ms("first_event"), Some(9.0));
        assert_eq!(ms("first_token"), Some(9.0), "first value kept");
        assert_eq!(ms("last_token"), Some(50.0));
        assert_eq!(ms("done"), Some(60.0));
        assert_eq!(ms("request_start"), None, "the arrival itself is no gap");
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
        assert_eq!(json["chunks"].as_array().unwrap().len(), 3);
        assert_eq!(json["bytes"], r.bytes);
        assert_eq!(json["outcome"], "completed");
        assert_eq!(json["server"]["wall_clock"]["source"], "vantage_proxy");
        // What clients read back is the same record.
        let read = ttfx_core::ServerRecord::from_json(&json.to_string()).unwrap();
        assert_eq!(read.server, data);
    }

    #[test]
    fn moments_are_ms_since_arrival_in_the_json_and_among_the_server_timings() {
        let t0 = Instant::now();
        let at = |ms| t0 + std::time::Duration::from_millis(ms);
        let mut r = Record::new("m", Kind::Sim, "/sim/x", None, t0, 1_000.0);
        r.moment("upload_complete", at(40));
        r.headers(200, Some("text/event-stream"), at(41));
        r.moment("stt_first_partial", at(300));
        r.end(RecordOutcome::Completed, at(700));
        let json = to_json(&r);
        assert_eq!(json["moments"]["upload_complete"], 40.0);
        assert_eq!(json["moments"]["stt_first_partial"], 300.0);
        let read = ttfx_core::ServerRecord::from_json(&json.to_string()).unwrap();
        let timing = |n: &str| {
            read.server
                .timings
                .iter()
                .find(|t| t.name == n)
                .and_then(|t| t.duration_ms)
        };
        assert_eq!(timing("stt_first_partial"), Some(300.0));
        assert_eq!(timing("upload_complete"), Some(40.0));
        // A record without moments has no member for them.
        let plain = Record::new("p", Kind::Sim, "/sim/x", None, t0, 0.0);
        assert!(to_json(&plain).get("moments").is_none());
    }

    #[test]
    fn a_long_stream_keeps_its_first_chunks_and_counts_the_rest() {
        let t0 = Instant::now();
        let at = |ms: usize| t0 + std::time::Duration::from_millis(ms as u64);
        let mut r = Record::new("long", Kind::Sim, "/sim/x", None, t0, 0.0);
        r.headers(200, Some("text/event-stream"), t0);
        let n = MAX_CHUNKS + 500;
        for i in 1..=n {
            r.chunk(at(i), sse("w").as_bytes());
        }
        r.end(RecordOutcome::Completed, at(n + 1));
        let json = to_json(&r);
        assert_eq!(json["chunks"].as_array().unwrap().len(), MAX_CHUNKS);
        assert_eq!(json["chunks_not_kept"], 500);
        assert_eq!(json["bytes"], (n * sse("w").len()) as u64);
        // Milestones still follow every chunk, kept or not.
        assert_eq!(json["milestones"]["last_token"], n as f64);
    }

    #[test]
    fn an_error_in_the_stream_fails_the_record_and_names_itself() {
        let t0 = Instant::now();
        let mut r = Record::new("e", Kind::Proxy, "/proxy/x", None, t0, 0.0);
        r.headers(200, Some("text/event-stream"), t0);
        r.chunk(t0, sse("a").as_bytes());
        r.chunk(t0, b"data: {\"error\":{\"message\":\"overloaded\"}}\n\n");
        r.end(RecordOutcome::Completed, t0);
        assert_eq!(r.outcome, RecordOutcome::Failed);
        assert!(
            r.error.as_deref().unwrap().contains("overloaded"),
            "{:?}",
            r.error
        );
        assert!(r.milestones().any(|(m, _)| m == Milestone::Error));
    }

    #[test]
    fn oldest_records_go_first() {
        let records = Records::default();
        let t0 = Instant::now();
        for i in 0..MAX_RECORDS + 2 {
            records
                .insert(Record::new(&format!("r{i}"), Kind::Sim, "/", None, t0, 0.0))
                .unwrap();
        }
        assert!(records.get("r0").is_none() && records.get("r1").is_none());
        assert!(records.get("r2").is_some());
        assert!(records.get(&format!("r{}", MAX_RECORDS + 1)).is_some());
    }

    #[test]
    fn records_are_evicted_by_bytes_as_well_as_count() {
        let records = Records::default();
        let t0 = Instant::now();
        // A 1 MiB path makes a record of about 1 MiB without streaming anything.
        let big = |i: usize| {
            Record::new(
                &format!("big{i}"),
                Kind::Sim,
                &"p".repeat(1 << 20),
                None,
                t0,
                0.0,
            )
        };
        let one = big(0).held_bytes();
        assert!(one > 1 << 20 && one < (1 << 20) + (16 << 10), "{one}");
        let fit = MAX_RECORD_BYTES / one;
        let first = records.insert(big(0)).unwrap();
        for i in 1..fit + 5 {
            records.insert(big(i)).unwrap();
            assert!(records.bytes() <= MAX_RECORD_BYTES, "{}", records.bytes());
        }
        assert_eq!(
            records.kept(),
            fit,
            "far below the count cap, evicted by bytes"
        );
        assert!(records.get("big4").is_none(), "the oldest went first");
        assert!(records.get("big5").is_some());
        let kept_sum = |records: &Records| -> usize {
            (0..fit + 5)
                .filter_map(|i| records.get(&format!("big{i}")))
                .map(|h| lock(&h).held_bytes())
                .sum()
        };
        assert_eq!(records.bytes(), kept_sum(&records));

        // A kept record's growth is counted as it streams…
        let last = records.get(&format!("big{}", fit + 4)).unwrap();
        let before = records.bytes();
        {
            let mut r = lock(&last);
            r.headers(200, Some("text/event-stream"), t0);
            for _ in 0..200 {
                r.chunk(t0, sse("w").as_bytes());
            }
        }
        assert!(records.bytes() > before);
        assert_eq!(records.bytes(), kept_sum(&records));
        // …and an evicted record's is not (it lives on with its request).
        let before = records.bytes();
        {
            let mut r = lock(&first);
            r.headers(200, Some("text/event-stream"), t0);
            for _ in 0..200 {
                r.chunk(t0, sse("w").as_bytes());
            }
        }
        assert_eq!(records.bytes(), before);
        // Eviction freed the evicted records' bytes: the kept ones are what is counted.
        assert_eq!(records.bytes(), kept_sum(&records));
    }

    /// A client that names another request's id (it chooses its own with
    /// `x-request-id`) cannot overwrite that request's record: records are write-once.
    #[test]
    fn a_request_reusing_a_kept_id_cannot_replace_its_record() {
        let records = Records::default();
        let t0 = Instant::now();
        let victim = records
            .insert(Record::new(
                "victim",
                Kind::Proxy,
                "/proxy/a",
                None,
                t0,
                0.0,
            ))
            .unwrap();
        lock(&victim).headers(200, Some("text/event-stream"), t0);
        let before = records.bytes();
        let forged = Record::new("victim", Kind::Sim, "/sim/forged", None, t0, 0.0);
        let Err(e) = records.insert(forged) else {
            panic!("a kept id was replaced");
        };
        assert_eq!(e.id, "victim");
        assert!(e.to_string().contains("write-once"), "{e}");
        let kept = records.get("victim").unwrap();
        assert_eq!(lock(&kept).path, "/proxy/a");
        assert_eq!(lock(&kept).status, Some(200));
        assert_eq!(records.bytes(), before, "the refused record is not counted");
        assert_eq!(records.kept(), 1);
        // Once evicted, the id is free again (nothing is left to replace).
        for i in 0..MAX_RECORDS {
            records
                .insert(Record::new(&format!("r{i}"), Kind::Sim, "/", None, t0, 0.0))
                .unwrap();
        }
        assert!(records.get("victim").is_none());
        records
            .insert(Record::new("victim", Kind::Sim, "/", None, t0, 0.0))
            .unwrap();
    }

    #[test]
    fn a_short_record_is_a_few_kib() {
        let t0 = Instant::now();
        let mut r = Record::new(
            "r",
            Kind::Sim,
            "/sim/default/v1/chat/completions",
            None,
            t0,
            0.0,
        );
        r.headers(200, Some("text/event-stream"), t0);
        for _ in 0..48 {
            r.chunk(t0, sse("w").as_bytes());
        }
        r.duration("queue", 0.0);
        r.end(RecordOutcome::Completed, t0);
        let held = r.held_bytes();
        // MAX_RECORDS of these stay under the byte budget: the count cap binds first.
        assert!(held < 6 << 10, "{held}");
        assert!(MAX_RECORDS * held < MAX_RECORD_BYTES);
    }
}
