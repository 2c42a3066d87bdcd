//! [`Probe`] and [`ProbeRun`] for Rust front ends: the front (`js/probe.js`) takes the
//! clocks, and the analysis (ttfx-analysis, linked into this wasm) runs on the page's
//! main thread in idle time. A Rust app has the analysis in its own module already, so a
//! Worker would load it a second time for no gain; reports say `analysis: main_thread`.

use js_sys::Promise;
use ttfx_analysis::Analysis;
use ttfx_core::report::RunReport;
#[cfg(feature = "voice")]
use ttfx_core::voice_result::VoicePart;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Element, Response};

use crate::error::describe_js;
use crate::front::{FrontProbe, FrontRun};
use crate::{ProbeError, ProbeOptions};

/// Creates runs that share options, the page's original `fetch` and the environment.
#[derive(Clone)]
pub struct Probe {
    front: FrontProbe,
    options: ProbeOptions,
}

impl Probe {
    /// A probe with these options.
    pub fn new(options: ProbeOptions) -> Result<Probe, ProbeError> {
        // Called once, when the first run's analysis is wanted.
        let analysis = Closure::once_into_js(|| JsValue::from(Analysis::new()));
        let front = FrontProbe::new(&options.to_js(&analysis).into())
            .map_err(|e| ProbeError::BadOption(describe_js(&e)))?;
        Ok(Probe { front, options })
    }

    /// The options the probe was made with.
    pub fn options(&self) -> &ProbeOptions {
        &self.options
    }

    /// Starts a run; `label` overrides the probe's label for this run.
    pub fn start(&self, label: Option<String>) -> ProbeRun {
        ProbeRun {
            front: self.front.start(label),
        }
    }
}

/// One measured request.
#[derive(Clone)]
pub struct ProbeRun {
    front: FrontRun,
}

impl ProbeRun {
    /// The run's id (also the report's `id`).
    pub fn id(&self) -> String {
        self.front.id()
    }

    /// Measures `fetch(input, init)` and returns a `Response` whose body yields exactly
    /// the bytes the server sent. Errors are the page's own fetch errors, unchanged.
    pub async fn fetch(&self, input: &JsValue, init: &JsValue) -> Result<Response, JsValue> {
        JsFuture::from(self.front.fetch(input, init))
            .await?
            .dyn_into::<Response>()
    }

    /// Times the reply's render in `element` (call before the first token lands).
    pub fn watch(&self, element: &Element) -> Result<(), ProbeError> {
        self.front
            .watch(element)
            .map_err(|e| ProbeError::Browser(describe_js(&e)))
    }

    /// `request_start` on the page clock, once the fetch started: give it to a TTS player
    /// or handoff recorder so their times share this run's origin.
    pub fn request_start(&self) -> Option<f64> {
        self.front.request_start()
    }

    /// Makes the report wait (at most 15 s after the stream ends) for a voice result, a
    /// promise or a value, and merge it. Call before the stream ends.
    #[cfg(feature = "voice")]
    pub fn include_voice(&self, part: VoicePart, result: JsValue) {
        self.front.include(part.as_str(), &result);
    }

    /// A promise of the report (a plain object, as pushed to `window.__ttfx`).
    pub fn finished_promise(&self) -> Promise {
        self.front.finished()
    }

    /// The report, once the run is finished: the front's plain object read back with
    /// serde-wasm-bindgen. `Err` says why it could not be read.
    pub async fn finished(&self) -> Result<RunReport, ProbeError> {
        let value = JsFuture::from(self.front.finished())
            .await
            .map_err(|e| ProbeError::Browser(describe_js(&e)))?;
        serde_wasm_bindgen::from_value(value)
            .map_err(|e| ProbeError::Browser(format!("the report does not read back: {e}")))
    }
}
