//! Voice results a run merges into its timeline before its metrics: the audio side of a
//! TTS stream (a player's or tap's `AudioMeasurement`), an LLM → TTS handoff record and
//! a voice turn's measurement (`TurnMeasurement`).
//!
//! The browser produces them beside the LLM stream; the analysis (wherever it runs)
//! merges them here, so the rule for what a voice result adds to a run exists once.

use serde::{Deserialize, Serialize};

use crate::handoff::HandoffRecord;
use crate::timeline::{Anomaly, AudioOutMethod, AudioSeries, Milestones, Timeline};
use crate::turn::TurnRecord;

/// Longest a run waits for included voice results after its stream ends: TTS of the first
/// sentence plus device start, with room for a slow engine.
pub const TIMEOUT_MS: f64 = 15_000.0;

/// The audio side of one request, ready to merge into its timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AudioMeasurement {
    /// `tts_request`, `first_audio_byte`, `first_audio_scheduled`, `first_audio_out`, ms
    /// since `request_start`.
    pub milestones: Milestones,
    pub audio: AudioSeries,
    /// How `first_audio_out` was timed, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_out_method: Option<AudioOutMethod>,
    /// What limited the measurement (no worklet, decode trouble, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl AudioMeasurement {
    /// Adds the audio milestones, series and method to `timeline` (same `request_start`).
    pub fn apply_to(&self, timeline: &mut Timeline) {
        for (m, at) in self.milestones.iter() {
            timeline.milestones.set(m, at);
        }
        timeline.audio = Some(self.audio.clone());
        if self.audio_out_method.is_some() {
            timeline.audio_out_method = self.audio_out_method;
        }
    }
}

/// What a handoff result (`VoiceHandoff.result()`) adds to a run: its record and the
/// milestones it set (`first_sentence`, `tts_request`). Its verdict is derived again
/// from the record by the metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoffResult {
    pub record: HandoffRecord,
    pub milestones: Milestones,
}

/// A turn's measurement as the page hands it over (`VoiceTurn.result()`), relative to
/// the LLM request's `request_start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnMeasurement {
    /// `speech_start`, `speech_end`, `stt_first_partial`, `stt_final`.
    pub milestones: Milestones,
    pub turn: TurnRecord,
    /// What limited the measurement (no worklet, a transcript that never came, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl TurnMeasurement {
    /// Adds the turn's milestones and record to `timeline`; notes become anomalies.
    pub fn apply_to(self, timeline: &mut Timeline) {
        for (m, at) in self.milestones.iter() {
            // Only the turn's own milestones: a result cannot move the LLM's.
            if m.precedes_request() {
                timeline.milestones.set(m, at);
            }
        }
        timeline.turn = Some(self.turn);
        for note in self.notes {
            timeline.anomalies.push(Anomaly {
                at_ms: 0.0,
                class: "turn_note".into(),
                detail: note,
            });
        }
    }
}

/// A voice result a run waits for before it reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoicePart {
    /// An [`AudioMeasurement`], relative to the run's `request_start`.
    Audio,
    /// A [`HandoffResult`].
    Handoff,
    /// A [`TurnMeasurement`]: the speech and transcription before the request.
    Turn,
}

impl VoicePart {
    pub fn as_str(self) -> &'static str {
        match self {
            VoicePart::Audio => "audio",
            VoicePart::Handoff => "handoff",
            VoicePart::Turn => "turn",
        }
    }

    /// `"audio"`, `"handoff"` or `"turn"`, as the probe names them.
    pub fn from_name(name: &str) -> Result<VoicePart, String> {
        match name {
            "audio" => Ok(VoicePart::Audio),
            "handoff" => Ok(VoicePart::Handoff),
            "turn" => Ok(VoicePart::Turn),
            other => Err(format!(
                "unknown voice part `{other}` (audio, handoff, turn)"
            )),
        }
    }
}

/// One voice result as it reached the analysis.
#[derive(Debug, Clone, PartialEq)]
pub enum VoiceResult {
    Audio(AudioMeasurement),
    Handoff(HandoffResult),
    Turn(TurnMeasurement),
    /// It did not arrive within [`TIMEOUT_MS`].
    Missing(VoicePart),
    /// It arrived but could not be read.
    Unreadable(VoicePart, String),
}

impl VoiceResult {
    /// Merges the result into `timeline`; one that did not arrive or did not parse
    /// becomes an anomaly, not a lost report.
    pub fn apply_to(self, timeline: &mut Timeline) {
        let anomaly = |class: &str, detail: String| Anomaly {
            at_ms: 0.0,
            class: class.into(),
            detail,
        };
        match self {
            VoiceResult::Audio(m) => {
                m.apply_to(timeline);
                for note in m.notes {
                    timeline.anomalies.push(anomaly("audio_note", note));
                }
            }
            VoiceResult::Handoff(h) => {
                for (m, at) in h.milestones.iter() {
                    timeline.milestones.set(m, at);
                }
                timeline.handoff = Some(h.record);
            }
            VoiceResult::Turn(t) => t.apply_to(timeline),
            VoiceResult::Missing(part) => timeline.anomalies.push(anomaly(
                "voice_missing",
                // Decimal, not `{}` on the f64: that links core's float formatter into
                // every wasm that merges voice results (9 KB gzip).
                format!(
                    "{part:?} result did not arrive within {} ms",
                    crate::decode::decimal::Decimal(TIMEOUT_MS)
                ),
            )),
            VoiceResult::Unreadable(part, e) => timeline
                .anomalies
                .push(anomaly("voice_unreadable", format!("{part:?} result: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Milestone;

    #[test]
    fn audio_and_missing_results_land_in_the_timeline() {
        let mut t = Timeline::default();
        let mut m = AudioMeasurement::default();
        m.milestones.set(Milestone::FirstAudioOut, 812.5);
        m.notes.push("no worklet".into());
        VoiceResult::Audio(m).apply_to(&mut t);
        VoiceResult::Missing(VoicePart::Handoff).apply_to(&mut t);
        assert_eq!(
            t.anomalies[1].detail,
            "Handoff result did not arrive within 15000 ms"
        );
        assert_eq!(t.milestones.get(Milestone::FirstAudioOut), Some(812.5));
        assert!(t.audio.is_some());
        let classes: Vec<&str> = t.anomalies.iter().map(|a| a.class.as_str()).collect();
        assert_eq!(classes, ["audio_note", "voice_missing"]);
        assert_eq!(VoicePart::from_name("audio"), Ok(VoicePart::Audio));
        assert!(VoicePart::from_name("video").unwrap_err().contains("video"));
    }

    #[test]
    fn a_turn_adds_only_its_own_milestones_and_its_notes() {
        let mut t = Timeline::default();
        t.milestones.set(Milestone::FirstToken, 300.0);
        let mut m = TurnMeasurement::default();
        m.milestones.set(Milestone::SpeechStart, -2000.0);
        m.milestones.set(Milestone::SpeechEnd, -900.0);
        m.milestones.set(Milestone::FirstToken, 5.0);
        m.turn.speech_end_detected_ms = Some(-400.0);
        m.notes.push("no streamed transcript".into());
        m.apply_to(&mut t);
        assert_eq!(t.milestones.get(Milestone::SpeechEnd), Some(-900.0));
        assert_eq!(t.milestones.get(Milestone::FirstToken), Some(300.0));
        assert_eq!(
            t.turn.as_ref().and_then(|r| r.speech_end_detected_ms),
            Some(-400.0)
        );
        assert_eq!(t.anomalies[0].class, "turn_note");
        assert!(t.validate().is_ok());
    }
}
