//! What the player observed, in page time, and its conversion into ttfx-core types
//! relative to the request's `request_start`.

use ttfx_core::Milestone;
use ttfx_core::playback::OutputMapping;
use ttfx_core::timeline::{
    AudioChunk, AudioOutMethod, AudioOutput, AudioSeries, ContextState, Underrun,
};
use web_sys::AudioContext;

use super::context::Reading;
use super::tap::TapHit;

pub use ttfx_core::voice_result::AudioMeasurement;

/// Everything the player saw, in absolute page milliseconds.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    request_start_ms: Option<f64>,
    tts_request: Option<f64>,
    first_byte: Option<f64>,
    last_byte: Option<f64>,
    first_scheduled: Option<f64>,
    state_at_first_schedule: Option<ContextState>,
    resumed: Option<f64>,
    audible_scheduled: Option<(f64, Reading)>,
    chunks: Vec<AudioChunk>,
    underruns: Vec<Underrun>,
    notes: Vec<String>,
}

impl Observed {
    pub fn new(request_start_ms: Option<f64>) -> Observed {
        Observed {
            request_start_ms,
            ..Observed::default()
        }
    }

    pub fn tts_request(&mut self, at: f64) {
        self.tts_request.get_or_insert(at);
    }

    pub fn bytes(&mut self, at: f64) {
        self.first_byte.get_or_insert(at);
        self.last_byte = Some(at);
    }

    pub fn audio(&mut self, chunk: AudioChunk) {
        self.chunks.push(chunk);
    }

    pub fn scheduled(&mut self, at: f64, state: ContextState) {
        if self.first_scheduled.is_none() {
            self.first_scheduled = Some(at);
            self.state_at_first_schedule = Some(state);
        }
    }

    /// The context's state when a tap was armed (tap mode has no schedule of its own).
    pub fn context_state(&mut self, state: ContextState) {
        self.state_at_first_schedule = Some(state);
    }

    /// The context started running. Only a start after audio was scheduled on a
    /// context that was not running matters: a new context also starts `suspended` for
    /// a moment before its device runs.
    pub fn resumed(&mut self, at: f64) {
        if self
            .state_at_first_schedule
            .is_some_and(|s| s != ContextState::Running)
        {
            self.resumed.get_or_insert(at);
        }
    }

    pub fn underrun(&mut self, at: f64, silence_ms: f64) {
        self.underruns.push(Underrun {
            at_ms: at,
            silence_ms,
        });
    }

    pub fn audible_scheduled(&mut self, context_s: f64, reading: Reading) {
        self.audible_scheduled.get_or_insert((context_s, reading));
    }

    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    pub fn note_once(&mut self, note: &str) {
        if !self.notes.iter().any(|n| n == note) {
            self.notes.push(note.to_owned());
        }
    }

    /// The measurement relative to `request_start` (the TTS request when none was
    /// given). `tapped` says a worklet tap was attached; `hit` is what it heard.
    pub fn measurement(
        &self,
        ctx: &AudioContext,
        tapped: bool,
        hit: Option<TapHit>,
    ) -> AudioMeasurement {
        let origin = self.origin_ms();
        let rel = |at: f64| at - origin;
        let mut out = AudioMeasurement {
            notes: self.notes.clone(),
            ..AudioMeasurement::default()
        };
        for (m, at) in [
            (Milestone::TtsRequest, self.tts_request),
            (Milestone::FirstAudioByte, self.first_byte),
            (Milestone::FirstAudioScheduled, self.first_scheduled),
        ] {
            if let Some(at) = at {
                out.milestones.set(m, rel(at));
            }
        }
        let mut output = AudioOutput {
            sample_rate: f64::from(ctx.sample_rate()),
            state_at_first_schedule: self.state_at_first_schedule,
            resumed_at_ms: self.resumed.map(rel),
            ..AudioOutput::default()
        };
        if let Some(frame) = self.audible_frame(tapped, hit) {
            let reading = frame.reading.with_late_latency(ctx);
            let method = frame.describe_output(&reading, &mut output);
            // A context that was not running when the audio was scheduled heard it only
            // after the policy (or the app) let it: that is not a time to first audio.
            if self.state_at_first_schedule == Some(ContextState::Running) {
                let at = reading.mapping.audible_at_ms(frame.context_s);
                out.milestones.set(Milestone::FirstAudioOut, rel(at));
                out.audio_out_method = Some(method);
            }
        } else if self.first_scheduled.is_some()
            && self.state_at_first_schedule == Some(ContextState::Running)
        {
            out.notes
                .push("no audible sample was heard before the result was taken".into());
        }
        out.audio = self.series(origin, output);
        out
    }

    /// The page time the measurement counts from: `request_start`, else the TTS
    /// request, else the first byte.
    fn origin_ms(&self) -> f64 {
        self.request_start_ms
            .or(self.tts_request)
            .or(self.first_byte)
            .unwrap_or(0.0)
    }

    /// The first audible frame: what the tap heard when one was attached (nothing, if it
    /// heard nothing: the schedule is no evidence then), else the scheduled start.
    fn audible_frame(&self, tapped: bool, hit: Option<TapHit>) -> Option<AudibleFrame> {
        match (tapped, hit) {
            (true, Some(hit)) => Some(AudibleFrame {
                context_s: hit.context_s,
                reading: hit.reading,
                from_tap: true,
            }),
            (true, None) => None,
            (false, _) => self
                .audible_scheduled
                .map(|(context_s, reading)| AudibleFrame {
                    context_s,
                    reading,
                    from_tap: false,
                }),
        }
    }

    /// The audio series with its times relative to `origin_ms`.
    fn series(&self, origin_ms: f64, output: AudioOutput) -> AudioSeries {
        let rel = |at: f64| at - origin_ms;
        AudioSeries {
            audio_ms: self.chunks.iter().fold(0.0, |sum, c| sum + c.audio_ms),
            last_byte_at_ms: self.last_byte.map_or(0.0, rel),
            underruns: self
                .underruns
                .iter()
                .map(|u| Underrun {
                    at_ms: rel(u.at_ms),
                    ..*u
                })
                .collect(),
            chunks: self
                .chunks
                .iter()
                .map(|c| AudioChunk {
                    at_ms: rel(c.at_ms),
                    ..*c
                })
                .collect(),
            output: Some(output),
        }
    }
}

/// The first audible frame, heard by the tap or scheduled.
#[derive(Debug, Clone, Copy)]
struct AudibleFrame {
    /// Audio-clock time of the frame (s).
    context_s: f64,
    /// The clocks and latencies read for it.
    reading: Reading,
    /// The tap heard it (else it is the scheduled start).
    from_tap: bool,
}

impl AudibleFrame {
    /// Writes the frame's latencies and audio-clock time into `output` (from `reading`,
    /// the frame's reading completed with a latency the context reported late); returns
    /// how the frame's audible time is known.
    fn describe_output(&self, reading: &Reading, output: &mut AudioOutput) -> AudioOutMethod {
        output.output_latency_ms = reading.output_latency_s.map(|s| s * 1000.0);
        output.base_latency_ms = reading.base_latency_s.map(|s| s * 1000.0);
        output.latency_added_ms = reading.latency_added_s() * 1000.0;
        output.first_audible_context_s = Some(self.context_s);
        match (reading.mapping, self.from_tap) {
            (OutputMapping::Timestamp(ts), _) => {
                output.output_timestamp = Some(ts);
                AudioOutMethod::OutputTimestamp
            }
            (OutputMapping::RenderClock { .. }, true) => AudioOutMethod::WorkletPlusLatency,
            (OutputMapping::RenderClock { .. }, false) => AudioOutMethod::ScheduledPlusLatency,
        }
    }
}
