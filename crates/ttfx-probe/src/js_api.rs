//! The JS edge: every export returns `Result<_, JsError>` (a thrown `Error` with a clear
//! message in the host page), never a wasm trap. Types in the generated `.d.ts` are the
//! precise ones below, not `any`.

use js_sys::{Function, Promise};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::Element;

use crate::instrument::{FetchInstrumentation, Matcher, WatchTarget};
use crate::{ProbeError, ProbeOptions};

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Stream dialects the decoder knows; "auto" detects from the content type and first frames. */
export type Dialect = "auto" | "openai-chat" | "openai-responses" | "anthropic" | "ollama" | "llamacpp" | "openai-speech" | "pcm16" | "wav" | "text";

export interface ProbeOptions {
  /** The stream's dialect (default "auto"). */
  dialect?: Dialect;
  /** What is measured (a deployment, a model); reports carry it as `target`. */
  label?: string;
  /** Where to navigator.sendBeacon each report (sampled by `sampleRate`). */
  collectorUrl?: string;
  /** Fraction of reports beaconed, 0..1 (default 1). Callbacks and window.__ttfx get all. */
  sampleRate?: number;
  /** How long after the stream ends to wait for the reply's first paint (default 1000 ms). */
  paintTimeoutMs?: number;
  /** Called with every report; a throw is recorded in the report, never propagated. */
  onReport?: (report: RunReport) => void;
  /** Testing only: make the probe fail on purpose to check containment. */
  __faultInjection?: "decoder-panic";
}

export interface InstrumentOptions {
  /** Requests to measure: URL substring, RegExp, or predicate on the absolute URL. */
  match: string | RegExp | ((url: string) => boolean);
  /** Element to time the reply's render in, or a function called at each request's start. */
  watch?: Element | (() => Element | null);
}

export type MilestoneName = "request_start" | "headers" | "first_byte" | "first_event" | "first_token" | "first_visible_token" | "first_dom" | "first_paint" | "first_sentence" | "tts_request" | "first_audio_byte" | "first_audio_scheduled" | "first_audio_out" | "last_token" | "done" | "aborted" | "error";

export interface Chunk { at_ms: number; bytes: number; events: number; visible_tokens: number; reasoning_tokens: number; }
export interface ServerTiming { name: string; duration_ms: number | null; description?: string; source: string; }
export interface Anomaly { at_ms: number; class: string; detail: string; }

export interface Timeline {
  /** Milliseconds since request_start on the page's performance.now() clock. */
  milestones: Partial<Record<MilestoneName, number>>;
  chunks: Chunk[];
  paint_method?: "element_timing" | "interaction_contentful_paint" | "raf_estimate";
  failure?: { class: "http_status" | "network" | "in_band" | "decode" | "timeout"; http_status?: number; detail?: string };
  environment: { engine?: string; engine_version?: string; user_agent?: string; cross_origin_isolated?: boolean; timer_resolution_ms?: number; visibility_changes?: { at_ms: number; state: "visible" | "hidden" }[]; concurrency?: number };
  server: { timings?: ServerTiming[]; usage?: { prompt_tokens?: number; completion_tokens?: number; reasoning_tokens?: number; cached_prompt_tokens?: number } };
  request: { method?: string; url?: string; status?: number; content_type?: string; dialect?: string };
  resource_timing?: { request_start_ms?: number; response_start_ms?: number; response_end_ms?: number; encoded_body_size?: number };
  anomalies?: Anomaly[];
  request_start_unix_ms?: number;
  /** Voice runs: the audio stream (see AudioMeasurement) and how first_audio_out was timed. */
  audio?: AudioMeasurement["audio"];
  audio_out_method?: AudioMeasurement["audio_out_method"];
  /** Voice runs: per-segment LLM → TTS handoff record. */
  handoff?: { segments: unknown[]; [key: string]: unknown };
}

/** A TTS stream's audio side (TtsPlayer/AudioTap `result()`, voice build); voice runs
 *  carry it in their timeline. */
export interface AudioMeasurement {
  milestones: Partial<Record<"tts_request" | "first_audio_byte" | "first_audio_scheduled" | "first_audio_out", number>>;
  audio: {
    audio_ms: number; last_byte_at_ms: number;
    underruns: { at_ms: number; silence_ms: number }[];
    chunks?: { at_ms: number; audio_ms: number }[];
    output?: { sample_rate: number; state_at_first_schedule?: "running" | "suspended" | "closed" | "interrupted";
      resumed_at_ms?: number; output_latency_ms?: number; base_latency_ms?: number; latency_added_ms: number;
      output_timestamp?: { context_time_s: number; performance_time_ms: number }; first_audible_context_s?: number };
  };
  audio_out_method?: "output_timestamp" | "worklet_plus_latency" | "scheduled_plus_latency";
  notes?: string[];
}

/** One measured request (schema in docs/report.md). */
export interface RunReport {
  schema_version: number;
  kind: "run";
  generator: string;
  run: { id?: string; target?: string; timeline: Timeline; metrics: Record<string, unknown> };
}
"#;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "ProbeOptions")]
    pub type JsProbeOptions;
    #[wasm_bindgen(typescript_type = "InstrumentOptions")]
    pub type JsInstrumentOptions;
    #[wasm_bindgen(typescript_type = "RequestInfo | URL")]
    pub type JsFetchInput;
    #[wasm_bindgen(typescript_type = "RequestInit")]
    pub type JsRequestInit;
    #[wasm_bindgen(typescript_type = "Promise<Response>")]
    pub type JsResponsePromise;
    #[wasm_bindgen(typescript_type = "Promise<RunReport>")]
    pub type JsReportPromise;
}

#[cfg(feature = "voice")]
#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "Promise<AudioMeasurement> | AudioMeasurement")]
    pub type JsAudioResult;
    #[wasm_bindgen(
        typescript_type = "Promise<ReturnType<VoiceHandoff[\"result\"]>> | ReturnType<VoiceHandoff[\"result\"]>"
    )]
    pub type JsHandoffResult;
}

fn js_error(e: ProbeError) -> JsError {
    JsError::new(&e.to_string())
}

/// The probe's version string.
#[wasm_bindgen(js_name = version)]
pub fn version() -> String {
    crate::VERSION.to_owned()
}

/// The probe's clock: `performance.now()` in milliseconds.
#[wasm_bindgen(js_name = now)]
pub fn now() -> Result<f64, JsError> {
    crate::clock::now_ms().map_err(js_error)
}

/// Creates runs; holds options and the page's original `fetch`.
#[wasm_bindgen(js_name = Probe)]
pub struct JsProbe {
    probe: crate::Probe,
}

#[wasm_bindgen(js_class = Probe)]
impl JsProbe {
    #[wasm_bindgen(constructor)]
    pub fn new(options: Option<JsProbeOptions>) -> Result<JsProbe, JsError> {
        let options = match options {
            Some(o) => ProbeOptions::from_js(&o).map_err(js_error)?,
            None => ProbeOptions::default(),
        };
        let probe = crate::Probe::new(options).map_err(js_error)?;
        Ok(JsProbe { probe })
    }

    /// Starts measuring one request; `label` overrides the probe's label.
    pub fn start(&self, label: Option<String>) -> JsProbeRun {
        JsProbeRun {
            run: self.probe.start(label),
        }
    }

    /// Wraps `window.fetch` so matching requests are measured with no app change.
    #[wasm_bindgen(js_name = instrumentFetch)]
    pub fn instrument_fetch(&self, options: JsInstrumentOptions) -> Result<FetchHandle, JsError> {
        let get = |key: &str| {
            js_sys::Reflect::get(&options, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
        };
        let matcher = Matcher::from_js(&get("match")).map_err(js_error)?;
        let watch = get("watch");
        let watch = if watch.is_undefined() || watch.is_null() {
            None
        } else if let Some(e) = watch.dyn_ref::<Element>() {
            Some(WatchTarget::Element(e.clone()))
        } else if let Some(f) = watch.dyn_ref::<Function>() {
            Some(WatchTarget::Lookup(f.clone()))
        } else {
            return Err(js_error(ProbeError::BadOption(
                "watch must be an Element or a function".into(),
            )));
        };
        let inner = FetchInstrumentation::install(&self.probe, matcher, watch).map_err(js_error)?;
        Ok(FetchHandle { inner })
    }
}

/// One measured request.
#[wasm_bindgen(js_name = ProbeRun)]
pub struct JsProbeRun {
    run: crate::ProbeRun,
}

#[wasm_bindgen(js_class = ProbeRun)]
impl JsProbeRun {
    /// The run's id (also the report's `run.id`).
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.run.id().to_owned()
    }

    /// `fetch(input, init)`, measured. The Response's body yields exactly the server's
    /// bytes; a failed fetch rejects with the page's own error.
    pub fn fetch(&self, input: JsFetchInput, init: Option<JsRequestInit>) -> JsResponsePromise {
        let run = self.run.clone();
        let input: JsValue = input.into();
        let init: JsValue = init.map(Into::into).unwrap_or(JsValue::UNDEFINED);
        let promise: Promise = wasm_bindgen_futures::future_to_promise(async move {
            run.fetch(&input, &init).await.map(JsValue::from)
        });
        promise.unchecked_into()
    }

    /// `request_start` on the page clock once `fetch` was called: pass it as
    /// `requestStart` to a TtsPlayer or VoiceHandoff so their times share this origin.
    #[wasm_bindgen(getter, js_name = requestStart)]
    pub fn request_start(&self) -> Option<f64> {
        self.run.request_start()
    }

    /// The report waits (at most 15 s after the stream ends) for this TTS measurement
    /// (`player.result()`) and merges it. Call before the stream ends.
    #[cfg(feature = "voice")]
    #[wasm_bindgen(js_name = includeAudio)]
    pub fn include_audio(&self, result: JsAudioResult) {
        self.run
            .include_voice(crate::voice::VoicePart::Audio, result.into());
    }

    /// The report waits for this handoff result (`handoff.result()` after `llmDone()`,
    /// or a promise of it) and merges it. Call before the stream ends.
    #[cfg(feature = "voice")]
    #[wasm_bindgen(js_name = includeHandoff)]
    pub fn include_handoff(&self, result: JsHandoffResult) {
        self.run
            .include_voice(crate::voice::VoicePart::Handoff, result.into());
    }

    /// Times the reply's render in `element`; call before the first token lands.
    pub fn watch(&self, element: &Element) -> Result<(), JsError> {
        self.run.watch(element).map_err(js_error)
    }

    /// Resolves with the report once the stream is over and its paint is known.
    pub fn finished(&self) -> JsReportPromise {
        self.run.finished_promise().unchecked_into()
    }
}

/// Returned by `instrumentFetch`; `restore()` stops measuring.
#[wasm_bindgen]
pub struct FetchHandle {
    inner: FetchInstrumentation,
}

#[wasm_bindgen]
impl FetchHandle {
    /// Stops measuring and puts the original `fetch` back when nobody wrapped it since.
    /// Returns whether the original was put back.
    pub fn restore(&self) -> bool {
        self.inner.restore()
    }
}
