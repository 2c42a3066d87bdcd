//! A voice turn: what the page's microphone and the app's transcription add to a run.
//!
//! The user speaks, stops, their audio is transcribed, the transcript goes to the LLM,
//! and the reply is spoken. The LLM request is the run's `request_start`, so the turn's
//! first moments (its speech and transcription) come before it and are negative. The
//! milestones `speech_start`, `speech_end`, `stt_first_partial` and `stt_final` hold
//! them; this record holds what a milestone cannot: when the voice-activity detector
//! decided the speech was over, when the transcription request left, the detector's
//! settings, and a barge-in. The stage breakdown is in `metrics::turn`.

use serde::{Deserialize, Serialize};

use crate::timeline::{Anomaly, Milestones, Timeline};

/// What a turn adds to its run's timeline beside its milestones. Times are ms since the
/// run's `request_start`, negative before it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// When the detector decided the speech had ended: `speech_end` plus its hangover
    /// (and one frame). Nothing downstream can start earlier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speech_end_detected_ms: Option<f64>,
    /// The transcription request left (the app's upload of the speech).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stt_request_ms: Option<f64>,
    /// The user spoke over the reply and the app stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barge_in: Option<BargeIn>,
    /// The detector's rule, so a reader knows what `speech_end` means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vad: Option<VadSettings>,
}

/// A barge-in: the user started speaking while the reply played, and the reply stopped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BargeIn {
    /// The detector's `speech_start` of the speech that interrupted.
    pub speech_start_ms: f64,
    /// When the reply's last sample left the speaker: the stop's audio-clock time
    /// mapped to the page clock, output latency included.
    pub playback_stopped_ms: f64,
}

/// The voice-activity detector's rule (docs/voice.md): a frame is speech when its RMS
/// level is at or above `threshold_dbfs`; speech starts after `min_speech_ms` of speech
/// frames and ends at its last speech frame once `hangover_ms` of non-speech has
/// followed it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VadSettings {
    pub threshold_dbfs: f64,
    pub hangover_ms: f64,
    pub min_speech_ms: f64,
    /// Length of one analysed frame.
    pub frame_ms: f64,
    /// The capture latency subtracted from every frame time, when the track reports one
    /// (`MediaStreamTrack.getSettings().latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_latency_ms: Option<f64>,
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

impl TurnRecord {
    /// Its times, named as in the report, for the timeline's finiteness check.
    pub(crate) fn times(&self) -> Vec<(String, f64)> {
        let mut times = Vec::new();
        if let Some(at) = self.speech_end_detected_ms {
            times.push(("turn.speech_end_detected_ms".into(), at));
        }
        if let Some(at) = self.stt_request_ms {
            times.push(("turn.stt_request_ms".into(), at));
        }
        if let Some(b) = self.barge_in {
            times.push(("turn.barge_in.speech_start_ms".into(), b.speech_start_ms));
            times.push((
                "turn.barge_in.playback_stopped_ms".into(),
                b.playback_stopped_ms,
            ));
        }
        times
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Milestone;

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
