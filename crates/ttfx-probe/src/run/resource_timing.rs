//! The request's Resource Timing entry: found after the body ends, added to the timeline
//! with its `serverTiming` entries.

use js_sys::Reflect;
use ttfx_core::server_timing::{ServerTiming, TimingSource};
use ttfx_core::timeline::{ResourceTiming, Timeline};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use super::ProbeRun;
use crate::glue;

impl ProbeRun {
    /// The browser adds the entry only after the body ends, sometimes a task later.
    pub(super) async fn wait_for_resource_timing(&self) -> JsValue {
        let (url, start) = match self.inner.state.try_borrow() {
            Ok(s) => (s.url.clone(), s.start_abs),
            Err(_) => return JsValue::NULL,
        };
        for _ in 0..5 {
            let entry = glue::find_resource_timing(&url, start);
            if !entry.is_null() {
                return entry;
            }
            gloo_timers::future::TimeoutFuture::new(20).await;
        }
        JsValue::NULL
    }
}

pub(super) fn attach_resource_timing(timeline: &mut Timeline, entry: &JsValue, start: f64) {
    if entry.is_null() || entry.is_undefined() {
        return;
    }
    let num = |key: &str| {
        Reflect::get(entry, &JsValue::from_str(key))
            .ok()
            .and_then(|v| v.as_f64())
    };
    let rel = |key: &str| num(key).filter(|v| *v > 0.0).map(|v| v - start);
    timeline.resource_timing = Some(ResourceTiming {
        request_start_ms: rel("requestStart"),
        response_start_ms: rel("responseStart"),
        response_end_ms: rel("responseEnd"),
        encoded_body_size: num("encodedBodySize").map(|v| v as u64),
    });
    let Ok(list) = Reflect::get(entry, &JsValue::from_str("serverTiming")) else {
        return;
    };
    let Ok(list) = list.dyn_into::<js_sys::Array>() else {
        return;
    };
    for item in list.iter() {
        let text = |key: &str| {
            Reflect::get(&item, &JsValue::from_str(key))
                .ok()
                .and_then(|v| v.as_string())
        };
        let Some(name) = text("name") else { continue };
        let duration = Reflect::get(&item, &JsValue::from_str("duration"))
            .ok()
            .and_then(|v| v.as_f64());
        timeline.server.timings.push(ServerTiming {
            name,
            duration_ms: duration,
            description: text("description").filter(|d| !d.is_empty()),
            source: TimingSource::ResourceTiming,
        });
    }
}
