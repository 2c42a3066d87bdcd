//! The app's transcription request, watched: the page's `fetch` is called with the app's
//! own arguments, and the app gets a Response over one branch of a `tee` of the body
//! while the probe reads the other into ttfx-core's [`TranscriptionWatch`]. The app's
//! branch gets every chunk as the network delivers it, unchanged; the probe never holds
//! it back (a tee queues for the slower reader, it does not wait for it).

use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use ttfx_core::transcription::TranscriptionWatch;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{ReadableStream, ReadableStreamDefaultReader, Response, ResponseInit};

use crate::clock::now_ms;

/// What the watch has seen, each time it learns something.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SttTimes {
    pub first_partial_ms: Option<f64>,
    pub final_ms: Option<f64>,
    /// An event stream ended without `transcript.text.done`.
    pub final_is_body_end: bool,
}

/// Calls the page's `fetch(input, init)`. Rejects as the page's fetch would (its own
/// error value). A response with a body and a 2xx status comes back re-wrapped over a
/// tee, and `update` hears the watch's times as chunks arrive; any other response comes
/// back untouched, with the reason (for the turn's notes).
pub async fn fetch(
    input: &JsValue,
    init: &JsValue,
    mut update: impl FnMut(SttTimes) + 'static,
) -> Result<(Response, Option<String>), JsValue> {
    let global = js_sys::global();
    let fetch: Function = Reflect::get(&global, &"fetch".into())?.dyn_into()?;
    let response: Response =
        JsFuture::from(js_sys::Promise::from(fetch.call2(&global, input, init)?))
            .await?
            .dyn_into()?;
    if !response.ok() {
        let status = response.status();
        return Ok((
            response,
            Some(format!(
                "the transcription answered HTTP {status}: no stt milestones"
            )),
        ));
    }
    let Some(body) = response.body() else {
        return Ok((
            response,
            Some("the transcription had no body: no stt milestones".into()),
        ));
    };
    let content_type = response.headers().get("content-type").ok().flatten();
    let branches: Array = body.tee();
    let (app, probe): (ReadableStream, ReadableStream) = (
        branches.get(0).unchecked_into(),
        branches.get(1).unchecked_into(),
    );
    let wrapped = wrap(&response, &app)?;
    // A promise nobody awaits rather than `spawn_local`: the voice build already links
    // `future_to_promise`'s executor (through `js::promise`).
    drop(super::js::promise(async move {
        let mut watch = TranscriptionWatch::new(content_type.as_deref());
        let reader: ReadableStreamDefaultReader = probe.get_reader().unchecked_into();
        loop {
            let Ok(result) = JsFuture::from(reader.read()).await else {
                // The body failed: the app sees the same error on its branch.
                return Ok(JsValue::UNDEFINED);
            };
            let Ok(at) = now_ms() else {
                return Ok(JsValue::UNDEFINED);
            };
            let field = |k: &str| Reflect::get(&result, &JsValue::from_str(k));
            if field("done").map(|d| d.is_truthy()).unwrap_or(true) {
                watch.finish(at);
            } else if let Ok(chunk) = field("value").and_then(|v| v.dyn_into::<Uint8Array>()) {
                watch.push(&chunk.to_vec(), at);
            }
            update(SttTimes {
                first_partial_ms: watch.first_partial_ms(),
                final_ms: watch.final_ms(),
                final_is_body_end: watch.final_is_body_end(),
            });
            if watch.has_final() {
                // Nothing after the final transcript is timed: stop reading this branch
                // (the app's branch goes on).
                drop(reader.cancel());
                return Ok(JsValue::UNDEFINED);
            }
        }
    }));
    Ok((wrapped, None))
}

/// A Response equal to `original` but for its body (the front's `wrapResponse`): `url`,
/// `redirected` and `type` are read-only on a constructed Response, so they are copied
/// as own properties.
fn wrap(original: &Response, body: &ReadableStream) -> Result<Response, JsValue> {
    let init = ResponseInit::new();
    init.set_status(original.status());
    init.set_status_text(&original.status_text());
    init.set_headers(&original.headers());
    let wrapped = Response::new_with_opt_readable_stream_and_init(Some(body), &init)?;
    for key in ["url", "redirected", "type"] {
        let descriptor = Object::new();
        Reflect::set(
            &descriptor,
            &"value".into(),
            &Reflect::get(original, &key.into())?,
        )?;
        Reflect::set(&descriptor, &"enumerable".into(), &JsValue::TRUE)?;
        Object::define_property(&wrapped, &key.into(), &descriptor);
    }
    Ok(wrapped)
}
