//! The timeline of one measured request: everything ttfx observed, before any derivation.
//!
//! Every time here is milliseconds since `request_start` on the page's
//! `performance.now()` clock. Metrics ([`crate::metrics`]) are computed from a timeline and
//! nothing else, so a report that keeps its timeline can always be recomputed.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::chunk_summary::{ChunkBin, ChunkSummary};
use crate::decode::decimal::Decimal;
use crate::handoff::HandoffRecord;
use crate::milestone::Milestone;
use crate::playback::OutputTimestamp;
use crate::server_timing::{ServerTiming, TimingSource, Usage};

/// One measured request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// Milestones observed; a milestone that was not observed is absent.
    #[serde(default)]
    pub milestones: Milestones,
    /// One entry per body chunk handed to the reader, in arrival order; past the
    /// recorder's bound only the first chunks, the rest being in `chunk_summary`.
    #[serde(default)]
    pub chunks: Vec<Chunk>,
    /// The chunks after the kept ones, when there were more than the recorder keeps
    /// ([`crate::series`]): their totals, bins for plotting, and the figures of the
    /// whole stream that the metrics need. Absent for a series kept whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_summary: Option<ChunkSummary>,
    /// How `first_paint` was timed, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paint_method: Option<PaintMethod>,
    /// How `first_audio_out` was timed, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_out_method: Option<AudioOutMethod>,
    /// The audio stream (voice requests only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioSeries>,
    /// The LLM → TTS handoff, per segment (voice requests only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<HandoffRecord>,
    /// The voice turn that led to the request: its detector's decision, its
    /// transcription request, a barge-in (voice turns only; `crate::turn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<crate::turn::TurnRecord>,
    /// Why the request failed, when it did (the `error` milestone says when).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Where and how it was measured.
    #[serde(default)]
    pub environment: Environment,
    /// What the server said about itself.
    #[serde(default)]
    pub server: ServerData,
    /// What was requested and what came back (never a header value or a query string:
    /// those carry keys).
    #[serde(default)]
    pub request: RequestInfo,
    /// The browser's own Resource Timing entry for the request, when it appeared (it
    /// appears only after the body ends, so aborted streams have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_timing: Option<ResourceTiming>,
    /// Things that went wrong without failing the request: decoder anomalies (unknown
    /// event types, bad frames) and probe faults (a callback threw, the probe stopped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomalies: Vec<Anomaly>,
    /// Wall-clock time (Unix epoch, ms) of `request_start` on the client:
    /// `performance.timeOrigin + performance.now()`. Only the clock-offset estimate uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_start_unix_ms: Option<f64>,
    /// How `ttfx run --inject` chose this stream and its reply in a page that does not
    /// embed the probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<crate::selection::Selection>,
}

/// Milestone → ms since `request_start`. Serialized as an object keyed by the milestone's
/// report name, so the JSON reads `{"first_token": 412.5}`. One slot per milestone (a
/// map's code would be generated for this one key type, in the probe's wasm too).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Milestones([Option<f64>; Milestone::ALL.len()]);

impl Milestones {
    /// The time of `m`, if it was observed.
    pub fn get(&self, m: Milestone) -> Option<f64> {
        self.0[m.index()]
    }

    /// Forgets `m` (an observer's value that turned out unusable).
    pub fn remove(&mut self, m: Milestone) -> Option<f64> {
        self.0[m.index()].take()
    }

    /// Records `m` at `at_ms`, replacing an earlier value.
    pub fn set(&mut self, m: Milestone, at_ms: f64) {
        self.0[m.index()] = Some(at_ms);
    }

    /// Observed milestones in the order a user meets them.
    pub fn iter(&self) -> impl Iterator<Item = (Milestone, f64)> + '_ {
        Milestone::ALL
            .into_iter()
            .filter_map(|m| self.get(m).map(|t| (m, t)))
    }
}

impl<const N: usize> From<[(Milestone, f64); N]> for Milestones {
    fn from(entries: [(Milestone, f64); N]) -> Self {
        let mut milestones = Milestones::default();
        for (m, at) in entries {
            milestones.set(m, at);
        }
        milestones
    }
}

impl Serialize for Milestones {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter().map(|(m, t)| (m.as_str(), t)))
    }
}

impl<'de> Deserialize<'de> for Milestones {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = BTreeMap::<String, f64>::deserialize(deserializer)?;
        let mut out = Milestones::default();
        for (name, at) in raw {
            let m = name.parse::<Milestone>().map_err(D::Error::custom)?;
            out.set(m, at);
        }
        Ok(out)
    }
}

/// Serde for a single [`Milestone`] as its report name, for types that name one.
pub(crate) mod milestone_name {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::milestone::Milestone;

    pub fn serialize<S: Serializer>(m: &Milestone, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(m.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Milestone, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(D::Error::custom)
    }
}

/// One body chunk as the reader saw it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// When the chunk was handed to the reader (before parsing).
    pub at_ms: f64,
    /// Body bytes in the chunk.
    pub bytes: u64,
    /// Complete events (SSE events / NDJSON lines) the chunk completed.
    #[serde(default)]
    pub events: u32,
    /// Visible answer tokens the decoder counted in the chunk (one per non-empty visible
    /// text delta).
    #[serde(default)]
    pub visible_tokens: u32,
    /// Reasoning tokens the decoder counted in the chunk (one per non-empty reasoning
    /// delta).
    #[serde(default)]
    pub reasoning_tokens: u32,
}

impl Chunk {
    /// Tokens on any channel.
    pub fn tokens(&self) -> u64 {
        u64::from(self.visible_tokens) + u64::from(self.reasoning_tokens)
    }

    /// The chunk as a bin of one, to merge with others.
    pub(crate) fn as_bin(&self) -> ChunkBin {
        ChunkBin {
            from_ms: self.at_ms,
            to_ms: self.at_ms,
            chunks: 1,
            bytes: self.bytes,
            events: u64::from(self.events),
            visible_tokens: u64::from(self.visible_tokens),
            reasoning_tokens: u64::from(self.reasoning_tokens),
        }
    }
}

/// The request as the probe saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestInfo {
    /// HTTP method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Origin and path only: the query string is dropped because it may hold a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Response status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Response `Content-Type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The stream dialect the decoder used (given or detected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    /// How the browser probe received the stream: `fetch`, `eventsource`, `xhr` or
    /// `websocket` (docs/probe.md, Transports). Absent in documents written before it
    /// existed, and where the reader was not the probe: read as `fetch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
}

/// The fields of a `PerformanceResourceTiming` entry that matter here, converted to ms
/// since `request_start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceTiming {
    /// `requestStart`, when the browser exposes it (cross-origin needs Timing-Allow-Origin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_start_ms: Option<f64>,
    /// `responseStart`: the browser's own first-byte-of-headers time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_start_ms: Option<f64>,
    /// `responseEnd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_end_ms: Option<f64>,
    /// `encodedBodySize` (0 when cross-origin without Timing-Allow-Origin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoded_body_size: Option<u64>,
    /// `fetchStart` (the entry's `startTime` for a fetch without redirects): when the
    /// browser began to fetch. Its own queue lies between it and `requestStart`.
    /// Absent in documents written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_start_ms: Option<f64>,
    /// `domainLookupStart` … `domainLookupEnd`: the DNS lookup (both equal `fetchStart`
    /// when none was needed; both 0, so absent, cross-origin without Timing-Allow-Origin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_lookup_start_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_lookup_end_ms: Option<f64>,
    /// `connectStart` … `connectEnd`: opening the connection, TLS included (both equal
    /// `domainLookupEnd`, or `fetchStart`, on a reused connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_start_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_end_ms: Option<f64>,
    /// `nextHopProtocol`, the ALPN id (`http/1.1`, `h2`, `h3`); absent when the engine
    /// gave none (an empty string: cross-origin without Timing-Allow-Origin, or not
    /// known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_hop_protocol: Option<String>,
}

impl ResourceTiming {
    /// The longest `next_hop_protocol` kept: registered ALPN ids are a few characters
    /// (`http/1.1`, `h2`, `h3`); a page's longer or odd string is dropped, not stored.
    pub const PROTOCOL_MAX_CHARS: usize = 16;

    /// `protocol` if it reads as an ALPN id: 1 to [`Self::PROTOCOL_MAX_CHARS`] visible
    /// ASCII characters.
    pub fn protocol(protocol: Option<String>) -> Option<String> {
        protocol.filter(|p| {
            (1..=Self::PROTOCOL_MAX_CHARS).contains(&p.len())
                && p.bytes().all(|b| b.is_ascii_graphic())
        })
    }

    /// How long the browser held the request before sending it, beyond the DNS lookup and
    /// the connection's set-up (HAR's `blocked`): (`requestStart` − `fetchStart`) − DNS −
    /// connect, at least 0. The wait for a free connection (HTTP/1.1's six per host), the
    /// browser's own scheduling and its request set-up (cache lookup, the hop to its
    /// network process) are in it. Absent without `requestStart` or `fetchStart` (an
    /// older document, or cross-origin without Timing-Allow-Origin, where the engine
    /// gives 0), or when a span's end is missing, a time is not finite, or the result is
    /// not: a missing span could not be taken out.
    pub fn queued_ms(&self) -> Option<f64> {
        let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
        let request = finite(self.request_start_ms)?;
        let fetch = finite(self.fetch_start_ms)?;
        // Each span at least 0: the engines' clocks are coarsened (Firefox's jittered), so
        // an end can read a step before its start.
        let span = |start: Option<f64>, end: Option<f64>| -> Option<f64> {
            Some((finite(end)? - finite(start)?).max(0.0))
        };
        let dns = span(self.domain_lookup_start_ms, self.domain_lookup_end_ms)?;
        let connect = span(self.connect_start_ms, self.connect_end_ms)?;
        let queued = (request - fetch - dns - connect).max(0.0);
        queued.is_finite().then_some(queued)
    }
}

/// Something that went wrong without failing the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// When it was noticed.
    pub at_ms: f64,
    /// A snake_case class (`unknown_event`, `malformed_json`, `callback_threw`, …).
    pub class: String,
    /// What happened, for a person (never a secret).
    pub detail: String,
}

/// How the paint of the first visible text was timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaintMethod {
    /// Element Timing `presentationTime`: when the frame holding the text was presented
    /// (Chromium 156 and later; `paint_time` then carries its `paintTime`).
    PresentationTime,
    /// Element Timing `renderTime` where the engine exposes no `presentationTime`
    /// (Chromium before 156).
    ElementTiming,
    /// Interaction Contentful Paint, where the engine has it.
    InteractionContentfulPaint,
    /// The start of the frame after the one that rendered the text (a second
    /// `requestAnimationFrame`'s timestamp): where the compositor draws that frame, the
    /// estimate of its presentation where the engine exposes none (Firefox, WebKit).
    RafNextFrame,
    /// Reports written before 2026-12-05: the task after the first
    /// `requestAnimationFrame` after `first_dom` (the end of the rendering step, about
    /// one frame before the frame is shown). Read, never written.
    RafEstimate,
}

/// How the first audible sample was timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AudioOutMethod {
    /// AudioWorklet tap frame mapped through `getOutputTimestamp()` plus `outputLatency`.
    OutputTimestamp,
    /// AudioWorklet tap frame mapped through `currentTime` read with `performance.now()`,
    /// plus `baseLatency` + `outputLatency` (no usable `getOutputTimestamp`).
    WorkletPlusLatency,
    /// Scheduled time of the first audible decoded sample, mapped like
    /// `WorkletPlusLatency` (no AudioWorklet).
    ScheduledPlusLatency,
}

/// The audio side of a voice request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AudioSeries {
    /// Milliseconds of audio received in total.
    pub audio_ms: f64,
    /// When the last audio bytes arrived.
    pub last_byte_at_ms: f64,
    /// Every time playback caught up with the stream.
    #[serde(default)]
    pub underruns: Vec<Underrun>,
    /// Audio as it arrived: one entry per body chunk that carried audio.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<AudioChunk>,
    /// The output device and the values used to time `first_audio_out`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<AudioOutput>,
}

/// One body chunk of the audio stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AudioChunk {
    /// When the chunk was handed to the reader.
    pub at_ms: f64,
    /// Milliseconds of audio the chunk completed.
    pub audio_ms: f64,
}

/// `AudioContext.state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextState {
    Running,
    /// Not rendering: an autoplay policy (no user gesture yet) or the app suspended it.
    Suspended,
    Closed,
    /// Safari: the system took the device (a call, another app).
    Interrupted,
}

/// What the output side looked like when the first audible sample was timed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AudioOutput {
    /// The context's sample rate (frames per second).
    pub sample_rate: f64,
    /// The context's state when the first audio was scheduled. A context that was not
    /// running then has no `first_audio_out`: its wait is the autoplay policy's, not the
    /// pipeline's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_at_first_schedule: Option<ContextState>,
    /// When a context that was not running started running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_at_ms: Option<f64>,
    /// `outputLatency` as read when `first_audio_out` was timed (absent: not in this
    /// engine). Engines read 0 until the device runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_latency_ms: Option<f64>,
    /// `baseLatency` as read then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_latency_ms: Option<f64>,
    /// Latency the method added to the mapped frame (0 for `output_timestamp`, whose
    /// mapping already includes the device).
    #[serde(default)]
    pub latency_added_ms: f64,
    /// The `getOutputTimestamp()` pair used, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_timestamp: Option<OutputTimestamp>,
    /// Audio-clock time (s) of the first audible frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_audible_context_s: Option<f64>,
}

/// Playback ran out of audio and silence was inserted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Underrun {
    /// When the silence began.
    pub at_ms: f64,
    /// How long the silence lasted.
    pub silence_ms: f64,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The class of failure.
    pub class: FailureClass,
    /// HTTP status, when the failure was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// A short human-readable detail (never a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The kinds of failure a report distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// A non-2xx HTTP status.
    HttpStatus,
    /// The connection failed or dropped.
    Network,
    /// An error event inside the stream.
    InBand,
    /// The stream could not be decoded.
    Decode,
    /// A probe timeout fired.
    Timeout,
}

/// Where and how the request was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Browser engine (`chromium`, `gecko`, `webkit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Engine version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// `navigator.userAgent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// `crossOriginIsolated`: isolated pages get finer timers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_origin_isolated: Option<bool>,
    /// Smallest observed step of `performance.now()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_resolution_ms: Option<f64>,
    /// Page visibility changes during the request (hidden pages get throttled timers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub visibility_changes: Vec<VisibilityChange>,
    /// Requests in flight from this page when this one started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Where the probe's analysis (decoding, metrics, this report) ran. It changes no
    /// figure: every milestone keeps the arrival time the page took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<AnalysisSite>,
}

/// Where a browser run's analysis ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnalysisSite {
    /// A module Web Worker: off the page's main thread (the default).
    Worker,
    /// The page's main thread, in idle time: where a Worker cannot start (a CSP with
    /// `worker-src 'none'`), and for Rust front ends that link the analysis in.
    MainThread,
    /// `ttfx run`'s own process: inject mode records what the page observed and replays
    /// it there (docs/run.md, "Inject mode").
    Runner,
}

impl AnalysisSite {
    /// `"worker"`, `"main_thread"` or `"runner"`, as in the report.
    pub fn from_name(name: &str) -> Option<AnalysisSite> {
        match name {
            "worker" => Some(AnalysisSite::Worker),
            "main_thread" => Some(AnalysisSite::MainThread),
            "runner" => Some(AnalysisSite::Runner),
            _ => None,
        }
    }
}

/// The page became visible or hidden.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VisibilityChange {
    /// When it changed.
    pub at_ms: f64,
    /// The new state.
    pub state: Visibility,
}

/// `document.visibilityState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Visible,
    Hidden,
}

/// What the server reported about this request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerData {
    /// Reported durations, in the order they arrived (which need not be the order of the
    /// moments they describe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timings: Vec<ServerTiming>,
    /// Reported token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The server's own wall-clock receive/send times, when it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock: Option<ServerWallClock>,
    /// `ttfx serve`'s id for its record of this request (`Server-Timing: ttfx-record;
    /// desc=ID`), so a runner that measured a page's own request can join the record.
    /// Never written out: the id is what reads the record, and reports and beacons
    /// leave the page.
    #[serde(skip)]
    pub record_id: Option<String>,
}

impl ServerData {
    /// Joins another account of the same request (a server's `/records/{id}` entry) into
    /// this one: timings not already present are appended, usage and wall clock fill
    /// only what is missing (what the client read itself stays). Merging the same
    /// account again changes nothing. Every client that joins a record calls this.
    pub fn merge(&mut self, other: &ServerData) {
        for timing in &other.timings {
            if !self.timings.contains(timing) {
                self.timings.push(timing.clone());
            }
        }
        if self.usage.is_none() {
            self.usage.clone_from(&other.usage);
        }
        if self.wall_clock.is_none() {
            self.wall_clock = other.wall_clock;
        }
    }
}

/// The server's wall clock around this request (Unix epoch, ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServerWallClock {
    /// When the server received the request.
    pub received_unix_ms: f64,
    /// When the server sent the response headers.
    pub sent_unix_ms: f64,
    /// Where these came from.
    pub source: TimingSource,
}

/// A timeline that cannot be measured from.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineError {
    /// A time is NaN or infinite.
    NotFinite { field: String },
    /// A time lies before `request_start`.
    BeforeRequestStart { field: String, at_ms: f64 },
    /// `request_start` is the origin of the clock, so it must be 0.
    RequestStartNotZero(f64),
    /// Two milestones that the decoder orders were recorded out of order.
    OutOfOrder {
        earlier: Milestone,
        later: Milestone,
    },
    /// A summarized series' figures contradict themselves.
    InvalidChunkSummary(&'static str),
}

impl fmt::Display for TimelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimelineError::NotFinite { field } => write!(f, "{field} is not a finite number"),
            TimelineError::BeforeRequestStart { field, at_ms } => {
                let at = Decimal(*at_ms);
                write!(f, "{field} at {at} ms lies before request_start")
            }
            TimelineError::RequestStartNotZero(at) => {
                write!(
                    f,
                    "request_start must be 0 (times are relative to it), found {}",
                    Decimal(*at)
                )
            }
            TimelineError::OutOfOrder { earlier, later } => {
                write!(f, "{later} is recorded before {earlier}")
            }
            TimelineError::InvalidChunkSummary(why) => write!(f, "chunk_summary: {why}"),
        }
    }
}

impl std::error::Error for TimelineError {}

/// Pairs the decoder guarantees: a visible token is a token, and the last token is not
/// before any other. Render and audio milestones come from other observers with their
/// own coarsened clocks, so they are not forced into order here.
const DECODER_ORDER: [(Milestone, Milestone); 4] = [
    (Milestone::FirstByte, Milestone::FirstEvent),
    (Milestone::FirstToken, Milestone::FirstVisibleToken),
    (Milestone::FirstToken, Milestone::LastToken),
    (Milestone::FirstVisibleToken, Milestone::LastToken),
];

/// A voice turn's own order: speech ends after it starts, a final transcript comes no
/// earlier than its first partial.
const TURN_ORDER: [(Milestone, Milestone); 2] = [
    (Milestone::SpeechStart, Milestone::SpeechEnd),
    (Milestone::SttFirstPartial, Milestone::SttFinal),
];

impl Timeline {
    /// Checks what every metric relies on: finite times, none before `request_start`, and
    /// the decoder's own milestones in order.
    pub fn validate(&self) -> Result<(), TimelineError> {
        self.check_pre_request_milestones()?;
        if let Some(summary) = &self.chunk_summary {
            summary
                .gaps
                .check()
                .map_err(TimelineError::InvalidChunkSummary)?;
        }
        // The turn's times precede the request like its milestones: finite is enough.
        if let Some(turn) = &self.turn {
            for (field, at_ms) in turn.times() {
                if !at_ms.is_finite() {
                    return Err(TimelineError::NotFinite { field });
                }
            }
        }
        check_from_request_start(self.times_from_request_start())?;
        if let Some(start) = self.milestones.get(Milestone::RequestStart)
            && start != 0.0
        {
            return Err(TimelineError::RequestStartNotZero(start));
        }
        self.check_milestone_order()
    }

    /// The milestones that may precede the request (a voice turn's speech and
    /// transcription) need only be finite.
    fn check_pre_request_milestones(&self) -> Result<(), TimelineError> {
        for (m, at_ms) in self.milestones.iter() {
            if m.precedes_request() && !at_ms.is_finite() {
                return Err(TimelineError::NotFinite {
                    field: m.as_str().into(),
                });
            }
        }
        Ok(())
    }

    /// Every time measured from `request_start`, under the field name an error shows.
    fn times_from_request_start(&self) -> Vec<(String, f64)> {
        // A voice turn's speech and transcription precede the request: only they may
        // be negative.
        let mut times: Vec<(String, f64)> = self
            .milestones
            .iter()
            .filter(|(m, _)| !m.precedes_request())
            .map(|(m, t)| (m.as_str().to_owned(), t))
            .collect();
        times.extend(
            self.chunks
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("chunks[{i}].at_ms"), c.at_ms)),
        );
        if let Some(summary) = &self.chunk_summary {
            for (i, b) in summary.bins.iter().enumerate() {
                times.push((format!("chunk_summary.bins[{i}].from_ms"), b.from_ms));
                times.push((format!("chunk_summary.bins[{i}].to_ms"), b.to_ms));
            }
        }
        if let Some(audio) = &self.audio {
            push_audio_times(audio, &mut times);
        }
        if let Some(handoff) = &self.handoff {
            push_handoff_times(handoff, &mut times);
        }
        times
    }

    /// The decoder's milestones, and a voice turn's, in the order they can happen.
    fn check_milestone_order(&self) -> Result<(), TimelineError> {
        for (earlier, later) in DECODER_ORDER.into_iter().chain(TURN_ORDER) {
            if let (Some(a), Some(b)) = (self.milestones.get(earlier), self.milestones.get(later))
                && b < a
            {
                return Err(TimelineError::OutOfOrder { earlier, later });
            }
        }
        Ok(())
    }

    /// The chunk series in time order. Chunks are recorded as they arrive, but a merged or
    /// hand-edited timeline may not keep that order, and every series metric needs it.
    pub fn chunks_by_time(&self) -> Vec<Chunk> {
        crate::order::sorted_by_key(&self.chunks, |c| c.at_ms)
    }

    /// Was the page hidden at any moment between `request_start` and `until_ms`?
    pub fn hidden_before(&self, until_ms: f64) -> bool {
        self.environment
            .visibility_changes
            .iter()
            .any(|c| c.state == Visibility::Hidden && c.at_ms <= until_ms)
    }
}

/// Each time must be finite and none may lie before `request_start`.
fn check_from_request_start(times: Vec<(String, f64)>) -> Result<(), TimelineError> {
    for (field, at_ms) in times {
        if !at_ms.is_finite() {
            return Err(TimelineError::NotFinite { field });
        }
        if at_ms < 0.0 {
            return Err(TimelineError::BeforeRequestStart { field, at_ms });
        }
    }
    Ok(())
}

/// The audio series' times, each under its field name.
fn push_audio_times(audio: &AudioSeries, times: &mut Vec<(String, f64)>) {
    times.push(("audio.audio_ms".into(), audio.audio_ms));
    times.push(("audio.last_byte_at_ms".into(), audio.last_byte_at_ms));
    for (i, u) in audio.underruns.iter().enumerate() {
        times.push((format!("audio.underruns[{i}].at_ms"), u.at_ms));
        times.push((format!("audio.underruns[{i}].silence_ms"), u.silence_ms));
    }
    for (i, c) in audio.chunks.iter().enumerate() {
        times.push((format!("audio.chunks[{i}].at_ms"), c.at_ms));
        times.push((format!("audio.chunks[{i}].audio_ms"), c.audio_ms));
    }
}

/// The handoff record's times, each under its field name.
fn push_handoff_times(handoff: &HandoffRecord, times: &mut Vec<(String, f64)>) {
    for (i, s) in handoff.segments.iter().enumerate() {
        let field = |name: &str| format!("handoff.segments[{i}].{name}");
        times.push((field("last_token_at_ms"), s.last_token_at_ms));
        times.push((field("complete_at_ms"), s.complete_at_ms));
        if let Some(at) = s.handed_at_ms {
            times.push((field("handed_at_ms"), at));
        }
    }
    if let Some(at) = handoff.llm_end_at_ms {
        times.push(("handoff.llm_end_at_ms".into(), at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milestones_serialize_by_report_name_and_reject_unknown_names() {
        let m = Milestones::from([(Milestone::FirstToken, 412.5), (Milestone::Headers, 120.0)]);
        let json = serde_json::to_string(&m).unwrap();
        // Map order is the order a user meets them, not insertion order.
        assert_eq!(json, r#"{"headers":120.0,"first_token":412.5}"#);
        assert_eq!(serde_json::from_str::<Milestones>(&json).unwrap(), m);
        let err = serde_json::from_str::<Milestones>(r#"{"first_pixel":1.0}"#).unwrap_err();
        assert!(
            err.to_string().contains("unknown milestone `first_pixel`"),
            "{err}"
        );
    }

    #[test]
    fn validate_rejects_negative_times_nonzero_start_and_decoder_disorder() {
        let mut t = Timeline::default();
        t.milestones.set(Milestone::FirstToken, -1.0);
        assert_eq!(
            t.validate(),
            Err(TimelineError::BeforeRequestStart {
                field: "first_token".into(),
                at_ms: -1.0
            })
        );

        let mut t = Timeline::default();
        t.milestones.set(Milestone::RequestStart, 5.0);
        assert_eq!(t.validate(), Err(TimelineError::RequestStartNotZero(5.0)));

        let mut t = Timeline::default();
        t.milestones.set(Milestone::FirstToken, 300.0);
        t.milestones.set(Milestone::FirstVisibleToken, 200.0);
        let err = t.validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            "first_visible_token is recorded before first_token"
        );

        let mut t = Timeline::default();
        t.chunks.push(Chunk {
            at_ms: f64::NAN,
            ..Chunk::default()
        });
        assert_eq!(
            t.validate().unwrap_err().to_string(),
            "chunks[0].at_ms is not a finite number"
        );
    }

    #[test]
    fn chunks_by_time_sorts_without_touching_the_record() {
        let mut t = Timeline::default();
        for at_ms in [30.0, 10.0, 20.0] {
            t.chunks.push(Chunk {
                at_ms,
                ..Chunk::default()
            });
        }
        let sorted: Vec<f64> = t.chunks_by_time().iter().map(|c| c.at_ms).collect();
        assert_eq!(sorted, [10.0, 20.0, 30.0]);
        assert_eq!(t.chunks[0].at_ms, 30.0);
    }

    #[test]
    fn hidden_before_looks_only_at_changes_up_to_the_moment() {
        let mut t = Timeline::default();
        t.environment.visibility_changes = vec![VisibilityChange {
            at_ms: 500.0,
            state: Visibility::Hidden,
        }];
        assert!(!t.hidden_before(499.0));
        assert!(t.hidden_before(500.0));
    }
}
