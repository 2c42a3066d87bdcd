//! The streaming TTS player: decodes a TTS body as it arrives and schedules each piece
//! gaplessly as an `AudioBufferSourceNode` on an `AudioContext`, recording every moment
//! the measurement needs.
//!
//! Audio goes source → bus (a unity `GainNode`) → destination, and the bus also feeds the
//! worklet tap, which therefore hears exactly what the player plays and nothing of the
//! app's other sounds.

use std::cell::RefCell;
use std::rc::Rc;

use gloo_timers::future::TimeoutFuture;
use js_sys::{Reflect, Uint8Array};
use ttfx_core::decode::Event;
use ttfx_core::playback::{GaplessSchedule, first_audible_frame, pcm16_to_planar};
use ttfx_core::timeline::{AudioChunk, ContextState};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AudioContext, GainNode, ReadableStream, ReadableStreamDefaultReader};

use super::context::{self, Reading};
use super::format::{TtsDecoder, TtsFormat};
use super::measurement::{AudioMeasurement, Observed};
use super::tap::AudioTap;
use crate::ProbeError;
use crate::clock::now_ms;

/// How long after making its own context the player waits for it to start its device
/// (in `result()`): starts took 3–227 ms here and about 1 s in Chromium with a sound
/// server when first checked (docs/fidelity.md, "Device start delay").
const DEVICE_START_GRACE_MS: f64 = 2000.0;

/// How the player measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayerOptions {
    pub format: TtsFormat,
    /// Page time (`performance.now()`) of the LLM request's `request_start`; milestones
    /// are relative to it. `None`: relative to the TTS request.
    pub request_start_ms: Option<f64>,
    /// Use the AudioWorklet tap (else the scheduled time of the first audible sample).
    pub use_worklet: bool,
    /// Map tap hits through `getOutputTimestamp()` when it is usable.
    pub use_output_timestamp: bool,
}

impl Default for PlayerOptions {
    fn default() -> Self {
        PlayerOptions {
            format: TtsFormat::OPENAI_PCM,
            request_start_ms: None,
            use_worklet: true,
            use_output_timestamp: true,
        }
    }
}

/// A streaming TTS player on one context.
#[derive(Debug)]
pub struct TtsPlayer {
    ctx: AudioContext,
    bus: GainNode,
    tap: Option<AudioTap>,
    options: PlayerOptions,
    state: Rc<RefCell<Observed>>,
    decoder: RefCell<TtsDecoder>,
    /// Interleaved samples waiting for the format, or a partial frame.
    pending: RefCell<Vec<i16>>,
    format: RefCell<Option<(u32, u16)>>,
    schedule: RefCell<Option<GaplessSchedule>>,
    /// Until when (page time) a context the player made itself may still be starting:
    /// an app's context that is suspended was suspended by the app or its autoplay
    /// policy, and gets no such wait.
    own_context_starting_until_ms: Option<f64>,
    _on_state: Closure<dyn FnMut()>,
}

impl TtsPlayer {
    /// A player on `ctx`, or on a context of its own. The tap is attached here; when it
    /// cannot be (no AudioWorklet, CSP), the reason is kept and the fallback used.
    pub async fn new(
        ctx: Option<AudioContext>,
        options: PlayerOptions,
    ) -> Result<TtsPlayer, ProbeError> {
        let (ctx, own_context_starting_until_ms) = match ctx {
            Some(ctx) => (ctx, None),
            None => (
                AudioContext::new().map_err(|e| ProbeError::browser("new AudioContext", &e))?,
                Some(now_ms()? + DEVICE_START_GRACE_MS),
            ),
        };
        let bus = ctx
            .create_gain()
            .map_err(|e| ProbeError::browser("createGain", &e))?;
        bus.connect_with_audio_node(&ctx.destination())
            .map_err(|e| ProbeError::browser("connect the player", &e))?;
        let mut observed = Observed::new(options.request_start_ms);
        let tap = if options.use_worklet {
            match AudioTap::attach(&ctx, &bus, options.use_output_timestamp).await {
                Ok(tap) => Some(tap),
                Err(e) => {
                    observed.note(format!("no AudioWorklet tap, scheduled time used: {e}"));
                    None
                }
            }
        } else {
            None
        };
        let state = Rc::new(RefCell::new(observed));
        // A context that was not running (autoplay policy) says when it starts: the
        // report shows that wait apart from the pipeline's.
        let on_state = {
            let state = Rc::clone(&state);
            let ctx = ctx.clone();
            Closure::<dyn FnMut()>::new(move || {
                if context::running(&ctx)
                    && let (Ok(now), Ok(mut s)) = (now_ms(), state.try_borrow_mut())
                {
                    s.resumed(now);
                }
            })
        };
        ctx.add_event_listener_with_callback("statechange", on_state.as_ref().unchecked_ref())
            .map_err(|e| ProbeError::browser("statechange listener", &e))?;
        Ok(TtsPlayer {
            decoder: RefCell::new(TtsDecoder::new(options.format)),
            ctx,
            bus,
            tap,
            options,
            state,
            pending: RefCell::new(Vec::new()),
            format: RefCell::new(None),
            schedule: RefCell::new(None),
            own_context_starting_until_ms,
            _on_state: on_state,
        })
    }

    /// The context the player plays on.
    pub fn context(&self) -> &AudioContext {
        &self.ctx
    }

    /// Records `tts_request` now: call it just before sending the TTS request.
    pub fn mark_request(&self) -> Result<(), ProbeError> {
        let now = now_ms()?;
        self.with_state(|s| s.tts_request(now));
        Ok(())
    }

    /// Feeds one body chunk that arrived now.
    pub fn push(&self, bytes: &[u8]) -> Result<(), ProbeError> {
        self.push_at(bytes, now_ms()?)
    }

    /// Feeds one body chunk that arrived at page time `at_ms` (a reader's timestamp).
    pub fn push_at(&self, bytes: &[u8], at_ms: f64) -> Result<(), ProbeError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.with_state(|s| s.bytes(at_ms));
        let events = self.decoder.borrow_mut().push(bytes);
        self.play_events(events, at_ms)
    }

    /// Ends the body: plays what the end completed.
    pub fn finish(&self) -> Result<(), ProbeError> {
        let events = self.decoder.borrow_mut().finish();
        self.play_events(events, now_ms()?)
    }

    /// Reads `stream` to its end, feeding every chunk as it arrives, then finishes.
    pub async fn play(&self, stream: &ReadableStream) -> Result<(), ProbeError> {
        let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
        loop {
            let result = JsFuture::from(reader.read())
                .await
                .map_err(|e| ProbeError::browser("reading the TTS stream", &e))?;
            let at = now_ms()?;
            let field = |k: &str| Reflect::get(&result, &JsValue::from_str(k));
            if field("done").map(|d| d.is_truthy()).unwrap_or(true) {
                break;
            }
            let value = field("value").unwrap_or(JsValue::UNDEFINED);
            let bytes = value
                .dyn_into::<Uint8Array>()
                .map_err(|_| ProbeError::Browser("TTS stream chunk is not a Uint8Array".into()))?;
            self.push_at(&bytes.to_vec(), at)?;
        }
        self.finish()
    }

    /// Waits (at most `timeout_ms`) until the first audible sample has been heard or can
    /// no longer be, then returns the measurement.
    pub async fn result(&self, timeout_ms: f64) -> Result<AudioMeasurement, ProbeError> {
        let deadline = now_ms()? + timeout_ms.max(0.0);
        while now_ms()? < deadline && self.may_still_hear(now_ms()?) {
            TimeoutFuture::new(10).await;
        }
        let hit = self.tap.as_ref().and_then(AudioTap::hit);
        let state = self
            .state
            .try_borrow()
            .map_err(|_| ProbeError::Browser("player state busy".into()))?;
        Ok(state.measurement(&self.ctx, self.tap.is_some(), hit))
    }

    /// Stops playback and takes the player's nodes out of the graph.
    pub fn stop(&self) {
        if let Some(tap) = &self.tap {
            tap.detach();
        }
        self.bus.disconnect().ok();
    }

    /// Stops playback now (as [`stop`](Self::stop)) and returns the page time at which
    /// the reply's last sample leaves the speaker: the render position now (or the end of
    /// what was scheduled, if playback was over already) mapped like `first_audio_out`,
    /// output latency included, since what was rendered before the stop is still heard.
    pub fn stop_heard_until(&self) -> Result<f64, ProbeError> {
        let now_s = self.ctx.current_time();
        let end_s = self
            .schedule
            .borrow()
            .as_ref()
            .and_then(GaplessSchedule::end_s);
        let last_s = end_s.map_or(now_s, |end| end.min(now_s));
        let reading = Reading::now(&self.ctx, self.options.use_output_timestamp)?
            .with_late_latency(&self.ctx);
        self.stop();
        Ok(reading.mapping.audible_at_ms(last_s))
    }

    /// Whether the first audible sample may still come, at page time `now`.
    fn may_still_hear(&self, now: f64) -> bool {
        let Some(tap) = &self.tap else {
            return false;
        };
        if tap.hit().is_some() {
            return false;
        }
        match context::state(&self.ctx) {
            ContextState::Running => {}
            // The player's own new context may be starting its device (Firefox's is
            // `suspended` for its first 14–31 ms). One the app or its autoplay policy
            // holds stays suspended: the result says so at once.
            ContextState::Suspended | ContextState::Interrupted => {
                return self
                    .own_context_starting_until_ms
                    .is_some_and(|until| now < until);
            }
            ContextState::Closed => return false,
        }
        // Scheduled audio not yet over, plus two worklet messages' worth of slack.
        match self
            .schedule
            .borrow()
            .as_ref()
            .and_then(GaplessSchedule::end_s)
        {
            Some(end) => self.ctx.current_time() < end + 0.2,
            None => true,
        }
    }

    fn play_events(&self, events: Vec<Event>, at_ms: f64) -> Result<(), ProbeError> {
        for event in events {
            match event {
                Event::AudioFormat {
                    sample_rate,
                    channels,
                    ..
                } => {
                    *self.format.borrow_mut() = Some((sample_rate, channels));
                    self.schedule
                        .borrow_mut()
                        .get_or_insert_with(|| GaplessSchedule::new(f64::from(sample_rate)));
                }
                Event::AudioSamples { samples } => self.pending.borrow_mut().extend(samples),
                Event::AudioEncoded { .. } => self.with_state(|s| {
                    s.note_once("compressed audio (MP3/Opus/AAC/FLAC) is counted, not played")
                }),
                Event::Error { class, message, .. } => {
                    self.with_state(|s| s.note(format!("TTS stream {class}: {message}")))
                }
                _ => {}
            }
        }
        self.schedule_pending(at_ms)
    }

    /// Turns the whole frames waiting into one buffer and schedules it.
    fn schedule_pending(&self, at_ms: f64) -> Result<(), ProbeError> {
        let Some((rate, channels)) = *self.format.borrow() else {
            return Ok(());
        };
        let whole = {
            let mut pending = self.pending.borrow_mut();
            let take = pending.len() / usize::from(channels.max(1)) * usize::from(channels.max(1));
            pending.drain(..take).collect::<Vec<i16>>()
        };
        if whole.is_empty() {
            return Ok(());
        }
        let planar = pcm16_to_planar(&whole, channels);
        let frames = planar.first().map_or(0, Vec::len);
        let rate_f = f64::from(rate);
        let duration_s = frames as f64 / rate_f;
        let buffer = self
            .ctx
            .create_buffer(u32::from(channels), frames as u32, rate as f32)
            .map_err(|e| ProbeError::browser("createBuffer", &e))?;
        for (ch, data) in planar.iter().enumerate() {
            buffer
                .copy_to_channel(data, ch as i32)
                .map_err(|e| ProbeError::browser("AudioBuffer.copyToChannel", &e))?;
        }
        let source = self
            .ctx
            .create_buffer_source()
            .map_err(|e| ProbeError::browser("createBufferSource", &e))?;
        source.set_buffer(Some(&buffer));
        source
            .connect_with_audio_node(&self.bus)
            .map_err(|e| ProbeError::browser("connect a buffer", &e))?;
        let slot = self
            .schedule
            .borrow_mut()
            .get_or_insert_with(|| GaplessSchedule::new(rate_f))
            .schedule(self.ctx.current_time(), duration_s);
        source
            .start_with_when(slot.start_s)
            .map_err(|e| ProbeError::browser("AudioBufferSourceNode.start", &e))?;
        let scheduled_at = now_ms()?;
        let state_now = context::state(&self.ctx);
        let reading = Reading::now(&self.ctx, self.options.use_output_timestamp)?;
        // The scheduled fallback maps through the render clock, never the timestamp, so
        // its method label says exactly what it did.
        let render_reading = Reading::now(&self.ctx, false)?;
        self.with_state(|s| {
            s.audio(AudioChunk {
                at_ms,
                audio_ms: duration_s * 1000.0,
            });
            s.scheduled(scheduled_at, state_now);
            if let Some((start, silence)) = slot.underrun {
                s.underrun(reading.mapping.audible_at_ms(start), silence * 1000.0);
            }
            if let Some(frame) = first_audible_frame(&planar) {
                s.audible_scheduled(slot.start_s + frame as f64 / rate_f, render_reading);
            }
        });
        Ok(())
    }

    fn with_state(&self, f: impl FnOnce(&mut Observed)) {
        if let Ok(mut s) = self.state.try_borrow_mut() {
            f(&mut s);
        }
    }
}
