//! A voice turn: what the page's microphone and the app's transcription add to a run.
//!
//! The user speaks, stops, their audio is transcribed, the transcript goes to the LLM,
//! and the reply is spoken. The LLM request is the run's `request_start`, so the turn's
//! first moments (its speech and transcription) come before it and are negative. The
//! milestones `speech_start`, `speech_end`, `stt_first_partial` and `stt_final` hold
//! them; this record holds what a milestone cannot: when the voice-activity detector
//! decided the speech was over, when the transcription request left, the detector's
//! settings, and a barge-in. The stage breakdown is in `metrics::turn`; what a page hands
//! over for a turn, and how it joins the run, is `voice_result::TurnMeasurement`.

use serde::{Deserialize, Serialize};

/// What a turn adds to its run's timeline beside its milestones. Times are ms since the
/// run's `request_start`, negative before it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// When the detector decided the speech had ended: `speech_end` plus its hangover,
    /// plus the decision's way from the audio thread to the page. Nothing downstream can
    /// start earlier.
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

/// The voice-activity detector's rule (docs/probe.md, "Voice turns"): a frame is speech when its RMS
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

/// The detector's defaults (`VoiceTurn` options `thresholdDb`, `hangoverMs`,
/// `minSpeechMs`): a quiet room's noise floor sits well under −45 dBFS RMS and speech at a
/// normal distance well over it; 500 ms of silence separates utterances rather than words
/// (pauses inside a sentence are shorter); 60 ms ignores clicks and taps.
pub const DEFAULT_THRESHOLD_DBFS: f64 = -45.0;
pub const DEFAULT_HANGOVER_MS: f64 = 500.0;
pub const DEFAULT_MIN_SPEECH_MS: f64 = 60.0;

/// The detector's rule in whole frames at one sample rate, as its AudioWorklet processor
/// applies it (it counts frames, so the arithmetic is done once, here).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VadFrames {
    /// Samples per frame: 10 ms, rounded to a whole sample.
    pub frame_samples: u32,
    /// Consecutive speech frames before `speech_start` is decided (at least 1).
    pub min_speech_frames: u32,
    /// Consecutive non-speech frames after the last speech frame before `speech_end` is
    /// decided (at least 1: the end of speech is only known from a frame without it).
    pub hangover_frames: u32,
    /// A frame is speech when its RMS level (channels mixed, full scale 1.0) in dBFS is
    /// at or above this: its mean square at or above [`threshold_mean_square`]
    /// (the processor computes that with JS's `Math.pow`: Rust's `powf` would link
    /// libm's pow, 2 KB, into the probe's wasm).
    ///
    /// [`threshold_mean_square`]: VadFrames::threshold_mean_square
    pub threshold_dbfs: f64,
}

impl VadFrames {
    /// 10^(threshold_dbfs / 10): RMS ≥ 10^(dB / 20) squared.
    pub fn threshold_mean_square(&self) -> f64 {
        10f64.powf(self.threshold_dbfs / 10.0)
    }
}

impl VadSettings {
    /// The rule for the options asked for at `sample_rate`, and the settings as applied
    /// (lengths rounded up to whole frames, so the record says what the detector did).
    pub fn at_rate(
        threshold_dbfs: f64,
        hangover_ms: f64,
        min_speech_ms: f64,
        sample_rate: f64,
        input_latency_ms: Option<f64>,
    ) -> (VadSettings, VadFrames) {
        let frame_samples = (sample_rate * 0.01).round().max(1.0);
        let frame_ms = frame_samples / sample_rate.max(1.0) * 1000.0;
        // Whole frames covering at least the length asked for; the small slack keeps
        // 60 ms / 10 ms at 6 frames when the division lands a hair above 6.
        let frames = |ms: f64| ((ms / frame_ms) - 1e-9).ceil().max(1.0);
        let (min_speech, hangover) = (frames(min_speech_ms), frames(hangover_ms));
        let settings = VadSettings {
            threshold_dbfs,
            hangover_ms: hangover * frame_ms,
            min_speech_ms: min_speech * frame_ms,
            frame_ms,
            input_latency_ms,
        };
        let rule = VadFrames {
            frame_samples: frame_samples as u32,
            min_speech_frames: min_speech as u32,
            hangover_frames: hangover as u32,
            threshold_dbfs,
        };
        (settings, rule)
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

    #[test]
    fn the_detector_rule_is_whole_ten_ms_frames() {
        let (s, r) = VadSettings::at_rate(-45.0, 500.0, 60.0, 48_000.0, Some(10.0));
        assert_eq!(
            (r.frame_samples, r.min_speech_frames, r.hangover_frames),
            (480, 6, 50)
        );
        assert_eq!(
            (s.frame_ms, s.hangover_ms, s.min_speech_ms),
            (10.0, 500.0, 60.0)
        );
        assert_eq!(s.input_latency_ms, Some(10.0));
        // −45 dBFS RMS: mean square 10^−4.5; a sine of RMS 0.1 (−20 dBFS) is above it.
        assert!((r.threshold_mean_square() - 10f64.powf(-4.5)).abs() < 1e-15);
        assert!(0.1f64 * 0.1 >= r.threshold_mean_square());
        // 44.1 kHz: 441 samples is exactly 10 ms. 22.05 kHz: 220.5 rounds to 221
        // (10.02 ms), and 60 ms needs 6 of them (5.99 → 6), recorded as applied.
        assert_eq!(
            VadSettings::at_rate(-45.0, 500.0, 60.0, 44_100.0, None)
                .1
                .frame_samples,
            441
        );
        let (s, r) = VadSettings::at_rate(-45.0, 500.0, 60.0, 22_050.0, None);
        assert_eq!(
            (r.frame_samples, r.min_speech_frames, r.hangover_frames),
            (221, 6, 50)
        );
        assert!((s.min_speech_ms - 6.0 * 221.0 / 22.05).abs() < 1e-9);
        // Lengths round up to whole frames, and never below one.
        let (s, r) = VadSettings::at_rate(-30.0, 0.0, 65.0, 48_000.0, None);
        assert_eq!((r.min_speech_frames, r.hangover_frames), (7, 1));
        assert_eq!((s.min_speech_ms, s.hangover_ms), (70.0, 10.0));
    }
}
