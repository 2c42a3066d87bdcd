//! The sweep's figures per step and target, as `ttfx run` prints them: the browsers'
//! (the user's wait) then the load generator's (the server's door). Every number is
//! `fmt::num`'s one decimal; a figure the step lacks is a dash.

use leptos::prelude::*;
use ttfx_core::sweep_file::{Quantiles, SweepFile};

use crate::fmt::{num, opt};

fn p50(q: Option<Quantiles>) -> String {
    opt(q.map(|q| q.p50))
}

fn p90(q: Option<Quantiles>) -> String {
    opt(q.map(|q| q.p90))
}

/// One table per target, a row per step, as `ttfx run` prints its blocks (a target's
/// label is long: one caption rather than a column).
#[component]
pub fn SweepTable(sweep: SweepFile) -> impl IntoView {
    let voice = sweep
        .steps
        .iter()
        .flat_map(|s| &s.targets)
        .any(|t| t.browser.ttfa_ms.is_some());
    sweep
        .targets
        .iter()
        .enumerate()
        .map(|(t, target)| {
            let rows = sweep
                .steps
                .iter()
                .filter_map(|step| {
                    let f = step.targets.get(t)?;
                    let (b, l) = (&f.browser, &f.load);
                    let ttfa = voice.then(|| view! { <td class="num">{p50(b.ttfa_ms)}</td> });
                    Some(view! {
                        <tr data-level=step.level.value>
                            <td>{step.level.label()}</td>
                            <td class="num">{b.runs}</td>
                            <td class="num">{p50(b.ttft_visible_ms)}</td>
                            <td class="num">{p90(b.ttft_visible_ms)}</td>
                            <td class="num">{p50(b.ttft_ms)}</td>
                            <td class="num">{p90(b.ttft_ms)}</td>
                            <td class="num">{p50(b.first_paint_ms)}</td>
                            <td class="num">{p50(b.tpot_ms)}</td>
                            {ttfa}
                            <td class="num">{num(l.requests_per_s)}</td>
                            <td class="num">{p50(l.ttft_ms)}</td>
                            <td class="num">{p90(l.ttft_ms)}</td>
                            <td class="num">{p50(l.tpot_ms)}</td>
                            <td class="num">{p50(l.e2e_ms)}</td>
                            <td class="num">{num(l.output_tokens_per_s)}</td>
                            <td class="num">{l.errors}</td>
                        </tr>
                    })
                })
                .collect_view();
            let ttfa_head = voice.then(|| view! { <th>"ttfa p50"</th> });
            view! {
                <table class="sweep-table" data-target=target.clone()>
                    <caption><span class=format!("key g{}", t.min(3))>{target.clone()}</span></caption>
                    <thead>
                        <tr>
                            <th></th>
                            <th colspan=if voice { "8" } else { "7" }>"browsers (ms)"</th>
                            <th colspan="7">"load generator (ms; completed requests/s, output tokens/s)"</th>
                        </tr>
                        <tr>
                            <th>"step"</th>
                            <th>"runs"</th><th>"ttft_visible p50"</th><th>"p90"</th>
                            <th>"ttft p50"</th><th>"p90"</th><th>"first_paint p50"</th><th>"tpot p50"</th>
                            {ttfa_head}
                            <th>"done/s"</th><th>"ttft p50"</th><th>"p90"</th><th>"tpot p50"</th>
                            <th>"e2e p50"</th><th>"tok/s"</th><th>"errors"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            }
        })
        .collect_view()
}
