//! Audio family: time to first audio, real-time factor, underruns.

use serde::{Deserialize, Serialize};

use super::{Measured, Source};
use crate::milestone::Milestone;
use crate::timeline::Timeline;

/// `ttfa` = first_audio_out − `from` (`request_start` for the user's wait, `tts_request`
/// for the TTS stage alone), labelled with how the audible moment was timed.
pub fn ttfa(t: &Timeline, from: Milestone) -> Option<Measured> {
    let out = t.milestones.get(Milestone::FirstAudioOut)?;
    let start = match from {
        // request_start is the clock's origin; it is 0 whether or not it was recorded.
        Milestone::RequestStart => 0.0,
        other => t.milestones.get(other)?,
    };
    let source = t
        .audio_out_method
        .map_or(Source::ScheduledPlusLatency, Source::from);
    Some(Measured {
        value: out - start,
        source,
    })
}

/// `rtf` = (last audio byte − tts_request) / audio received: wall-clock seconds the TTS
/// stream took per second of audio it delivered. Below 1 the stream stays ahead of
/// playback; above 1 playback must underrun. The first-audio wait is included, so a short
/// clip with a slow start reads high: that is what the listener lives through.
pub fn rtf(t: &Timeline) -> Option<Measured> {
    let audio = t.audio.as_ref()?;
    let start = t.milestones.get(Milestone::TtsRequest)?;
    (audio.audio_ms > 0.0)
        .then(|| Measured::client((audio.last_byte_at_ms - start) / audio.audio_ms))
}

/// Playback underruns: how often playback caught up with the stream, and the silence
/// inserted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Underruns {
    pub count: u32,
    pub silence_ms: f64,
}

pub fn underruns(t: &Timeline) -> Option<Underruns> {
    let audio = t.audio.as_ref()?;
    Some(Underruns {
        count: audio.underruns.len() as u32,
        // Folded from +0.0: an empty f64 `sum()` is -0.0, which reports print as "-0.0".
        silence_ms: audio
            .underruns
            .iter()
            .fold(0.0, |total, u| total + u.silence_ms),
    })
}
