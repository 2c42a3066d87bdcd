//! Two targets side by side: completion time against output length (completion = ttft +
//! n / rate, from each target's medians), the crossover n*, the silent-reading line, and
//! where each target's real output lengths fall.

use leptos::prelude::*;
use ttfx_core::crossover::{Comparison, CompletionModel, Crossover, Side, compare};
use ttfx_core::report::Run;

use crate::fmt::{Scale, num};
use crate::lab;

/// Silent reading speed, tokens per second (about 240 words a minute).
pub const READING_TOKENS_PER_S: f64 = 5.3;

const W: f64 = 620.0;
const H: f64 = 260.0;
const LEFT: f64 = 60.0;
const BOTTOM: f64 = H - 40.0;

/// The targets present in the runs, in first-seen order.
pub fn target_names(runs: &[Run]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in runs.iter().filter_map(|r| r.target.clone()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// A target's crossover model from its runs.
pub fn model(runs: &[Run], name: &str) -> Option<CompletionModel> {
    let metrics: Vec<_> = runs
        .iter()
        .filter(|r| r.target.as_deref() == Some(name))
        .map(|r| r.metrics.clone())
        .collect();
    CompletionModel::from_runs(&metrics)
}

#[component]
pub fn ComparePanel() -> impl IntoView {
    let lab = lab();
    let a = RwSignal::new(String::new());
    let b = RwSignal::new(String::new());
    let names = Memo::new(move |_| lab.runs.with(|r| target_names(r)));
    // Default to the first two targets until the user picks.
    Effect::new(move |_| {
        let n = names.get();
        if !n.contains(&a.get_untracked()) {
            a.set(n.first().cloned().unwrap_or_default());
        }
        if !n.contains(&b.get_untracked()) {
            b.set(n.get(1).cloned().unwrap_or_default());
        }
    });
    let picker = move |side: RwSignal<String>, id: &'static str| {
        view! {
            <select id=id prop:value=move || side.get() on:change=move |ev| side.set(event_target_value(&ev))>
                {move || names.get().into_iter().map(|n| view! { <option value=n.clone()>{n.clone()}</option> }).collect_view()}
            </select>
        }
    };
    let body = move || {
        let runs = lab.runs.get();
        let (name_a, name_b) = (a.get(), b.get());
        if target_names(&runs).len() < 2 {
            return view! { <p class="empty">"Run (or load) two targets to compare them, e.g. fast-start-slow-stream and slow-start-fast-stream."</p> }.into_any();
        }
        let (Some(ta), Some(tb)) = (model(&runs, &name_a), model(&runs, &name_b)) else {
            return view! { <p class="error">"A target needs completed runs with a TTFT and a decode rate."</p> }.into_any();
        };
        match compare(&ta, &tb) {
            Ok(c) => view! { <CompareChart a=ta b=tb comparison=c/> }.into_any(),
            Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
        }
    };
    view! {
        <p class="pickers">"A " {picker(a, "compare-a")} " B " {picker(b, "compare-b")}</p>
        {body}
    }
}

/// Words for the crossover.
pub fn crossover_text(c: &Crossover) -> String {
    match c {
        Crossover::At {
            tokens,
            shorter,
            longer,
        } => format!(
            "n* ≈ {} tokens: shorter answers finish first on {}, longer ones on {}",
            num(*tokens),
            side(*shorter),
            side(*longer)
        ),
        Crossover::Never { first } => format!(
            "no crossover: {} finishes first at every length",
            side(*first)
        ),
    }
}

fn side(s: Side) -> &'static str {
    match s {
        Side::A => "A",
        Side::B => "B",
        Side::Tie => "neither",
    }
}

/// Completion time against output length for both targets, with the reading line, the
/// crossover n* and each target's real output lengths on the axis; then the verdict at
/// the length quantiles.
#[component]
fn CompareChart(a: CompletionModel, b: CompletionModel, comparison: Comparison) -> impl IntoView {
    let max_n = comparison.curve.last().map(|p| p.tokens).unwrap_or(1.0);
    let max_ms = comparison
        .curve
        .iter()
        .flat_map(|p| [p.a_ms, p.b_ms])
        .fold(0.0, f64::max);
    let x = Scale::zero_to(max_n, LEFT, W - 20.0);
    let y = Scale {
        d0: 0.0,
        d1: if max_ms > 0.0 { max_ms } else { 1.0 },
        p0: BOTTOM,
        p1: 12.0,
    };
    let path_a = curve_points(&comparison, x, y, &a);
    let path_b = curve_points(&comparison, x, y, &b);
    let reading = reading_points(max_n, x, y);
    let n_star = match comparison.crossover {
        Crossover::At { tokens, .. } => Some(tokens),
        Crossover::Never { .. } => None,
    };
    view! {
        <p id="crossover">{crossover_text(&comparison.crossover)}</p>
        <p class="legend">{format!(
            "A: ttft {} ms, {} tok/s · B: ttft {} ms, {} tok/s (medians)",
            num(a.ttft_ms), num(a.tokens_per_s), num(b.ttft_ms), num(b.tokens_per_s)
        )}</p>
        <svg id="compare-chart" class="chart" width=W height=H viewBox=format!("0 0 {W} {H}")>
            {seconds_ticks(y)}
            {token_ticks(x)}
            <polyline class="reading" points=reading/>
            <polyline class="curve-a" points=path_a/>
            <polyline class="curve-b" points=path_b/>
            {n_star.map(|n| view! {
                <line class="nstar" x1=x.at(n) x2=x.at(n) y1="12" y2=BOTTOM/>
                <text class="nstar" x=x.at(n) + 4.0 y="24">"n*"</text>
            })}
            {output_lengths(&a, "len-a", x)}
            {output_lengths(&b, "len-b", x)}
            <text class="tick" x=W - 20.0 y=H - 4.0 text-anchor="end">"output tokens"</text>
            <text class="tick" x="4" y="10">"s"</text>
        </svg>
        <p class="legend">"blue A · orange B · dashed grey: reading at 5.3 tok/s (a stream under it outpaces the reader) · ticks on the axis: real output lengths"</p>
        <ul id="quantile-verdicts">{quantile_verdicts(&comparison)}</ul>
    }
}

/// A target's completion curve as polyline points, over the comparison's lengths;
/// times past the chart's top are drawn at the top.
fn curve_points(comparison: &Comparison, x: Scale, y: Scale, target: &CompletionModel) -> String {
    comparison
        .curve
        .iter()
        .map(|p| {
            let ms = target.completion_ms(p.tokens);
            format!("{:.1},{:.1}", x.at(p.tokens), y.at(ms.min(y.d1)))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The silent-reading line as polyline points. It is a reference, not data: it stops
/// where it leaves the chart.
fn reading_points(max_n: f64, x: Scale, y: Scale) -> String {
    let read_end = max_n.min(y.d1 * READING_TOKENS_PER_S / 1000.0);
    format!(
        "{:.1},{:.1} {:.1},{:.1}",
        x.at(0.0),
        y.at(0.0),
        x.at(read_end),
        y.at(read_end * 1000.0 / READING_TOKENS_PER_S)
    )
}

/// A target's real output lengths as ticks under the token axis.
fn output_lengths(
    target: &CompletionModel,
    class: &'static str,
    x: Scale,
) -> impl IntoView + use<> {
    target
        .output_tokens
        .iter()
        .map(|n| view! { <line class=class x1=x.at(*n) x2=x.at(*n) y1=BOTTOM y2=BOTTOM + 8.0/> })
        .collect_view()
}

/// The token axis's round values under the chart.
fn token_ticks(x: Scale) -> impl IntoView {
    x.ticks(6)
        .into_iter()
        .map(|v| view! { <text class="tick" x=x.at(v) y=BOTTOM + 22.0 text-anchor="middle">{format!("{v:.0}")}</text> })
        .collect_view()
}

/// The time axis's round values, in seconds, each with its grid line across the chart.
fn seconds_ticks(y: Scale) -> impl IntoView {
    y.ticks(5)
        .into_iter()
        .map(|v| view! {
            <line class="grid" x1=LEFT x2=W - 20.0 y1=y.at(v) y2=y.at(v)/>
            <text class="tick" x=LEFT - 4.0 y=y.at(v) + 4.0 text-anchor="end">{format!("{:.1}", v / 1000.0)}</text>
        })
        .collect_view()
}

/// Which target finishes first at each quantile of the real output lengths.
fn quantile_verdicts(comparison: &Comparison) -> impl IntoView + use<> {
    comparison
        .at_quantiles
        .iter()
        .map(|q| {
            view! { <li>{format!(
                "at p{:.0} lengths: A {} tokens → {} s, B {} tokens → {} s; first: {}",
                q.quantile, num(q.a_tokens), num(q.a_ms / 1000.0), num(q.b_tokens), num(q.b_ms / 1000.0), side(q.first)
            )}</li> }
        })
        .collect_view()
}
