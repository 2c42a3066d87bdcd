//! Containment: a probe fault must never become a crash of the host page.
//!
//! In wasm a panic aborts the current call into the module. The hook below runs first: it
//! records what happened and switches the probe off, so every later entry point returns
//! early and the app's own traffic flows through untouched.

use std::cell::RefCell;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

static DISABLED: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

thread_local! {
    static REASON: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the panic hook once; the previous hook (e.g. the app's own) still runs.
pub fn install() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            disable(&format!("panic: {info}"));
            previous(info);
        }));
    });
}

/// Switches the probe off for the rest of the page's life, keeping the first reason.
pub fn disable(reason: &str) {
    DISABLED.store(true, Ordering::SeqCst);
    let _ = REASON.try_with(|r| {
        if let Ok(mut r) = r.try_borrow_mut()
            && r.is_none()
        {
            *r = Some(reason.to_owned());
        }
    });
}

/// Whether the probe has switched itself off.
pub fn is_disabled() -> bool {
    DISABLED.load(Ordering::SeqCst)
}

/// Why the probe switched itself off, if it did.
pub fn reason() -> Option<String> {
    REASON
        .try_with(|r| r.try_borrow().ok().and_then(|r| r.clone()))
        .ok()
        .flatten()
}
