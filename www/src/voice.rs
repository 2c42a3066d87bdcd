//! A voice turn on a simulated target, as a voice product would make it: the visible
//! reply text goes through the probe's handoff recorder (sentence segmenter), the first
//! completed segment is sent to the simulator's TTS, and its body is played by the probe's
//! `TtsPlayer`. Both results are included in the run, so `first_sentence`, `tts_request`,
//! `first_audio_byte`, `first_audio_scheduled` and `first_audio_out` share the run's axis.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use leptos::task::spawn_local;
use ttfx_core::segment::{Segment, SegmenterConfig};
use ttfx_core::voice_result::HandoffResult;
use ttfx_probe::ProbeRun;
use ttfx_probe::VoicePart;
use ttfx_probe::audio::{HandoffRecorder, PlayerOptions, TtsFormat, TtsPlayer};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{JsFuture, future_to_promise};
use web_sys::{AudioContext, ReadableStream, RequestInit, Response};

use crate::reply::ReplySink;

/// How long the audio result waits for the first audible sample.
const AUDIO_TIMEOUT_MS: f64 = 10_000.0;

thread_local! {
    static CONTEXT: RefCell<Option<AudioContext>> = const { RefCell::new(None) };
}

/// The page's one AudioContext, created on first use (call it from the click that starts
/// a voice batch, before any request: a fresh context is briefly suspended) and resumed.
pub fn audio_context() -> Result<AudioContext, String> {
    let ctx = CONTEXT.with(|c| -> Result<AudioContext, String> {
        let mut slot = c.borrow_mut();
        if let Some(ctx) = slot.as_ref() {
            return Ok(ctx.clone());
        }
        let ctx = AudioContext::new().map_err(|e| format!("voice: no AudioContext: {e:?}"))?;
        *slot = Some(ctx.clone());
        Ok(ctx)
    })?;
    // The click is the user gesture autoplay asks for; the promise needs no waiting.
    let _ = ctx.resume();
    Ok(ctx)
}

/// One run's voice turn.
pub struct Voice {
    player: Rc<TtsPlayer>,
    handoff: RefCell<HandoffRecorder>,
    tts_url: String,
    spoken: Rc<Cell<bool>>,
    /// The stream is over (set by `finish`).
    over: Rc<Cell<bool>>,
    handoff_done: RefCell<Option<Function>>,
    /// A TTS request or playback problem, shown once the run is over.
    problem: Rc<RefCell<Option<String>>>,
}

impl Voice {
    /// Starts the turn for `run`, whose fetch has resolved (so `request_start` is known).
    pub async fn start(
        run: &ProbeRun,
        ctx: &AudioContext,
        tts_url: String,
    ) -> Result<Voice, String> {
        let start = run
            .request_start()
            .ok_or_else(|| "voice: the run has no request_start".to_owned())?;
        let player = TtsPlayer::new(
            Some(ctx.clone()),
            PlayerOptions {
                format: TtsFormat::Pcm16 {
                    sample_rate: 24_000,
                    channels: 1,
                },
                request_start_ms: Some(start),
                ..PlayerOptions::default()
            },
        )
        .await
        .map_err(|e| format!("voice: the player cannot start: {e}"))?;
        let handoff = HandoffRecorder::new(SegmenterConfig::default(), start)
            .map_err(|e| format!("voice: {e}"))?;
        let player = Rc::new(player);
        let (spoken, over) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
        let audio = {
            let (player, spoken, over) = (Rc::clone(&player), Rc::clone(&spoken), Rc::clone(&over));
            future_to_promise(async move {
                // Nothing to hear until a segment is spoken; a reply that never spoke
                // reports at once (with no audio milestones) instead of at the timeout.
                while !spoken.get() && !over.get() {
                    gloo_timers::future::TimeoutFuture::new(10).await;
                }
                let timeout = if spoken.get() { AUDIO_TIMEOUT_MS } else { 0.0 };
                let m = player
                    .result(timeout)
                    .await
                    .map_err(|e| JsValue::from_str(&e.to_string()))?;
                to_js(&m)
            })
        };
        run.include_voice(VoicePart::Audio, audio.into());
        let mut resolve = None;
        let handoff_result = Promise::new(&mut |res, _rej| resolve = Some(res));
        run.include_voice(VoicePart::Handoff, handoff_result.into());
        Ok(Voice {
            player,
            handoff: RefCell::new(handoff),
            tts_url,
            spoken,
            over,
            handoff_done: RefCell::new(resolve),
            problem: Rc::new(RefCell::new(None)),
        })
    }

    /// A visible text delta arrived now.
    fn text(&self, piece: &str) -> Result<(), String> {
        let segments = self
            .handoff
            .try_borrow_mut()
            .map_err(|_| "voice: handoff busy".to_owned())?
            .push_text(piece)
            .map_err(|e| format!("voice: {e}"))?;
        match segments.first() {
            Some(segment) if !self.spoken.get() => self.speak(segment),
            _ => Ok(()),
        }
    }

    /// The stream is over: hands over what is left (when nothing was spoken yet) and
    /// gives the run the handoff result.
    pub fn finish(&self) -> Result<(), String> {
        let spoken = self
            .handoff
            .try_borrow_mut()
            .map_err(|_| "voice: handoff busy".to_owned())
            .and_then(|mut h| h.llm_done().map_err(|e| format!("voice: {e}")))
            .and_then(|last| match last {
                Some(segment) if !self.spoken.get() => self.speak(&segment),
                _ => Ok(()),
            });
        let result = self
            .handoff
            .try_borrow()
            .map_err(|_| "voice: handoff busy".to_owned())
            .and_then(|h| {
                to_js(&HandoffResult {
                    record: h.record().clone(),
                    milestones: h.milestones(),
                })
                .map_err(|e| format!("voice: handoff result: {e:?}"))
            });
        self.settle(result.as_ref().ok());
        spoken.and(result.map(|_| ()))
    }

    /// Ends the waits the run has on this turn: the handoff result (null when there is
    /// none: the run notes the part as missing) and the audio result's wait for a request.
    fn settle(&self, handoff: Option<&JsValue>) {
        self.over.set(true);
        if let Ok(mut done) = self.handoff_done.try_borrow_mut()
            && let Some(resolve) = done.take()
        {
            let _ = resolve.call1(&JsValue::UNDEFINED, handoff.unwrap_or(&JsValue::NULL));
        }
    }

    /// After the run's report: stops playback and returns a TTS problem, if there was one.
    pub fn stop(&self) -> Option<String> {
        self.player.stop();
        self.problem.borrow_mut().take()
    }

    /// Records the handoff and `tts_request`, then sends the segment to TTS and plays the
    /// body as it arrives.
    fn speak(&self, segment: &Segment) -> Result<(), String> {
        self.spoken.set(true);
        self.handoff
            .try_borrow_mut()
            .map_err(|_| "voice: handoff busy".to_owned())?
            .handed(segment.index)
            .map_err(|e| format!("voice: {e}"))?;
        self.player
            .mark_request()
            .map_err(|e| format!("voice: {e}"))?;
        let body = serde_json::json!({ "model": "ttfx-lab", "input": segment.text }).to_string();
        let (url, player, problem) = (
            self.tts_url.clone(),
            Rc::clone(&self.player),
            Rc::clone(&self.problem),
        );
        spawn_local(async move {
            if let Err(e) = tts(&url, &body, &player).await {
                *problem.borrow_mut() = Some(e);
            }
        });
        Ok(())
    }
}

impl Drop for Voice {
    fn drop(&mut self) {
        self.settle(None);
    }
}

async fn tts(url: &str, body: &str, player: &TtsPlayer) -> Result<(), String> {
    let window = web_sys::window().ok_or_else(|| "voice: no window".to_owned())?;
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str(body));
    let headers = js_sys::Object::new();
    let _ = Reflect::set(&headers, &"content-type".into(), &"application/json".into());
    init.set_headers(&headers);
    let response: Response = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(|e| format!("voice: TTS fetch failed: {e:?}"))?
        .dyn_into()
        .map_err(|_| "voice: TTS fetch gave no Response".to_owned())?;
    if !response.ok() {
        return Err(format!("voice: TTS HTTP {}", response.status()));
    }
    let stream: ReadableStream = response
        .body()
        .ok_or_else(|| "voice: the TTS reply has no body".to_owned())?;
    player
        .play(&stream)
        .await
        .map_err(|e| format!("voice: playback: {e}"))
}

/// A plain JS object shaped as in reports, without a trip through JSON text.
fn to_js<T: serde::Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(JsValue::from)
}

/// The page's sink with the voice turn listening to the visible text.
pub struct VoicedSink<'a> {
    pub inner: &'a dyn ReplySink,
    pub voice: Option<&'a Voice>,
}

impl ReplySink for VoicedSink<'_> {
    fn text(&self, piece: &str) {
        self.inner.text(piece);
        if let Some(voice) = self.voice
            && let Err(e) = voice.text(piece)
        {
            self.inner.error(&e);
        }
    }
    fn reasoning(&self, piece: &str) {
        self.inner.reasoning(piece);
    }
    fn error(&self, message: &str) {
        self.inner.error(message);
    }
}
