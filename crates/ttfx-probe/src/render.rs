//! Render timing for the element the app streams the reply into.
//!
//! `first_dom` is when the first visible text appears in the element (MutationObserver,
//! whose callback runs in the same task as the app's insertion, before any paint).
//! `first_paint` is Element Timing's `renderTime` where the engine has it (Chromium),
//! else the rAF + MessageChannel estimate: the task right after the next frame.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Function};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Element, MutationObserver, MutationObserverInit, MutationRecord, Node};

use crate::{ProbeError, clock, glue};

/// Most paint times kept: Chromium reports one per element, and a reply rarely has more
/// than a few elements before the first one paints.
const MAX_PAINTS: usize = 16;

/// What the observers saw, on the page's clock (absolute `performance.now()` values).
#[derive(Debug, Default)]
pub struct RenderTimes {
    /// The request started (DOM changes before it are not the reply).
    pub not_before: Option<f64>,
    pub first_dom: Option<f64>,
    pub element_timing_supported: bool,
    pub element_paints: Vec<f64>,
    pub frame_estimate: Option<f64>,
}

impl RenderTimes {
    /// The first paint at or after `first_dom`, with the method that timed it.
    pub fn first_paint(&self) -> Option<(f64, ttfx_core::timeline::PaintMethod)> {
        use ttfx_core::timeline::PaintMethod;
        let dom = self.first_dom?;
        let element = self
            .element_paints
            .iter()
            .copied()
            .filter(|&t| t >= dom)
            .reduce(f64::min);
        match element {
            Some(t) => Some((t, PaintMethod::ElementTiming)),
            None => self.frame_estimate.map(|t| (t, PaintMethod::RafEstimate)),
        }
    }

    /// Whether waiting longer could still change `first_paint`.
    pub fn settled(&self) -> bool {
        match self.first_dom {
            None => false,
            Some(dom) if self.element_timing_supported => {
                self.element_paints.iter().any(|&t| t >= dom)
            }
            Some(_) => self.frame_estimate.is_some(),
        }
    }
}

/// Observers on one element; they stop when this is dropped.
#[must_use = "render timing stops when the watch is dropped"]
pub struct RenderWatch {
    pub times: Rc<RefCell<RenderTimes>>,
    observer: MutationObserver,
    stop_paints: Option<Function>,
    _on_mutation: Closure<dyn FnMut(Array, MutationObserver)>,
    _on_paint: Closure<dyn FnMut(f64)>,
    _on_frame: Rc<Closure<dyn FnMut(f64)>>,
}

impl RenderWatch {
    /// Starts watching `element`. Sets `elementtiming` on it first: Chromium reports a
    /// text paint once per element, and only for elements marked before they paint.
    pub fn start(element: &Element) -> Result<RenderWatch, ProbeError> {
        if !element.has_attribute("elementtiming") {
            element
                .set_attribute("elementtiming", "ttfx-reply")
                .map_err(|e| ProbeError::browser("setting elementtiming", &e))?;
        }
        let times = Rc::new(RefCell::new(RenderTimes::default()));
        let baseline = element.text_content().unwrap_or_default();

        let frame_times = times.clone();
        let on_frame = Rc::new(Closure::<dyn FnMut(f64)>::new(move |at: f64| {
            if let Ok(mut t) = frame_times.try_borrow_mut() {
                t.frame_estimate.get_or_insert(at);
            }
        }));

        let mutation_times = times.clone();
        let watched = element.clone();
        let frame_cb = on_frame.clone();
        let mut baseline = baseline;
        let on_mutation = Closure::<dyn FnMut(Array, MutationObserver)>::new(
            move |records: Array, observer: MutationObserver| {
                let Ok(mut t) = mutation_times.try_borrow_mut() else {
                    return;
                };
                if t.first_dom.is_some() {
                    return;
                }
                let at = clock::now_ms().unwrap_or(f64::NAN);
                let text = watched.text_content().unwrap_or_default();
                let started = t.not_before.is_some_and(|start| at >= start);
                if !started {
                    // Changes before the request (a placeholder, the user's own message)
                    // are not the reply: they become the new baseline.
                    baseline = text;
                    return;
                }
                if text.trim().is_empty() || text == baseline {
                    return;
                }
                t.first_dom = Some(at);
                drop(t);
                mark_text_parents(&records);
                let _ = glue::after_next_frame((*frame_cb).as_ref().unchecked_ref());
                // The first text is all this observer is for: stop it, so the rest of
                // the reply streams into the host page with no probe work per insertion.
                observer.disconnect();
            },
        );
        let observer = MutationObserver::new(on_mutation.as_ref().unchecked_ref())
            .map_err(|e| ProbeError::browser("MutationObserver", &e))?;
        let init = MutationObserverInit::new();
        init.set_child_list(true);
        init.set_character_data(true);
        init.set_subtree(true);
        observer
            .observe_with_options(element, &init)
            .map_err(|e| ProbeError::browser("MutationObserver.observe", &e))?;

        let paint_times = times.clone();
        let on_paint = Closure::<dyn FnMut(f64)>::new(move |render_time: f64| {
            if let Ok(mut t) = paint_times.try_borrow_mut()
                && t.element_paints.len() < MAX_PAINTS
            {
                t.element_paints.push(render_time);
            }
        });
        let stop_paints = glue::observe_element_paint(element, on_paint.as_ref().unchecked_ref())
            .map_err(|e| ProbeError::browser("PerformanceObserver(element)", &e))?
            .dyn_into::<Function>()
            .ok();
        if let Ok(mut t) = times.try_borrow_mut() {
            t.element_timing_supported = stop_paints.is_some();
        }
        Ok(RenderWatch {
            times,
            observer,
            stop_paints,
            _on_mutation: on_mutation,
            _on_paint: on_paint,
            _on_frame: on_frame,
        })
    }
}

impl Drop for RenderWatch {
    fn drop(&mut self) {
        self.observer.disconnect();
        if let Some(stop) = &self.stop_paints {
            let _ = stop.call0(&JsValue::NULL);
        }
    }
}

/// Marks the elements that hold newly inserted text, so Element Timing reports their
/// paint even when the app inserts the reply into child elements of the watched one. The
/// observer callback runs before the frame, so the mark lands before the paint.
fn mark_text_parents(records: &Array) {
    for record in records.iter() {
        let Ok(record) = record.dyn_into::<MutationRecord>() else {
            continue;
        };
        let mut targets = vec![record.target()];
        let added = record.added_nodes();
        for i in 0..added.length() {
            if let Some(node) = added.get(i) {
                targets.push(Some(node));
            }
        }
        for node in targets.into_iter().flatten() {
            let element = match node.node_type() {
                Node::TEXT_NODE => node.parent_element(),
                Node::ELEMENT_NODE => node.dyn_into::<Element>().ok(),
                _ => None,
            };
            if let Some(element) = element
                && !element.has_attribute("elementtiming")
            {
                let _ = element.set_attribute("elementtiming", "ttfx-reply");
            }
        }
    }
}
