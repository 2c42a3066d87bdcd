//! The Field view: what production pages' probes sent to this server's collector
//! (`ttfx serve --collect FILE.db`, docs/field.md), read through its `/field/…`
//! queries. Controls pick a metric, a period, a dimension to slice by and one value to
//! keep; the panels show the weighted percentiles per group, their course over time, the
//! distribution and the slowest runs, each of which opens in the lab's waterfall.
//!
//! `api.rs` reads the answers, `chart.rs` draws the series, `histogram.rs` the
//! distribution, `summary.rs` the table and `slowest.rs` the runs and their drill-down.
//! Every string from the server is a text node or an attribute value, never markup.

use leptos::prelude::*;

pub mod api;
pub mod chart;
pub mod histogram;
pub mod slowest;
pub mod summary;

use api::{Dimensions, FetchError, Histogram, PERIODS, Query, Series, Slowest, Summary, encode};

/// Metrics the view starts on, the first the collector has.
const PREFERRED: [&str; 2] = ["ttft_visible_ms", "ttft_ms"];
/// Slowest runs listed.
const SLOWEST: &str = "10";
/// Histogram bins.
const BINS: &str = "20";

/// The whole view. It asks the collector only once mounted (the Field tab mounts it
/// the first time it is opened).
#[component]
pub fn FieldView() -> impl IntoView {
    let metric = RwSignal::new(String::new());
    let since = RwSignal::new("24h".to_owned());
    let by = RwSignal::new(String::new());
    // `DIM=VALUE`, or empty for every run.
    let filter = RwSignal::new(String::new());
    let refresh = RwSignal::new(0u32);

    let dims = LocalResource::new(move || {
        let url = format!("/field/dimensions?since={}", encode(&since.get()));
        refresh.track();
        async move { api::get::<Dimensions>("dimensions", &url).await }
    });
    // Keep the metric while the period has it; else start on the first visible token.
    Effect::new(move |_| {
        if let Some(Ok(d)) = dims.get() {
            let has = |m: &str| d.metrics.iter().any(|c| c.metric == m);
            if !has(&metric.get_untracked()) {
                let pick = PREFERRED
                    .into_iter()
                    .find(|m| has(m))
                    .map(str::to_owned)
                    .or_else(|| d.metrics.first().map(|c| c.metric.clone()))
                    .unwrap_or_default();
                metric.set(pick);
            }
        }
    });
    let query = Memo::new(move |_| Query {
        metric: metric.get(),
        since: since.get(),
        by: Some(by.get()).filter(|b| !b.is_empty()),
        filter: filter
            .get()
            .split_once('=')
            .map(|(d, v)| (d.to_owned(), v.to_owned())),
    });
    let ready =
        Memo::new(move |_| !metric.get().is_empty() && dims.with(|d| matches!(d, Some(Ok(_)))));
    let head = move || match dims.get() {
        None => view! { <p class="note" id="field-status">"asking the collector"</p> }.into_any(),
        Some(Err(e)) => {
            let class = if e == FetchError::NoCollector {
                "note"
            } else {
                "error"
            };
            view! { <p class=class id="field-status">{e.to_string()}</p> }.into_any()
        }
        Some(Ok(d)) => {
            let status = if d.metrics.is_empty() {
                format!(
                    "{} run(s) stored in the last {}, none with a metric: pages send runs with \
                     the probe's collectorUrl (docs/probe.md), anything can POST /collect",
                    d.runs,
                    since.get_untracked()
                )
            } else {
                format!(
                    "{} run(s) stored in the last {}",
                    d.runs,
                    since.get_untracked()
                )
            };
            view! {
                <Controls dims=d metric since by filter refresh/>
                <p class="legend" id="field-status">{status}</p>
            }
            .into_any()
        }
    };
    view! {
        {head}
        <Show when=move || ready.get()>
            <Panels query refresh/>
        </Show>
    }
}

#[component]
fn Controls(
    dims: Dimensions,
    metric: RwSignal<String>,
    since: RwSignal<String>,
    by: RwSignal<String>,
    filter: RwSignal<String>,
    refresh: RwSignal<u32>,
) -> impl IntoView {
    let metrics = dims
        .metrics
        .iter()
        .map(|m| {
            let name = m.metric.clone();
            let selected = {
                let name = name.clone();
                move || metric.get() == name
            };
            let text = format!("{name} ({})", m.count);
            view! { <option value=name prop:selected=selected>{text}</option> }
        })
        .collect_view();
    let periods = PERIODS
        .iter()
        .map(|(p, _)| {
            view! { <option value=*p prop:selected=move || since.get() == *p>{format!("last {p}")}</option> }
        })
        .collect_view();
    let dimensions = dims
        .dimensions
        .iter()
        .map(|d| {
            let name = d.name.clone();
            let selected = {
                let name = name.clone();
                move || by.get() == name
            };
            let text = name.clone();
            view! { <option value=name prop:selected=selected>{text}</option> }
        })
        .collect_view();
    let filters = dims
        .dimensions
        .iter()
        .filter(|d| !d.values.is_empty())
        .map(|d| {
            let values = d
                .values
                .iter()
                .map(|v| {
                    let text = api::value_text(&v.value);
                    let value = format!("{}={text}", d.name);
                    let shown = if text.is_empty() { "(none)".to_owned() } else { text };
                    let selected = {
                        let value = value.clone();
                        move || filter.get() == value
                    };
                    view! {
                        <option value=value prop:selected=selected>{format!("{} = {shown} ({})", d.name, v.count)}</option>
                    }
                })
                .collect_view();
            view! { <optgroup label=d.name.clone()>{values}</optgroup> }
        })
        .collect_view();
    view! {
        <div class="field-controls">
            <label>"metric "
                <select id="field-metric" on:change=move |ev| metric.set(event_target_value(&ev))>{metrics}</select>
            </label>
            <label>"since "
                <select id="field-since" on:change=move |ev| since.set(event_target_value(&ev))>{periods}</select>
            </label>
            <label>"slice by "
                <select id="field-by" on:change=move |ev| by.set(event_target_value(&ev))>
                    <option value="" prop:selected=move || by.get().is_empty()>"none"</option>
                    {dimensions}
                </select>
            </label>
            <label>"only "
                <select id="field-filter" on:change=move |ev| filter.set(event_target_value(&ev))>
                    <option value="" prop:selected=move || filter.get().is_empty()>"every run"</option>
                    {filters}
                </select>
            </label>
            <button id="field-refresh" type="button" on:click=move |_| refresh.update(|n| *n += 1)>"Refresh"</button>
        </div>
    }
}

/// Loading, the collector's error, or the panel.
fn shown<T, V: IntoView + 'static>(
    answer: Option<Result<T, FetchError>>,
    panel: impl FnOnce(T) -> V,
) -> AnyView {
    match answer {
        None => view! { <p class="note">"loading"</p> }.into_any(),
        Some(Err(e)) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
        Some(Ok(t)) => panel(t).into_any(),
    }
}

/// The four answers for the current query, each fetched again when its own URL changes
/// (slicing does not reload the slowest runs, so an opened run stays open).
#[component]
fn Panels(query: Memo<Query>, refresh: RwSignal<u32>) -> impl IntoView {
    let url = move |f: fn(&Query) -> String| Memo::new(move |_| f(&query.get()));
    let summary_url = url(|q| q.url("/field/summary", true, &[]));
    let series_url = url(|q| q.url("/field/series", true, &[("bucket", q.bucket())]));
    let histogram_url = url(|q| q.url("/field/histogram", true, &[("bins", BINS)]));
    let slowest_url = url(|q| q.url("/field/slowest", false, &[("limit", SLOWEST)]));
    let summary = LocalResource::new(move || {
        let url = summary_url.get();
        refresh.track();
        async move { api::get::<Summary>("summary", &url).await }
    });
    let series = LocalResource::new(move || {
        let url = series_url.get();
        refresh.track();
        async move { api::get::<Series>("series", &url).await }
    });
    let histogram = LocalResource::new(move || {
        let url = histogram_url.get();
        refresh.track();
        async move { api::get::<Histogram>("histogram", &url).await }
    });
    let slowest = LocalResource::new(move || {
        let url = slowest_url.get();
        refresh.track();
        async move { api::get::<Slowest>("slowest runs", &url).await }
    });
    view! {
        <h3>"Percentiles (weighted)"</h3>
        {move || shown(summary.get(), |s| view! { <summary::SummaryTable summary=s/> })}
        <h3>"Over time"</h3>
        {move || shown(series.get(), |s| view! { <chart::SeriesChart series=s/> })}
        <h3>"Distribution"</h3>
        {move || shown(histogram.get(), |h| view! { <histogram::HistogramChart histogram=h/> })}
        <h3>"Slowest runs"</h3>
        <p class="legend">"click a run to open its field report in the waterfall"</p>
        {move || shown(slowest.get(), |s| view! { <slowest::SlowestTable slowest=s/> })}
    }
}
