//! Builds a [`Timeline`] from what a client observes, as it observes it.
//!
//! The browser probe (and any native client) calls this at each moment it sees: the
//! response headers, every body chunk with the time it was handed over, the end, an
//! abort or a network failure. All decoding and milestone logic lives here, in plain
//! Rust, so it is tested natively; the probe only takes timestamps and forwards bytes.
//!
//! `ttfx serve` records what its simulator sent and what its vantage proxy received
//! with this same type, so the client's and the server's milestones are derived by one
//! set of rules and their gaps compare like with like.

use crate::decode::server_timing_header;
use crate::decode::{Decoder, DialectKind, ErrorClass, Event, Limits};
use crate::milestone::Milestone;
use crate::series::{KEPT_CHUNKS, SeriesBound, Summarizer};
use crate::server_timing::{ServerTiming, TimingSource};
use crate::timeline::{Anomaly, Chunk, Failure, FailureClass, ServerWallClock, Timeline};

/// The `Server-Timing` metric `ttfx serve` names its record of a request with
/// (ttfx-edge's arrival stamp): `ttfx-record;desc=ID`.
pub const RECORD_TIMING: &str = "ttfx-record";

/// The record id in `Server-Timing` header values, for a reader of a page's recorded
/// calls (the runner's inject mode, whose reports come back as JSON without it).
pub fn record_id_in<'a>(server_timing: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let parsed = server_timing_header::parse_headers(server_timing);
    first_record_id(
        parsed
            .timings
            .into_iter()
            .filter(|t| t.name == RECORD_TIMING),
    )
}

/// The first well-formed id among `ttfx-record` entries.
fn first_record_id(entries: impl IntoIterator<Item = ServerTiming>) -> Option<String> {
    entries
        .into_iter()
        .filter_map(|t| t.description)
        .find(|id| plain_record_id(id))
}

/// A record id as `ttfx serve` makes or keeps them: short and plain, safe in a URL path.
pub fn plain_record_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// Most anomalies kept per request: a broken stream can produce one per frame, and the
/// report must stay small. The count of dropped ones is recorded in the last entry.
const MAX_ANOMALIES: usize = 32;

/// A chunk is decoded this many bytes at a time: a large chunk (a buffered reply handed
/// over whole, megabytes of raw audio) would otherwise become all its events at once,
/// as much memory again as its bytes. The decoder gives the same events however its
/// input is split, and every slice counts toward the one chunk.
const DECODE_SLICE: usize = 64 << 10;

/// Records one request.
pub struct Recorder {
    dialect: Option<DialectKind>,
    limits: Limits,
    decoder: Option<Decoder>,
    timeline: Timeline,
    dropped_anomalies: u64,
    /// Chunks kept one by one before the rest is summarized.
    bound: SeriesBound,
    /// Set once the series passes the bound.
    summarizer: Option<Summarizer>,
    ended: bool,
}

impl Recorder {
    /// A recorder for a request that starts now (`request_start` = 0). `dialect` is
    /// `None` to detect it from the content type and the first frames.
    ///
    /// Its memory is bounded however long the stream: the first [`KEPT_CHUNKS`] chunks
    /// are kept one by one, later ones are summarized ([`crate::series`]) with every
    /// metric they feed kept right.
    pub fn new(dialect: Option<DialectKind>, limits: Limits) -> Recorder {
        let mut timeline = Timeline::default();
        timeline.milestones.set(Milestone::RequestStart, 0.0);
        Recorder {
            dialect,
            limits,
            decoder: None,
            timeline,
            dropped_anomalies: 0,
            bound: SeriesBound::keeping(KEPT_CHUNKS),
            summarizer: None,
            ended: false,
        }
    }

    /// Keeps `limit` chunks one by one instead of [`KEPT_CHUNKS`]; later ones are
    /// summarized the same way (their bins are at most `limit / 8`). For records that
    /// live as long as a server does and are many, so each must be small.
    /// `usize::MAX` keeps every chunk: memory then grows with the stream.
    pub fn with_chunk_limit(mut self, limit: usize) -> Recorder {
        self.bound = SeriesBound::keeping(limit);
        self
    }

    /// Chunks left out of `timeline.chunks`, counted in its `chunk_summary`.
    pub fn chunks_not_kept(&self) -> u64 {
        self.timeline.chunk_summary.as_ref().map_or(0, |s| s.chunks)
    }

    /// What this recorder holds, in bytes of capacity (tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn held(&self) -> Held {
        use std::mem::size_of;
        let summary = self.timeline.chunk_summary.as_ref();
        Held {
            chunks: self.timeline.chunks.capacity() * size_of::<Chunk>(),
            bins: summary.map_or(0, |s| {
                s.bins.capacity() * size_of::<crate::series::ChunkBin>()
            }),
            gap_buckets: summary.map_or(0, |s| s.gaps.buckets.capacity() * size_of::<(f64, u64)>()),
            burst_window: self.summarizer.as_ref().map_or(0, Summarizer::held_bytes),
            decoder: self.decoder.as_ref().and_then(Decoder::held_bytes),
        }
    }

    /// The timeline so far, for fields the caller fills in itself (environment, request
    /// info, render and audio milestones).
    pub fn timeline_mut(&mut self) -> &mut Timeline {
        &mut self.timeline
    }

    /// The timeline so far.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The response headers arrived. `server_timing` holds every `Server-Timing` header
    /// value the page can read.
    pub fn headers(
        &mut self,
        at_ms: f64,
        status: u16,
        content_type: Option<&str>,
        server_timing: &[&str],
    ) {
        self.timeline.milestones.set(Milestone::Headers, at_ms);
        self.timeline.request.status = Some(status);
        self.timeline.request.content_type = content_type.map(str::to_owned);
        if !(200..300).contains(&status) {
            self.fail(
                at_ms,
                FailureClass::HttpStatus,
                Some(status),
                format!("HTTP {status}"),
            );
        }
        if !server_timing.is_empty() {
            let mut parsed = server_timing_header::parse_headers(server_timing.iter().copied());
            self.timeline.server.wall_clock = wall_clock(&parsed.timings);
            // `ttfx serve`'s record id is kept apart, never among the timings (see
            // ServerData::record_id).
            let (ids, timings): (Vec<_>, Vec<_>) = parsed
                .timings
                .drain(..)
                .partition(|t| t.name == RECORD_TIMING);
            self.timeline.server.record_id = first_record_id(ids);
            self.timeline.server.timings.extend(timings);
            for junk in parsed.junk {
                self.anomaly(at_ms, "server_timing_junk", junk.to_string());
            }
        }
        let decoder = match self.dialect {
            Some(kind) => Decoder::new(kind, self.limits),
            None => Decoder::auto(content_type, self.limits),
        };
        self.decoder = Some(decoder);
    }

    /// A body chunk was handed to the reader at `at_ms`.
    pub fn chunk(&mut self, at_ms: f64, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.first(Milestone::FirstByte, at_ms);
        let decoder = self
            .decoder
            .get_or_insert_with(|| Decoder::auto(None, self.limits));
        let frames_before = decoder.frames();
        let mut chunk = Chunk {
            at_ms,
            bytes: bytes.len() as u64,
            ..Chunk::default()
        };
        for slice in bytes.chunks(DECODE_SLICE) {
            let decoder = self
                .decoder
                .get_or_insert_with(|| Decoder::auto(None, self.limits));
            let events = decoder.push(slice);
            if decoder.frames() > frames_before {
                self.first(Milestone::FirstEvent, at_ms);
            }
            self.apply(at_ms, events, &mut chunk);
        }
        let frames = self
            .decoder
            .as_ref()
            .map_or(0, |d| d.frames().saturating_sub(frames_before));
        chunk.events = u32::try_from(frames).unwrap_or(u32::MAX);
        self.keep(chunk);
    }

    fn keep(&mut self, chunk: Chunk) {
        let timeline = &mut self.timeline;
        if timeline.chunks.len() < self.bound.kept {
            timeline.chunks.push(chunk);
            return;
        }
        let bound = self.bound;
        let summarizer = self.summarizer.get_or_insert_with(|| {
            let (summarizer, summary) = Summarizer::start(&timeline.chunks, bound);
            timeline.chunk_summary = Some(summary);
            summarizer
        });
        let in_order = timeline
            .chunk_summary
            .as_mut()
            .is_none_or(|summary| summarizer.push(summary, &chunk));
        if !in_order {
            self.anomaly(
                chunk.at_ms,
                "chunk_out_of_order",
                "a chunk was timed before an earlier one; the summarized series counts it \
                 as arriving with that one",
            );
        }
    }

    /// The body ended normally at `at_ms`.
    pub fn end(&mut self, at_ms: f64) {
        if self.ended {
            return;
        }
        self.ended = true;
        if let Some(mut decoder) = self.decoder.take() {
            let events = decoder.finish();
            let mut tail = Chunk {
                at_ms,
                ..Chunk::default()
            };
            self.apply(at_ms, events, &mut tail);
            if tail.tokens() > 0 {
                self.keep(tail);
            }
            self.timeline.request.dialect = decoder.dialect().map(|d| d.as_str().to_owned());
        }
        self.timeline.milestones.set(Milestone::Done, at_ms);
    }

    /// The user gave up (the request's AbortSignal fired, or the app cancelled the body)
    /// at `at_ms`. Chunks that arrived before it may still be fed afterwards: the probe
    /// hears of an abort at once but processes chunks a task later.
    pub fn abort(&mut self, at_ms: f64) {
        self.first(Milestone::Aborted, at_ms);
    }

    /// The request failed outside the stream's own content: the fetch rejected or the
    /// body errored (connection dropped, CORS, DNS). Ignored after an abort, whose
    /// rejection is a consequence, not a failure.
    pub fn network_error(&mut self, at_ms: f64, detail: impl Into<String>) {
        if self.timeline.milestones.get(Milestone::Aborted).is_some() {
            return;
        }
        self.fail(at_ms, FailureClass::Network, None, detail.into());
        self.stop_decoding();
    }

    /// Records something that went wrong without failing the request.
    pub fn anomaly(&mut self, at_ms: f64, class: &str, detail: impl Into<String>) {
        if self.timeline.anomalies.len() >= MAX_ANOMALIES {
            self.dropped_anomalies += 1;
            return;
        }
        self.timeline.anomalies.push(Anomaly {
            at_ms,
            class: class.to_owned(),
            detail: detail.into(),
        });
    }

    /// The finished timeline.
    pub fn finish(mut self) -> Timeline {
        self.stop_decoding();
        if self.dropped_anomalies > 0 {
            let at_ms = self.timeline.anomalies.last().map_or(0.0, |a| a.at_ms);
            self.timeline.anomalies.push(Anomaly {
                at_ms,
                class: "anomalies_dropped".into(),
                detail: format!("{} more anomalies not recorded", self.dropped_anomalies),
            });
        }
        self.timeline
    }

    fn stop_decoding(&mut self) {
        if let Some(decoder) = self.decoder.take() {
            self.timeline.request.dialect = decoder.dialect().map(|d| d.as_str().to_owned());
        }
        self.ended = true;
    }

    fn fail(&mut self, at_ms: f64, class: FailureClass, status: Option<u16>, detail: String) {
        if self.timeline.failure.is_some() {
            return;
        }
        self.timeline.milestones.set(Milestone::Error, at_ms);
        self.timeline.failure = Some(Failure {
            class,
            http_status: status,
            detail: Some(detail),
        });
    }

    /// Folds decoder events into milestones, the chunk's counts and the server data.
    /// Which events are tokens is [`Event::is_token`]'s rule, nowhere else.
    fn apply(&mut self, at_ms: f64, events: Vec<Event>, chunk: &mut Chunk) {
        for event in events {
            if event.is_token() {
                let visible = matches!(event, Event::Text { .. });
                match event {
                    Event::Text { .. } => chunk.visible_tokens += 1,
                    Event::Reasoning { .. } => chunk.reasoning_tokens += 1,
                    _ => {}
                }
                self.token(at_ms, visible.then_some(Milestone::FirstVisibleToken));
                continue;
            }
            match event {
                Event::AudioSamples { .. } | Event::AudioEncoded { .. } => {
                    self.first(Milestone::FirstAudioByte, at_ms);
                }
                Event::Usage { usage } => self.timeline.server.usage = Some(usage),
                Event::ServerTimings { timings } => {
                    for timing in timings {
                        self.in_band_timing(timing);
                    }
                }
                Event::Error {
                    class,
                    code,
                    message,
                } => {
                    let detail = match code {
                        Some(code) => format!("{code}: {message}"),
                        None => message,
                    };
                    match class {
                        ErrorClass::Server => self.fail(at_ms, FailureClass::InBand, None, detail),
                        ErrorClass::Truncated => {
                            self.fail(at_ms, FailureClass::Decode, None, detail)
                        }
                        other => self.anomaly(at_ms, other.as_str(), detail),
                    }
                }
                _ => {}
            }
        }
    }

    /// A server that repeats its timings in every chunk (llama.cpp's cumulative
    /// `timings`) updates one entry per name and source: a long stream keeps each
    /// once, with its latest (most complete) value.
    fn in_band_timing(&mut self, timing: ServerTiming) {
        let timings = &mut self.timeline.server.timings;
        match timings
            .iter_mut()
            .find(|t| t.name == timing.name && t.source == timing.source)
        {
            Some(known) => *known = timing,
            None => timings.push(timing),
        }
    }

    /// Sets `m` unless it is set already.
    fn first(&mut self, m: Milestone, at_ms: f64) {
        if self.timeline.milestones.get(m).is_none() {
            self.timeline.milestones.set(m, at_ms);
        }
    }

    fn token(&mut self, at_ms: f64, visible: Option<Milestone>) {
        self.first(Milestone::FirstToken, at_ms);
        if let Some(first) = visible {
            self.first(first, at_ms);
        }
        self.timeline.milestones.set(Milestone::LastToken, at_ms);
    }
}

/// What a [`Recorder`] holds, by part, in bytes (tests of the memory bound).
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct Held {
    pub chunks: usize,
    pub bins: usize,
    pub gap_buckets: usize,
    pub burst_window: usize,
    /// `None` for raw bodies (see `Decoder::held_bytes`).
    pub decoder: Option<usize>,
}

/// The server's wall-clock receive/send times, when its `Server-Timing` header carries
/// them as `received_unix_ms;desc="…"` and `sent_unix_ms;desc="…"` (the convention of
/// `ttfx serve`): with them the clock offset between client and server can be estimated.
fn wall_clock(timings: &[ServerTiming]) -> Option<ServerWallClock> {
    let find = |name: &str| {
        timings
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.description.as_deref())
            .and_then(|d| crate::decode::decimal::parse(d.trim()))
            .filter(|v| v.is_finite())
    };
    Some(ServerWallClock {
        received_unix_ms: find("received_unix_ms")?,
        sent_unix_ms: find("sent_unix_ms")?,
        source: TimingSource::ServerTimingHeader,
    })
}

// The URL rules live with the target grammar (a lower layer); kept here by name too.
pub use crate::target::url_without_query;

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(content: &str) -> String {
        format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{content:?}}}}}]}}\n\n")
    }

    fn recorder() -> Recorder {
        Recorder::new(None, Limits::DEFAULT)
    }

    #[test]
    fn milestones_follow_the_chunks_that_carried_them() {
        let mut r = recorder();
        r.headers(100.0, 200, Some("text/event-stream"), &["queue;dur=12.5"]);
        r.chunk(150.0, b": keep-alive\n\n");
        r.chunk(300.0, sse("").as_bytes());
        r.chunk(420.0, format!("{}{}", sse("Hel"), sse("lo")).as_bytes());
        r.chunk(500.0, sse(" world").as_bytes());
        r.chunk(510.0, b"data: [DONE]\n\n");
        r.end(520.0);
        let t = r.finish();
        let m = |x| t.milestones.get(x);
        assert_eq!(m(Milestone::Headers), Some(100.0));
        assert_eq!(m(Milestone::FirstByte), Some(150.0));
        // A comment is not an event; the empty-content chunk is an event but no token.
        assert_eq!(m(Milestone::FirstEvent), Some(300.0));
        assert_eq!(m(Milestone::FirstToken), Some(420.0));
        assert_eq!(m(Milestone::FirstVisibleToken), Some(420.0));
        assert_eq!(m(Milestone::LastToken), Some(500.0));
        assert_eq!(m(Milestone::Done), Some(520.0));
        assert_eq!(t.chunks.len(), 5);
        assert_eq!(t.chunks[2].visible_tokens, 2);
        assert_eq!(t.chunks[2].events, 2);
        assert_eq!(t.server.timings[0].duration_ms, Some(12.5));
        assert_eq!(t.request.dialect.as_deref(), Some("openai-chat"));
        assert!(t.failure.is_none());
        t.validate().unwrap();
    }

    #[test]
    fn ttfx_serves_record_id_is_kept_apart_and_never_written_out() {
        let mut r = recorder();
        r.headers(
            10.0,
            200,
            None,
            &[
                "queue;dur=1",
                // A malformed id first (a path in it): skipped, the plain one after it wins.
                "ttfx-record;desc=\"../x\", ttfx-record;desc=ttfx-3f9a, ttfx-record;desc=other",
            ],
        );
        let t = r.finish();
        assert_eq!(t.server.record_id.as_deref(), Some("ttfx-3f9a"));
        let names: Vec<_> = t.server.timings.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["queue"]);
        let json = serde_json::to_string(&t).unwrap();
        assert!(
            !json.contains("ttfx-3f9a") && !json.contains("ttfx-record"),
            "{json}"
        );
    }

    #[test]
    fn server_wall_clock_comes_from_server_timing_descriptions() {
        let mut r = recorder();
        r.headers(
            10.0,
            200,
            None,
            &[
                "queue;dur=1, received_unix_ms;desc=\"1700000000000.250\"",
                "sent_unix_ms;desc=\"1700000000001.500\"",
            ],
        );
        let t = r.finish();
        let w = t.server.wall_clock.unwrap();
        assert_eq!(w.received_unix_ms, 1_700_000_000_000.25);
        assert_eq!(w.sent_unix_ms, 1_700_000_000_001.5);
        assert_eq!(w.source, TimingSource::ServerTimingHeader);

        let mut r = recorder();
        r.headers(
            10.0,
            200,
            None,
            &["received_unix_ms;desc=\"soon\", sent_unix_ms;desc=\"1\""],
        );
        assert_eq!(
            r.finish().server.wall_clock,
            None,
            "a non-number is not a time"
        );
    }

    #[test]
    fn reasoning_is_a_token_but_not_visible() {
        let mut r = Recorder::new(Some(DialectKind::OpenAiChat), Limits::DEFAULT);
        r.headers(10.0, 200, None, &[]);
        r.chunk(
            50.0,
            b"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n",
        );
        r.chunk(90.0, sse("Yes").as_bytes());
        r.end(95.0);
        let t = r.finish();
        assert_eq!(t.milestones.get(Milestone::FirstToken), Some(50.0));
        assert_eq!(t.milestones.get(Milestone::FirstVisibleToken), Some(90.0));
        assert_eq!(t.chunks[0].reasoning_tokens, 1);
    }

    #[test]
    fn a_tool_call_is_a_token_from_its_name_not_from_an_empty_delta() {
        let call = |piece: &str| {
            format!("data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{piece}]}}}}]}}\n\n")
        };
        let mut r = Recorder::new(Some(DialectKind::OpenAiChat), Limits::DEFAULT);
        r.headers(10.0, 200, None, &[]);
        // A delta with neither a name nor argument text carries no output.
        r.chunk(
            20.0,
            call(r#"{"index":0,"function":{"arguments":""}}"#).as_bytes(),
        );
        r.chunk(
            30.0,
            call(r#"{"index":0,"id":"c1","function":{"name":"get_weather","arguments":""}}"#)
                .as_bytes(),
        );
        r.chunk(
            40.0,
            call(r#"{"index":0,"function":{"arguments":"{}"}}"#).as_bytes(),
        );
        r.end(45.0);
        let t = r.finish();
        assert_eq!(t.milestones.get(Milestone::FirstEvent), Some(20.0));
        assert_eq!(t.milestones.get(Milestone::FirstToken), Some(30.0));
        assert_eq!(t.milestones.get(Milestone::LastToken), Some(40.0));
        assert_eq!(t.milestones.get(Milestone::FirstVisibleToken), None);
    }

    #[test]
    fn audio_in_the_stream_is_the_first_audio_byte() {
        let mut r = Recorder::new(Some(DialectKind::Pcm16), Limits::DEFAULT);
        r.headers(5.0, 200, Some("audio/pcm"), &[]);
        r.chunk(9.0, &[1, 0, 2, 0]);
        r.chunk(12.0, &[3, 0]);
        r.end(13.0);
        let t = r.finish();
        assert_eq!(t.milestones.get(Milestone::FirstAudioByte), Some(9.0));
    }

    #[test]
    fn timings_repeated_in_every_chunk_are_kept_once_with_their_latest_value() {
        let chunk = |n: u32| {
            format!(
                "data: {{\"choices\":[{{\"delta\":{{\"content\":\"w\"}}}}],\
                 \"timings\":{{\"prompt_ms\":12.5,\"predicted_ms\":{n}.0,\"predicted_n\":{n}}}}}\n\n"
            )
        };
        let mut r = Recorder::new(Some(DialectKind::OpenAiChat), Limits::DEFAULT);
        r.headers(1.0, 200, None, &["queue;dur=1"]);
        for n in 1..=2000 {
            r.chunk(f64::from(n), chunk(n).as_bytes());
        }
        r.end(2001.0);
        let t = r.finish();
        let named = |name: &str| t.server.timings.iter().filter(|x| x.name == name).count();
        assert_eq!(named("prompt_ms"), 1, "{:?}", t.server.timings);
        assert_eq!(named("queue"), 1, "the header's timing stays");
        assert!(t.server.timings.len() <= 4, "{:?}", t.server.timings);
        let predicted = t.server.timings.iter().find(|x| x.name == "predicted_ms");
        assert_eq!(predicted.and_then(|x| x.duration_ms), Some(2000.0));
    }

    #[test]
    fn a_chunk_limit_keeps_the_milestones_and_counts_the_rest() {
        let mut r = recorder().with_chunk_limit(2);
        r.headers(1.0, 200, Some("text/event-stream"), &[]);
        for i in 0..5 {
            r.chunk(f64::from(10 * i), sse("w").as_bytes());
        }
        r.end(60.0);
        assert_eq!(r.chunks_not_kept(), 3);
        let t = r.finish();
        assert_eq!(t.chunks.len(), 2);
        assert_eq!(t.milestones.get(Milestone::LastToken), Some(40.0));
    }

    #[test]
    fn a_chunk_larger_than_a_decode_slice_is_one_chunk_with_all_its_events() {
        let n = 10_000;
        let body: String = (0..n).map(|i| sse(&format!("w{i}"))).collect();
        assert!(
            body.len() > 4 * DECODE_SLICE,
            "events straddle slice boundaries"
        );
        let mut r = recorder();
        r.headers(1.0, 200, Some("text/event-stream"), &[]);
        r.chunk(5.0, body.as_bytes());
        // The decoder's scratch lists are sized for a slice's events, not the chunk's.
        let mut whole = Decoder::auto(Some("text/event-stream"), Limits::DEFAULT);
        let events = whole.push(body.as_bytes());
        assert_eq!(events.len(), n as usize);
        let (sliced, whole) = (r.held().decoder.unwrap(), whole.held_bytes().unwrap());
        assert!(sliced * 5 < whole, "sliced {sliced}, whole {whole}");
        r.end(6.0);
        let t = r.finish();
        assert_eq!(t.chunks.len(), 1);
        let c = &t.chunks[0];
        assert_eq!(
            (c.bytes, c.events, c.visible_tokens),
            (body.len() as u64, n, n)
        );
        assert_eq!(t.milestones.get(Milestone::FirstEvent), Some(5.0));
        assert_eq!(t.milestones.get(Milestone::LastToken), Some(5.0));
    }

    #[test]
    fn http_error_status_is_a_failure_with_its_status() {
        let mut r = recorder();
        r.headers(30.0, 500, Some("application/json"), &[]);
        r.chunk(31.0, b"{\"error\":{\"message\":\"boom\"}}");
        r.end(32.0);
        let t = r.finish();
        let f = t.failure.unwrap();
        assert_eq!(f.class, FailureClass::HttpStatus);
        assert_eq!(f.http_status, Some(500));
        assert_eq!(t.milestones.get(Milestone::Error), Some(30.0));
    }

    #[test]
    fn a_dropped_connection_is_a_network_failure_and_an_abort_is_not() {
        let mut r = recorder();
        r.headers(10.0, 200, Some("text/event-stream"), &[]);
        r.chunk(20.0, sse("a").as_bytes());
        r.network_error(40.0, "body stream errored: network error");
        let t = r.finish();
        assert_eq!(t.failure.unwrap().class, FailureClass::Network);
        assert_eq!(t.milestones.get(Milestone::Error), Some(40.0));

        let mut r = recorder();
        r.headers(10.0, 200, Some("text/event-stream"), &[]);
        r.abort(25.0);
        // A chunk that arrived before the abort, processed after it, still counts.
        r.chunk(24.0, sse("a").as_bytes());
        r.network_error(26.0, "AbortError");
        let t = r.finish();
        assert_eq!(t.milestones.get(Milestone::FirstVisibleToken), Some(24.0));
        assert_eq!(t.milestones.get(Milestone::Done), None);
        assert!(t.failure.is_none());
        assert_eq!(t.milestones.get(Milestone::Aborted), Some(25.0));
        assert_eq!(t.milestones.get(Milestone::Error), None);
    }

    #[test]
    fn in_band_error_fails_and_unknown_events_are_anomalies() {
        let mut r = Recorder::new(Some(DialectKind::Anthropic), Limits::DEFAULT);
        r.headers(5.0, 200, None, &[]);
        r.chunk(6.0, b"event: mystery\ndata: {\"type\":\"mystery\"}\n\n");
        r.chunk(
            7.0,
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        r.end(8.0);
        let t = r.finish();
        let f = t.failure.unwrap();
        assert_eq!(f.class, FailureClass::InBand);
        assert!(f.detail.unwrap().contains("Overloaded"));
        assert_eq!(t.anomalies[0].class, "unknown_event");
    }

    #[test]
    fn usage_with_an_in_band_error_is_kept_and_done_after_it_is_no_anomaly() {
        let mut r = recorder();
        r.headers(5.0, 200, Some("text/event-stream"), &[]);
        r.chunk(6.0, sse("Par").as_bytes());
        r.chunk(
            7.0,
            b"data: {\"error\":{\"code\":\"server_error\",\"message\":\"gone\"},\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\"}],\"usage\":{\"prompt_tokens\":14,\"completion_tokens\":1}}\n\n",
        );
        r.chunk(8.0, b"data: [DONE]\n\n");
        r.end(9.0);
        let t = r.finish();
        let f = t.failure.as_ref().unwrap();
        assert_eq!(f.class, FailureClass::InBand);
        assert_eq!(f.detail.as_deref(), Some("server_error: gone"));
        assert_eq!(t.milestones.get(Milestone::Error), Some(7.0));
        let usage = t.server.usage.unwrap();
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens),
            (Some(14), Some(1))
        );
        assert!(t.anomalies.is_empty(), "{:?}", t.anomalies);
    }

    /// `--dialect llamacpp` on llama-server's OpenAI-compatible stream records what
    /// `auto` records: the same milestones, usage and `timings`.
    #[test]
    fn llamacpp_dialect_reads_the_openai_compatible_stream_as_auto_does() {
        let body = include_bytes!("../testdata/decode/llamacpp-server-chat-completions.in");
        let record = |dialect| {
            let mut r = Recorder::new(dialect, Limits::DEFAULT);
            r.headers(10.0, 200, Some("text/event-stream"), &[]);
            for (i, piece) in body.chunks(97).enumerate() {
                r.chunk(20.0 + 5.0 * i as f64, piece);
            }
            r.end(200.0);
            r.finish()
        };
        let explicit = record(Some(DialectKind::LlamaCpp));
        let auto = record(None);
        assert_eq!(auto.request.dialect.as_deref(), Some("openai-chat"));
        assert_eq!(explicit.request.dialect.as_deref(), Some("llamacpp"));
        assert_eq!(explicit.milestones, auto.milestones);
        assert!(
            explicit
                .milestones
                .get(Milestone::FirstVisibleToken)
                .is_some()
        );
        assert_eq!(explicit.server, auto.server);
        let names: Vec<&str> = explicit
            .server
            .timings
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["prompt_ms", "predicted_ms", "predicted_per_token_ms"]
        );
        assert_eq!(explicit.chunks, auto.chunks);
        assert!(explicit.failure.is_none() && explicit.anomalies.is_empty());
    }

    #[test]
    fn anomalies_are_bounded_and_the_rest_counted() {
        let mut r = recorder();
        for i in 0..40 {
            r.anomaly(f64::from(i), "x", "y");
        }
        let t = r.finish();
        assert_eq!(t.anomalies.len(), MAX_ANOMALIES + 1);
        assert_eq!(
            t.anomalies.last().unwrap().detail,
            "8 more anomalies not recorded"
        );
    }

    #[test]
    fn query_strings_never_reach_the_url() {
        assert_eq!(
            url_without_query("https://h/v1/chat?key=sk-123#x"),
            "https://h/v1/chat"
        );
        assert_eq!(url_without_query("https://h/v1#frag"), "https://h/v1");
        assert_eq!(url_without_query("/sim/x"), "/sim/x");
    }
}
