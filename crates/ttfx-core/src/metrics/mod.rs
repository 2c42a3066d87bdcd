//! Metrics derived from one [`Timeline`], named by convention so nobody confuses them.
//!
//! In the style of web-vitals, every value carries how it was obtained ([`Source`]): a
//! TPOT from the server's token count and one from ttfx's estimate are different facts.
//! Definitions, rules and their mapping to vLLM / AIPerf / GuideLLM / LLMPerf names are in
//! `docs/metrics.md`; each family lives in its own file here.

use serde::{Deserialize, Serialize};

use crate::gap::{self, ClockOffset, Gap};
use crate::handoff::{self, Handoff};
use crate::milestone::Milestone;
use crate::percentile::Summary;
use crate::timeline::{AudioOutMethod, Chunk, PaintMethod, Timeline, TimelineError};

pub mod audio;
pub mod buffered;
pub mod chunks;
pub mod latency;
pub mod network;
pub mod render;
pub mod tokens;
pub mod turn;

pub use audio::Underruns;
pub use buffered::{Buffered, BufferedVerdict};
pub use chunks::Stalls;
pub use latency::Outcome;
pub use tokens::HiddenReasoning;
pub use turn::{Stage, StageTime, TurnBreakdown};

/// How a value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Differences of client milestones on the page's `performance.now()` clock.
    ClientClock,
    /// Token count from the server's `usage`.
    ServerUsage,
    /// Token count estimated by ttfx from the streamed deltas (see `docs/metrics.md`).
    Estimate,
    /// Paint time from Element Timing `presentationTime`.
    PresentationTime,
    /// Paint time from Element Timing `renderTime`.
    ElementTiming,
    /// Paint time from Interaction Contentful Paint.
    InteractionContentfulPaint,
    /// Paint time estimated as the start of the frame after the one that rendered the text.
    RafNextFrame,
    /// Paint time estimated as the task after the frame that rendered the text (reports
    /// written before 2026-12-05).
    RafEstimate,
    /// Audible time from the AudioWorklet tap and `getOutputTimestamp()`.
    OutputTimestamp,
    /// Audible time from the AudioWorklet tap, `currentTime` and the latencies.
    WorkletPlusLatency,
    /// Audible time from the scheduled start plus `outputLatency`.
    ScheduledPlusLatency,
}

impl From<PaintMethod> for Source {
    fn from(m: PaintMethod) -> Self {
        match m {
            PaintMethod::PresentationTime => Source::PresentationTime,
            PaintMethod::ElementTiming => Source::ElementTiming,
            PaintMethod::InteractionContentfulPaint => Source::InteractionContentfulPaint,
            PaintMethod::RafNextFrame => Source::RafNextFrame,
            PaintMethod::RafEstimate => Source::RafEstimate,
        }
    }
}

impl From<AudioOutMethod> for Source {
    fn from(m: AudioOutMethod) -> Self {
        match m {
            AudioOutMethod::OutputTimestamp => Source::OutputTimestamp,
            AudioOutMethod::WorkletPlusLatency => Source::WorkletPlusLatency,
            AudioOutMethod::ScheduledPlusLatency => Source::ScheduledPlusLatency,
        }
    }
}

/// A value and how it was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub value: f64,
    pub source: Source,
}

impl Measured {
    pub(crate) fn client(value: f64) -> Self {
        Measured {
            value,
            source: Source::ClientClock,
        }
    }
}

/// One per-request scalar metric: its report name and how to read it, declared together
/// so a name cannot drift onto another metric's value.
#[derive(Debug, Clone, Copy)]
pub struct Scalar {
    /// The report name (also the name budgets, tables and batch statistics use).
    pub name: &'static str,
    /// The metric of one request; `None` when that request does not support it.
    pub value: fn(&RequestMetrics) -> Option<f64>,
}

/// A [`Measured`] field of [`RequestMetrics`], reported under the field's own name.
macro_rules! measured {
    ($field:ident) => {
        Scalar {
            name: stringify!($field),
            value: |m| m.$field.map(|v| v.value),
        }
    };
}

/// A voice turn's stage, reported as `stage_<name>_ms`.
macro_rules! stage {
    ($stage:ident, $name:literal) => {
        Scalar {
            name: concat!("stage_", $name, "_ms"),
            value: |m| m.turn.as_ref().and_then(|t| t.stage_ms(Stage::$stage)),
        }
    };
}

/// The per-request scalar metrics, in the order tables show them. Plain function
/// pointers, not generics: this table is in the browser probe's wasm.
pub const SCALARS: [Scalar; 30] = [
    measured!(ttft_ms),
    measured!(ttft_visible_ms),
    measured!(e2e_ms),
    measured!(tpot_ms),
    measured!(output_tokens),
    measured!(output_tokens_per_s),
    measured!(decode_tokens_per_s),
    measured!(engine_hop_ms),
    measured!(request_queued_ms),
    measured!(dom_lag_ms),
    measured!(render_lag_ms),
    measured!(ttfa_ms),
    measured!(ttfa_from_tts_ms),
    measured!(rtf),
    measured!(audio_arrival_rate),
    measured!(audio_behind_text_ms),
    Scalar {
        name: "underrun_count",
        value: |m| m.underruns.map(|u| f64::from(u.count)),
    },
    Scalar {
        name: "underrun_silence_ms",
        value: |m| m.underruns.map(|u| u.silence_ms),
    },
    Scalar {
        name: "handoff_time_lost_ms",
        value: |m| m.handoff.as_ref().and_then(|h| h.time_lost_ms),
    },
    Scalar {
        name: "stall_count",
        value: |m| m.stalls.map(|s| f64::from(s.count)),
    },
    measured!(voice_to_voice_ms),
    stage!(Endpointing, "endpointing"),
    stage!(Transcription, "transcription"),
    stage!(LlmRequest, "llm_request"),
    stage!(LlmFirstToken, "llm_first_token"),
    stage!(FirstSentence, "first_sentence"),
    stage!(TtsFirstByte, "tts_first_byte"),
    stage!(Playout, "playout"),
    measured!(interrupt_ms),
    measured!(submit_delay_ms),
];

/// The names of [`SCALARS`], in the same order (taken from it, not written twice).
pub const SCALAR_NAMES: [&str; SCALARS.len()] = {
    let mut names = [""; SCALARS.len()];
    let mut i = 0;
    while i < SCALARS.len() {
        names[i] = SCALARS[i].name;
        i += 1;
    }
    names
};

/// Every metric of one request. A metric that the timeline cannot support is absent
/// (`null` in JSON), never zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestMetrics {
    /// Completed, aborted or failed.
    pub outcome: Outcome,
    /// first_token: the first token on any channel.
    pub ttft_ms: Option<Measured>,
    /// first_visible_token: the first non-empty visible answer text.
    pub ttft_visible_ms: Option<Measured>,
    /// last_token, completed requests only.
    pub e2e_ms: Option<Measured>,
    /// Gaps between consecutive token-carrying chunks (vLLM bench's "ITL"). When the
    /// chunk series was summarized, only those between the kept chunks: `icl_summary`
    /// then covers every gap.
    pub icl_ms: Vec<f64>,
    /// Statistics of every gap of a summarized chunk series (`timeline.chunk_summary`),
    /// from its digest: count, min and max exact, percentiles within
    /// [`crate::series::GAP_RELATIVE_ERROR`]. Absent when the series was kept whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icl_summary: Option<Summary>,
    /// Output tokens (reasoning included), from usage or estimated.
    pub output_tokens: Option<Measured>,
    /// (last_token − first_token) / (streamed tokens − 1).
    pub tpot_ms: Option<Measured>,
    /// output tokens / e2e.
    pub output_tokens_per_s: Option<Measured>,
    /// 1000 / tpot: the decode rate once tokens flow.
    pub decode_tokens_per_s: Option<Measured>,
    /// first_byte − response_start: the engine's hop from its network stack to the page
    /// (where the first body bytes come with the headers; docs/metrics.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_hop_ms: Option<Measured>,
    /// (requestStart − fetchStart) − DNS − connect, at least 0: how long the browser held
    /// the request before sending it (HAR's `blocked`; the per-host connection limit's
    /// wait is here; docs/metrics.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_queued_ms: Option<Measured>,
    /// first_paint − first_visible_token.
    pub render_lag_ms: Option<Measured>,
    /// first_dom − first_visible_token.
    pub dom_lag_ms: Option<Measured>,
    /// first_audio_out − request_start.
    pub ttfa_ms: Option<Measured>,
    /// first_audio_out − tts_request.
    pub ttfa_from_tts_ms: Option<Measured>,
    /// Real-time factor of the TTS stream: wall seconds per audio second.
    pub rtf: Option<Measured>,
    /// Audio seconds received per wall-clock second after the first audio chunk.
    pub audio_arrival_rate: Option<Measured>,
    /// first_audio_out − first_visible_token.
    pub audio_behind_text_ms: Option<Measured>,
    /// Playback underruns.
    pub underruns: Option<Underruns>,
    /// Did the first segment leave for TTS before the LLM stream ended?
    pub handoff: Option<Handoff>,
    /// speech_end → first_audio_out: the silence a voice user hears (voice turns only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_to_voice_ms: Option<Measured>,
    /// The turn stage by stage, with each stage's share of `voice_to_voice_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnBreakdown>,
    /// A barge-in's speech_start → the reply's last sample out of the speaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt_ms: Option<Measured>,
    /// submit → request_start: the UI's own delay before it sent the request (a flow's
    /// click or key press; inject mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_delay_ms: Option<Measured>,
    /// Gaps far above this request's own typical gap.
    pub stalls: Option<Stalls>,
    /// Was the visible text streamed or dumped at once?
    pub buffered: Buffered,
    /// Did the server think without streaming its thoughts?
    pub hidden_reasoning: Option<HiddenReasoning>,
    /// Client milestone minus its server-reported counterpart.
    pub gaps: Vec<Gap>,
    /// Server clock minus client clock, when the server reported its wall times.
    pub clock_offset: Option<ClockOffset>,
    /// Why something could not be computed, or what makes a value suspect.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl RequestMetrics {
    /// Computes every metric from a valid timeline.
    pub fn compute(timeline: &Timeline) -> Result<RequestMetrics, TimelineError> {
        timeline.validate()?;
        let chunks = timeline.chunks_by_time();
        let outcome = latency::outcome(timeline);
        let mut notes = Vec::new();

        let e2e_ms = latency::e2e(timeline, outcome);
        let icl_ms = chunks::inter_chunk_gaps(&chunks);
        let stream = StreamFigures::of(timeline, &chunks, &icl_ms, &mut notes);
        let tokens = tokens::TokenFacts::from_timeline(timeline, &chunks);
        let tpot_ms = tokens.tpot(timeline, outcome);
        let clock_offset = clock_offset_or_note(timeline, &mut notes);
        if hidden_during_request(timeline) {
            notes.push(
                "page was hidden during the request: browsers throttle timers and rendering \
                 in hidden pages"
                    .into(),
            );
        }
        notes.extend(network::notes(timeline));
        notes.extend(audio::notes(timeline));
        let turn = turn::breakdown(timeline);
        notes.extend(turn::notes(turn.as_ref()));
        if timeline.server.usage.is_none() && tokens.output.is_some() {
            notes.push("no usage from the server: token counts are estimates".into());
        }

        Ok(RequestMetrics {
            outcome,
            ttft_ms: latency::at(timeline, Milestone::FirstToken),
            ttft_visible_ms: latency::at(timeline, Milestone::FirstVisibleToken),
            e2e_ms,
            output_tokens: tokens.output,
            output_tokens_per_s: tokens::output_rate(tokens.output, e2e_ms),
            decode_tokens_per_s: tokens::decode_rate(tpot_ms),
            tpot_ms,
            engine_hop_ms: network::engine_hop(timeline),
            request_queued_ms: network::request_queued(timeline),
            render_lag_ms: render::render_lag(timeline),
            dom_lag_ms: render::dom_lag(timeline),
            ttfa_ms: audio::ttfa(timeline, Milestone::RequestStart),
            ttfa_from_tts_ms: audio::ttfa(timeline, Milestone::TtsRequest),
            rtf: audio::rtf(timeline),
            audio_arrival_rate: audio::arrival_rate(timeline),
            audio_behind_text_ms: audio::behind_text(timeline),
            underruns: audio::underruns(timeline),
            handoff: timeline.handoff.as_ref().map(|record| {
                handoff::verdict(record, timeline.milestones.get(Milestone::LastToken))
            }),
            voice_to_voice_ms: turn::voice_to_voice(turn.as_ref()),
            interrupt_ms: turn::interrupt(timeline),
            submit_delay_ms: latency::submit_delay(timeline),
            turn,
            stalls: stream.stalls,
            icl_ms,
            icl_summary: stream.icl_summary,
            buffered: stream.buffered,
            hidden_reasoning: tokens.hidden_reasoning,
            gaps: gap::gaps(timeline),
            clock_offset,
            notes,
        })
    }

    /// The per-request scalar metrics under their report names ([`SCALARS`], in that
    /// order). The statistics of a batch are taken over exactly these, plus the pooled
    /// `icl_ms` and the `gap.*` entries.
    pub fn scalars(&self) -> Vec<(&'static str, Option<f64>)> {
        SCALARS.iter().map(|s| (s.name, (s.value)(self))).collect()
    }

    /// A metric by its report name (`scalars` names, or `gap.<milestone>_ms`).
    pub fn scalar(&self, name: &str) -> Option<f64> {
        if let Some(milestone) = name
            .strip_prefix("gap.")
            .and_then(|n| n.strip_suffix("_ms"))
        {
            return self
                .gaps
                .iter()
                .find(|g| g.milestone.as_str() == milestone)
                .map(|g| g.gap_ms);
        }
        self.scalars()
            .into_iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v)
    }
}

/// The figures of the whole chunk stream: stalls, the gaps' summary and the buffering
/// verdict.
struct StreamFigures {
    stalls: Option<Stalls>,
    icl_summary: Option<Summary>,
    buffered: Buffered,
}

impl StreamFigures {
    /// From the kept chunks, or from the timeline's chunk summary when it has one: a
    /// summarized series has the figures of its whole stream in its summary, where the
    /// kept chunks alone would give only the stream's beginning. Says in `notes` when
    /// the series was summarized, since `icl_ms` then lists only the kept chunks' gaps.
    fn of(timeline: &Timeline, chunks: &[Chunk], icl_ms: &[f64], notes: &mut Vec<String>) -> Self {
        let Some(s) = timeline.chunk_summary.as_ref() else {
            return StreamFigures {
                stalls: chunks::stalls(icl_ms),
                icl_summary: None,
                buffered: buffered::verdict(chunks),
            };
        };
        let kept_visible: u64 = chunks.iter().map(|c| u64::from(c.visible_tokens)).sum();
        notes.push(format!(
            "chunk series summarized after {} chunks ({} more): icl_ms lists the \
             gaps between the kept chunks, icl_summary all of them",
            chunks.len(),
            s.chunks
        ));
        if s.burst_lower_bound {
            notes.push(
                "more visible-token chunks in 100 ms than the burst window holds: \
                 burst_share is a lower bound"
                    .into(),
            );
        }
        StreamFigures {
            stalls: s.gaps.stalls(),
            icl_summary: s.gaps.summary(),
            buffered: buffered::of_counts(s.burst_visible_tokens, kept_visible + s.visible_tokens),
        }
    }
}

/// The server-to-client clock offset; a report still stands without it, so a failed
/// estimate becomes a note rather than an error.
fn clock_offset_or_note(timeline: &Timeline, notes: &mut Vec<String>) -> Option<ClockOffset> {
    match gap::clock_offset(timeline) {
        Ok(offset) => offset,
        Err(e) => {
            notes.push(format!("clock offset not estimated: {e}"));
            None
        }
    }
}

/// Was the page hidden before the request's last milestone? Browsers throttle timers and
/// rendering in hidden pages, so every figure may be late.
fn hidden_during_request(timeline: &Timeline) -> bool {
    let last_milestone_ms = timeline
        .milestones
        .iter()
        .map(|(_, t)| t)
        .fold(0.0, f64::max);
    timeline.hidden_before(last_milestone_ms)
}

#[cfg(test)]
mod tests;
