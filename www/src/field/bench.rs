//! The benchmark beside the field, at the top of the Field view: a picker of the
//! collector's stored benchmarks (`/field/benchmarks`, newest first; the latest to
//! start), the gap's sentence and a compact table of its rows (`/field/gap` over the
//! view's period and filter), and the marks the chart and histogram draw (the gap asked
//! for the metric shown). Without a stored benchmark it says how to import one.

use leptos::prelude::*;

use super::api::{self, FetchError};
use super::gap::{self, Benchmarks, Gap, GapRow, Mark};
use super::{Answer, load, read};

/// What to import and where, when the collector holds no benchmark.
pub const NONE_STORED: &str = "no benchmark stored: import one with `ttfx import results.json \
                               --into FILE.db` (the file this server collects into) to see it \
                               beside the field";

/// The view's choice of benchmark: an id, or `latest` before the user picks.
pub fn bench_param(chosen: &str) -> String {
    if chosen.is_empty() {
        "latest".to_owned()
    } else {
        chosen.to_owned()
    }
}

/// Whether the list holds a benchmark to set beside the field.
pub fn any(list: &Option<Result<Benchmarks, FetchError>>) -> bool {
    matches!(list, Some(Ok(b)) if !b.benchmarks.is_empty())
}

/// The marks for the metric shown, asked again when `url` changes; none while there is
/// no URL (no benchmark, no metric) or the collector sets no benchmark metric beside it.
pub fn marks(url: Memo<String>, refresh: RwSignal<u32>) -> Memo<Vec<Mark>> {
    let answer: Answer = LocalResource::new(move || {
        refresh.track();
        let url = url.get();
        async move {
            if url.is_empty() {
                return Err(FetchError::Other(String::new()));
            }
            api::get(url).await
        }
    });
    Memo::new(move |_| match read::<Gap>(&answer, "gap") {
        Some(Ok(g)) => gap::marks(&g),
        _ => Vec::new(),
    })
}

/// The picker, the sentence and the table (or how to import a benchmark).
#[component]
pub fn BenchHead(
    list: Memo<Option<Result<Benchmarks, FetchError>>>,
    chosen: RwSignal<String>,
    gap_url: Memo<String>,
    refresh: RwSignal<u32>,
) -> impl IntoView {
    let head = move || match list.get() {
        None => {
            view! { <p class="note" id="field-bench-status">"asking for benchmarks"</p> }.into_any()
        }
        Some(Err(e)) => {
            view! { <p class="error" id="field-bench-status">{e.to_string()}</p> }.into_any()
        }
        Some(Ok(b)) if b.benchmarks.is_empty() => {
            view! { <p class="note" id="field-bench-status">{NONE_STORED}</p> }.into_any()
        }
        Some(Ok(b)) => view! { <Picker list=b chosen/> }.into_any(),
    };
    let shown = Memo::new(move |_| list.with(any));
    view! {
        <div class="field-bench">
            {head}
            <Show when=move || shown.get()>
                <GapView url=gap_url refresh/>
            </Show>
        </div>
    }
}

/// The stored benchmarks, the one in use selected.
#[component]
fn Picker(list: Benchmarks, chosen: RwSignal<String>) -> impl IntoView {
    let now = chosen.get_untracked();
    let options = list
        .benchmarks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let id = b.id.to_string();
            let selected = if now.is_empty() { i == 0 } else { id == now };
            view! { <option value=id selected=selected>{b.option_text()}</option> }
        })
        .collect_view();
    view! {
        <label>"benchmark "
            <select id="field-bench" on:change=move |ev| chosen.set(event_target_value(&ev))>{options}</select>
        </label>
    }
}

/// The gap's sentence and table.
#[component]
fn GapView(url: Memo<String>, refresh: RwSignal<u32>) -> impl IntoView {
    let answer = load(url, refresh);
    move || match read::<Gap>(&answer, "gap") {
        None => view! { <p class="note" id="field-gap-sentence">"loading the gap"</p> }.into_any(),
        Some(Err(e)) => {
            view! { <p class="error" id="field-gap-sentence">{e.to_string()}</p> }.into_any()
        }
        Some(Ok(g)) => view! {
            <p class="gap-sentence" id="field-gap-sentence">{g.sentence.clone()}</p>
            <GapTable rows=g.rows/>
        }
        .into_any(),
    }
}

/// One line per row: the benchmark's metric, what the users wait for, and per
/// percentile the benchmark, the field and the difference.
#[component]
fn GapTable(rows: Vec<GapRow>) -> impl IntoView {
    let body = rows
        .into_iter()
        .map(|r| {
            let cells = r
                .percentiles
                .iter()
                .map(|at| {
                    view! {
                        <td class="num">{gap::cell(at.bench)}</td>
                        <td class="num">{gap::cell(at.field)}</td>
                        <td class="num">{format!("{} ({})", gap::signed_ms(at.diff_ms), gap::ratio(at.ratio))}</td>
                    }
                })
                .collect_view();
            view! {
                <tr data-bench-metric=r.bench_metric.clone() data-field-metric=r.field_metric.clone()>
                    <td>{r.bench_title}</td>
                    <td>{format!("{} ({})", r.waits_for, r.field_metric)}</td>
                    <td class="num">{r.field_count}</td>
                    {cells}
                </tr>
            }
        })
        .collect_view();
    view! {
        <table id="field-gap" class="compact">
            <thead>
                <tr><th rowspan="2">"bench"</th><th rowspan="2">"users wait for"</th><th rowspan="2">"n"</th>
                    <th colspan="3">"p50 (ms)"</th><th colspan="3">"p90 (ms)"</th><th colspan="3">"p99 (ms)"</th></tr>
                <tr><th>"bench"</th><th>"field"</th><th>"diff"</th>
                    <th>"bench"</th><th>"field"</th><th>"diff"</th>
                    <th>"bench"</th><th>"field"</th><th>"diff"</th></tr>
            </thead>
            <tbody>{body}</tbody>
        </table>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_until_one_is_picked() {
        assert_eq!(bench_param(""), "latest");
        assert_eq!(bench_param("7"), "7");
        assert!(!any(&None));
        assert!(!any(&Some(Ok(Benchmarks {
            benchmarks: Vec::new()
        }))));
    }
}
