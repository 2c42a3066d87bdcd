//! Voice results a run includes in its report: the audio measurement of a `TtsPlayer` or
//! `AudioTap` and the record of a `VoiceHandoff`. Only in builds with the `voice` feature:
//! they are read back from the JS objects the audio API returned with serde-wasm-bindgen,
//! which the text-only probe does not carry.

use ttfx_core::timeline::{Anomaly, Timeline};
use wasm_bindgen::JsValue;

/// A voice result a run waits for before it reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoicePart {
    /// An `AudioMeasurement` (TtsPlayer/AudioTap `result()`), relative to this run's
    /// `request_start`.
    Audio,
    /// A `VoiceHandoff.result()` object.
    Handoff,
}

/// Longest a run waits for included voice results after its stream ends: TTS of the first
/// sentence plus device start, with room for a slow engine.
pub const TIMEOUT_MS: f64 = 15_000.0;

/// Merges a voice result (a plain object from the audio API) into the timeline; one that
/// did not arrive or does not parse becomes an anomaly, not a lost report.
pub fn merge(timeline: &mut Timeline, part: VoicePart, value: &JsValue) {
    if value.is_null() || value.is_undefined() {
        timeline.anomalies.push(Anomaly {
            at_ms: 0.0,
            class: "voice_missing".into(),
            detail: format!("{part:?} result did not arrive within {TIMEOUT_MS} ms"),
        });
        return;
    }
    let merged = match part {
        VoicePart::Audio => serde_wasm_bindgen::from_value::<crate::audio::AudioMeasurement>(
            value.clone(),
        )
        .map(|m| {
            m.apply_to(timeline);
            for note in m.notes {
                timeline.anomalies.push(Anomaly {
                    at_ms: 0.0,
                    class: "audio_note".into(),
                    detail: note,
                });
            }
        }),
        VoicePart::Handoff => {
            #[derive(serde::Deserialize)]
            struct HandoffResult {
                record: ttfx_core::handoff::HandoffRecord,
                milestones: ttfx_core::timeline::Milestones,
            }
            serde_wasm_bindgen::from_value::<HandoffResult>(value.clone()).map(|h| {
                for (m, at) in h.milestones.iter() {
                    timeline.milestones.set(m, at);
                }
                timeline.handoff = Some(h.record);
            })
        }
    };
    if let Err(e) = merged {
        timeline.anomalies.push(Anomaly {
            at_ms: 0.0,
            class: "voice_unreadable".into(),
            detail: format!("{part:?} result: {e}"),
        });
    }
}
