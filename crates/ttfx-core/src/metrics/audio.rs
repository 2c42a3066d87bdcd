//! Audio family: time to first audio, real-time factor, arrival rate, underruns, audio
//! behind text.

use serde::{Deserialize, Serialize};

use super::{Measured, Source};
use crate::milestone::Milestone;
use crate::timeline::{AudioOutMethod, ContextState, Timeline};

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

/// `audio_arrival_rate` = seconds of audio received per wall-clock second, over the
/// stream after its first audio chunk: (audio in chunks 2..n) / (last chunk − first
/// chunk). The first chunk's audio is left out because the wait before it is the time to
/// first audio, not the stream's pace. Above 1 the stream outruns playback; it is the
/// inverse of a steady-state RTF. Absent with fewer than two audio chunks or when they
/// all arrived at once.
pub fn arrival_rate(t: &Timeline) -> Option<Measured> {
    let mut chunks = crate::order::sorted_by_key(&t.audio.as_ref()?.chunks, |c| c.at_ms);
    chunks.retain(|c| c.audio_ms > 0.0);
    let (first, last) = (chunks.first()?, chunks.last()?);
    let wall_ms = last.at_ms - first.at_ms;
    let after_first: f64 = chunks.iter().skip(1).fold(0.0, |sum, c| sum + c.audio_ms);
    (wall_ms > 0.0).then(|| Measured::client(after_first / wall_ms))
}

/// `audio_behind_text_ms` = first_audio_out − first_visible_token: how long the voice
/// trails the first words the user can read.
pub fn behind_text(t: &Timeline) -> Option<Measured> {
    let text = t.milestones.get(Milestone::FirstVisibleToken)?;
    let out = ttfa(t, Milestone::RequestStart)?;
    Some(Measured {
        value: out.value - text,
        source: out.source,
    })
}

/// Why the audio figures of `t` need a caveat.
pub fn notes(t: &Timeline) -> Vec<String> {
    let Some(output) = t.audio.as_ref().and_then(|a| a.output.as_ref()) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    if let Some(state) = output
        .state_at_first_schedule
        .filter(|s| *s != ContextState::Running)
    {
        let state = serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        notes.push(format!(
            "AudioContext was {state} when the first audio was scheduled (autoplay policy \
             without a user gesture, or suspended by the app): time to first audio not measured"
        ));
    }
    // A render-clock reading is good to one render quantum (issue #32): `currentTime`
    // moves 128 frames at a time, `performance.now()` is read anywhere within one.
    if t.milestones.get(Milestone::FirstAudioOut).is_some()
        && matches!(
            t.audio_out_method,
            Some(AudioOutMethod::WorkletPlusLatency | AudioOutMethod::ScheduledPlusLatency)
        )
        && output.sample_rate > 0.0
    {
        notes.push(format!(
            "first_audio_out read on the render clock: good to one render quantum \
             ({:.2} ms at {} Hz)",
            128_000.0 / output.sample_rate,
            output.sample_rate
        ));
    }
    if output.output_latency_ms == Some(0.0)
        && t.audio_out_method != Some(AudioOutMethod::OutputTimestamp)
    {
        notes.push(
            "outputLatency read 0 (device not reporting yet): first_audio_out may be early \
             by the device's latency"
                .into(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::{HandoffRecord, HandoffVerdict, SegmentHandoff};
    use crate::metrics::RequestMetrics;
    use crate::timeline::{AudioChunk, AudioOutput, AudioSeries};

    fn voice() -> Timeline {
        let mut t = Timeline::default();
        t.milestones.set(Milestone::RequestStart, 0.0);
        t.milestones.set(Milestone::FirstVisibleToken, 400.0);
        t.milestones.set(Milestone::LastToken, 2000.0);
        t.milestones.set(Milestone::TtsRequest, 700.0);
        t.milestones.set(Milestone::FirstAudioOut, 1000.0);
        t.audio_out_method = Some(AudioOutMethod::WorkletPlusLatency);
        t
    }

    fn chunk(at_ms: f64, audio_ms: f64) -> AudioChunk {
        AudioChunk { at_ms, audio_ms }
    }

    #[test]
    fn arrival_rate_leaves_out_the_wait_for_the_first_chunk() {
        let mut t = voice();
        // First chunk at 900 ms (its 100 ms of audio paid for by the TTFA), then 300 ms of
        // audio over the next 600 ms: 0.5 audio s per wall s, slower than real time. The
        // silent bookkeeping chunk (0 ms) and the order of entries change nothing.
        t.audio = Some(AudioSeries {
            audio_ms: 400.0,
            last_byte_at_ms: 1500.0,
            chunks: vec![
                chunk(1500.0, 100.0),
                chunk(900.0, 100.0),
                chunk(1000.0, 0.0),
                chunk(1100.0, 100.0),
                chunk(1300.0, 100.0),
            ],
            ..AudioSeries::default()
        });
        let m = RequestMetrics::compute(&t).unwrap();
        assert_eq!(m.audio_arrival_rate, Some(Measured::client(0.5)));
        assert_eq!(m.scalar("audio_arrival_rate"), Some(0.5));
        // rtf (docs/metrics.md: wall per audio, TTFA included): (1500 − 700) / 400.
        assert_eq!(m.rtf.map(|r| r.value), Some(2.0));

        // One chunk, or all at the same moment: no pace to measure.
        for chunks in [vec![chunk(900.0, 100.0)], vec![chunk(900.0, 50.0); 2]] {
            t.audio.as_mut().unwrap().chunks = chunks;
            assert_eq!(arrival_rate(&t), None);
        }
    }

    #[test]
    fn audio_behind_text_carries_the_audio_method() {
        let m = RequestMetrics::compute(&voice()).unwrap();
        assert_eq!(
            m.audio_behind_text_ms,
            Some(Measured {
                value: 600.0,
                source: Source::WorkletPlusLatency
            })
        );
        assert_eq!(m.ttfa_from_tts_ms.map(|v| v.value), Some(300.0));
    }

    #[test]
    fn a_suspended_context_and_a_zero_latency_are_noted() {
        let mut t = voice();
        t.audio = Some(AudioSeries {
            output: Some(AudioOutput {
                sample_rate: 48_000.0,
                state_at_first_schedule: Some(ContextState::Suspended),
                output_latency_ms: Some(0.0),
                ..AudioOutput::default()
            }),
            ..AudioSeries::default()
        });
        let notes = RequestMetrics::compute(&t).unwrap().notes;
        assert!(
            notes.iter().any(|n| n.contains("was suspended")),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n.contains("outputLatency read 0")),
            "{notes:?}"
        );
        // With the output timestamp the device latency is inside the mapping: no caveat.
        t.audio_out_method = Some(AudioOutMethod::OutputTimestamp);
        let notes = RequestMetrics::compute(&t).unwrap().notes;
        assert!(
            !notes.iter().any(|n| n.contains("outputLatency")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_render_clock_reading_states_its_quantum() {
        let mut t = voice();
        t.audio = Some(AudioSeries {
            output: Some(AudioOutput {
                sample_rate: 44_100.0,
                output_latency_ms: Some(30.0),
                ..AudioOutput::default()
            }),
            ..AudioSeries::default()
        });
        t.audio_out_method = Some(AudioOutMethod::WorkletPlusLatency);
        let has = |t: &Timeline| {
            RequestMetrics::compute(t)
                .unwrap()
                .notes
                .into_iter()
                .any(|n| n.contains("one render quantum (2.90 ms at 44100 Hz)"))
        };
        assert!(t.milestones.get(Milestone::FirstAudioOut).is_some());
        assert!(has(&t));
        t.audio_out_method = Some(AudioOutMethod::OutputTimestamp);
        assert!(
            !has(&t),
            "an output timestamp is not read on the render clock"
        );
    }

    #[test]
    fn the_handoff_verdict_is_a_request_metric() {
        let mut t = voice();
        t.handoff = Some(HandoffRecord {
            segments: vec![SegmentHandoff {
                index: 0,
                chars: 30,
                last_token_at_ms: 600.0,
                complete_at_ms: 650.0,
                handed_at_ms: Some(2010.0),
            }],
            // The LLM end falls back to the timeline's last_token (2000 ms).
            llm_end_at_ms: None,
        });
        let m = RequestMetrics::compute(&t).unwrap();
        let h = m.handoff.clone().unwrap();
        assert_eq!(h.verdict, HandoffVerdict::Buffered);
        assert_eq!(m.scalar("handoff_time_lost_ms"), Some(1360.0));
        // A handoff time that is not a number makes the timeline invalid.
        t.handoff.as_mut().unwrap().segments[0].handed_at_ms = Some(f64::NAN);
        let err = RequestMetrics::compute(&t).unwrap_err().to_string();
        assert!(err.contains("handoff.segments[0].handed_at_ms"), "{err}");
    }
}
