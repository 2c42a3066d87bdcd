//! Probe options for Rust callers, handed to the front as the same plain object a JS
//! page passes (`docs/probe.md`), which checks them.

use js_sys::{Function, Object, Reflect};
use ttfx_core::decode::DialectKind;
use wasm_bindgen::JsValue;

/// Options of a [`crate::Probe`].
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The stream's dialect; `None` detects it from the content type and first frames.
    pub dialect: Option<DialectKind>,
    /// What is measured; reports carry it as `target`.
    pub label: Option<String>,
    /// Where to send each sampled run's field report (`ttfx_core::field`, at most 16 KiB)
    /// with `navigator.sendBeacon`, else a keepalive fetch (docs/probe.md).
    pub collector_url: Option<String>,
    /// Share of runs whose field report is sent, 0..=1, drawn per run.
    pub sample_rate: f64,
    /// How long after the stream ends to wait for the reply's first paint.
    pub paint_timeout_ms: f64,
    /// Called with every report (a plain object).
    pub on_report: Option<Function>,
    /// Testing only: make the probe fail on purpose.
    pub fault: Option<Fault>,
}

/// A fault to inject, to check that a probe failure never reaches the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The analysis panics on the first chunk batch.
    DecoderPanic,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            dialect: None,
            label: None,
            collector_url: None,
            sample_rate: 1.0,
            paint_timeout_ms: 1000.0,
            on_report: None,
            fault: None,
        }
    }
}

impl ProbeOptions {
    /// The options as the front reads them, with `analysis`: where the front gets its
    /// analysis from.
    pub(crate) fn to_js(&self, analysis: &JsValue) -> Object {
        let object = Object::new();
        let set = |key: &str, value: JsValue| {
            let _ = Reflect::set(&object, &JsValue::from_str(key), &value);
        };
        if let Some(d) = self.dialect {
            set("dialect", d.as_str().into());
        }
        if let Some(label) = &self.label {
            set("label", label.into());
        }
        if let Some(url) = &self.collector_url {
            set("collectorUrl", url.into());
        }
        set("sampleRate", self.sample_rate.into());
        set("paintTimeoutMs", self.paint_timeout_ms.into());
        if let Some(f) = &self.on_report {
            set("onReport", f.into());
        }
        if self.fault == Some(Fault::DecoderPanic) {
            set("__faultInjection", "decoder-panic".into());
        }
        set("analysis", analysis.clone());
        object
    }
}
