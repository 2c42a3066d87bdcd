//! `instrumentFetch`: measure an app's requests without changing its code, by wrapping
//! `window.fetch` for matching URLs. The handle's `restore` puts the original back.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Function, Promise, RegExp};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::Element;

use crate::{Probe, ProbeError, glue, guard};

/// Which requests to measure.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// URLs containing this text.
    Contains(String),
    /// URLs this regular expression matches.
    Pattern(RegExp),
    /// URLs for which this function returns `true`.
    Predicate(Function),
}

impl Matcher {
    /// From a JS value: a string, a RegExp or a function.
    pub fn from_js(value: &JsValue) -> Result<Matcher, ProbeError> {
        if let Some(s) = value.as_string() {
            return Ok(Matcher::Contains(s));
        }
        if let Some(re) = value.dyn_ref::<RegExp>() {
            return Ok(Matcher::Pattern(re.clone()));
        }
        if let Some(f) = value.dyn_ref::<Function>() {
            return Ok(Matcher::Predicate(f.clone()));
        }
        Err(ProbeError::BadOption(
            "match must be a string, a RegExp or a function".into(),
        ))
    }

    fn matches(&self, url: &str) -> bool {
        match self {
            Matcher::Contains(s) => url.contains(s.as_str()),
            Matcher::Pattern(re) => re.test(url),
            Matcher::Predicate(f) => f
                .call1(&JsValue::NULL, &JsValue::from_str(url))
                .map(|v| v.is_truthy())
                .unwrap_or(false),
        }
    }
}

/// The element whose render is timed for instrumented requests.
#[derive(Debug, Clone)]
pub enum WatchTarget {
    Element(Element),
    /// Called at each request's start; may return `null`.
    Lookup(Function),
}

impl WatchTarget {
    fn resolve(&self) -> Option<Element> {
        match self {
            WatchTarget::Element(e) => Some(e.clone()),
            WatchTarget::Lookup(f) => f.call0(&JsValue::NULL).ok()?.dyn_into::<Element>().ok(),
        }
    }
}

/// `window.fetch` is wrapped while this is active.
#[must_use = "call restore() to put the original fetch back"]
pub struct FetchInstrumentation {
    original: Function,
    wrapper: Function,
    active: Rc<Cell<bool>>,
    _should_measure: Closure<dyn FnMut(JsValue) -> bool>,
    _measure: Closure<dyn FnMut(JsValue, JsValue) -> Promise>,
}

impl FetchInstrumentation {
    /// Wraps the page's current `fetch`.
    pub fn install(
        probe: &Probe,
        matcher: Matcher,
        watch: Option<WatchTarget>,
    ) -> Result<FetchInstrumentation, ProbeError> {
        if guard::is_disabled() {
            return Err(ProbeError::Disabled(guard::reason().unwrap_or_default()));
        }
        let original = glue::current_fetch()
            .dyn_into::<Function>()
            .map_err(|_| ProbeError::Browser("this global scope has no fetch()".into()))?;
        let active = Rc::new(Cell::new(true));
        let is_active = active.clone();
        let should_measure = Closure::<dyn FnMut(JsValue) -> bool>::new(move |input: JsValue| {
            is_active.get() && !guard::is_disabled() && matcher.matches(&glue::input_url(&input))
        });
        let probe = probe.clone();
        let measure = Closure::<dyn FnMut(JsValue, JsValue) -> Promise>::new(
            move |input: JsValue, init: JsValue| {
                let run = probe.start(None);
                if let Some(element) = watch.as_ref().and_then(WatchTarget::resolve) {
                    let _ = run.watch(&element);
                }
                wasm_bindgen_futures::future_to_promise(async move {
                    run.fetch(&input, &init).await.map(JsValue::from)
                })
            },
        );
        let wrapper = glue::make_fetch_wrapper(
            &original,
            should_measure.as_ref().unchecked_ref(),
            measure.as_ref().unchecked_ref(),
        );
        glue::set_fetch(&wrapper);
        Ok(FetchInstrumentation {
            original,
            wrapper,
            active,
            _should_measure: should_measure,
            _measure: measure,
        })
    }

    /// Stops measuring. Puts the original `fetch` back if nobody wrapped it since; if
    /// someone did, the wrapper stays in their chain but passes everything through.
    /// Returns whether the original was put back.
    pub fn restore(&self) -> bool {
        self.active.set(false);
        if glue::current_fetch() == JsValue::from(self.wrapper.clone()) {
            glue::set_fetch(&self.original);
            true
        } else {
            false
        }
    }
}

impl Drop for FetchInstrumentation {
    fn drop(&mut self) {
        // The wrapper may still be installed and calls the closures this struct owns:
        // keep it harmless by restoring first.
        self.restore();
    }
}
