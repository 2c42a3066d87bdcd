//! JS values as the page shows them in its messages.

use wasm_bindgen::{JsCast, JsValue};

/// A JS error or value as text for the page's messages.
pub fn text(value: &JsValue) -> String {
    value
        .as_string()
        .or_else(|| {
            value
                .dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{value:?}"))
}
