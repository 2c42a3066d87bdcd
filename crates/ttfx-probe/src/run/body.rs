//! The callbacks `glue.js`'s `tapBody` calls with the body's chunks and its end.

use js_sys::{Float64Array, Object, Reflect, Uint8Array};
use ttfx_core::recorder::Recorder;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use super::ProbeRun;
use crate::guard;
use crate::options::Fault;

/// A callback `tapBody` calls with (time, value).
pub(super) type Hook = Closure<dyn FnMut(JsValue, JsValue)>;

/// What a hook does with the run: the method behind one of `tapBody`'s callbacks.
type HookCall = fn(&ProbeRun, JsValue, JsValue);

impl ProbeRun {
    /// The callbacks `tapBody` calls, each a task after the app got the chunk.
    pub(super) fn hooks(&self) -> Object {
        let table: [(&str, HookCall); 6] = [
            ("onChunks", |run, meta, bytes| run.on_chunks(meta, bytes)),
            ("onOddChunk", |run, at, kind| run.on_odd_chunk(at, kind)),
            ("onEnd", |run, at, _| run.on_end(at)),
            ("onError", |run, at, detail| run.on_error(at, detail)),
            ("onCancel", |run, at, _| run.on_cancel(at)),
            ("onFault", |run, message, _| {
                run.fault(&message.as_string().unwrap_or_default());
            }),
        ];
        let hooks = Object::new();
        let mut keep = Vec::with_capacity(table.len());
        for (name, call) in table {
            let run = self.clone();
            let hook: Hook = Closure::new(move |a: JsValue, b: JsValue| call(&run, a, b));
            let _ = Reflect::set(&hooks, &JsValue::from_str(name), hook.as_ref());
            keep.push(hook);
        }
        if let Ok(mut h) = self.inner.hooks.try_borrow_mut() {
            h.extend(keep);
        }
        hooks
    }

    /// A batch of body chunks from `glue.js`: `meta` holds [arrival time, length] per
    /// chunk, `bytes` their bytes end to end.
    fn on_chunks(&self, meta: JsValue, bytes: JsValue) {
        if guard::is_disabled() {
            return;
        }
        let (Ok(meta), Ok(bytes)) = (
            meta.dyn_into::<Float64Array>(),
            bytes.dyn_into::<Uint8Array>(),
        ) else {
            self.note(
                "chunk_batch_invalid",
                "glue.js passed a chunk batch of the wrong types",
            );
            return;
        };
        let meta = meta.to_vec();
        let bytes = bytes.to_vec();
        let fault = self.inner.probe.options.fault;
        self.recording(|recorder, start| {
            if fault == Some(Fault::DecoderPanic) {
                panic!("ttfx fault injection: decoder forced to fail");
            }
            let mut rest = bytes.as_slice();
            for &[at, len] in meta.as_chunks::<2>().0 {
                let Some((chunk, after)) = rest.split_at_checked(len as usize) else {
                    recorder.anomaly(
                        at - start,
                        "chunk_batch_invalid",
                        "a chunk batch held fewer bytes than its lengths say",
                    );
                    return;
                };
                recorder.chunk(at - start, chunk);
                rest = after;
            }
        });
    }

    /// A chunk the probe could not read: not bytes, or its buffer was transferred away
    /// before the probe's task ran.
    fn on_odd_chunk(&self, at: JsValue, kind: JsValue) {
        if guard::is_disabled() {
            return;
        }
        let (class, detail) = match kind.as_string().as_deref() {
            Some("detached") => (
                "chunk_detached",
                "a chunk's buffer was detached before the probe read it",
            ),
            _ => ("non_byte_chunk", "a body chunk was not a Uint8Array"),
        };
        self.with_recorder(at, |r, t| r.anomaly(t, class, detail));
    }

    fn on_end(&self, at: JsValue) {
        self.with_recorder(at, |r, t| r.end(t));
        self.finish();
    }

    fn on_error(&self, at: JsValue, detail: JsValue) {
        let detail = detail.as_string().unwrap_or_default();
        self.with_recorder(at, |r, t| {
            r.network_error(t, format!("body stream errored: {detail}"))
        });
        self.finish();
    }

    fn on_cancel(&self, at: JsValue) {
        self.with_recorder(at, |r, t| r.abort(t));
        self.finish();
    }

    /// `recording` with `at`, a page time from JS, made relative to the run's start.
    fn with_recorder(&self, at: JsValue, f: impl FnOnce(&mut Recorder, f64)) {
        let at = at.as_f64().unwrap_or(f64::NAN);
        self.recording(|r, start| f(r, at - start));
    }
}
