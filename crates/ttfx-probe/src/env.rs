//! The environment a run was measured in: engine, isolation, timer resolution.

use js_sys::Reflect;
use ttfx_core::timeline::Environment;
use wasm_bindgen::JsValue;

use crate::glue;

/// What can be read once per probe: it does not change while the page lives.
pub fn detect() -> Environment {
    let info = glue::engine_info();
    let text = |key: &str| {
        Reflect::get(&info, &JsValue::from_str(key))
            .ok()
            .and_then(|v| v.as_string())
    };
    let isolated = Reflect::get(&js_sys::global(), &JsValue::from_str("crossOriginIsolated"))
        .ok()
        .and_then(|v| v.as_bool());
    Environment {
        engine: text("engine"),
        engine_version: text("version"),
        user_agent: text("userAgent"),
        cross_origin_isolated: isolated,
        timer_resolution_ms: glue::timer_resolution(),
        visibility_changes: Vec::new(),
        concurrency: None,
    }
}

/// `performance.timeOrigin`, to place `request_start` on the wall clock.
pub fn time_origin() -> Option<f64> {
    let performance = Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).ok()?;
    Reflect::get(&performance, &JsValue::from_str("timeOrigin"))
        .ok()?
        .as_f64()
}
