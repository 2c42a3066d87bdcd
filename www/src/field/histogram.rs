//! The distribution: `/field/histogram` as SVG bars, height by weighted count (the runs
//! they stand for, as the percentiles count them); when sliced, the largest few groups
//! side by side in each bin. A benchmark's p50/p90/p99 (`gap.rs`'s marks) are vertical
//! lines at their values, labelled; the x axis widens to take them in.

use leptos::prelude::*;

use super::api::{Histogram, group_name};
use super::chart::{MAX_LINE_GROUPS, unit};
use super::gap::Mark;
use crate::fmt::{Scale, num};

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = WIDTH - 16.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = HEIGHT - 22.0;

/// One bar in viewBox units, with what its tooltip says.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub group: usize,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub title: String,
}

/// The x axis: from the first edge to the last, widened to every mark. With no span
/// (one value, no mark elsewhere) it is the bins' index, as wide as the plot.
pub fn x_scale(h: &Histogram, marks: &[Mark]) -> Scale {
    let values = || {
        h.edges
            .iter()
            .copied()
            .chain(marks.iter().map(|m| m.value_ms))
            .filter(|v| v.is_finite())
    };
    let lo = values().reduce(f64::min).unwrap_or(0.0);
    let hi = values().reduce(f64::max).unwrap_or(0.0);
    Scale {
        d0: lo,
        d1: hi,
        p0: LEFT,
        p1: RIGHT,
    }
}

/// Where bin `b` starts and ends along x.
fn bin_span(h: &Histogram, x: &Scale, b: usize) -> (f64, f64) {
    if x.d1 > x.d0 {
        (x.at(h.edges[b]), x.at(h.edges[b + 1]))
    } else {
        let w = (RIGHT - LEFT) / (h.edges.len() - 1) as f64;
        (LEFT + w * b as f64, LEFT + w * (b + 1) as f64)
    }
}

/// The bars of the first [`MAX_LINE_GROUPS`] groups on the axis `x`; empty bins have
/// none.
pub fn bars(h: &Histogram, x: &Scale) -> Vec<Bar> {
    let bins = h.edges.len().saturating_sub(1);
    if bins == 0 {
        return Vec::new();
    }
    let groups = &h.groups[..h.groups.len().min(MAX_LINE_GROUPS)];
    let top = groups
        .iter()
        .flat_map(|g| g.weighted_counts.iter().copied())
        .fold(0.0, f64::max);
    let y = Scale {
        p0: BOTTOM,
        p1: TOP,
        ..Scale::zero_to(top, 0.0, 0.0)
    };
    let unit = unit(&h.metric);
    let mut out = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let name = group_name(&g.key, h.by.as_deref());
        for (b, (&w, &n)) in g
            .weighted_counts
            .iter()
            .zip(&g.counts)
            .enumerate()
            .take(bins)
        {
            if n == 0 {
                continue;
            }
            let (x0, x1) = bin_span(h, x, b);
            let bar_w = (x1 - x0 - 2.0).max(1.0) / groups.len().max(1) as f64;
            out.push(Bar {
                group: gi,
                x: x0 + 1.0 + bar_w * gi as f64,
                y: y.at(w),
                width: bar_w,
                height: y.at(0.0) - y.at(w),
                title: format!(
                    "{name}: {}–{} {unit}: {n} run(s), {} weighted",
                    num(h.edges[b]),
                    num(h.edges[b + 1]),
                    num(w)
                ),
            });
        }
    }
    out
}

/// A benchmark mark at its x, each label a line lower than the last so close marks
/// stay readable.
fn bench_lines(marks: &[Mark], x: &Scale) -> impl IntoView + use<> {
    marks
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let at = if x.d1 > x.d0 { x.at(m.value_ms) } else { LEFT };
            let anchor = if at > (LEFT + RIGHT) / 2.0 { "end" } else { "start" };
            let dx = if anchor == "end" { -3.0 } else { 3.0 };
            view! {
                <line class="bench-mark" x1=at x2=at y1=TOP y2=BOTTOM
                    data-percentile=format!("p{}", m.p) data-value-ms=m.value_ms/>
                <text class="bench-label" x=at + dx y=TOP + 10.0 + 12.0 * i as f64 text-anchor=anchor>{m.label.clone()}</text>
            }
        })
        .collect_view()
}

#[component]
pub fn HistogramChart(histogram: Histogram, #[prop(optional)] marks: Vec<Mark>) -> impl IntoView {
    let x = x_scale(&histogram, &marks);
    let bars = bars(&histogram, &x);
    if bars.is_empty() {
        return view! {
            <p class="empty" id="field-histogram-empty">
                {format!("No {} values in this period: no distribution.", histogram.metric)}
            </p>
        }
        .into_any();
    }
    let (lo, hi) = (
        histogram.edges.first().copied().unwrap_or_default(),
        histogram.edges.last().copied().unwrap_or_default(),
    );
    let bench = bench_lines(&marks, &x);
    let unit = unit(&histogram.metric);
    let top = histogram
        .groups
        .iter()
        .take(MAX_LINE_GROUPS)
        .flat_map(|g| g.weighted_counts.iter().copied())
        .fold(0.0, f64::max);
    let drawn = bars
        .into_iter()
        .map(|b| {
            view! {
                <rect class=format!("bar g{}", b.group) x=b.x y=b.y width=b.width height=b.height>
                    <title>{b.title}</title>
                </rect>
            }
        })
        .collect_view();
    let legend = histogram.by.as_deref().map(|by| {
        let keys = histogram
            .groups
            .iter()
            .take(MAX_LINE_GROUPS)
            .enumerate()
            .map(|(i, g)| {
                view! { <span class=format!("key g{i}")>{group_name(&g.key, Some(by))}</span> }
            })
            .collect_view();
        view! { <p class="legend">"groups: " {keys}</p> }
    });
    view! {
        <svg id="field-histogram" class="chart" role="img" aria-labelledby="field-histogram-title"
            width=WIDTH height=HEIGHT viewBox=format!("0 0 {WIDTH} {HEIGHT}")>
            <title id="field-histogram-title">{format!(
                "{} distribution: {} bins from {} to {} {unit}, height by weighted count",
                histogram.metric, histogram.edges.len() - 1, num(lo), num(hi)
            )}</title>
            <line class="grid" x1=LEFT x2=RIGHT y1=BOTTOM y2=BOTTOM/>
            {drawn}
            {bench}
            <text class="tick axis-start" x=LEFT y=HEIGHT - 6.0 data-value=x.d0>{format!("{} {unit}", num(x.d0))}</text>
            <text class="tick axis-end" x=RIGHT y=HEIGHT - 6.0 text-anchor="end" data-value=x.d1>{format!("{} {unit}", num(x.d1))}</text>
            <text class="tick" x=LEFT - 6.0 y=TOP + 8.0 text-anchor="end">{num(top)}</text>
        </svg>
        {legend}
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::api::parse;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn bars_fill_the_plot_by_weighted_count_and_empty_bins_have_none() {
        let h: Histogram = parse(
            "histogram",
            r#"{"metric": "ttft_visible_ms", "bins": 4, "by": "label",
              "edges": [300.0, 527.5, 755.0, 982.5, 1210.0],
              "groups": [
                {"key": "prod-chat", "count": 7, "weighted_count": 28.0,
                 "counts": [4, 2, 0, 1], "weighted_counts": [16.0, 8.0, 0.0, 4.0]},
                {"key": "canary", "count": 3, "weighted_count": 3.0,
                 "counts": [2, 0, 1, 0], "weighted_counts": [2.0, 0.0, 1.0, 0.0]}]}"#,
        )
        .unwrap();
        let b = bars(&h, &x_scale(&h, &[]));
        assert_eq!(b.len(), 5);
        // The largest weighted count reaches the top; heights are proportional.
        assert!((b[0].y - TOP).abs() < 1e-9 && (b[0].height - (BOTTOM - TOP)).abs() < 1e-9);
        assert!((b[1].height * 2.0 - b[0].height).abs() < 1e-9);
        for bar in &b {
            assert!(
                bar.x >= LEFT && bar.x + bar.width <= RIGHT + 1e-9,
                "{bar:?}"
            );
            assert!((bar.y + bar.height - BOTTOM).abs() < 1e-9);
        }
        // Groups side by side in a bin.
        assert!(b[3].x > b[0].x && b[3].x < b[1].x, "{b:?}");
        assert_eq!(
            b[0].title,
            "prod-chat: 300.0–527.5 ms: 4 run(s), 16.0 weighted"
        );
    }

    #[wasm_bindgen_test]
    fn a_benchmark_mark_outside_the_values_widens_the_axis() {
        let h: Histogram = parse(
            "histogram",
            r#"{"metric": "ttft_ms", "bins": 2, "by": null, "edges": [300.0, 400.0, 500.0],
              "groups": [{"key": null, "count": 2, "weighted_count": 2.0,
                          "counts": [1, 1], "weighted_counts": [1.0, 1.0]}]}"#,
        )
        .unwrap();
        let mark = Mark {
            p: 50,
            value_ms: 100.0,
            label: "bench p50 100 ms".into(),
        };
        let x = x_scale(&h, &[mark]);
        assert_eq!((x.d0, x.d1), (100.0, 500.0));
        let b = bars(&h, &x);
        // The first bar starts where 300 ms lies on the widened axis.
        assert!((b[0].x - 1.0 - x.at(300.0)).abs() < 1e-9, "{b:?}");
        assert!((x.at(100.0) - LEFT).abs() < 1e-9);
    }

    #[wasm_bindgen_test]
    fn no_values_no_bars() {
        let h: Histogram = parse(
            "histogram",
            r#"{"metric": "ttft_ms", "bins": 20, "by": null, "edges": [], "groups": []}"#,
        )
        .unwrap();
        assert!(bars(&h, &x_scale(&h, &[])).is_empty());
    }
}
