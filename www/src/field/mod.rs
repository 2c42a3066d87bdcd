//! The Field view: what production pages' probes sent to this server's collector
//! (`ttfx serve --collect FILE.db`, docs/field.md), read through its `/field/…`
//! queries. Controls pick a metric, a period, a dimension to slice by and one value to
//! keep; the panels show the weighted percentiles per group, their course over time, the
//! distribution and the slowest runs, each of which opens in the lab's waterfall.
//!
//! A benchmark imported into the collector stands beside them: the gap's sentence and
//! table at the top, its p50/p90/p99 as marked lines on the chart and the histogram.
//!
//! `api.rs` reads the answers, `chart.rs` draws the series, `histogram.rs` the
//! distribution, `summary.rs` the table and `slowest.rs` the runs and their drill-down;
//! `gap.rs` reads the benchmark answers and `bench.rs` shows them; `export_health.rs`
//! says when the collector's OTLP export dropped or was refused runs.
//! Every string from the server is a text node or an attribute value, never markup.

use leptos::prelude::*;

pub mod api;
pub mod bench;
pub mod chart;
pub mod export_health;
pub mod gap;
pub mod histogram;
pub mod slowest;
pub mod summary;

use api::{Dimensions, FetchError, Histogram, PERIODS, Query, Series, Slowest, Summary, encode};
use gap::{Benchmarks, Mark};

/// An endpoint's answer: its body, or why there is none.
type Answer = LocalResource<Result<String, FetchError>>;

/// The answer at `url`, asked again when the URL changes or Refresh is pressed. Every
/// panel's resource is this one type.
fn load(url: Memo<String>, refresh: RwSignal<u32>) -> Answer {
    LocalResource::new(move || {
        refresh.track();
        api::get(url.get())
    })
}

/// The answer read as `T`: loading, an error, or the document.
fn read<T: serde::de::DeserializeOwned>(
    answer: &Answer,
    what: &str,
) -> Option<Result<T, FetchError>> {
    answer
        .get()
        .map(|r| r.and_then(|text| api::parse::<T>(what, &text)))
}

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
    // The user's pick; the metric shown is `metric` below.
    let chosen = RwSignal::new(String::new());
    let since = RwSignal::new("24h".to_owned());
    let by = RwSignal::new(String::new());
    // `DIM=VALUE`, or empty for every run.
    let filter = RwSignal::new(String::new());
    let refresh = RwSignal::new(0u32);

    let dims_url = Memo::new(move |_| format!("/field/dimensions?since={}", encode(&since.get())));
    let answer = load(dims_url, refresh);
    let dims = Memo::new(move |_| read::<Dimensions>(&answer, "dimensions"));
    let metric = Memo::new(move |_| {
        dims.with(|d| match d {
            Some(Ok(d)) => metric_shown(d, &chosen.get()),
            _ => String::new(),
        })
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
    // The benchmark beside the field: the user's pick (an id), else the latest.
    let bench_chosen = RwSignal::new(String::new());
    let benches_answer = load(Memo::new(|_| "/field/benchmarks".to_owned()), refresh);
    let benches = Memo::new(move |_| read::<Benchmarks>(&benches_answer, "benchmarks"));
    let gap_url = Memo::new(move |_| {
        let q = query.get();
        gap::url(
            &bench::bench_param(&bench_chosen.get()),
            None,
            &q.since,
            q.filter.as_ref(),
        )
    });
    let marks_url = Memo::new(move |_| {
        let q = query.get();
        if q.metric.is_empty() || !benches.with(bench::any) {
            return String::new();
        }
        let which = bench::bench_param(&bench_chosen.get());
        gap::url(&which, Some(&q.metric), &q.since, q.filter.as_ref())
    });
    let marks = bench::marks(marks_url, refresh);
    // Runs the OTLP export lost (a full backlog, a refusing receiver): said, never silent.
    let health_answer = load(Memo::new(|_| "/field/health".to_owned()), refresh);
    let export_line = move || {
        read::<export_health::Health>(&health_answer, "health")
            .and_then(Result::ok)
            .as_ref()
            .and_then(export_health::warning)
            .map(|w| view! { <p class="error" id="field-export">{w}</p> })
    };
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
                <bench::BenchHead list=benches chosen=bench_chosen gap_url refresh/>
                <Controls dims=d chosen metric since by filter refresh/>
                <p class="legend" id="field-status">{status}</p>
                {export_line}
            }
            .into_any()
        }
    };
    view! {
        {head}
        <Show when=move || ready.get()>
            <Panels query refresh marks/>
        </Show>
    }
}

/// The pickers, drawn again when the collector's choices change (a new period); each
/// option starts selected as the current query has it, and a change sets its signal.
#[component]
fn Controls(
    dims: Dimensions,
    chosen: RwSignal<String>,
    metric: Memo<String>,
    since: RwSignal<String>,
    by: RwSignal<String>,
    filter: RwSignal<String>,
    refresh: RwSignal<u32>,
) -> impl IntoView {
    let (metric_now, since_now) = (metric.get_untracked(), since.get_untracked());
    let (by_now, filter_now) = (by.get_untracked(), filter.get_untracked());
    let metrics = metric_options(&dims, &metric_now);
    let periods = period_options(&since_now);
    let dimensions = dimension_options(&dims, &by_now);
    let kept = kept_filter_option(&dims, &filter_now);
    let filters = filter_options(&dims, &filter_now);
    view! {
        <div class="field-controls">
            <label>"metric "
                <select id="field-metric" on:change=move |ev| chosen.set(event_target_value(&ev))>{metrics}</select>
            </label>
            <label>"since "
                <select id="field-since" on:change=move |ev| since.set(event_target_value(&ev))>{periods}</select>
            </label>
            <label>"slice by "
                <select id="field-by" on:change=move |ev| by.set(event_target_value(&ev))>
                    <option value="" selected=by_now.is_empty()>"none"</option>
                    {dimensions}
                </select>
            </label>
            <label>"only "
                <select id="field-filter" on:change=move |ev| filter.set(event_target_value(&ev))>
                    <option value="" selected=filter_now.is_empty()>"every run"</option>
                    {kept}
                    {filters}
                </select>
            </label>
            <button id="field-refresh" type="button" on:click=move |_| refresh.update(|n| *n += 1)>"Refresh"</button>
        </div>
    }
}

/// The collector's metrics with their run counts; `now` starts selected.
fn metric_options(dims: &Dimensions, now: &str) -> impl IntoView + use<> {
    dims.metrics
        .iter()
        .map(|m| {
            let text = format!("{} ({})", m.metric, m.count);
            let selected = m.metric == now;
            view! { <option value=m.metric.clone() selected=selected>{text}</option> }
        })
        .collect_view()
}

/// The periods the collector answers for; `now` starts selected.
fn period_options(now: &str) -> impl IntoView + use<> {
    PERIODS
        .iter()
        .map(|(p, _)| view! { <option value=*p selected=*p == now>{format!("last {p}")}</option> })
        .collect_view()
}

/// The dimensions to slice by; `now` starts selected.
fn dimension_options(dims: &Dimensions, now: &str) -> impl IntoView + use<> {
    dims.dimensions
        .iter()
        .map(|d| {
            let selected = d.name == now;
            view! { <option value=d.name.clone() selected=selected>{d.name.clone()}</option> }
        })
        .collect_view()
}

/// Each dimension's values as `name=value` choices, one group per dimension with
/// values; `now` starts selected.
fn filter_options(dims: &Dimensions, now: &str) -> impl IntoView + use<> {
    dims.dimensions
        .iter()
        .filter(|d| !d.values.is_empty())
        .map(|d| {
            let values = d
                .values
                .iter()
                .map(|v| {
                    let text = api::value_text(&v.value);
                    let value = format!("{}={text}", d.name);
                    let shown = if text.is_empty() {
                        "(none)".to_owned()
                    } else {
                        text
                    };
                    let label = format!("{} = {shown} ({})", d.name, v.count);
                    let selected = value == now;
                    view! { <option value=value selected=selected>{label}</option> }
                })
                .collect_view();
            view! { <optgroup label=d.name.clone()>{values}</optgroup> }
        })
        .collect_view()
}

/// The filter `now`, selected, when this period does not list it: a value kept from
/// another period is still the query's, and the picker must show it.
fn kept_filter_option(dims: &Dimensions, now: &str) -> impl IntoView + use<> {
    let listed = dims.dimensions.iter().any(|d| {
        d.values
            .iter()
            .any(|v| format!("{}={}", d.name, api::value_text(&v.value)) == now)
    });
    (!now.is_empty() && !listed).then(|| {
        let label = format!("{} (no runs in this period)", now.replacen('=', " = ", 1));
        view! { <option value=now.to_owned() selected=true>{label}</option> }
    })
}

/// The metric to show: the user's pick while the period has it, else the first visible
/// token, else the first token, else the first metric there is (empty: none).
pub fn metric_shown(dims: &Dimensions, chosen: &str) -> String {
    let has = |m: &str| dims.metrics.iter().any(|c| c.metric == m);
    std::iter::once(chosen)
        .chain(PREFERRED)
        .find(|m| !m.is_empty() && has(m))
        .map(str::to_owned)
        .or_else(|| dims.metrics.first().map(|c| c.metric.clone()))
        .unwrap_or_default()
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
fn Panels(query: Memo<Query>, refresh: RwSignal<u32>, marks: Memo<Vec<Mark>>) -> impl IntoView {
    let url = move |f: fn(&Query) -> String| Memo::new(move |_| f(&query.get()));
    let summary_url = url(|q| q.url("/field/summary", true, &[]));
    let series_url = url(|q| q.url("/field/series", true, &[("bucket", q.bucket())]));
    let histogram_url = url(|q| q.url("/field/histogram", true, &[("bins", BINS)]));
    let slowest_url = url(|q| q.url("/field/slowest", false, &[("limit", SLOWEST)]));
    let summary = load(summary_url, refresh);
    let series = load(series_url, refresh);
    let histogram = load(histogram_url, refresh);
    let slowest = load(slowest_url, refresh);
    view! {
        <h3>"Percentiles (weighted)"</h3>
        {move || shown(read::<Summary>(&summary, "summary"), |s| view! { <summary::SummaryTable summary=s/> })}
        <h3>"Over time"</h3>
        {move || shown(read::<Series>(&series, "series"), |s| view! { <chart::SeriesChart series=s marks=marks.get()/> })}
        <h3>"Distribution"</h3>
        {move || shown(read::<Histogram>(&histogram, "histogram"), |h| view! { <histogram::HistogramChart histogram=h marks=marks.get()/> })}
        <h3>"Slowest runs"</h3>
        <p class="legend">"click a run to open its field report in the waterfall"</p>
        {move || shown(read::<Slowest>(&slowest, "slowest runs"), |s| view! { <slowest::SlowestTable slowest=s/> })}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn the_metric_is_the_pick_while_the_period_has_it() {
        let dims = |names: &[&str]| Dimensions {
            runs: 1,
            metrics: names
                .iter()
                .map(|m| api::MetricCount {
                    metric: (*m).to_owned(),
                    count: 1,
                })
                .collect(),
            dimensions: Vec::new(),
        };
        let d = dims(&["e2e_ms", "ttft_ms", "ttft_visible_ms"]);
        assert_eq!(metric_shown(&d, ""), "ttft_visible_ms");
        assert_eq!(metric_shown(&d, "e2e_ms"), "e2e_ms");
        assert_eq!(
            metric_shown(&dims(&["e2e_ms", "ttft_ms"]), "rtf"),
            "ttft_ms"
        );
        assert_eq!(metric_shown(&dims(&["rtf"]), ""), "rtf");
        assert_eq!(metric_shown(&dims(&[]), "ttft_ms"), "");
    }
}
