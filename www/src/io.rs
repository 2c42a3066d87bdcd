//! Export and import: the batch report JSON goes out as a download (and sits on the page
//! as `data-report`, for QA drivers); a report file from elsewhere comes in and is shown
//! by the same components, and a `ttfx run --sweep` file comes in the same way and is
//! drawn by the Sweep panel. A bad file is a message, never a panic.

use leptos::prelude::*;
use leptos::task::spawn_local;
use ttfx_core::report::{BatchReport, ReportFile};
use ttfx_core::sweep_file::SweepFile;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, BlobPropertyBag, HtmlAnchorElement, HtmlInputElement, Url};

use crate::lab;

/// The batch's JSON, as exported.
pub fn export_json(batch: &BatchReport) -> String {
    serde_json::to_string_pretty(batch).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// What a loaded file turned out to be.
#[derive(Debug)]
pub enum Imported {
    Report(ReportFile),
    Sweep(SweepFile),
}

/// Reads a report or a sweep file; the error is the reader's own message, which names
/// the problem. A document naming a `schema` is a sweep (or another ttfx document the
/// sweep reader names as unsupported); reports carry `schema_version` instead.
pub fn import_json(text: &str) -> Result<Imported, String> {
    if ttfx_core::sweep_file::names_a_schema(text) {
        SweepFile::from_json(text)
            .map(Imported::Sweep)
            .map_err(|e| e.to_string())
    } else {
        ReportFile::from_json(text)
            .map(Imported::Report)
            .map_err(|e| e.to_string())
    }
}

#[component]
pub fn ImportExport() -> impl IntoView {
    let lab = lab();
    let message = RwSignal::new(None::<(bool, String)>);
    let json = Memo::new(move |_| export_json(&lab.batch.get()));
    let download = move |_| {
        if let Err(e) = save(&json.get_untracked(), "ttfx-batch.json") {
            message.set(Some((false, format!("download failed: {e}"))));
        }
    };
    let load = move |ev: leptos::ev::Event| {
        let Some(file) = ev
            .target()
            .and_then(|t| t.dyn_into::<HtmlInputElement>().ok())
            .and_then(|input| input.files())
            .and_then(|files| files.get(0))
        else {
            return;
        };
        let name = file.name();
        spawn_local(async move {
            let text = match JsFuture::from(file.text()).await {
                Ok(t) => t.as_string().unwrap_or_default(),
                Err(_) => {
                    message.set(Some((false, format!("{name}: cannot be read"))));
                    return;
                }
            };
            match import_json(&text) {
                Ok(Imported::Sweep(sweep)) => {
                    message.set(Some((
                        true,
                        format!(
                            "{name}: loaded a sweep of {} step(s) of {}, {} target(s)",
                            sweep.steps.len(),
                            sweep.kind().as_str(),
                            sweep.targets.len()
                        ),
                    )));
                    lab.sweep.set(Some(sweep));
                }
                Ok(Imported::Report(report)) => {
                    if let ReportFile::Batch(b) = &report
                        && let Some(g) = &b.goodput
                    {
                        lab.budgets.set(g.budgets.clone());
                    }
                    let runs = report.into_runs();
                    message.set(Some((
                        true,
                        format!("{name}: loaded {} run(s)", runs.len()),
                    )));
                    lab.messages.set(Vec::new());
                    lab.selected.set(None);
                    lab.runs.set(runs);
                }
                Err(e) => message.set(Some((false, format!("{name}: {e}")))),
            }
        });
    };
    view! {
        <div class="io" id="export" data-report=move || json.get()>
            <button id="download" type="button" on:click=download>"Download batch JSON"</button>
            <label>" load a report " <input id="import" type="file" accept=".json,application/json" on:change=load/></label>
            {move || message.get().map(|(ok, text)| view! {
                <p id="import-message" class=if ok { "ok" } else { "error" }>{text}</p>
            })}
        </div>
    }
}

/// Offers `text` as a file download.
fn save(text: &str, filename: &str) -> Result<(), String> {
    let parts = js_sys::Array::of1(&text.into());
    let options = BlobPropertyBag::new();
    options.set_type("application/json");
    let blob = Blob::new_with_str_sequence_and_options(&parts, &options)
        .map_err(|_| "cannot make the file".to_owned())?;
    let url = Url::create_object_url_with_blob(&blob).map_err(|_| "no object URL".to_owned())?;
    let anchor: HtmlAnchorElement = document()
        .create_element("a")
        .map_err(|_| "no anchor".to_owned())?
        .unchecked_into();
    anchor.set_href(&url);
    anchor.set_download(filename);
    anchor.click();
    let _ = Url::revoke_object_url(&url);
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A report file read through the import path.
    pub(crate) fn report(text: &str) -> ReportFile {
        match import_json(text).unwrap() {
            Imported::Report(r) => r,
            Imported::Sweep(_) => panic!("read as a sweep"),
        }
    }

    #[test]
    fn a_bad_file_is_a_message() {
        assert!(
            import_json("{")
                .unwrap_err()
                .starts_with("not a ttfx report")
        );
        let e = import_json(r#"{"schema_version": 9, "kind": "batch"}"#).unwrap_err();
        assert!(e.contains("unsupported schema_version 9"), "{e}");
    }

    /// The run report example in docs/report.md (its first JSON block).
    pub(crate) fn documented_run() -> String {
        let doc = include_str!("../../docs/report.md");
        let start = doc.find("```json\n").map(|i| i + 8).unwrap();
        let end = start + doc[start..].find("```").unwrap();
        doc[start..end].to_owned()
    }

    #[test]
    fn a_run_report_from_elsewhere_loads() {
        let file = report(&documented_run());
        assert_eq!(file.runs().len(), 1);
        assert_eq!(file.runs()[0].target.as_deref(), Some("sim/reasoning"));
    }

    #[test]
    fn export_reads_back() {
        let batch = BatchReport::from_runs(Vec::new(), &[]);
        let back = report(&export_json(&batch));
        assert!(back.runs().is_empty());
    }

    #[test]
    fn a_sweep_is_told_from_a_report_by_its_schema() {
        let sweep = r#"{"schema": "ttfx-sweep/1", "warmup_s": 1, "duration_s": 2, "steps": [
            {"level": {"kind": "rate", "value": 2}, "seconds": 3, "budgets": [],
             "targets": [{"target": "sim/default",
                "browser": {"outcomes": {"total": 1}, "statistics": {}, "runs": []},
                "load": {"metrics": {}, "throughput": {"requests_per_s": 2,
                         "output_tokens_per_s": 9}, "errors": {"total": 0}}}]}]}"#;
        match import_json(sweep).unwrap() {
            Imported::Sweep(s) => assert_eq!(s.targets, ["sim/default"]),
            Imported::Report(_) => panic!("read as a report"),
        }
        // Another ttfx document with a schema (`ttfx load --json`) is named, not guessed.
        let e = import_json(r#"{"schema": "ttfx-load", "schema_version": 1}"#).unwrap_err();
        assert_eq!(
            e,
            "unsupported schema \"ttfx-load\" (this ttfx reads ttfx-sweep/1 sweeps)"
        );
        // A sweep with a field missing says which.
        let e = import_json(r#"{"schema": "ttfx-sweep/1", "steps": []}"#).unwrap_err();
        assert!(
            e.starts_with("not a ttfx sweep: missing field `warmup_s`"),
            "{e}"
        );
    }
}
