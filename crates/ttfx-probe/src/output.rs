//! Where a finished report goes: the app's callback, `window.__ttfx` (for QA drivers)
//! and, sampled, a beacon to the collector.
//!
//! The report holds no header values and no query strings (see `Recorder`), so nothing
//! here can leak a key.

use ttfx_core::report::RunReport;
use ttfx_core::timeline::Anomaly;
use wasm_bindgen::JsValue;

use crate::glue;
use crate::options::ProbeOptions;

/// Delivers `report`; returns it as a JS object and as Rust (with any delivery anomaly).
pub fn deliver(options: &ProbeOptions, mut report: RunReport) -> (JsValue, RunReport) {
    let mut value = to_js(&report);
    if let Some(callback) = &options.on_report
        && let Some(thrown) = glue::safe_call(callback, &value)
    {
        report.run.timeline.anomalies.push(Anomaly {
            at_ms: 0.0,
            class: "callback_threw".into(),
            detail: format!("onReport threw (ignored): {thrown}"),
        });
        value = to_js(&report);
    }
    glue::push_to_queue(&value);
    if let Some(url) = &options.collector_url
        && js_sys::Math::random() < options.sample_rate
        && let Ok(body) = serde_json::to_string(&report)
    {
        glue::send_beacon(url, &body);
    }
    (value, report)
}

/// A plain JS object (through JSON, so maps become objects and the shape is exactly the
/// documented schema).
fn to_js(report: &RunReport) -> JsValue {
    serde_json::to_string(report)
        .ok()
        .and_then(|json| js_sys::JSON::parse(&json).ok())
        .unwrap_or(JsValue::NULL)
}
