//! The JS face of the voice module: `TtsPlayer`, `AudioTap`, `VoiceHandoff`. Every
//! export returns `Result<_, JsError>` (or a promise that rejects with one); options are
//! read by name, so a wrong type is a clear error, never a trap.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::{Array, Object, Reflect};
use serde::Serialize;
use ttfx_core::segment::{Segment, SegmenterConfig};
use wasm_bindgen::prelude::*;
use web_sys::{AudioContext, AudioNode, ReadableStream};

use super::context;
use super::format::TtsFormat;
use super::handoff::HandoffRecorder;
use super::measurement::{AudioMeasurement, Observed};
use super::player::{PlayerOptions, TtsPlayer};
use super::tap::AudioTap;
use crate::ProbeError;
use crate::clock::now_ms;

#[wasm_bindgen(typescript_custom_section)]
const TS_VOICE: &'static str = r#"
import type { AudioMeasurement } from "../probe.js";
export interface TtsPlayerOptions {
  /** The app's AudioContext (else the player creates one). */
  context?: AudioContext;
  /** The TTS body: "pcm16" (default), "wav" or "openai-speech" (SSE, base64 deltas). */
  format?: "pcm16" | "wav" | "openai-speech";
  /** PCM16 only: frames per second (default 24000) and channels (default 1). */
  sampleRate?: number;
  channels?: number;
  /** performance.now() of the LLM request's start; milestones are relative to it
   *  (default: the TTS request). */
  requestStart?: number;
  /** Use the AudioWorklet tap (default true). */
  worklet?: boolean;
  /** Map tap frames through getOutputTimestamp() when usable (default true). */
  outputTimestamp?: boolean;
}
export interface VoiceHandoffOptions {
  /** performance.now() of the LLM request's start (default: now). */
  requestStart?: number;
  /** Also cut at , ; : — once a segment has this many characters. */
  clauseMinChars?: number;
}
export interface TextSegment { index: number; text: string; last_token_at_ms: number; complete_at_ms: number; }
export interface VoiceHandoffResult {
  record: { segments: { index: number; chars: number; last_token_at_ms: number; complete_at_ms: number; handed_at_ms?: number }[]; llm_end_at_ms?: number };
  verdict: { verdict: "streaming" | "buffered" | "undetermined"; segments: number; time_lost_ms: number | null; first_complete_ms: number | null; first_handed_ms: number | null; [key: string]: unknown };
  milestones: Partial<Record<"first_sentence", number>>;
}
"#;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "TtsPlayerOptions")]
    pub type JsTtsPlayerOptions;
    #[wasm_bindgen(typescript_type = "VoiceHandoffOptions")]
    pub type JsVoiceHandoffOptions;
    #[wasm_bindgen(typescript_type = "Promise<AudioMeasurement>")]
    pub type JsMeasurementPromise;
    #[wasm_bindgen(typescript_type = "Promise<void>")]
    pub type JsVoidPromise;
    #[wasm_bindgen(typescript_type = "TextSegment[]")]
    pub type JsSegments;
    #[wasm_bindgen(typescript_type = "TextSegment | null")]
    pub type JsSegmentOrNull;
}

pub(super) fn js_error(e: ProbeError) -> JsError {
    JsError::new(&e.to_string())
}

pub(super) fn js_value(e: ProbeError) -> JsValue {
    JsValue::from(js_error(e))
}

/// A promise of `future`. Every async export goes through this one instantiation of
/// `future_to_promise` (over a boxed future): one per future type repeats its executor
/// glue, about 2.5 KB of wasm each.
pub(crate) fn promise(
    future: impl Future<Output = Result<JsValue, JsValue>> + 'static,
) -> js_sys::Promise {
    let boxed: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>> = Box::pin(future);
    wasm_bindgen_futures::future_to_promise(boxed)
}

/// A plain JS object shaped as in reports (maps as objects, `None` as null), built
/// directly rather than through JSON text.
pub(crate) fn to_js<T: Serialize>(value: &T) -> Result<JsValue, ProbeError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| ProbeError::Browser(format!("a result as a JS object: {e}")))
}

/// Options object → typed reads with clear errors.
pub(super) struct Options(JsValue);

impl Options {
    pub(super) fn new(value: &JsValue) -> Result<Options, ProbeError> {
        if value.is_undefined() || value.is_null() {
            return Ok(Options(Object::new().into()));
        }
        if !value.is_object() {
            return Err(ProbeError::BadOption("options must be an object".into()));
        }
        Ok(Options(value.clone()))
    }

    pub(super) fn get(&self, key: &str) -> Option<JsValue> {
        Reflect::get(&self.0, &JsValue::from_str(key))
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_null())
    }

    pub(super) fn number(&self, key: &str) -> Result<Option<f64>, ProbeError> {
        self.get(key)
            .map(|v| {
                v.as_f64()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| ProbeError::BadOption(format!("{key} must be a finite number")))
            })
            .transpose()
    }

    fn whole<T: TryFrom<u64>>(&self, key: &str) -> Result<Option<T>, ProbeError> {
        let bad = || ProbeError::BadOption(format!("{key} must be a positive whole number"));
        self.number(key)?
            .map(|n| {
                if n >= 0.0 && n.fract() == 0.0 {
                    T::try_from(n as u64).map_err(|_| bad())
                } else {
                    Err(bad())
                }
            })
            .transpose()
    }

    fn flag(&self, key: &str, default: bool) -> Result<bool, ProbeError> {
        self.get(key).map_or(Ok(default), |v| {
            v.as_bool()
                .ok_or_else(|| ProbeError::BadOption(format!("{key} must be true or false")))
        })
    }

    fn string(&self, key: &str) -> Result<Option<String>, ProbeError> {
        self.get(key)
            .map(|v| {
                v.as_string()
                    .ok_or_else(|| ProbeError::BadOption(format!("{key} must be a string")))
            })
            .transpose()
    }

    pub(super) fn object<T: JsCast>(&self, key: &str, what: &str) -> Result<Option<T>, ProbeError> {
        self.get(key)
            .map(|v| {
                v.dyn_into::<T>()
                    .map_err(|_| ProbeError::BadOption(format!("{key} must be an {what}")))
            })
            .transpose()
    }
}

fn player_options(value: &JsValue) -> Result<(Option<AudioContext>, PlayerOptions), ProbeError> {
    let o = Options::new(value)?;
    let name = o.string("format")?.unwrap_or_else(|| "pcm16".into());
    let format = TtsFormat::parse(&name, o.whole("sampleRate")?, o.whole("channels")?)
        .map_err(ProbeError::BadOption)?;
    let options = PlayerOptions {
        format,
        request_start_ms: o.number("requestStart")?,
        use_worklet: o.flag("worklet", true)?,
        use_output_timestamp: o.flag("outputTimestamp", true)?,
    };
    Ok((o.object("context", "AudioContext")?, options))
}

/// A streaming TTS player that measures time to first audio (see `TtsPlayerOptions`).
#[wasm_bindgen(js_name = TtsPlayer)]
pub struct JsTtsPlayer {
    pub(super) inner: Rc<TtsPlayer>,
}

#[wasm_bindgen(js_class = TtsPlayer)]
impl JsTtsPlayer {
    /// Creates a player (async: the worklet tap is loaded first).
    pub async fn create(options: Option<JsTtsPlayerOptions>) -> Result<JsTtsPlayer, JsError> {
        let (ctx, options) =
            player_options(&options.map_or(JsValue::UNDEFINED, Into::into)).map_err(js_error)?;
        let player = TtsPlayer::new(ctx, options).await.map_err(js_error)?;
        Ok(JsTtsPlayer {
            inner: Rc::new(player),
        })
    }

    /// The context the player plays on.
    #[wasm_bindgen(getter)]
    pub fn context(&self) -> AudioContext {
        self.inner.context().clone()
    }

    /// Records `tts_request` now: call it just before sending the TTS request.
    #[wasm_bindgen(js_name = markRequest)]
    pub fn mark_request(&self) -> Result<(), JsError> {
        self.inner.mark_request().map_err(js_error)
    }

    /// Feeds one body chunk that arrived now.
    pub fn push(&self, bytes: &[u8]) -> Result<(), JsError> {
        self.inner.push(bytes).map_err(js_error)
    }

    /// Ends the body.
    pub fn finish(&self) -> Result<(), JsError> {
        self.inner.finish().map_err(js_error)
    }

    /// Reads and plays a whole body stream (e.g. `response.body`).
    pub fn play(&self, stream: ReadableStream) -> JsVoidPromise {
        let player = Rc::clone(&self.inner);
        let promise = promise(async move {
            player.play(&stream).await.map_err(js_value)?;
            Ok(JsValue::UNDEFINED)
        });
        promise.unchecked_into()
    }

    /// Waits until the first audible sample is heard (at most `timeoutMs`, default
    /// 5000) and resolves with the measurement. A suspended context the app gave settles
    /// it at once; one the player made itself gets 2 s from its making to start.
    pub fn result(&self, timeout_ms: Option<f64>) -> JsMeasurementPromise {
        let player = Rc::clone(&self.inner);
        let promise = promise(async move {
            let m = player
                .result(timeout_ms.unwrap_or(5000.0))
                .await
                .map_err(js_value)?;
            to_js(&m).map_err(js_value)
        });
        promise.unchecked_into()
    }

    /// Stops the player and takes its nodes out of the graph.
    pub fn stop(&self) {
        self.inner.stop();
    }
}

/// Tap mode: the app keeps its own player and hands over the node feeding the output.
#[wasm_bindgen(js_name = AudioTap)]
pub struct JsAudioTap {
    tap: Rc<AudioTap>,
    observed: Rc<RefCell<Observed>>,
}

#[wasm_bindgen(js_class = AudioTap)]
impl JsAudioTap {
    /// Taps `node` on `context`; armed at once. `requestStart` (performance.now()) is the
    /// origin of the result's times (default: now).
    pub async fn attach(
        context: AudioContext,
        node: AudioNode,
        request_start: Option<f64>,
        output_timestamp: Option<bool>,
    ) -> Result<JsAudioTap, JsError> {
        let tap = AudioTap::attach(&context, &node, output_timestamp.unwrap_or(true))
            .await
            .map_err(js_error)?;
        let observed = Rc::new(RefCell::new(Observed::default()));
        let js = JsAudioTap {
            tap: Rc::new(tap),
            observed,
        };
        js.rearm(request_start).map_err(js_error)?;
        Ok(js)
    }

    /// Arms the tap for the next utterance; `requestStart` as in `attach`.
    pub fn arm(&self, request_start: Option<f64>) -> Result<(), JsError> {
        self.rearm(request_start).map_err(js_error)
    }

    /// Waits for the first audible sample since arming (at most `timeoutMs`, default
    /// 5000) and resolves with the measurement (`first_audio_out` only).
    pub fn result(&self, timeout_ms: Option<f64>) -> JsMeasurementPromise {
        let (tap, observed) = (Rc::clone(&self.tap), Rc::clone(&self.observed));
        let promise = promise(async move {
            let deadline = now_ms().map_err(js_value)? + timeout_ms.unwrap_or(5000.0);
            while tap.hit().is_none()
                && context::running(tap.context())
                && now_ms().map_err(js_value)? < deadline
            {
                gloo_timers::future::TimeoutFuture::new(10).await;
            }
            let m: AudioMeasurement = observed
                .try_borrow()
                .map_err(|_| js_value(ProbeError::Browser("tap state busy".into())))?
                .measurement(tap.context(), true, tap.hit());
            to_js(&m).map_err(js_value)
        });
        promise.unchecked_into()
    }

    /// Takes the tap out of the graph.
    pub fn detach(&self) {
        self.tap.detach();
    }

    fn rearm(&self, request_start: Option<f64>) -> Result<(), ProbeError> {
        let now = now_ms()?;
        let mut observed = Observed::new(Some(request_start.unwrap_or(now)));
        observed.context_state(context::state(self.tap.context()));
        if let Ok(mut slot) = self.observed.try_borrow_mut() {
            *slot = observed;
        }
        self.tap.arm()
    }
}

/// The LLM → TTS handoff: feed visible text, hand segments to TTS, get the verdict.
#[wasm_bindgen(js_name = VoiceHandoff)]
pub struct JsVoiceHandoff {
    inner: HandoffRecorder,
}

#[wasm_bindgen(js_class = VoiceHandoff)]
impl JsVoiceHandoff {
    #[wasm_bindgen(constructor)]
    pub fn new(options: Option<JsVoiceHandoffOptions>) -> Result<JsVoiceHandoff, JsError> {
        let o = Options::new(&options.map_or(JsValue::UNDEFINED, Into::into)).map_err(js_error)?;
        let config = SegmenterConfig {
            clause_min_chars: o.whole("clauseMinChars").map_err(js_error)?,
        };
        let start = match o.number("requestStart").map_err(js_error)? {
            Some(at) => at,
            None => now_ms().map_err(js_error)?,
        };
        let inner = HandoffRecorder::new(config, start).map_err(js_error)?;
        Ok(JsVoiceHandoff { inner })
    }

    /// Feeds a visible text delta; returns the segments it completed.
    #[wasm_bindgen(js_name = pushText)]
    pub fn push_text(&mut self, delta: &str) -> Result<JsSegments, JsError> {
        let segments = self.inner.push_text(delta).map_err(js_error)?;
        segments_js(&segments)
    }

    /// Segment `index` is being handed to TTS now.
    pub fn handed(&mut self, index: u32) -> Result<(), JsError> {
        self.inner.handed(index).map_err(js_error)
    }

    /// The LLM stream ended; returns the last segment, if text was left.
    #[wasm_bindgen(js_name = llmDone)]
    pub fn llm_done(&mut self) -> Result<JsSegmentOrNull, JsError> {
        let last = self.inner.llm_done().map_err(js_error)?;
        let value = match last {
            Some(s) => to_js(&s).map_err(js_error)?,
            None => JsValue::NULL,
        };
        Ok(value.unchecked_into())
    }

    /// `{ record, verdict, milestones }`: the per-segment record, the handoff verdict
    /// and `first_sentence`.
    #[wasm_bindgen(unchecked_return_type = "VoiceHandoffResult")]
    pub fn result(&self) -> Result<JsValue, JsError> {
        #[derive(Serialize)]
        struct Out<'a> {
            record: &'a ttfx_core::handoff::HandoffRecord,
            verdict: ttfx_core::handoff::Handoff,
            milestones: ttfx_core::timeline::Milestones,
        }
        to_js(&Out {
            record: self.inner.record(),
            verdict: self.inner.verdict(),
            milestones: self.inner.milestones(),
        })
        .map_err(js_error)
    }
}

fn segments_js(segments: &[Segment]) -> Result<JsSegments, JsError> {
    let array = Array::new();
    for s in segments {
        array.push(&to_js(s).map_err(js_error)?);
    }
    Ok(array.unchecked_into())
}
