//! Across runs: the batch's statistics (p50/p90/p99 per metric), the client clock beside
//! the server clock and their gap per milestone, a histogram of one metric, and goodput
//! against the budgets the user sets. All numbers come from `ttfx_core`'s batch.

use leptos::prelude::*;
use ttfx_core::Milestone;
use ttfx_core::report::{BatchReport, Run};
use ttfx_core::stats::{Budget, Summary, percentile};

use crate::fmt::{Scale, num};
use crate::lab;

/// The batch panel. The budget field and the histogram's metric live outside the parts
/// that re-render on every new run, so a run landing does not reset what the user picked.
#[component]
pub fn BatchSummary() -> impl IntoView {
    let lab = lab();
    let has_runs = move || lab.batch.with(|b| !b.runs.is_empty());
    let outcomes = move || {
        let o = lab.batch.with(|b| b.outcomes);
        format!(
            "{} runs: {} completed, {} failed, {} aborted, {} incomplete",
            o.total, o.completed, o.failed, o.aborted, o.incomplete
        )
    };
    let tables = move || {
        let batch = lab.batch.get();
        view! {
            <ClockTable batch=batch.clone()/>
            <StatsTable batch/>
        }
    };
    view! {
        <Show when=has_runs fallback=|| view! {
            <p class="empty">"No runs yet: run a target or load a report."</p>
        }>
            <p id="outcomes">{outcomes}</p>
            <GoodputPanel/>
            {tables}
            <Histogram/>
        </Show>
    }
}

/// Every statistic of the batch, one row per metric.
#[component]
fn StatsTable(batch: BatchReport) -> impl IntoView {
    let rows = batch
        .statistics
        .iter()
        .map(|(name, s)| {
            view! {
                <tr data-metric=name.clone()>
                    <td>{name.clone()}</td>
                    <td class="num">{s.count}</td>
                    <td class="num">{num(s.mean)}</td>
                    <td class="num">{num(s.p50)}</td>
                    <td class="num">{num(s.p90)}</td>
                    <td class="num">{num(s.p99)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h3>"Statistics (numpy linear percentiles)"</h3>
        <table id="stats">
            <thead><tr><th>"metric"</th><th>"n"</th><th>"mean"</th><th>"p50"</th><th>"p90"</th><th>"p99"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// Per milestone with a server counterpart: the same percentiles on both clocks and of
/// their per-request difference.
#[component]
fn ClockTable(batch: BatchReport) -> impl IntoView {
    let rows = clock_rows(&batch.runs)
        .into_iter()
        .map(|row| {
            let cells = [row.client, row.server, row.gap]
                .into_iter()
                .flat_map(|s| [s.p50, s.p90, s.p99])
                .map(|v| view! { <td class="num">{num(v)}</td> })
                .collect_view();
            view! { <tr data-milestone=row.milestone.as_str()><td>{row.milestone.as_str()}</td>{cells}</tr> }
        })
        .collect_view();
    view! {
        <h3>"Client clock against server clock (ms)"</h3>
        <table id="clocks">
            <thead>
                <tr><th></th><th colspan="3">"client"</th><th colspan="3">"server"</th><th colspan="3">"gap"</th></tr>
                <tr><th>"milestone"</th>
                    <th>"p50"</th><th>"p90"</th><th>"p99"</th>
                    <th>"p50"</th><th>"p90"</th><th>"p99"</th>
                    <th>"p50"</th><th>"p90"</th><th>"p99"</th></tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// One milestone's three distributions.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockRow {
    pub milestone: Milestone,
    pub client: Summary,
    pub server: Summary,
    pub gap: Summary,
}

/// The runs' gaps grouped by milestone, in milestone order.
pub fn clock_rows(runs: &[Run]) -> Vec<ClockRow> {
    let mut milestones: Vec<Milestone> = runs
        .iter()
        .flat_map(|r| r.metrics.gaps.iter().map(|g| g.milestone))
        .collect();
    milestones.sort();
    milestones.dedup();
    milestones
        .into_iter()
        .filter_map(|m| {
            let gaps: Vec<_> = runs
                .iter()
                .flat_map(|r| r.metrics.gaps.iter().filter(|g| g.milestone == m))
                .collect();
            let of = |f: fn(&ttfx_core::gap::Gap) -> f64| {
                Summary::of(&gaps.iter().map(|g| f(g)).collect::<Vec<_>>())
            };
            Some(ClockRow {
                milestone: m,
                client: of(|g| g.client_ms)?,
                server: of(|g| g.server_ms)?,
                gap: of(|g| g.gap_ms)?,
            })
        })
        .collect()
}

/// Budgets as `metric=limit, …`; goodput as the share of all runs within every budget.
#[component]
fn GoodputPanel() -> impl IntoView {
    let lab = lab();
    let text = RwSignal::new(
        lab.budgets
            .get_untracked()
            .iter()
            .map(|b| format!("{}={}", b.metric, b.limit))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let problem = RwSignal::new(None::<String>);
    let apply = move |_| match parse_budgets(&text.get_untracked()) {
        Ok(b) => {
            problem.set(None);
            lab.budgets.set(b);
        }
        Err(e) => problem.set(Some(e)),
    };
    let result = move || {
        lab.batch.get().goodput.map(|g| {
            let ratio = g
                .ratio
                .map(|r| format!("{:.0} %", r * 100.0))
                .unwrap_or_default();
            format!("goodput {} of {} runs ({ratio})", g.good, g.total)
        })
    };
    view! {
        <div class="goodput">
            <label title="ceilings; metrics ending in _per_s are floors">"budgets "
                <input id="budgets" size="40" bind:value=text/>
            </label>
            <button id="apply-budgets" type="button" on:click=apply>"Apply"</button>
            <strong id="goodput">{result}</strong>
            {move || problem.get().map(|p| view! { <p class="error">{p}</p> })}
        </div>
    }
}

/// `ttft_ms=500, tpot_ms=50` (commas or spaces); empty means no budgets.
pub fn parse_budgets(text: &str) -> Result<Vec<Budget>, String> {
    text.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| Budget::parse(s).map_err(|e| e.to_string()))
        .collect()
}

const HIST_W: f64 = 520.0;
const HIST_H: f64 = 160.0;
const BINS: usize = 12;

/// A histogram of one per-request metric with its p50/p90/p99 marked.
#[component]
fn Histogram() -> impl IntoView {
    let lab = lab();
    let names = Memo::new(move |_| {
        lab.batch.with(|b| {
            b.statistics
                .keys()
                .filter(|n| n.as_str() != "icl_ms")
                .cloned()
                .collect::<Vec<_>>()
        })
    });
    let metric = RwSignal::new(String::new());
    // Start on the first visible token (or what there is) until the user picks.
    Effect::new(move |_| {
        let names = names.get();
        if !names.contains(&metric.get_untracked()) {
            let first = ["ttft_visible_ms", "ttft_ms"]
                .into_iter()
                .find(|n| names.iter().any(|m| m == n))
                .map(str::to_owned)
                .or_else(|| names.first().cloned())
                .unwrap_or_default();
            metric.set(first);
        }
    });
    let chart = move || {
        let name = metric.get();
        let values: Vec<f64> = lab.batch.with(|b| {
            b.runs
                .iter()
                .filter_map(|r| r.metrics.scalar(&name))
                .collect()
        });
        histogram_svg(&values)
    };
    view! {
        <h3>"Distribution "
            <select id="hist-metric" prop:value=move || metric.get()
                on:change=move |ev| metric.set(event_target_value(&ev))>
                {move || names.get().into_iter().map(|n| view! { <option value=n.clone()>{n.clone()}</option> }).collect_view()}
            </select>
        </h3>
        {chart}
    }
}

/// Counts per bin over [min, max].
pub fn bins(values: &[f64], n: usize) -> Vec<usize> {
    let mut counts = vec![0; n.max(1)];
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(*v), h.max(*v))
        });
    for v in values {
        let i = if hi > lo {
            (((v - lo) / (hi - lo)) * n as f64) as usize
        } else {
            0
        };
        if let Some(c) = counts.get_mut(i.min(n.saturating_sub(1))) {
            *c += 1;
        }
    }
    counts
}

fn histogram_svg(values: &[f64]) -> impl IntoView + use<> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() {
        (lo, hi.max(lo + 1e-9))
    } else {
        (0.0, 1.0)
    };
    let x = Scale {
        d0: lo,
        d1: hi,
        p0: 40.0,
        p1: HIST_W - 10.0,
    };
    let counts = bins(values, BINS);
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let y = Scale {
        d0: 0.0,
        d1: top,
        p0: HIST_H - 20.0,
        p1: 10.0,
    };
    let width = (x.p1 - x.p0) / BINS as f64;
    let bars = counts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let left = x.p0 + width * i as f64;
            view! { <rect class="bar" x=left + 1.0 y=y.at(*c as f64) width=width - 2.0 height=y.at(0.0) - y.at(*c as f64)/> }
        })
        .collect_view();
    let marks = [50.0, 90.0, 99.0]
        .into_iter()
        .filter_map(|p| percentile(values, p).map(|v| (p, v)))
        .map(|(p, v)| {
            view! {
                <line class="pct" x1=x.at(v) x2=x.at(v) y1="6" y2=HIST_H - 20.0/>
                <text class="pct" x=x.at(v) + 2.0 y="14">{format!("p{p:.0}")}</text>
            }
        })
        .collect_view();
    view! {
        <svg id="histogram" class="chart" width=HIST_W height=HIST_H viewBox=format!("0 0 {HIST_W} {HIST_H}")>
            {bars}
            {marks}
            <text class="tick" x=x.p0 y=HIST_H - 4.0>{num(lo)}</text>
            <text class="tick" x=x.p1 y=HIST_H - 4.0 text-anchor="end">{num(hi)}</text>
            <text class="tick" x="4" y="16">{format!("{top:.0}")}</text>
        </svg>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_put_extremes_in_the_end_bins() {
        assert_eq!(bins(&[0.0, 5.0, 10.0], 2), vec![1, 2]);
        assert_eq!(bins(&[3.0, 3.0], 4), vec![2, 0, 0, 0]);
        assert_eq!(bins(&[], 3), vec![0, 0, 0]);
    }

    #[test]
    fn budgets_parse_or_name_the_problem() {
        let b = parse_budgets("ttft_ms=500, tpot_ms=50").unwrap();
        assert_eq!(b.len(), 2);
        assert!(parse_budgets("ttft_ms=abc").is_err());
        assert!(parse_budgets("").unwrap().is_empty());
    }
}
