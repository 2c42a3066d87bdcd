//! A voice turn on the page clock: the user's speech from a microphone stream (the
//! detector, `vad.rs`), the app's transcription request (`transcription.rs`), a barge-in
//! (the user speaking over the reply, which the app stops), and the result as ttfx-core's
//! [`TurnMeasurement`] relative to the LLM request's `request_start`.
//!
//! Every moment is taken as absolute page time (`performance.now()` ms) and made
//! relative only in [`VoiceTurn::result`], so the turn can start before the LLM request
//! it leads to exists.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use gloo_timers::callback::Timeout;
use gloo_timers::future::TimeoutFuture;
use js_sys::{Function, Reflect};
use ttfx_core::Milestone;
use ttfx_core::decimal::Decimal;
use ttfx_core::turn::{
    BargeIn, DEFAULT_HANGOVER_MS, DEFAULT_MIN_SPEECH_MS, DEFAULT_THRESHOLD_DBFS, VadSettings,
};
use ttfx_core::voice_result::TurnMeasurement;
use wasm_bindgen::prelude::*;
use web_sys::{AudioContext, MediaStream, MediaStreamAudioSourceNode, MediaStreamTrack, Response};

use super::context;
use super::player::TtsPlayer;
use super::transcription::{self, SttTimes};
use super::vad::{Vad, VadEvent};
use crate::ProbeError;
use crate::clock::now_ms;

/// The detector's options and the app's callbacks.
#[derive(Debug, Clone)]
pub struct TurnOptions {
    pub threshold_dbfs: f64,
    pub hangover_ms: f64,
    pub min_speech_ms: f64,
    /// Called at each `speech_start` decision with its page time.
    pub on_speech_start: Option<Function>,
    /// Called at each `speech_end` decision with its page time.
    pub on_speech_end: Option<Function>,
}

impl Default for TurnOptions {
    fn default() -> Self {
        TurnOptions {
            threshold_dbfs: DEFAULT_THRESHOLD_DBFS,
            hangover_ms: DEFAULT_HANGOVER_MS,
            min_speech_ms: DEFAULT_MIN_SPEECH_MS,
            on_speech_start: None,
            on_speech_end: None,
        }
    }
}

/// One complete utterance, in page time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Utterance {
    pub speech_start_ms: f64,
    pub speech_end_ms: f64,
    /// When the decision that it ended reached the page.
    pub detected_at_ms: f64,
}

/// A pending `next_utterance`: settled by the detector's next end decision, its timer,
/// or `close`, whichever comes first.
#[derive(Default)]
struct Waiter {
    outcome: RefCell<Option<Result<Utterance, ProbeError>>>,
    waker: RefCell<Option<Waker>>,
    /// Dropping it cancels the timer.
    timer: RefCell<Option<Timeout>>,
}

impl Waiter {
    fn settle(&self, outcome: Result<Utterance, ProbeError>) {
        if let Ok(mut slot) = self.outcome.try_borrow_mut()
            && slot.is_none()
        {
            *slot = Some(outcome);
        }
        if let Some(waker) = self.waker.try_borrow_mut().ok().and_then(|mut w| w.take()) {
            waker.wake();
        }
    }
}

struct NextUtterance(Rc<Waiter>);

impl Future for NextUtterance {
    type Output = Result<Utterance, ProbeError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(outcome) = self.0.outcome.borrow_mut().take() {
            self.0.timer.borrow_mut().take();
            return Poll::Ready(outcome);
        }
        *self.0.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Everything the turn observed, in page time.
#[derive(Default)]
struct TurnState {
    /// The first utterance a `next_utterance` resolved with.
    own: Option<Utterance>,
    /// The latest `speech_start` decided after `own`: a barge-in's start.
    start_after_own: Option<f64>,
    waiters: Vec<Rc<Waiter>>,
    stt_request_ms: Option<f64>,
    stt: Option<SttTimes>,
    /// Which `fetch_transcription` call the times belong to (the latest).
    stt_call: u32,
    stt_note: Option<String>,
    barge_in: Option<BargeIn>,
    ended: bool,
    closed: bool,
    notes: Vec<String>,
}

impl TurnState {
    fn note_once(&mut self, note: &str) {
        if !self.notes.iter().any(|n| n == note) {
            self.notes.push(note.to_owned());
        }
    }
}

/// A voice turn: the detector on a microphone stream, the app's transcription, and a
/// barge-in, measured on the page clock.
pub struct VoiceTurn {
    ctx: AudioContext,
    own_context: bool,
    source: MediaStreamAudioSourceNode,
    vad: Vad,
    settings: VadSettings,
    state: Rc<RefCell<TurnState>>,
}

impl std::fmt::Debug for VoiceTurn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VoiceTurn")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl VoiceTurn {
    /// Starts the detector on `stream`'s audio, in `ctx` (the app's) or in a context of
    /// its own, which [`close`](Self::close) closes.
    pub async fn new(
        stream: &MediaStream,
        ctx: Option<AudioContext>,
        options: TurnOptions,
    ) -> Result<VoiceTurn, ProbeError> {
        let tracks = stream.get_audio_tracks();
        let Some(track) = tracks.get(0).dyn_into::<MediaStreamTrack>().ok() else {
            return Err(ProbeError::BadOption(
                "stream has no audio track (a getUserMedia({ audio: true }) stream is one)".into(),
            ));
        };
        let input_latency_ms = track_latency_s(&track).map(|s| s * 1000.0);
        let (ctx, own_context) = match ctx {
            Some(ctx) => (ctx, false),
            None => (
                AudioContext::new().map_err(|e| ProbeError::browser("new AudioContext", &e))?,
                true,
            ),
        };
        let built = Self::build(stream, &ctx, options, input_latency_ms).await;
        let (source, vad, settings, state) = match built {
            Ok(parts) => parts,
            Err(e) => {
                if own_context {
                    drop(ctx.close());
                }
                return Err(e);
            }
        };
        if !context::running(&ctx) {
            // Not awaited: a context held by the autoplay policy resumes only after a
            // user gesture, and the detector simply starts then.
            drop(ctx.resume());
        }
        Ok(VoiceTurn {
            ctx,
            own_context,
            source,
            vad,
            settings,
            state,
        })
    }

    async fn build(
        stream: &MediaStream,
        ctx: &AudioContext,
        options: TurnOptions,
        input_latency_ms: Option<f64>,
    ) -> Result<
        (
            MediaStreamAudioSourceNode,
            Vad,
            VadSettings,
            Rc<RefCell<TurnState>>,
        ),
        ProbeError,
    > {
        let source = ctx
            .create_media_stream_source(stream)
            .map_err(|e| ProbeError::browser("createMediaStreamSource", &e))?;
        let (settings, rule) = VadSettings::at_rate(
            options.threshold_dbfs,
            options.hangover_ms,
            options.min_speech_ms,
            f64::from(ctx.sample_rate()),
            input_latency_ms,
        );
        let state = Rc::new(RefCell::new(TurnState::default()));
        let on_event = {
            let (state, ctx) = (Rc::clone(&state), ctx.clone());
            let latency_s = input_latency_ms.unwrap_or(0.0) / 1000.0;
            move |event: VadEvent, arrived: f64| {
                let Ok(mapping) = context::input_mapping(&ctx, latency_s) else {
                    return;
                };
                let rate = f64::from(ctx.sample_rate());
                let at = |frame: f64| mapping.frame_at_ms(frame, rate);
                decided(&state, &options, event, at, arrived);
            }
        };
        let vad = Vad::attach(ctx, &source, rule, on_event).await?;
        Ok((source, vad, settings, state))
    }

    /// The context the detector runs in.
    pub fn context(&self) -> &AudioContext {
        &self.ctx
    }

    /// The detector's settings as applied.
    pub fn settings(&self) -> VadSettings {
        self.settings
    }

    /// The next utterance to end after this call (one in progress counts: a barge-in
    /// has started before the app asks for it), at the detector's decision; an error
    /// after `timeout_ms` or when the turn is closed. The first utterance a turn resolves
    /// with is the turn's own.
    pub fn next_utterance(
        &self,
        timeout_ms: f64,
    ) -> impl Future<Output = Result<Utterance, ProbeError>> + 'static {
        let waiter = Rc::new(Waiter::default());
        match self.state.try_borrow_mut() {
            Ok(s) if s.closed => waiter.settle(Err(closed())),
            Ok(mut s) => s.waiters.push(Rc::clone(&waiter)),
            Err(_) => waiter.settle(Err(ProbeError::Browser("turn state busy".into()))),
        }
        let weak: Weak<Waiter> = Rc::downgrade(&waiter);
        let state = Rc::downgrade(&self.state);
        let ms = timeout_ms.clamp(0.0, f64::from(u32::MAX)) as u32;
        let timer = Timeout::new(ms, move || {
            let Some(waiter) = weak.upgrade() else { return };
            if let Some(state) = state.upgrade()
                && let Ok(mut s) = state.try_borrow_mut()
            {
                s.waiters.retain(|w| !Rc::ptr_eq(w, &waiter));
            }
            waiter.settle(Err(ProbeError::Browser(format!(
                "no utterance within {} ms",
                Decimal(f64::from(ms))
            ))));
        });
        *waiter.timer.borrow_mut() = Some(timer);
        NextUtterance(waiter)
    }

    /// Calls the page's `fetch(input, init)` for the transcription, marking
    /// `stt_request` now; the Response is the app's as usual (see `transcription.rs`).
    /// A second call starts the turn's transcription over (a retry replaces a failure).
    pub async fn fetch_transcription(
        &self,
        input: &JsValue,
        init: &JsValue,
    ) -> Result<Response, JsValue> {
        let call = {
            let now = now_ms().map_err(|e| JsValue::from_str(&e.to_string()))?;
            let mut s = self
                .state
                .try_borrow_mut()
                .map_err(|_| JsValue::from_str("ttfx: turn state busy"))?;
            s.stt_request_ms = Some(now);
            s.stt = None;
            s.stt_note = None;
            s.stt_call += 1;
            s.stt_call
        };
        let state = Rc::downgrade(&self.state);
        let update = move |times: SttTimes| {
            if let Some(state) = state.upgrade()
                && let Ok(mut s) = state.try_borrow_mut()
                && s.stt_call == call
            {
                s.stt = Some(times);
            }
        };
        let fetched = transcription::fetch(input, init, update).await;
        let note = match &fetched {
            Ok((_, note)) => note.clone(),
            Err(e) => Some(format!(
                "the transcription request failed: {}",
                crate::error::describe_js(e)
            )),
        };
        if let (Some(note), Ok(mut s)) = (note, self.state.try_borrow_mut())
            && s.stt_call == call
        {
            s.stt_note = Some(note);
        }
        fetched.map(|(response, _)| response)
    }

    /// The app stops the reply because the user spoke over it: stops `player` (always,
    /// the app asked for silence) and records the barge-in: the latest `speech_start`
    /// decided after the turn's own utterance, and when the reply's last sample left the
    /// speaker. An error when there is no such speech (the player is stopped anyway).
    pub fn interrupt(&self, player: &TtsPlayer) -> Result<(), ProbeError> {
        let stopped_ms = player.stop_heard_until()?;
        let mut s = self
            .state
            .try_borrow_mut()
            .map_err(|_| ProbeError::Browser("turn state busy".into()))?;
        if s.own.is_none() {
            return Err(ProbeError::BadOption(
                "interrupt: the turn has no utterance yet (await nextUtterance() first)".into(),
            ));
        }
        let Some(start) = s.start_after_own else {
            return Err(ProbeError::BadOption(
                "interrupt: no speech started since the turn's utterance".into(),
            ));
        };
        s.barge_in = Some(BargeIn {
            speech_start_ms: start,
            playback_stopped_ms: stopped_ms,
        });
        s.ended = true;
        Ok(())
    }

    /// The reply played out: the turn is over and [`result`](Self::result) resolves.
    pub fn end(&self) {
        if let Ok(mut s) = self.state.try_borrow_mut() {
            s.ended = true;
        }
    }

    /// The turn's measurement relative to `request_start_ms` (the LLM run's
    /// `requestStart`), once [`end`](Self::end) or [`interrupt`](Self::interrupt) was
    /// called, or after `timeout_ms` with what it has and a note.
    pub async fn result(
        &self,
        request_start_ms: f64,
        timeout_ms: f64,
    ) -> Result<TurnMeasurement, ProbeError> {
        if !request_start_ms.is_finite() {
            return Err(ProbeError::BadOption(
                "requestStart must be a finite performance.now() time (run.requestStart)".into(),
            ));
        }
        let deadline = now_ms()? + timeout_ms.max(0.0);
        while !self.state.try_borrow().is_ok_and(|s| s.ended || s.closed) {
            if now_ms()? >= deadline {
                if let Ok(mut s) = self.state.try_borrow_mut() {
                    let note = format!(
                        "the turn was neither ended nor interrupted within {} ms",
                        Decimal(timeout_ms.max(0.0))
                    );
                    s.note_once(&note);
                }
                break;
            }
            TimeoutFuture::new(10).await;
        }
        let s = self
            .state
            .try_borrow()
            .map_err(|_| ProbeError::Browser("turn state busy".into()))?;
        Ok(measurement(&s, self.settings, request_start_ms, &self.ctx))
    }

    /// Stops the detector, disconnects its nodes, closes a context of its own, and fails
    /// any pending `next_utterance`. Idempotent.
    pub fn close(&self) {
        let waiters = match self.state.try_borrow_mut() {
            Ok(mut s) if !s.closed => {
                s.closed = true;
                std::mem::take(&mut s.waiters)
            }
            _ => return,
        };
        self.vad.detach();
        self.source.disconnect().ok();
        if self.own_context {
            drop(self.ctx.close());
        }
        for waiter in waiters {
            waiter.settle(Err(closed()));
        }
    }
}

impl Drop for VoiceTurn {
    fn drop(&mut self) {
        self.close();
    }
}

fn closed() -> ProbeError {
    ProbeError::BadOption("the turn was closed".into())
}

/// A decision arrived: update the state, then (with the state released, since the app's
/// callback may call back into the turn: `interrupt` in `onSpeechStart`) settle waiters
/// and call the app.
fn decided(
    state: &RefCell<TurnState>,
    options: &TurnOptions,
    event: VadEvent,
    at: impl Fn(f64) -> f64,
    arrived: f64,
) {
    let Ok(mut s) = state.try_borrow_mut() else {
        return;
    };
    if s.closed {
        return;
    }
    let (callback, moment, settled) = match event {
        VadEvent::Start { start, .. } => {
            let speech_start = at(start);
            if s.own.is_some() {
                s.start_after_own = Some(speech_start);
            }
            (options.on_speech_start.as_ref(), speech_start, None)
        }
        VadEvent::End { start, end, .. } => {
            let utterance = Utterance {
                speech_start_ms: at(start),
                speech_end_ms: at(end),
                detected_at_ms: arrived,
            };
            let waiters = std::mem::take(&mut s.waiters);
            if !waiters.is_empty() && s.own.is_none() {
                s.own = Some(utterance);
            }
            (
                options.on_speech_end.as_ref(),
                utterance.speech_end_ms,
                Some((waiters, utterance)),
            )
        }
    };
    drop(s);
    if let Some((waiters, utterance)) = settled {
        for waiter in waiters {
            waiter.settle(Ok(utterance));
        }
    }
    if let Some(callback) = callback
        && callback
            .call1(&JsValue::UNDEFINED, &JsValue::from_f64(moment))
            .is_err()
        && let Ok(mut s) = state.try_borrow_mut()
    {
        // The app's exception is its own; the turn goes on and says so once.
        s.note_once("an onSpeechStart/onSpeechEnd callback threw");
    }
}

/// The state as a `TurnMeasurement` relative to `origin` (page ms).
fn measurement(
    s: &TurnState,
    settings: VadSettings,
    origin: f64,
    ctx: &AudioContext,
) -> TurnMeasurement {
    let rel = |at: f64| at - origin;
    let mut m = TurnMeasurement::default();
    let mut notes = Vec::new();
    if let Some(own) = s.own {
        m.milestones
            .set(Milestone::SpeechStart, rel(own.speech_start_ms));
        m.milestones
            .set(Milestone::SpeechEnd, rel(own.speech_end_ms));
        m.turn.speech_end_detected_ms = Some(rel(own.detected_at_ms));
    } else {
        notes.push(if s.closed || context::running(ctx) {
            "no utterance was resolved (nextUtterance): no speech_start / speech_end".to_owned()
        } else {
            "the detector's AudioContext is not running (autoplay policy?): no utterance".to_owned()
        });
    }
    m.turn.stt_request_ms = s.stt_request_ms.map(rel);
    if let Some(stt) = s.stt {
        if let Some(at) = stt.first_partial_ms {
            m.milestones.set(Milestone::SttFirstPartial, rel(at));
        }
        if let Some(at) = stt.final_ms {
            m.milestones.set(Milestone::SttFinal, rel(at));
        }
        if stt.final_is_body_end {
            notes.push(
                "the transcription stream had no transcript.text.done: stt_final is its end".into(),
            );
        }
    }
    if s.stt_request_ms.is_some()
        && s.stt.is_none_or(|t| t.final_ms.is_none())
        && s.stt_note.is_none()
    {
        notes.push(
            "the transcription's final text had not arrived when the result was taken".into(),
        );
    }
    notes.extend(s.stt_note.clone());
    m.turn.barge_in = s.barge_in.map(|b| BargeIn {
        speech_start_ms: rel(b.speech_start_ms),
        playback_stopped_ms: rel(b.playback_stopped_ms),
    });
    m.turn.vad = Some(settings);
    notes.extend(s.notes.iter().cloned());
    m.notes = notes;
    m
}

/// `track.getSettings().latency` in seconds, where the engine reports a finite one
/// (Chromium does for capture tracks); read by name, since engines and web-sys differ.
fn track_latency_s(track: &MediaStreamTrack) -> Option<f64> {
    let get_settings: Function = Reflect::get(track, &"getSettings".into())
        .ok()?
        .dyn_into()
        .ok()?;
    let settings = get_settings.call0(track).ok()?;
    Reflect::get(&settings, &"latency".into())
        .ok()?
        .as_f64()
        .filter(|l| l.is_finite() && *l >= 0.0)
}
