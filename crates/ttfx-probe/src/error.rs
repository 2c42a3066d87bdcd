//! The probe's one error type. Every failure the probe can meet is a variant here, so a
//! host page sees a clear sentence instead of a panic.

use std::fmt;

use wasm_bindgen::JsValue;

/// What went wrong inside the probe.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeError {
    /// The global scope has no usable `performance.now()` (not a browser or worker).
    NoPerformanceClock(String),
    /// An option has the wrong type or value.
    BadOption(String),
    /// A browser API the probe needs threw or is missing.
    Browser(String),
    /// The probe stopped itself after an internal fault; the app is unaffected.
    Disabled(String),
}

impl ProbeError {
    /// A browser API failed; `what` says which, `value` is what it threw.
    pub fn browser(what: &str, value: &JsValue) -> ProbeError {
        ProbeError::Browser(format!("{what}: {}", describe_js(value)))
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::NoPerformanceClock(why) => {
                write!(
                    f,
                    "ttfx: no performance.now() clock in this global scope: {why}"
                )
            }
            ProbeError::BadOption(why) => write!(f, "ttfx: bad option: {why}"),
            ProbeError::Browser(why) => write!(f, "ttfx: browser API failed: {why}"),
            ProbeError::Disabled(why) => write!(f, "ttfx: probe disabled after a fault: {why}"),
        }
    }
}

impl std::error::Error for ProbeError {}

/// A short text for a thrown JS value: an Error's `name: message`, a string as is.
pub fn describe_js(value: &JsValue) -> String {
    if let Some(s) = value.as_string() {
        return s;
    }
    let get = |key: &str| {
        js_sys::Reflect::get(value, &JsValue::from_str(key))
            .ok()
            .and_then(|v| v.as_string())
    };
    match (get("name"), get("message")) {
        (Some(name), Some(message)) => format!("{name}: {message}"),
        (None, Some(message)) => message,
        _ => value
            .js_typeof()
            .as_string()
            .unwrap_or_else(|| "unknown value".into()),
    }
}
