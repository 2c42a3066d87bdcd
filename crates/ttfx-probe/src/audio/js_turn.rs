//! The JS face of [`VoiceTurn`]. As in `js.rs`: every export returns `Result<_, JsError>`
//! or a promise that rejects with an `Error`, options are read by name, and nothing
//! panics on what a page passes (a panic would kill the probe inside someone else's app).

use std::rc::Rc;

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::{AudioContext, MediaStream};

use super::js::{JsTtsPlayer, Options, js_error, js_value, promise, to_js};
use super::turn::{TurnOptions, Utterance, VoiceTurn};
use crate::ProbeError;

#[wasm_bindgen(typescript_custom_section)]
const TS_TURN: &'static str = r#"
import type { TurnMeasurement } from "../probe.js";
export interface VoiceTurnOptions {
  /** Required: getUserMedia's stream (or any audio MediaStream). */
  stream: MediaStream;
  /** The app's context; default: the turn creates (and on close() closes) its own. */
  context?: AudioContext;
  /** RMS level in dBFS at or above which a 10 ms frame is speech; default -45. */
  thresholdDb?: number;
  /** Non-speech after the last speech frame before speech_end is decided; default 500. */
  hangoverMs?: number;
  /** Speech frames in a row before speech_start is decided; default 60. */
  minSpeechMs?: number;
  /** Called at the decision, with speech_start (performance.now() ms). */
  onSpeechStart?: (atMs: number) => void;
  /** Called at the decision, with speech_end (performance.now() ms). */
  onSpeechEnd?: (atMs: number) => void;
}
/** performance.now() ms. */
export interface Utterance { speechStart: number; speechEnd: number; detectedAt: number }
"#;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "VoiceTurnOptions")]
    pub type JsVoiceTurnOptions;
    #[wasm_bindgen(typescript_type = "Promise<Utterance>")]
    pub type JsUtterancePromise;
    #[wasm_bindgen(typescript_type = "Promise<TurnMeasurement>")]
    pub type JsTurnPromise;
    #[wasm_bindgen(typescript_type = "Promise<Response>")]
    pub type JsResponsePromise;
    #[wasm_bindgen(typescript_type = "RequestInfo | URL")]
    pub type JsRequestInput;
    #[wasm_bindgen(typescript_type = "RequestInit")]
    pub type JsRequestInit;
}

/// A voice turn: the user's speech from a microphone stream, the app's transcription and
/// a barge-in, on the page clock (see `VoiceTurnOptions`).
#[wasm_bindgen(js_name = VoiceTurn)]
pub struct JsVoiceTurn {
    inner: Rc<VoiceTurn>,
}

#[wasm_bindgen(js_class = VoiceTurn)]
impl JsVoiceTurn {
    /// Starts the detector on `options.stream`. Rejects with a clear Error: no stream, no
    /// audio track, no AudioWorklet, a CSP that blocks `blob:` worklet modules.
    /// (A promise returned by hand, not an `async fn`: it shares `js::promise`.)
    #[wasm_bindgen(unchecked_return_type = "Promise<VoiceTurn>")]
    pub fn create(options: JsVoiceTurnOptions) -> js_sys::Promise {
        promise(async move {
            let (stream, ctx, options) = turn_options(&options).map_err(js_value)?;
            let turn = VoiceTurn::new(&stream, ctx, options)
                .await
                .map_err(js_value)?;
            Ok(JsVoiceTurn {
                inner: Rc::new(turn),
            }
            .into())
        })
    }

    /// The next utterance to end after this call (one in progress counts), resolved at
    /// the detector's decision; rejects after `timeoutMs` (default 30000). The first
    /// utterance a turn resolves is the turn's own: its speech_start / speech_end.
    #[wasm_bindgen(js_name = nextUtterance)]
    pub fn next_utterance(&self, timeout_ms: Option<f64>) -> JsUtterancePromise {
        let next = self.inner.next_utterance(timeout_ms.unwrap_or(30_000.0));
        let promise = promise(async move {
            let u = next.await.map_err(js_value)?;
            utterance_js(u).map_err(js_value)
        });
        promise.unchecked_into()
    }

    /// Marks turn.stt_request_ms, calls the page's fetch, and resolves with a Response the
    /// app reads as usual; the probe reads a tee of its body for stt_first_partial /
    /// stt_final. Rejects as the page's fetch would.
    #[wasm_bindgen(js_name = fetchTranscription)]
    pub fn fetch_transcription(
        &self,
        input: JsRequestInput,
        init: Option<JsRequestInit>,
    ) -> JsResponsePromise {
        let turn = Rc::clone(&self.inner);
        let init: JsValue = init.map_or(JsValue::UNDEFINED, Into::into);
        let promise = promise(async move {
            turn.fetch_transcription(&input, &init)
                .await
                .map(JsValue::from)
        });
        promise.unchecked_into()
    }

    /// The user spoke over the reply: stops `player` and records turn.barge_in. Throws
    /// (after stopping the player) if no speech started since the turn's utterance.
    pub fn interrupt(&self, player: &JsTtsPlayer) -> Result<(), JsError> {
        self.inner.interrupt(&player.inner).map_err(js_error)
    }

    /// The reply played out: the turn is over.
    pub fn end(&self) {
        self.inner.end();
    }

    /// The TurnMeasurement relative to `requestStart` (the LLM run's run.requestStart),
    /// once end() or interrupt() was called, or after `timeoutMs` (default 15000) with
    /// what it has plus a note.
    pub fn result(&self, request_start: f64, timeout_ms: Option<f64>) -> JsTurnPromise {
        let turn = Rc::clone(&self.inner);
        let promise = promise(async move {
            let m = turn
                .result(request_start, timeout_ms.unwrap_or(15_000.0))
                .await
                .map_err(js_value)?;
            to_js(&m).map_err(js_value)
        });
        promise.unchecked_into()
    }

    /// Stops the detector, disconnects its nodes and closes a context of its own.
    /// Idempotent.
    pub fn close(&self) {
        self.inner.close();
    }
}

fn turn_options(
    value: &JsValue,
) -> Result<(MediaStream, Option<AudioContext>, TurnOptions), ProbeError> {
    let o = Options::new(value)?;
    let stream = o
        .get("stream")
        .ok_or_else(|| {
            ProbeError::BadOption(
                "stream is required: the MediaStream getUserMedia({ audio: true }) gave".into(),
            )
        })?
        .dyn_into::<MediaStream>()
        .map_err(|_| ProbeError::BadOption("stream must be a MediaStream".into()))?;
    let ctx = o.object::<AudioContext>("context", "AudioContext")?;
    let defaults = TurnOptions::default();
    let at_least_zero = |key: &str, default: f64| -> Result<f64, ProbeError> {
        match o.number(key)? {
            Some(n) if n < 0.0 => Err(ProbeError::BadOption(format!("{key} must be ≥ 0"))),
            Some(n) => Ok(n),
            None => Ok(default),
        }
    };
    let callback = |key: &str| -> Result<Option<Function>, ProbeError> {
        o.get(key)
            .map(|v| {
                v.dyn_into::<Function>()
                    .map_err(|_| ProbeError::BadOption(format!("{key} must be a function")))
            })
            .transpose()
    };
    let options = TurnOptions {
        threshold_dbfs: o.number("thresholdDb")?.unwrap_or(defaults.threshold_dbfs),
        hangover_ms: at_least_zero("hangoverMs", defaults.hangover_ms)?,
        min_speech_ms: at_least_zero("minSpeechMs", defaults.min_speech_ms)?,
        on_speech_start: callback("onSpeechStart")?,
        on_speech_end: callback("onSpeechEnd")?,
    };
    Ok((stream, ctx, options))
}

fn utterance_js(u: Utterance) -> Result<JsValue, ProbeError> {
    let object = Object::new();
    for (key, value) in [
        ("speechStart", u.speech_start_ms),
        ("speechEnd", u.speech_end_ms),
        ("detectedAt", u.detected_at_ms),
    ] {
        Reflect::set(&object, &key.into(), &value.into())
            .map_err(|e| ProbeError::browser("an utterance object", &e))?;
    }
    Ok(object.into())
}
