//! Bindings to `glue.js`, the probe's JS edge (see that file for why it is JS).

use js_sys::{Function, Object, Promise};
use wasm_bindgen::prelude::*;
use web_sys::{Element, ReadableStream, Response};

#[wasm_bindgen(module = "/src/glue.js")]
extern "C" {
    #[wasm_bindgen(js_name = tapBody, catch)]
    pub fn tap_body(body: &ReadableStream, hooks: &Object) -> Result<ReadableStream, JsValue>;

    #[wasm_bindgen(js_name = canWrap)]
    pub fn can_wrap(response: &Response) -> bool;

    #[wasm_bindgen(js_name = wrapResponse, catch)]
    pub fn wrap_response(original: &Response, body: &ReadableStream) -> Result<Response, JsValue>;

    #[wasm_bindgen(js_name = callFetch, catch)]
    pub fn call_fetch(
        fetch: &Function,
        input: &JsValue,
        init: &JsValue,
    ) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_name = currentFetch)]
    pub fn current_fetch() -> JsValue;

    #[wasm_bindgen(js_name = setFetch)]
    pub fn set_fetch(fetch: &JsValue);

    #[wasm_bindgen(js_name = makeFetchWrapper)]
    pub fn make_fetch_wrapper(
        original: &Function,
        should_measure: &Function,
        measure: &Function,
    ) -> Function;

    #[wasm_bindgen(js_name = inputUrl)]
    pub fn input_url(input: &JsValue) -> String;

    #[wasm_bindgen(js_name = inputMethod)]
    pub fn input_method(input: &JsValue, init: &JsValue) -> String;

    #[wasm_bindgen(js_name = inputSignal)]
    pub fn input_signal(input: &JsValue, init: &JsValue) -> JsValue;

    #[wasm_bindgen(js_name = observeElementPaint, catch)]
    pub fn observe_element_paint(root: &Element, on_paint: &Function) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(js_name = afterNextFrame, catch)]
    pub fn after_next_frame(callback: &Function) -> Result<(), JsValue>;

    #[wasm_bindgen(js_name = safeCall)]
    pub fn safe_call(f: &Function, arg: &JsValue) -> Option<String>;

    #[wasm_bindgen(js_name = findResourceTiming)]
    pub fn find_resource_timing(url: &str, start_abs: f64) -> JsValue;

    #[wasm_bindgen(js_name = engineInfo)]
    pub fn engine_info() -> JsValue;

    #[wasm_bindgen(js_name = timerResolution)]
    pub fn timer_resolution() -> Option<f64>;

    #[wasm_bindgen(js_name = pushToQueue)]
    pub fn push_to_queue(report: &JsValue);

    #[wasm_bindgen(js_name = settleWithin)]
    pub fn settle_within(promise: &JsValue, ms: f64) -> Promise;

    #[wasm_bindgen(js_name = sendBeacon)]
    pub fn send_beacon(url: &str, body: &str) -> bool;

    /// Hands `cargo xtask bench` one main-thread cost sample (a no-op otherwise).
    #[wasm_bindgen(js_name = costSample)]
    pub fn cost_sample(name: &str, ms: f64);
}
