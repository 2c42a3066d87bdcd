//! Probe options, read from a plain JS object or built in Rust.

use js_sys::{Function, Reflect};
use ttfx_core::decimal::Decimal;
use ttfx_core::decode::DialectKind;
use wasm_bindgen::{JsCast, JsValue};

use crate::ProbeError;

/// How a probe measures and where its reports go.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The stream's dialect; `None` detects it from the content type and first frames.
    pub dialect: Option<DialectKind>,
    /// A name for what is measured (a deployment, a profile); reports carry it as `target`.
    pub label: Option<String>,
    /// Where to `sendBeacon` each report, if anywhere.
    pub collector_url: Option<String>,
    /// Fraction of runs whose report is beaconed (0..=1); the callback and `window.__ttfx`
    /// always get every report.
    pub sample_rate: f64,
    /// How long after the stream ends to wait for the first paint of the reply.
    pub paint_timeout_ms: f64,
    /// Called with every report (a thrown error is recorded, never propagated).
    pub on_report: Option<Function>,
    /// Testing only: make the probe fail on purpose, to show the app is unaffected.
    pub fault: Option<Fault>,
}

/// Faults the probe can inject into itself (for containment tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The decoder panics on the first chunk.
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
    /// Reads options from a JS object (`undefined`/`null` give the defaults). Unknown
    /// keys are ignored; known keys of the wrong type are an error that names them.
    pub fn from_js(value: &JsValue) -> Result<ProbeOptions, ProbeError> {
        let mut options = ProbeOptions::default();
        if value.is_undefined() || value.is_null() {
            return Ok(options);
        }
        if !value.is_object() {
            return Err(ProbeError::BadOption("options must be an object".into()));
        }
        if let Some(d) = string(value, "dialect")? {
            options.dialect = match d.as_str() {
                "auto" => None,
                other => Some(
                    other
                        .parse()
                        .map_err(|e| ProbeError::BadOption(format!("dialect: {e}")))?,
                ),
            };
        }
        options.label = string(value, "label")?;
        options.collector_url = string(value, "collectorUrl")?;
        if let Some(rate) = number(value, "sampleRate")? {
            if !(0.0..=1.0).contains(&rate) {
                return Err(ProbeError::BadOption(format!(
                    "sampleRate must be between 0 and 1, got {}",
                    Decimal(rate)
                )));
            }
            options.sample_rate = rate;
        }
        if let Some(ms) = number(value, "paintTimeoutMs")? {
            if !(0.0..=60_000.0).contains(&ms) {
                return Err(ProbeError::BadOption(format!(
                    "paintTimeoutMs must be between 0 and 60000, got {}",
                    Decimal(ms)
                )));
            }
            options.paint_timeout_ms = ms;
        }
        let on_report = get(value, "onReport")?;
        if !on_report.is_undefined() && !on_report.is_null() {
            options.on_report = Some(
                on_report
                    .dyn_into::<Function>()
                    .map_err(|_| ProbeError::BadOption("onReport must be a function".into()))?,
            );
        }
        options.fault = match string(value, "__faultInjection")?.as_deref() {
            None => None,
            Some("decoder-panic") => Some(Fault::DecoderPanic),
            Some(other) => {
                return Err(ProbeError::BadOption(format!(
                    "__faultInjection: unknown fault `{other}` (known: decoder-panic)"
                )));
            }
        };
        Ok(options)
    }
}

fn get(object: &JsValue, key: &str) -> Result<JsValue, ProbeError> {
    Reflect::get(object, &JsValue::from_str(key))
        .map_err(|e| ProbeError::BadOption(format!("{key}: {}", crate::error::describe_js(&e))))
}

fn string(object: &JsValue, key: &str) -> Result<Option<String>, ProbeError> {
    let v = get(object, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_string()
        .map(Some)
        .ok_or_else(|| ProbeError::BadOption(format!("{key} must be a string")))
}

fn number(object: &JsValue, key: &str) -> Result<Option<f64>, ProbeError> {
    let v = get(object, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    match v.as_f64() {
        Some(n) if n.is_finite() => Ok(Some(n)),
        _ => Err(ProbeError::BadOption(format!(
            "{key} must be a finite number"
        ))),
    }
}
