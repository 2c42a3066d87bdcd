//! The one clock every milestone is measured on: the page's `performance.now()`.
//!
//! The global scope is looked up each time rather than through `window()`, so the probe
//! also works inside a Web Worker, where there is no `Window`.

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::Performance;

use crate::ProbeError;

/// Milliseconds on the page's high-resolution clock (`performance.now()`).
pub fn now_ms() -> Result<f64, ProbeError> {
    Ok(performance()?.now())
}

fn performance() -> Result<Performance, ProbeError> {
    let global = js_sys::global();
    let value = Reflect::get(&global, &JsValue::from_str("performance"))
        .map_err(|e| ProbeError::NoPerformanceClock(describe(&e)))?;
    value
        .dyn_into::<Performance>()
        .map_err(|v| ProbeError::NoPerformanceClock(format!("`performance` is {}", describe(&v))))
}

fn describe(value: &JsValue) -> String {
    value
        .as_string()
        .unwrap_or_else(|| format!("{:?}", value.js_typeof().as_string().unwrap_or_default()))
}
