//! Page visibility during a run: hidden pages get throttled timers and no frames, so a
//! report must say when the page was hidden.

use ttfx_core::timeline::{Visibility, VisibilityChange};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Document, VisibilityState};

use crate::{ProbeError, clock};

/// Listens for `visibilitychange` until dropped.
#[must_use = "visibility is logged only while the log lives"]
pub struct VisibilityLog {
    document: Document,
    changes: std::rc::Rc<std::cell::RefCell<Vec<(f64, Visibility)>>>,
    listener: Closure<dyn FnMut()>,
}

fn state(document: &Document) -> Visibility {
    match document.visibility_state() {
        VisibilityState::Hidden => Visibility::Hidden,
        _ => Visibility::Visible,
    }
}

impl VisibilityLog {
    /// Starts the log with the current state.
    pub fn start() -> Result<VisibilityLog, ProbeError> {
        let document = web_sys::window()
            .and_then(|w| w.document())
            .ok_or_else(|| ProbeError::Browser("no document (not a window scope)".into()))?;
        let changes = std::rc::Rc::new(std::cell::RefCell::new(vec![(
            clock::now_ms()?,
            state(&document),
        )]));
        let log = changes.clone();
        let doc = document.clone();
        let listener = Closure::<dyn FnMut()>::new(move || {
            if let (Ok(at), Ok(mut log)) = (clock::now_ms(), log.try_borrow_mut()) {
                log.push((at, state(&doc)));
            }
        });
        document
            .add_event_listener_with_callback("visibilitychange", listener.as_ref().unchecked_ref())
            .map_err(|e| ProbeError::browser("visibilitychange listener", &e))?;
        Ok(VisibilityLog {
            document,
            changes,
            listener,
        })
    }

    /// The changes relative to `start`, the first entry being the state at the start.
    /// A page that stayed visible throughout has nothing worth reporting.
    pub fn changes(&self, start: f64) -> Vec<VisibilityChange> {
        let log = self
            .changes
            .try_borrow()
            .map(|l| l.clone())
            .unwrap_or_default();
        if log.iter().all(|(_, s)| *s == Visibility::Visible) {
            return Vec::new();
        }
        log.into_iter()
            .map(|(at, state)| VisibilityChange {
                at_ms: (at - start).max(0.0),
                state,
            })
            .collect()
    }
}

impl Drop for VisibilityLog {
    fn drop(&mut self) {
        let _ = self.document.remove_event_listener_with_callback(
            "visibilitychange",
            self.listener.as_ref().unchecked_ref(),
        );
    }
}
