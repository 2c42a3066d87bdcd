//! AudioWorklet processors loaded from a Blob URL: no `eval`, no file for the app to
//! serve. Shared by the tap (`processor.js`) and the voice-activity detector
//! (`vad_processor.js`).

use js_sys::Array;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use web_sys::{BaseAudioContext, Blob, BlobPropertyBag, Url};

use crate::ProbeError;

/// Adds the processor module `source` to `ctx`'s worklet. Fails with a clear error when
/// the engine has no AudioWorklet or a Content-Security-Policy blocks `blob:` modules.
pub async fn load(ctx: &BaseAudioContext, source: &str, what: &str) -> Result<(), ProbeError> {
    let worklet = ctx
        .audio_worklet()
        .map_err(|e| ProbeError::browser("AudioContext.audioWorklet", &e))?;
    // An engine without AudioWorklet returns `undefined` here rather than throwing.
    if JsValue::from(worklet.clone()).is_undefined() {
        return Err(ProbeError::Browser(
            "AudioContext.audioWorklet: not supported by this engine".into(),
        ));
    }
    let bag = BlobPropertyBag::new();
    bag.set_type("text/javascript");
    let parts = Array::of1(&JsValue::from_str(source));
    let blob = Blob::new_with_str_sequence_and_options(&parts, &bag)
        .map_err(|e| ProbeError::browser(&format!("Blob for the {what} processor"), &e))?;
    let url = Url::create_object_url_with_blob(&blob)
        .map_err(|e| ProbeError::browser("URL.createObjectURL", &e))?;
    let loaded = match worklet.add_module(&url) {
        Ok(promise) => JsFuture::from(promise).await.map(drop),
        Err(e) => Err(e),
    };
    Url::revoke_object_url(&url).ok();
    loaded.map_err(|e| {
        ProbeError::browser(
            &format!("audioWorklet.addModule of the {what} (CSP may block blob:)"),
            &e,
        )
    })
}
