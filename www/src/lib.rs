//! The ttfx lab page. Components live here and in the modules; `main.rs` only mounts.
//!
//! One state ([`Lab`]) holds the measured runs; everything else (statistics, goodput,
//! the comparison, the export) is derived from it with `ttfx_core`, so a loaded report
//! and a fresh batch are shown by the same code.
//!
//! It depends on ttfx-probe's Rust API, ttfx-core and ttfx-import (benchmark files read
//! in the page), never on a native crate: what the servers know (profiles, upstreams,
//! records, field answers) it asks them over HTTP.

use leptos::prelude::*;
use ttfx_core::report::{BatchReport, Run};
use ttfx_core::stats::Budget;
use ttfx_core::sweep_file::SweepFile;

mod bench_file;
mod chat;
pub mod collect;
mod compare;
mod controls;
pub mod field;
pub mod fmt;
mod io;
mod js;
mod origin;
mod profiles;
pub mod reply;
pub mod request;
mod summary;
mod sweep;
pub mod target;
mod turn;
mod upstreams;
mod voice;
mod waterfall;

/// The page's state, shared through Leptos context.
#[derive(Clone, Copy)]
pub struct Lab {
    /// Every run measured or loaded, in the order they finished.
    pub runs: RwSignal<Vec<Run>>,
    /// Goodput budgets the user set.
    pub budgets: RwSignal<Vec<Budget>>,
    /// The run whose waterfall is shown (index into `runs`).
    pub selected: RwSignal<Option<usize>>,
    /// The chat view's messages.
    pub messages: RwSignal<Vec<chat::Message>>,
    /// Requests still running.
    pub in_flight: RwSignal<usize>,
    /// A voice turn is waiting for the user to speak.
    pub listening: RwSignal<bool>,
    /// The batch over `runs` with `budgets`.
    pub batch: Memo<BatchReport>,
    /// What became of the measured runs posted to the server's collector.
    pub stored: RwSignal<collect::Stored>,
    /// A `ttfx run --sweep` file loaded for its curves (the Sweep panel), apart from
    /// the runs: its batches are per step, not one batch.
    pub sweep: RwSignal<Option<SweepFile>>,
}

impl Lab {
    fn new() -> Lab {
        let runs = RwSignal::new(Vec::<Run>::new());
        let budgets = RwSignal::new(default_budgets());
        let batch = Memo::new(move |_| BatchReport::from_runs(runs.get(), &budgets.get()));
        Lab {
            runs,
            budgets,
            selected: RwSignal::new(None),
            messages: RwSignal::new(Vec::new()),
            in_flight: RwSignal::new(0),
            listening: RwSignal::new(false),
            batch,
            stored: RwSignal::new(collect::Stored::default()),
            sweep: RwSignal::new(None),
        }
    }
}

/// A first answer within a second and a stream at reading speed or better.
fn default_budgets() -> Vec<Budget> {
    ["ttft_visible_ms=1000", "tpot_ms=190"]
        .iter()
        .filter_map(|b| Budget::parse(b).ok())
        .collect()
}

/// The state of the page; components are only ever mounted inside [`App`].
pub fn lab() -> Lab {
    use_context::<Lab>().unwrap_or_else(Lab::new)
}

/// The page's two views: the lab's own runs, and the collector's field data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tab {
    Lab,
    Field,
}

/// The whole lab page. Both views stay mounted once shown (a hidden one keeps its
/// state); the Field view asks the collector only once it is first opened.
#[component]
pub fn App() -> impl IntoView {
    let state = Lab::new();
    provide_context(state);
    let tab = RwSignal::new(Tab::Lab);
    let field_opened = RwSignal::new(false);
    let selected = move |t: Tab| move || (tab.get() == t).to_string();
    view! {
        <header>
            <h1>"ttfx lab"</h1>
            <ProbeStatus/>
        </header>
        <nav class="tabs" role="tablist">
            <button id="tab-lab" type="button" role="tab" aria-selected=selected(Tab::Lab)
                on:click=move |_| tab.set(Tab::Lab)>"Lab"</button>
            <button id="tab-field" type="button" role="tab" aria-selected=selected(Tab::Field)
                on:click=move |_| {
                    field_opened.set(true);
                    tab.set(Tab::Field);
                }>"Field"</button>
        </nav>
        <main>
            <div id="lab-view" role="tabpanel" hidden=move || tab.get() != Tab::Lab>
                <section class="panel run">
                    <h2>"Run"</h2>
                    <controls::RunForm/>
                    <chat::ChatView/>
                </section>
                <section class="panel request">
                    <h2>"Per request"</h2>
                    <waterfall::RunList/>
                    <waterfall::SelectedRun/>
                </section>
                <section class="panel batch">
                    <h2>"Across runs"</h2>
                    <io::ImportExport/>
                    <summary::BatchSummary/>
                </section>
                <Show when=move || state.sweep.with(Option::is_some)>
                    <section class="panel sweep" id="sweep">
                        <h2>"Under load: a sweep"</h2>
                        <sweep::SweepView/>
                    </section>
                </Show>
                <section class="panel compare">
                    <h2>"Compare two targets"</h2>
                    <compare::ComparePanel/>
                    <h3>"Beside a benchmark"</h3>
                    <bench_file::BenchFile/>
                </section>
            </div>
            <div id="field-view" role="tabpanel" hidden=move || tab.get() != Tab::Field>
                <section class="panel field">
                    <h2>"Field: what production pages sent to this server's collector"</h2>
                    <Show when=move || field_opened.get()>
                        <field::FieldView/>
                    </Show>
                </section>
            </div>
        </main>
    }
}

/// One line saying the probe is loaded and reading the page's clock.
#[component]
fn ProbeStatus() -> impl IntoView {
    let status = match ttfx_probe::clock::now_ms() {
        Ok(now) => format!("probe {} · clock {now:.1} ms", ttfx_probe::VERSION),
        Err(e) => format!("probe {} · {e}", ttfx_probe::VERSION),
    };
    view! { <p id="probe-status">{status}</p> }
}
