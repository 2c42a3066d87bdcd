//! The Sweep view: a `ttfx run --sweep … --json` file (`ttfx-sweep/1`), loaded through
//! "load a report", drawn as curves against the load level: the user's wait (the
//! browsers' first visible token and first token) beside the server's door (the load
//! generator's first token), one line per target and figure; each budget's limit and
//! the step where it first broke; the crossover per step with two targets; the figures
//! per step in a table. The file is read by `ttfx_core::sweep_file`.

use leptos::prelude::*;
use ttfx_core::sweep_file::SweepFile;

use crate::lab;

mod chart;
pub mod geometry;
mod table;

/// The loaded sweep, or nothing until one is.
#[component]
pub fn SweepView() -> impl IntoView {
    let lab = lab();
    move || lab.sweep.get().map(|sweep| view! { <SweepPanel sweep/> })
}

#[component]
fn SweepPanel(sweep: SweepFile) -> impl IntoView {
    let kind = sweep.kind();
    let summary = format!(
        "{} step(s) of {} ({}), {} target(s); {} s of load before the browsers' runs, at \
         least {} s of load per step. Budgets are judged on the first target's browser runs.",
        sweep.steps.len(),
        kind.as_str(),
        kind.unit(),
        sweep.targets.len(),
        sweep.warmup_s,
        sweep.duration_s
    );
    let charts = geometry::CHARTS
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let g = geometry::geometry(&sweep, i);
            view! { <chart::SweepChart spec geometry=g kind/> }
        })
        .collect_view();
    view! {
        <p id="sweep-summary">{summary}</p>
        {charts}
        <Budgets sweep=sweep.clone()/>
        <Crossovers sweep=sweep.clone()/>
        <details class="data" open>
            <summary>"the figures per step"</summary>
            <div class="wide-table"><table::SweepTable sweep/></div>
        </details>
    }
}

/// Each budget: the first step where it broke (with the value that broke it), or that
/// it held at every step, in `ttfx run`'s words.
#[component]
fn Budgets(sweep: SweepFile) -> impl IntoView {
    if sweep.budgets.is_empty() {
        return view! { <p class="note" id="sweep-budgets">"No budgets in this sweep."</p> }
            .into_any();
    }
    let items = sweep
        .budgets
        .iter()
        .enumerate()
        .map(|(b, spec)| match sweep.first_break(b) {
            Some(step) => {
                let s = &sweep.steps[step];
                let value = s.verdicts[b]
                    .value
                    .map_or("no value".to_owned(), crate::fmt::num);
                view! {
                    <li class="error" data-budget=spec.text.clone() data-breaks-at=s.level.label()>
                        {format!("budget {} breaks at {} ({value})", spec.text, s.level.label())}
                    </li>
                }
                .into_any()
            }
            None => view! {
                <li class="ok" data-budget=spec.text.clone()>
                    {format!("budget {} holds at every step", spec.text)}
                </li>
            }
            .into_any(),
        })
        .collect_view();
    view! { <ul id="sweep-budgets">{items}</ul> }.into_any()
}

/// With two targets, `ttfx run`'s crossover n* at each step.
#[component]
fn Crossovers(sweep: SweepFile) -> impl IntoView {
    let items = sweep
        .steps
        .iter()
        .filter_map(|s| {
            let text = s.crossover.clone()?;
            Some(view! { <li>{format!("{}: {text}", s.level.label())}</li> })
        })
        .collect::<Vec<_>>();
    (!items.is_empty()).then(|| {
        view! {
            <p class="note">"crossover n* per step (browser medians; completion = ttft + n / rate):"</p>
            <ul id="sweep-crossover">{items}</ul>
        }
    })
}
