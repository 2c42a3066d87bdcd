//! Each run the lab measures goes to the collector of the `ttfx serve` that serves the
//! page, as a field report stored with source `lab` (`POST /collect?source=lab`,
//! docs/field.md): the Field view and the benchmark gap have the lab's runs too, and
//! `source=field` leaves them out. The collector takes `source=lab` only from its own
//! origin, which this page is. A server without a collector answers 404: the page then
//! stops posting and says so. Nothing here can fail a run: a post that fails is a line
//! under the form.

use leptos::prelude::*;
use ttfx_core::field::{FieldContext, FieldReport};
use ttfx_core::report::Run;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{RequestInit, Response};

/// Where the lab's runs go; the query is the collector's only parameter.
pub const URL: &str = "/collect?source=lab";

/// What became of the lab's runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Stored {
    /// No run posted yet.
    #[default]
    Nothing,
    /// This many runs were stored (204).
    Runs(usize),
    /// The server has no collector (404): the page posts no more.
    NoCollector,
    /// The last post failed (the collector's message); `runs` were stored before.
    Failed { runs: usize, error: String },
}

impl Stored {
    /// The line under the run form; empty before the first post.
    pub fn text(&self) -> String {
        match self {
            Stored::Nothing => String::new(),
            Stored::Runs(n) => {
                format!("{n} run(s) stored in this server's collector as source lab")
            }
            Stored::NoCollector => "this server has no collector: the lab's runs are not stored \
                                    (cargo xtask lab starts one)"
                .to_owned(),
            Stored::Failed { runs, error } => {
                format!("{runs} run(s) stored as source lab; the last was not: {error}")
            }
        }
    }

    /// The state after one post's outcome.
    fn after(&self, outcome: Result<(), Refused>) -> Stored {
        let stored = match self {
            Stored::Runs(n) | Stored::Failed { runs: n, .. } => *n,
            Stored::Nothing | Stored::NoCollector => 0,
        };
        match outcome {
            Ok(()) => Stored::Runs(stored + 1),
            Err(Refused::NoCollector) => Stored::NoCollector,
            Err(Refused::Other(error)) => Stored::Failed {
                runs: stored,
                error,
            },
        }
    }
}

/// Why a post stored nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refused {
    NoCollector,
    Other(String),
}

/// The run as the collector stores it: a field report of the whole run (sample rate 1:
/// the lab keeps every run), with this page's path.
pub fn report_json(run: &Run) -> Result<String, String> {
    let page_path = web_sys::window().and_then(|w| w.location().pathname().ok());
    let context = FieldContext {
        page_path,
        sample_rate: 1.0,
    };
    serde_json::to_string(&FieldReport::of_run(run, &context)).map_err(|e| e.to_string())
}

/// Posts `run` unless the server was found to have no collector, and records the
/// outcome in `stored`.
pub async fn store(run: &Run, stored: RwSignal<Stored>) {
    if stored.get_untracked() == Stored::NoCollector {
        return;
    }
    let outcome = match report_json(run) {
        Ok(body) => post(&body).await,
        Err(e) => Err(Refused::Other(e)),
    };
    stored.update(|s| *s = s.after(outcome));
}

async fn post(body: &str) -> Result<(), Refused> {
    let failed = |_: JsValue| Refused::Other(format!("{URL} did not answer"));
    let window = web_sys::window().ok_or(Refused::Other("no window".into()))?;
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str(body));
    let response: Response = JsFuture::from(window.fetch_with_str_and_init(URL, &init))
        .await
        .map_err(failed)?
        .dyn_into()
        .map_err(failed)?;
    if response.ok() {
        return Ok(());
    }
    if response.status() == 404 {
        return Err(Refused::NoCollector);
    }
    let text = match response.text() {
        Ok(promise) => JsFuture::from(promise)
            .await
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default(),
        Err(_) => String::new(),
    };
    Err(Refused::Other(
        crate::field::api::error_message(response.status(), &text).to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_count_stored_runs_and_a_404_stops_posting() {
        let s = Stored::Nothing.after(Ok(()));
        assert_eq!(s, Stored::Runs(1));
        assert_eq!(s.after(Ok(())), Stored::Runs(2));
        assert_eq!(s.after(Err(Refused::NoCollector)), Stored::NoCollector);
        let failed = s.after(Err(Refused::Other("HTTP 400: bad".into())));
        assert_eq!(
            failed.text(),
            "1 run(s) stored as source lab; the last was not: HTTP 400: bad"
        );
        assert_eq!(failed.after(Ok(())), Stored::Runs(2));
        assert_eq!(Stored::Nothing.text(), "");
    }
}
