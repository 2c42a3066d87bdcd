//! The JS edge: every export returns `Result<_, JsError>` so a failure is a thrown
//! `Error` with a clear message in the host page, never a wasm trap.

use wasm_bindgen::prelude::*;

/// The probe's version string.
#[wasm_bindgen(js_name = version)]
pub fn version() -> String {
    crate::VERSION.to_owned()
}

/// The probe's clock: `performance.now()` in milliseconds.
#[wasm_bindgen(js_name = now)]
pub fn now() -> Result<f64, JsError> {
    crate::clock::now_ms().map_err(|e| JsError::new(&e.to_string()))
}
