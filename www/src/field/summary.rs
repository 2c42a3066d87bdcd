//! The summary table: `/field/summary` for the chosen metric, one row per group.

use leptos::prelude::*;

use super::api::{Summary, group_name};
use crate::fmt::num;

#[component]
pub fn SummaryTable(summary: Summary) -> impl IntoView {
    let by = summary.by.clone();
    let Some(metric) = summary.metrics.into_iter().next() else {
        return view! { <p class="empty">"No summary for this metric."</p> }.into_any();
    };
    let rows = metric
        .groups
        .iter()
        .map(|g| {
            view! {
                <tr>
                    <td class="key">{group_name(&g.key, by.as_deref())}</td>
                    <td class="num">{g.count}</td>
                    <td class="num">{num(g.weighted_count)}</td>
                    <td class="num">{num(g.p50)}</td>
                    <td class="num">{num(g.p75)}</td>
                    <td class="num">{num(g.p90)}</td>
                    <td class="num">{num(g.p95)}</td>
                    <td class="num">{num(g.p99)}</td>
                </tr>
            }
        })
        .collect_view();
    let empty = metric.groups.is_empty().then(|| {
        view! { <p class="empty" id="field-summary-empty">{format!("No {} values in this period.", metric.metric)}</p> }
    });
    let left_off = (metric.groups_left_off > 0)
        .then(|| view! { <p class="legend">{format!("{} smaller group(s) left off", metric.groups_left_off)}</p> });
    view! {
        <p id="field-runs">{format!(
            "{} run(s) in the slice; percentiles of {} weighted by 1/sample_rate",
            summary.runs, metric.metric
        )}</p>
        <table id="field-summary">
            <thead><tr>
                <th>{by.clone().unwrap_or_else(|| "group".into())}</th><th>"n"</th><th>"weighted"</th>
                <th>"p50"</th><th>"p75"</th><th>"p90"</th><th>"p95"</th><th>"p99"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        {empty}
        {left_off}
    }
    .into_any()
}
