//! The slowest runs: `/field/slowest` as a table; a click opens the run's stored field
//! report in the lab's waterfall and chunk strip (`FieldReport::to_run`), with the
//! page's own metric values and gaps beside it.

use leptos::prelude::*;

use super::api::{SlowRun, Slowest};
use super::chart::{unit, utc};
use crate::fmt::{num, wire_name};
use crate::waterfall::{ChunkStrip, Waterfall};

/// Dimensions shown as columns (the rest are in the opened run's details).
const COLUMNS: [&str; 4] = ["label", "page_path", "engine", "outcome"];

#[component]
pub fn SlowestTable(slowest: Slowest) -> impl IntoView {
    let open = RwSignal::new(None::<usize>);
    if slowest.runs.is_empty() {
        return view! {
            <p class="empty">{format!("No {} values in this period.", slowest.metric)}</p>
        }
        .into_any();
    }
    let unit = unit(&slowest.metric);
    let rows = slowest
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let cells = COLUMNS
                .iter()
                .map(|c| view! { <td>{r.dimension(c)}</td> })
                .collect_view();
            view! {
                <tr class:selected=move || open.get() == Some(i) on:click=move |_| open.set(Some(i))>
                    <td><button type="button" class="open" aria-label=format!("open slowest run {}", i + 1)>{i + 1}</button></td>
                    <td class="num">{format!("{} {unit}", num(r.value))}</td>
                    <td>{utc(r.at_unix_ms, true)}</td>
                    <td class="run-id">{r.run_id.clone().unwrap_or_default()}</td>
                    {cells}
                </tr>
            }
        })
        .collect_view();
    let runs = slowest.runs.clone();
    let metric = slowest.metric.clone();
    let detail = move || {
        open.get()
            .and_then(|i| runs.get(i).cloned())
            .map(|r| view! { <FieldRun run=r metric=metric.clone()/> })
    };
    view! {
        <table id="field-slowest" class="runs">
            <thead><tr>
                <th>"#"</th><th>{slowest.metric.clone()}</th><th>"time (UTC)"</th><th>"run id"</th>
                {COLUMNS.iter().map(|c| view! { <th>{*c}</th> }).collect_view()}
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        {detail}
    }
    .into_any()
}

/// One run from its stored field report, drawn by the lab's waterfall.
#[component]
fn FieldRun(run: SlowRun, metric: String) -> impl IntoView {
    let heading = format!(
        "{} · {} · {metric} {}",
        run.run_id
            .clone()
            .unwrap_or_else(|| "run without id".into()),
        run.dimension("label"),
        num(run.value)
    );
    let report = &run.report;
    let drawn = match report.to_run() {
        Ok(r) => r,
        Err(e) => {
            return view! {
                <div id="field-run">
                    <h3>{heading}</h3>
                    <p class="error">{format!("its timeline cannot be drawn: {e}")}</p>
                </div>
            }
            .into_any();
        }
    };
    let c = &report.run.chunks;
    let note = format!(
        "From the run's field report: the milestones as the page measured them; the chunk \
         strip is the report's summary ({} chunks in {} bins), not every chunk. A field \
         report keeps the client − server gaps (below), not the server's timings, so the \
         waterfall has no server marks.",
        c.count,
        c.bins.len()
    );
    let metrics = report
        .run
        .metrics
        .iter()
        .map(|(name, v)| view! { <li>{format!("{name} = {}", num(v))}</li> })
        .collect_view();
    let gaps = report
        .run
        .gaps
        .iter()
        .map(|(m, v)| view! { <li>{format!("gap.{m} = {} ms", num(v))}</li> })
        .collect_view();
    let no_gaps = report
        .run
        .gaps
        .is_empty()
        .then(|| view! { <li>"none reported"</li> });
    let dims = run
        .dimensions
        .keys()
        .map(|k| {
            let v = run.dimension(k);
            let v = if v.is_empty() { "–".to_owned() } else { v };
            view! { <li>{format!("{k} = {v}")}</li> }
        })
        .collect_view();
    view! {
        <div id="field-run">
            <h3>{heading}</h3>
            <p class="legend" id="field-run-note">{note}</p>
            <p class="legend">{format!("outcome {}", wire_name(&drawn.metrics.outcome))}</p>
            <Waterfall run=drawn.clone() id="field-waterfall"/>
            <ChunkStrip run=drawn id="field-chunk-strip"/>
            <div class="field-facts">
                <div><h4>"metrics (the page's)"</h4><ul id="field-run-metrics" class="facts">{metrics}</ul></div>
                <div><h4>"gaps (client − server)"</h4><ul class="facts">{gaps}{no_gaps}</ul></div>
                <div><h4>"dimensions"</h4><ul class="facts">{dims}</ul></div>
            </div>
        </div>
    }
    .into_any()
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ttfx_core::Recorder;
    use ttfx_core::decode::Limits;
    use ttfx_core::field::{FieldContext, FieldReport};
    use ttfx_core::report::Run;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_test::*;

    use super::*;
    use crate::field::api::parse;

    const MARKUP: &str = "<img src=x onerror=alert(1)>";

    /// A 40-chunk stream's field report, labelled with markup.
    fn report() -> FieldReport {
        let mut r = Recorder::new(None, Limits::DEFAULT);
        r.headers(50.0, 200, Some("text/event-stream"), &[]);
        let event = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
        for i in 0..40 {
            r.chunk(300.0 + f64::from(i) * 10.0, event.as_bytes());
        }
        r.end(800.0);
        let run = Run::new(Some("req-9".into()), Some(MARKUP.into()), r.finish()).unwrap();
        FieldReport::of_run(
            &run,
            &FieldContext {
                page_path: Some("/chat".into()),
                sample_rate: 1.0,
            },
        )
    }

    #[wasm_bindgen_test]
    async fn a_slow_run_opens_in_the_waterfall_with_its_bins_and_text_stays_text() {
        let report = report();
        // Every milestone with a row of its own, in the order the waterfall draws them.
        let expected: Vec<&str> = report
            .run
            .milestones
            .iter()
            .map(|(m, _)| m.as_str())
            .filter(|m| !["request_start", "first_event"].contains(m))
            .collect();
        assert!(expected.contains(&"first_visible_token"), "{expected:?}");
        let doc = serde_json::json!({
            "metric": "ttft_ms", "limit": 10,
            "runs": [{"value": 300.0, "at_unix_ms": 1_794_694_400_000.0_f64,
                      "received_unix_ms": 1_794_694_400_100.0_f64, "run_id": "req-9",
                      "dimensions": {"label": MARKUP, "outcome": "completed"},
                      "report": report}]});
        let slowest: Slowest = parse("slowest runs", &doc.to_string()).unwrap();
        let document = web_sys::window().unwrap().document().unwrap();
        let host: web_sys::HtmlElement = document.create_element("div").unwrap().unchecked_into();
        document.body().unwrap().append_child(&host).unwrap();
        let _handle = leptos::mount::mount_to(host.clone(), move || {
            view! { <SlowestTable slowest/> }
        });
        assert!(host.query_selector("#field-run").unwrap().is_none());
        let row: web_sys::HtmlElement = host
            .query_selector("#field-slowest tbody tr")
            .unwrap()
            .unwrap()
            .unchecked_into();
        assert!(row.text_content().unwrap().contains(MARKUP));
        row.click();
        gloo_timers::future::TimeoutFuture::new(20).await;

        let milestones: Vec<String> = {
            let rows = host.query_selector_all("#field-waterfall g.row").unwrap();
            (0..rows.length())
                .filter_map(|i| rows.item(i))
                .filter_map(|n| n.dyn_into::<web_sys::Element>().ok())
                .filter_map(|e| e.get_attribute("data-milestone"))
                .collect()
        };
        assert_eq!(milestones, expected);
        let strip = host
            .query_selector("#field-chunk-strip .label")
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap();
        assert!(
            strip.starts_with("40 chunks in ") && strip.ends_with(" bins"),
            "{strip}"
        );
        let note = host.query_selector("#field-run-note").unwrap().unwrap();
        assert!(note.text_content().unwrap().contains("not every chunk"));
        assert!(
            host.query_selector("img").unwrap().is_none(),
            "markup became an element"
        );
        assert!(host.text_content().unwrap().contains(MARKUP));
    }
}
