//! The probe's front (`js/probe.js`): the part that takes the clocks and keeps the bytes,
//! the same module the npm package ships at its root. Rust front ends reach it through
//! these bindings, so every clock is taken by one piece of code.
//!
//! `js/probe.js` is the bundle of the front's sources (`js/src/`, one ES module per
//! concern), committed: wasm-bindgen copies the one file named here and follows none of
//! its imports (`cargo xtask probe-front` remakes it; docs/probe.md).

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use web_sys::Element;

#[wasm_bindgen(module = "/js/probe.js")]
extern "C" {
    /// The front's `Probe`.
    #[wasm_bindgen(js_name = Probe)]
    #[derive(Clone)]
    pub type FrontProbe;

    /// Throws an `Error` naming the option when one is wrong.
    #[wasm_bindgen(constructor, catch, js_class = "Probe")]
    pub fn new(options: &JsValue) -> Result<FrontProbe, JsValue>;

    #[wasm_bindgen(method, js_class = "Probe")]
    pub fn start(this: &FrontProbe, label: Option<String>) -> FrontRun;

    /// The front's `ProbeRun`.
    #[wasm_bindgen(js_name = ProbeRun)]
    #[derive(Clone)]
    pub type FrontRun;

    #[wasm_bindgen(method, getter, js_class = "ProbeRun")]
    pub fn id(this: &FrontRun) -> String;

    #[wasm_bindgen(method, getter, js_class = "ProbeRun", js_name = requestStart)]
    pub fn request_start(this: &FrontRun) -> Option<f64>;

    /// A promise of the Response; it rejects with the page's own fetch error.
    #[wasm_bindgen(method, js_class = "ProbeRun")]
    pub fn fetch(this: &FrontRun, input: &JsValue, init: &JsValue) -> Promise;

    #[wasm_bindgen(method, catch, js_class = "ProbeRun")]
    pub fn watch(this: &FrontRun, element: &Element) -> Result<(), JsValue>;

    /// A voice result the report waits for: `part` is `"audio"`, `"handoff"` or `"turn"`.
    #[wasm_bindgen(method, js_class = "ProbeRun")]
    pub fn include(this: &FrontRun, part: &str, result: &JsValue);

    /// A promise of the report (a plain object).
    #[wasm_bindgen(method, js_class = "ProbeRun")]
    pub fn finished(this: &FrontRun) -> Promise;
}

/// The front speaks the names ttfx-core defines: its version and dialect list are checked
/// against them here (the front is JS, so it cannot import them), in the sources that
/// define them. The bundle, minified, is held to the sources by `cargo xtask test`'s
/// "probe front bundle" stage.
#[cfg(test)]
mod tests {
    use ttfx_core::decode::DialectKind;

    const VERSION_JS: &str = include_str!("../js/src/version.js");
    const OPTIONS_JS: &str = include_str!("../js/src/options.js");

    fn quoted_list(after: &str) -> Vec<&'static str> {
        let start = OPTIONS_JS.find(after).expect("the marker is in options.js") + after.len();
        let end = start + OPTIONS_JS[start..].find(']').expect("the list ends");
        OPTIONS_JS[start..end]
            .split(',')
            .map(|s| s.trim().trim_matches('"'))
            .collect()
    }

    #[test]
    fn the_front_knows_this_version_and_every_dialect() {
        let version = format!("export const VERSION = \"{}\";", env!("CARGO_PKG_VERSION"));
        assert!(
            VERSION_JS.contains(&version),
            "js/src/version.js must say {version}"
        );
        let mut names: Vec<&str> = DialectKind::ALL.iter().map(|d| d.as_str()).collect();
        names.push("auto");
        names.sort_unstable();
        let mut front = quoted_list("const DIALECTS = [");
        front.sort_unstable();
        assert_eq!(front, names);
        let schema = format!(
            "export const SCHEMA_VERSION = {};",
            ttfx_core::report::SCHEMA_VERSION
        );
        assert!(
            VERSION_JS.contains(&schema),
            "js/src/version.js must say {schema}"
        );
    }
}
