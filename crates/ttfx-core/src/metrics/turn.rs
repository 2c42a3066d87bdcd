//! Voice-turn family: `voice_to_voice_ms`, its stages, and `interrupt_ms`.
//!
//! The silence a user hears runs from the end of their own speech (`speech_end`) to the
//! first sample of the reply out of the speaker (`first_audio_out`). It is cut at the
//! moments between them into contiguous stages that sum to it exactly:
//!
//! speech_end → (endpointing) → speech_end_detected → (transcription) → stt_final →
//! (llm_request) → request_start → (llm_first_token) → first_visible_token →
//! (first_sentence) → tts_request → (tts_first_byte) → first_audio_byte → (playout) →
//! first_audio_out
//!
//! An app may overlap stages (send the LLM request on a partial transcript, before
//! `stt_final`): a point earlier than the one before it counts as that one, so the
//! overlapped stage is 0 and the sum still holds. A missing point joins its two stages:
//! the later one runs from the last point present, the missing one is absent.

use serde::{Deserialize, Serialize};

use super::Measured;
use crate::milestone::Milestone;
use crate::timeline::Timeline;

/// One stage of a voice turn, named for what the user is waiting on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The detector's hangover: the speech is over but nobody knows yet.
    Endpointing,
    /// Upload and transcription, to the final transcript.
    Transcription,
    /// The app's own hop from the transcript to the LLM request.
    LlmRequest,
    /// The model's time to its first visible token.
    LlmFirstToken,
    /// Waiting for a sentence to speak and handing it to TTS.
    FirstSentence,
    /// TTS's time to its first audio byte.
    TtsFirstByte,
    /// Decoding, scheduling and the device's output latency.
    Playout,
}

/// Where each stage ends (it starts where the previous one ended; the first at
/// `speech_end`), in order.
const STAGES: [(Stage, Point); 7] = [
    (Stage::Endpointing, Point::SpeechEndDetected),
    (Stage::Transcription, Point::At(Milestone::SttFinal)),
    (Stage::LlmRequest, Point::At(Milestone::RequestStart)),
    (
        Stage::LlmFirstToken,
        Point::At(Milestone::FirstVisibleToken),
    ),
    (Stage::FirstSentence, Point::At(Milestone::TtsRequest)),
    (Stage::TtsFirstByte, Point::At(Milestone::FirstAudioByte)),
    (Stage::Playout, Point::At(Milestone::FirstAudioOut)),
];

impl Stage {
    /// Every stage, in the order the user waits through them.
    pub const ALL: [Stage; 7] = {
        let mut all = [Stage::Endpointing; 7];
        let mut i = 0;
        while i < 7 {
            all[i] = STAGES[i].0;
            i += 1;
        }
        all
    };

    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Endpointing => "endpointing",
            Stage::Transcription => "transcription",
            Stage::LlmRequest => "llm_request",
            Stage::LlmFirstToken => "llm_first_token",
            Stage::FirstSentence => "first_sentence",
            Stage::TtsFirstByte => "tts_first_byte",
            Stage::Playout => "playout",
        }
    }

    /// The name of the moment that ends it, as in the report.
    pub const fn ends_at(self) -> &'static str {
        match STAGES[self as usize].1 {
            Point::SpeechEndDetected => "turn.speech_end_detected_ms",
            Point::At(m) => m.as_str(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Point {
    SpeechEndDetected,
    At(Milestone),
}

impl Point {
    fn time(self, t: &Timeline) -> Option<f64> {
        match self {
            Point::SpeechEndDetected => t.turn.as_ref()?.speech_end_detected_ms,
            Point::At(m) => t.milestones.get(m),
        }
    }
}

/// One stage's length and its share of `voice_to_voice_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StageTime {
    pub stage: Stage,
    /// Absent when the moment that ends it was not observed.
    pub ms: Option<f64>,
    /// `ms / voice_to_voice_ms`, when both are known.
    pub share: Option<f64>,
}

/// A turn, stage by stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnBreakdown {
    /// `first_audio_out − speech_end`.
    pub voice_to_voice_ms: Option<f64>,
    pub stages: Vec<StageTime>,
    /// The turn produced no audio: the first stage whose end never came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_in: Option<Stage>,
    /// Stages that overlapped (their end came before their start), so they count as 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlapped: Vec<Stage>,
}

impl TurnBreakdown {
    /// The length of `stage`, when it was measured.
    pub fn stage_ms(&self, stage: Stage) -> Option<f64> {
        self.stages.iter().find(|s| s.stage == stage)?.ms
    }
}

/// The breakdown, for a timeline that has a turn (`speech_end`); else `None`.
pub fn breakdown(t: &Timeline) -> Option<TurnBreakdown> {
    let speech_end = t.milestones.get(Milestone::SpeechEnd)?;
    let end = t.milestones.get(Milestone::FirstAudioOut);
    let voice_to_voice_ms = end.map(|e| e - speech_end);
    let mut last = speech_end;
    let mut stages = Vec::with_capacity(STAGES.len());
    // Without audio, the turn stopped in the stage after the last moment it reached (a
    // moment missing before that one was not measured, not where it stopped).
    let stopped_in = match end {
        Some(_) => None,
        None => {
            let reached = STAGES.iter().rposition(|(_, p)| p.time(t).is_some());
            Some(STAGES[reached.map_or(0, |i| i + 1)].0)
        }
    };
    let mut overlapped = Vec::new();
    for (stage, point) in STAGES {
        let ms = point.time(t).map(|at| {
            if at < last {
                overlapped.push(stage);
            }
            let at = at.max(last);
            let ms = at - last;
            last = at;
            ms
        });
        let share = match (ms, voice_to_voice_ms) {
            (Some(ms), Some(total)) if total > 0.0 => Some(ms / total),
            _ => None,
        };
        stages.push(StageTime { stage, ms, share });
    }
    Some(TurnBreakdown {
        voice_to_voice_ms,
        stages,
        stopped_in,
        overlapped,
    })
}

/// `voice_to_voice_ms`, as a measured value.
pub fn voice_to_voice(b: Option<&TurnBreakdown>) -> Option<Measured> {
    b?.voice_to_voice_ms.map(Measured::client)
}

/// `interrupt_ms`: from the barge-in's `speech_start` to the reply's last sample.
pub fn interrupt(t: &Timeline) -> Option<Measured> {
    let b = t.turn.as_ref()?.barge_in?;
    Some(Measured::client(b.playback_stopped_ms - b.speech_start_ms))
}

/// What a reader should know about the turn.
pub fn notes(b: Option<&TurnBreakdown>) -> Vec<String> {
    let Some(b) = b else { return Vec::new() };
    let mut notes = Vec::new();
    if let Some(stage) = b.stopped_in {
        notes.push(format!(
            "voice turn produced no audio: it stopped in {} ({} never came)",
            stage.as_str(),
            stage.ends_at()
        ));
    }
    for stage in &b.overlapped {
        notes.push(format!(
            "voice turn: {} ended before the stage before it (the app overlapped them): \
             counted as 0",
            stage.as_str()
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestMetrics;
    use crate::turn::{BargeIn, TurnRecord};

    /// A turn as a page reports it: the user stops talking 1.5 s before the LLM
    /// request, the detector decides 500 ms later, the transcript takes 900 ms.
    fn turn() -> Timeline {
        let mut t = Timeline::default();
        for (m, at) in [
            (Milestone::SpeechStart, -3000.0),
            (Milestone::SpeechEnd, -1500.0),
            (Milestone::SttFirstPartial, -700.0),
            (Milestone::SttFinal, -100.0),
            (Milestone::RequestStart, 0.0),
            (Milestone::FirstToken, 350.0),
            (Milestone::FirstVisibleToken, 350.0),
            (Milestone::TtsRequest, 420.0),
            (Milestone::FirstAudioByte, 600.0),
            (Milestone::FirstAudioOut, 650.0),
        ] {
            t.milestones.set(m, at);
        }
        t.turn = Some(TurnRecord {
            speech_end_detected_ms: Some(-1000.0),
            ..TurnRecord::default()
        });
        t
    }

    #[test]
    fn stages_sum_to_voice_to_voice_and_carry_their_share() {
        let m = RequestMetrics::compute(&turn()).unwrap();
        assert_eq!(m.voice_to_voice_ms.map(|v| v.value), Some(2150.0));
        let b = m.turn.clone().unwrap();
        let ms: Vec<f64> = b.stages.iter().map(|s| s.ms.unwrap()).collect();
        assert_eq!(ms, [500.0, 900.0, 100.0, 350.0, 70.0, 180.0, 50.0]);
        assert_eq!(ms.iter().sum::<f64>(), 2150.0);
        let shares: f64 = b.stages.iter().map(|s| s.share.unwrap()).sum();
        assert!((shares - 1.0).abs() < 1e-12, "{shares}");
        assert_eq!(b.stopped_in, None);
        assert_eq!(m.scalar("stage_transcription_ms"), Some(900.0));
        assert_eq!(m.scalar("voice_to_voice_ms"), Some(2150.0));
    }

    #[test]
    fn a_turn_without_audio_says_where_it_stopped() {
        let mut t = turn();
        for m in [
            Milestone::TtsRequest,
            Milestone::FirstAudioByte,
            Milestone::FirstAudioOut,
        ] {
            t.milestones.remove(m);
        }
        let m = RequestMetrics::compute(&t).unwrap();
        let b = m.turn.clone().unwrap();
        assert_eq!(m.voice_to_voice_ms, None);
        assert_eq!(b.stopped_in, Some(Stage::FirstSentence));
        assert_eq!(b.stage_ms(Stage::LlmFirstToken), Some(350.0));
        assert!(b.stages.iter().all(|s| s.share.is_none()));
        assert!(
            m.notes
                .iter()
                .any(|n| n.contains("stopped in first_sentence (tts_request never came)")),
            "{:?}",
            m.notes
        );
        // No transcript and nothing after it: it stopped in transcription.
        let mut t = turn();
        for m in Milestone::ALL {
            if m > Milestone::SpeechEnd && m != Milestone::RequestStart {
                t.milestones.remove(m);
            }
        }
        t.milestones.remove(Milestone::RequestStart);
        let b = RequestMetrics::compute(&t).unwrap().turn.unwrap();
        assert_eq!(b.stopped_in, Some(Stage::Transcription));
        // A transcript the page did not measure, but a reply with no audio: it stopped
        // after the last moment it reached, not at the unmeasured one.
        let mut t = turn();
        for m in [
            Milestone::SttFinal,
            Milestone::SttFirstPartial,
            Milestone::FirstAudioOut,
        ] {
            t.milestones.remove(m);
        }
        let b = RequestMetrics::compute(&t).unwrap().turn.unwrap();
        assert_eq!(b.stopped_in, Some(Stage::Playout));
    }

    #[test]
    fn overlapped_and_missing_stages_keep_the_sum() {
        // The app sent the LLM request on a partial transcript, 100 ms before the final.
        let mut t = turn();
        t.milestones.set(Milestone::SttFinal, 100.0);
        t.milestones.set(Milestone::SttFirstPartial, -700.0);
        let m = RequestMetrics::compute(&t).unwrap();
        let b = m.turn.clone().unwrap();
        assert_eq!(b.overlapped, [Stage::LlmRequest]);
        assert_eq!(b.stage_ms(Stage::LlmRequest), Some(0.0));
        assert_eq!(b.stage_ms(Stage::LlmFirstToken), Some(250.0));
        // No detector decision (an app's own VAD): transcription runs from speech_end.
        let mut t = turn();
        t.turn = None;
        let b = RequestMetrics::compute(&t).unwrap().turn.unwrap();
        assert_eq!(b.stage_ms(Stage::Endpointing), None);
        assert_eq!(b.stage_ms(Stage::Transcription), Some(1400.0));
        let sum: f64 = b.stages.iter().filter_map(|s| s.ms).sum();
        assert_eq!(Some(sum), b.voice_to_voice_ms);
    }

    #[test]
    fn a_barge_in_gives_interrupt_ms_and_a_plain_request_no_turn() {
        let mut t = turn();
        t.turn.as_mut().unwrap().barge_in = Some(BargeIn {
            speech_start_ms: 1200.0,
            playback_stopped_ms: 1460.5,
        });
        let m = RequestMetrics::compute(&t).unwrap();
        assert_eq!(m.interrupt_ms.map(|v| v.value), Some(260.5));
        let mut plain = Timeline::default();
        plain.milestones.set(Milestone::FirstToken, 10.0);
        let m = RequestMetrics::compute(&plain).unwrap();
        assert!(m.turn.is_none() && m.voice_to_voice_ms.is_none());
        assert!(
            !serde_json::to_string(&m)
                .unwrap()
                .contains("voice_to_voice")
        );
    }

    #[test]
    fn turn_milestones_may_precede_the_request_but_keep_their_order() {
        let mut t = turn();
        assert!(t.validate().is_ok());
        t.milestones.set(Milestone::SpeechEnd, -3100.0);
        assert!(t.validate().unwrap_err().to_string().contains("speech_end"));
        let mut t = turn();
        t.milestones.set(Milestone::FirstToken, -1.0);
        assert!(
            t.validate().is_err(),
            "only the turn's milestones may be negative"
        );
        let mut t = turn();
        t.turn.as_mut().unwrap().stt_request_ms = Some(f64::NAN);
        assert!(t.validate().is_err());
    }
}
