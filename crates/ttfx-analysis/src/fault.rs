//! Faults inside the analysis. In wasm a panic aborts the call (the page sees a
//! `RuntimeError`); the hook keeps the panic's message first, so the probe can say what
//! failed. Wherever the analysis runs, the page's stream is never affected.

use std::cell::RefCell;
use std::sync::Once;

use wasm_bindgen::prelude::*;

use crate::{Analysis, AnalysisError};

static HOOK: Once = Once::new();

thread_local! {
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the hook once; the previous hook still runs.
pub fn install_hook() {
    HOOK.call_once(|| {
        // In the Worker's own build (feature `worker`) nothing set a hook before: the
        // previous one is std's default, which prints to a stderr wasm32 does not have.
        // Leaving it out there drops 2.4 KB gzip of its formatting code.
        #[cfg(not(all(feature = "worker", target_family = "wasm")))]
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = LAST.try_with(|last| {
                if let Ok(mut last) = last.try_borrow_mut() {
                    *last = Some(format!("panic: {info}"));
                }
            });
            #[cfg(not(all(feature = "worker", target_family = "wasm")))]
            previous(info);
        }));
    });
}

/// The message of the last panic inside the analysis, if one happened.
pub fn last_panic() -> Option<String> {
    LAST.try_with(|last| last.try_borrow().ok().and_then(|l| l.clone()))
        .ok()
        .flatten()
}

#[wasm_bindgen]
impl Analysis {
    /// The message of the last panic inside the analysis (a call that failed with a
    /// `RuntimeError` panicked), if one happened.
    #[wasm_bindgen(js_name = lastPanic)]
    pub fn js_last_panic() -> Option<String> {
        last_panic()
    }
}

/// A fault a test injects to check containment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injected {
    /// The first chunk batch panics, as a decoder bug would.
    DecoderPanic,
}

impl Injected {
    pub fn from_name(name: &str) -> Result<Injected, AnalysisError> {
        match name {
            "decoder-panic" => Ok(Injected::DecoderPanic),
            other => Err(AnalysisError::UnknownFault(other.to_owned())),
        }
    }

    #[allow(clippy::panic)]
    pub fn trigger(self) {
        match self {
            Injected::DecoderPanic => panic!("ttfx fault injection: decoder forced to fail"),
        }
    }
}
