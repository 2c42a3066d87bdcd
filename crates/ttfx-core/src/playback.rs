//! Pure arithmetic of streamed playback, shared by the browser player and the tests:
//! gapless scheduling with underrun accounting, the audio clock → `performance.now()`
//! mapping (output and input), and where the first audible sample of a block lies.
//!
//! Audio clock times are seconds (`AudioContext.currentTime`), page times milliseconds.

use serde::{Deserialize, Serialize};

/// A sample at or above this magnitude (−60 dBFS, full scale = 1.0) counts as audible.
/// It sits well above PCM16 dither (±1 LSB ≈ 3·10⁻⁵) and the noise floor TTS engines leave
/// in leading silence, and below the quietest onset of speech at a normal level, so the
/// first audible frame is the start of the voice, not of the hiss before it.
pub const AUDIBLE_THRESHOLD: f32 = 0.001;

/// Schedules consecutive buffers back to back on the audio clock. When a buffer arrives
/// after the previous one has finished playing, it starts now instead, and the silence
/// in between is an underrun.
#[derive(Debug, Clone, PartialEq)]
pub struct GaplessSchedule {
    next_start_s: Option<f64>,
    /// Gaps shorter than this are rounding, not silence.
    min_gap_s: f64,
}

/// Where one buffer was placed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// When it starts, on the audio clock.
    pub start_s: f64,
    /// Silence inserted before it because playback had caught up with the stream: the
    /// start of the silence (the end of the previous buffer) and its length.
    pub underrun: Option<(f64, f64)>,
}

impl GaplessSchedule {
    /// A schedule for a clock running at `sample_rate` frames per second.
    pub fn new(sample_rate: f64) -> Self {
        GaplessSchedule {
            next_start_s: None,
            // Half a frame: consecutive start times computed in f64 agree far closer
            // than that, and any real gap is at least one frame.
            min_gap_s: 0.5 / sample_rate.max(1.0),
        }
    }

    /// Places a buffer of `duration_s` that is ready at audio time `now_s`.
    pub fn schedule(&mut self, now_s: f64, duration_s: f64) -> Slot {
        let slot = match self.next_start_s {
            // The first buffer starts as soon as it can; the wait before it is the
            // time to first audio, not an underrun.
            None => Slot {
                start_s: now_s,
                underrun: None,
            },
            Some(next) if now_s - next < self.min_gap_s => Slot {
                start_s: next,
                underrun: None,
            },
            Some(next) => Slot {
                start_s: now_s,
                underrun: Some((next, now_s - next)),
            },
        };
        self.next_start_s = Some(slot.start_s + duration_s.max(0.0));
        slot
    }

    /// When the audio scheduled so far ends.
    pub fn end_s(&self) -> Option<f64> {
        self.next_start_s
    }
}

/// `AudioContext.getOutputTimestamp()`: the audio-clock time of the frame the device is
/// presenting at `performance_time_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OutputTimestamp {
    pub context_time_s: f64,
    pub performance_time_ms: f64,
}

impl OutputTimestamp {
    /// Engines return zeros (Chromium) or a stale pair before the device has rendered
    /// anything; only a pair with both clocks moving is a mapping.
    pub fn usable(&self) -> bool {
        self.context_time_s > 0.0
            && self.performance_time_ms > 0.0
            && self.context_time_s.is_finite()
            && self.performance_time_ms.is_finite()
    }
}

/// How audio-clock times become page times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OutputMapping {
    /// The output timestamp already names the frame at the speaker, so the device's
    /// latency is inside it: adding `outputLatency` again would count it twice.
    Timestamp(OutputTimestamp),
    /// `currentTime` and `performance.now()` read together: `currentTime` is the render
    /// position, so a frame reaches the speaker `latency_s` (`baseLatency` +
    /// `outputLatency`) after it is rendered.
    RenderClock {
        context_time_s: f64,
        performance_now_ms: f64,
        latency_s: f64,
    },
}

impl OutputMapping {
    /// The page time at which the frame at audio time `context_s` is heard.
    pub fn audible_at_ms(&self, context_s: f64) -> f64 {
        match *self {
            OutputMapping::Timestamp(ts) => {
                ts.performance_time_ms + (context_s - ts.context_time_s) * 1000.0
            }
            OutputMapping::RenderClock {
                context_time_s,
                performance_now_ms,
                latency_s,
            } => performance_now_ms + (context_s - context_time_s + latency_s) * 1000.0,
        }
    }
}

/// How input frames (a microphone's samples, as a `MediaStreamAudioSourceNode` hands
/// them to the render thread) become page times: the reverse direction of
/// [`OutputMapping::RenderClock`]. `currentTime` read with `performance.now()` is the
/// render position, so a frame is rendered at that page time plus its distance from
/// the position; it was captured `input_latency_s` earlier (the track's
/// `getSettings().latency`, 0 where the engine does not say). No output latency: the
/// frame never goes to the speaker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InputMapping {
    pub context_time_s: f64,
    pub performance_now_ms: f64,
    pub input_latency_s: f64,
}

impl InputMapping {
    /// The page time at which the input frame at audio time `context_s` was captured.
    pub fn captured_at_ms(&self, context_s: f64) -> f64 {
        self.performance_now_ms + (context_s - self.context_time_s - self.input_latency_s) * 1000.0
    }

    /// The page time of input frame number `frame` (the worklet's `currentFrame` clock)
    /// at `sample_rate`.
    pub fn frame_at_ms(&self, frame: f64, sample_rate: f64) -> f64 {
        self.captured_at_ms(frame / sample_rate.max(1.0))
    }
}

/// Interleaved PCM16 → one `f32` vector per channel, full scale 1.0. A trailing partial
/// frame (fewer samples than channels) is dropped: it cannot be played.
pub fn pcm16_to_planar(samples: &[i16], channels: u16) -> Vec<Vec<f32>> {
    let channels = usize::from(channels.max(1));
    let frames = samples.len() / channels;
    (0..channels)
        .map(|ch| {
            samples
                .iter()
                .skip(ch)
                .step_by(channels)
                .take(frames)
                .map(|&s| f32::from(s) / 32768.0)
                .collect()
        })
        .collect()
}

/// The first frame at which any channel reaches [`AUDIBLE_THRESHOLD`].
pub fn first_audible_frame(planar: &[Vec<f32>]) -> Option<usize> {
    planar
        .iter()
        .filter_map(|ch| ch.iter().position(|s| s.abs() >= AUDIBLE_THRESHOLD))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_arriving_ahead_of_playback_are_gapless() {
        let mut s = GaplessSchedule::new(48_000.0);
        // Three 100 ms buffers, each ready well before the previous one ends.
        let a = s.schedule(1.0, 0.1);
        let b = s.schedule(1.02, 0.1);
        let c = s.schedule(1.05, 0.1);
        assert_eq!((a.start_s, b.start_s), (1.0, 1.1));
        assert!((c.start_s - 1.2).abs() < 1e-12);
        assert!([a, b, c].iter().all(|slot| slot.underrun.is_none()));
        assert!((s.end_s().unwrap() - 1.3).abs() < 1e-12);
    }

    #[test]
    fn a_late_buffer_starts_now_and_the_silence_is_an_underrun() {
        let mut s = GaplessSchedule::new(48_000.0);
        s.schedule(1.0, 0.1);
        // Ready at 1.25 s; the previous buffer ended at 1.1 s: 150 ms of silence.
        let late = s.schedule(1.25, 0.1);
        assert_eq!(late.start_s, 1.25);
        let (at, silence) = late.underrun.unwrap();
        assert_eq!(at, 1.1);
        assert!((silence - 0.15).abs() < 1e-12);
        // The first buffer's wait is time to first audio, never an underrun.
        assert_eq!(
            GaplessSchedule::new(48_000.0).schedule(9.0, 0.1).underrun,
            None
        );
    }

    #[test]
    fn rounding_below_half_a_frame_is_not_silence() {
        let mut s = GaplessSchedule::new(48_000.0);
        s.schedule(0.0, 0.1);
        let slot = s.schedule(0.1 + 0.4 / 48_000.0, 0.1);
        assert_eq!((slot.start_s, slot.underrun), (0.1, None));
        let slot = s.schedule(0.2 + 1.0 / 48_000.0, 0.1);
        assert!(slot.underrun.is_some());
    }

    #[test]
    fn output_timestamp_maps_without_adding_latency_again() {
        let ts = OutputTimestamp {
            context_time_s: 2.0,
            performance_time_ms: 5000.0,
        };
        assert!(ts.usable());
        // A frame 150 ms after the one at the speaker is heard 150 ms later.
        assert!((OutputMapping::Timestamp(ts).audible_at_ms(2.15) - 5150.0).abs() < 1e-9);
        let zero = OutputTimestamp {
            context_time_s: 0.0,
            performance_time_ms: 0.0,
        };
        assert!(!zero.usable());
    }

    #[test]
    fn render_clock_adds_the_device_latency() {
        let m = OutputMapping::RenderClock {
            context_time_s: 2.0,
            performance_now_ms: 5000.0,
            latency_s: 0.04,
        };
        assert!((m.audible_at_ms(2.1) - 5140.0).abs() < 1e-9);
    }

    #[test]
    fn input_frames_map_back_from_the_render_position_less_the_capture_latency() {
        let m = InputMapping {
            context_time_s: 2.0,
            performance_now_ms: 5000.0,
            input_latency_s: 0.0,
        };
        // 100 ms before the render position: rendered 100 ms before the read.
        assert!((m.captured_at_ms(1.9) - 4900.0).abs() < 1e-9);
        // Frame 96,000 at 48 kHz is audio time 2.0 s: the read itself.
        assert!((m.frame_at_ms(96_000.0, 48_000.0) - 5000.0).abs() < 1e-9);
        // A track that reports 10 ms of capture latency: every frame 10 ms earlier, and
        // no output latency is ever added (the same frame through the output mapping is
        // heard later, not earlier).
        let with_latency = InputMapping {
            input_latency_s: 0.01,
            ..m
        };
        assert!((with_latency.captured_at_ms(1.9) - 4890.0).abs() < 1e-9);
        let out = OutputMapping::RenderClock {
            context_time_s: 2.0,
            performance_now_ms: 5000.0,
            latency_s: 0.04,
        };
        assert!(out.audible_at_ms(1.9) > m.captured_at_ms(1.9));
    }

    #[test]
    fn pcm16_deinterleaves_and_finds_the_first_audible_frame() {
        // Stereo: frames (0,0) (0,1) (0,40) (-33,0) and a stray half frame.
        let planar = pcm16_to_planar(&[0, 0, 0, 1, 0, 40, -33, 0, 7], 2);
        assert_eq!(planar.len(), 2);
        assert_eq!(planar[0].len(), 4);
        assert_eq!(planar[1][2], 40.0 / 32768.0);
        // The threshold lies between 32 LSB (0.000977) and 33 LSB (0.001007): the right
        // channel crosses at frame 2 (40 LSB), the left at frame 3 (33 LSB).
        assert_eq!(first_audible_frame(&planar), Some(2));
        assert_eq!(
            first_audible_frame(&pcm16_to_planar(&[0, 1, -1, 32], 1)),
            None
        );
        assert_eq!(first_audible_frame(&[]), None);
    }
}
