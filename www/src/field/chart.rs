//! Percentiles over time: `/field/series` as an SVG of p50, p75 and p95 lines per group
//! (the largest few groups when sliced), time along the x axis (UTC), the metric's
//! value up the y axis. The same figures are in a table under the chart. A benchmark's
//! p50/p90/p99 (`gap.rs`'s marks) are horizontal lines across it, labelled, the y axis
//! reaching up to the highest.

use leptos::prelude::*;

use super::api::{Point, Series, group_name};
use super::gap::Mark;
use crate::fmt::{Scale, num, svg_path};

pub const WIDTH: f64 = 760.0;
pub const HEIGHT: f64 = 240.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = WIDTH - 16.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = HEIGHT - 34.0;
/// Groups drawn when sliced: more lines than this are unreadable.
pub const MAX_LINE_GROUPS: usize = 4;

/// A point's value of one percentile.
type Read = fn(&Point) -> f64;

/// The percentiles drawn, each a line per group.
pub const PERCENTILES: [(&str, Read); 3] =
    [("p50", |p| p.p50), ("p75", |p| p.p75), ("p95", |p| p.p95)];

/// One percentile of one group: its points in the viewBox and their path.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub group: usize,
    pub group_name: String,
    pub percentile: &'static str,
    pub points: Vec<(f64, f64)>,
    /// `M x y L x y …`.
    pub path: String,
}

/// Everything the chart draws, in viewBox units.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    pub lines: Vec<Line>,
    /// `(x, label)` along the bottom.
    pub x_ticks: Vec<(f64, String)>,
    /// `(y, label, value)` up the left.
    pub y_ticks: Vec<(f64, String, f64)>,
    /// The benchmark's marks, each at its y.
    pub marks: Vec<(f64, Mark)>,
    /// Groups not drawn (the collector's own `groups_left_off` included).
    pub groups_not_drawn: u64,
}

impl Geometry {
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// The unit a metric is in, from its name.
pub fn unit(metric: &str) -> &'static str {
    if metric.ends_with("_ms") {
        "ms"
    } else if metric.ends_with("_per_s") {
        "/s"
    } else {
        ""
    }
}

/// Lays the series out: each point at its bucket's middle, x from the period's start
/// (or the first bucket) to the last bucket's end, y from 0 to the largest p95 drawn or
/// benchmark mark.
pub fn geometry(series: &Series, marks: &[Mark]) -> Geometry {
    let drawn = &series.groups[..series.groups.len().min(MAX_LINE_GROUPS)];
    let groups_not_drawn = (series.groups.len() - drawn.len()) as u64 + series.groups_left_off;
    let points = || drawn.iter().flat_map(|g| g.points.iter());
    let (Some(first), Some(last)) = (
        points().map(|p| p.start_unix_ms).reduce(f64::min),
        points().map(|p| p.start_unix_ms).reduce(f64::max),
    ) else {
        return Geometry {
            lines: Vec::new(),
            x_ticks: Vec::new(),
            y_ticks: Vec::new(),
            marks: Vec::new(),
            groups_not_drawn,
        };
    };
    let bucket = if series.bucket_ms > 0.0 {
        series.bucket_ms
    } else {
        1.0
    };
    let x = Scale {
        d0: series.since_unix_ms.map_or(first, |s| s.min(first)),
        d1: last + bucket,
        p0: LEFT,
        p1: RIGHT,
    };
    let top = points()
        .flat_map(|p| PERCENTILES.iter().map(|(_, f)| f(p)))
        .chain(marks.iter().map(|m| m.value_ms))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y = Scale {
        p0: BOTTOM,
        p1: TOP,
        ..Scale::zero_to(top, 0.0, 0.0)
    };
    let mut lines = Vec::new();
    for (i, g) in drawn.iter().enumerate() {
        let name = group_name(&g.key, series.by.as_deref());
        for (percentile, value) in PERCENTILES {
            let points: Vec<(f64, f64)> = g
                .points
                .iter()
                .map(|p| (x.at(p.start_unix_ms + bucket / 2.0), y.at(value(p))))
                .collect();
            let path = svg_path(&points);
            lines.push(Line {
                group: i,
                group_name: name.clone(),
                percentile,
                points,
                path,
            });
        }
    }
    let unit = unit(&series.metric);
    let y_ticks = y
        .ticks(4)
        .into_iter()
        .map(|v| (y.at(v), format!("{v} {unit}").trim_end().to_owned(), v))
        .collect();
    let marks = marks
        .iter()
        .map(|m| (y.at(m.value_ms), m.clone()))
        .collect();
    let span = x.d1 - x.d0;
    let x_ticks = (0..=4)
        .map(|k| {
            let at = x.d0 + span * f64::from(k) / 4.0;
            (x.at(at), utc(at, span > 86_400_000.0))
        })
        .collect();
    Geometry {
        lines,
        x_ticks,
        y_ticks,
        marks,
        groups_not_drawn,
    }
}

/// A Unix time (ms) as UTC `HH:MM`, or `MM-DD HH:MM` when `with_day`.
pub fn utc(unix_ms: f64, with_day: bool) -> String {
    let minutes = (unix_ms / 60_000.0).floor() as i64;
    let (days, minute_of_day) = (minutes.div_euclid(1440), minutes.rem_euclid(1440));
    let (hh, mm) = (minute_of_day / 60, minute_of_day % 60);
    if !with_day {
        return format!("{hh:02}:{mm:02}");
    }
    let (_, month, day) = civil(days);
    format!("{month:02}-{day:02} {hh:02}:{mm:02}")
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's rule).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The chart, or a sentence when there is nothing to draw.
#[component]
pub fn SeriesChart(series: Series, #[prop(optional)] marks: Vec<Mark>) -> impl IntoView {
    let g = geometry(&series, &marks);
    if g.is_empty() {
        return view! {
            <p class="empty" id="field-series-empty">
                {format!("No {} values in this period: nothing to draw.", series.metric)}
            </p>
        }
        .into_any();
    }
    let description = format!(
        "{} per {} bucket (UTC): p50, p75 and p95 lines{}",
        series.metric,
        duration_text(series.bucket_ms),
        match series.by.as_deref() {
            Some(by) => format!(" for the {} largest {by} groups", g.lines.len() / 3),
            None => String::new(),
        }
    );
    let y_ticks = g
        .y_ticks
        .iter()
        .map(|(y, label, value)| {
            view! {
                <line class="grid" x1=LEFT x2=RIGHT y1=*y y2=*y data-value=*value/>
                <text class="tick" x=LEFT - 6.0 y=y + 4.0 text-anchor="end">{label.clone()}</text>
            }
        })
        .collect_view();
    let x_ticks = g
        .x_ticks
        .iter()
        .map(|(x, label)| {
            view! {
                <line class="grid" x1=*x x2=*x y1=TOP y2=BOTTOM/>
                <text class="tick" x=*x y=BOTTOM + 16.0 text-anchor="middle">{label.clone()}</text>
            }
        })
        .collect_view();
    let lines = g
        .lines
        .iter()
        .map(|l| {
            let class = format!("pline {} g{}", l.percentile, l.group);
            let dots = l
                .points
                .iter()
                .map(|(x, y)| view! { <circle class=format!("pt g{}", l.group) cx=*x cy=*y r="2.5"/> })
                .collect_view();
            view! {
                <path class=class d=l.path.clone() data-percentile=l.percentile>
                    <title>{format!("{} {}", l.group_name, l.percentile)}</title>
                </path>
                {dots}
            }
        })
        .collect_view();
    let legend = g
        .lines
        .iter()
        .filter(|l| l.percentile == "p50")
        .map(|l| view! { <span class=format!("key g{}", l.group)>{l.group_name.clone()}</span> })
        .collect_view();
    let more = (g.groups_not_drawn > 0)
        .then(|| format!(" · {} more group(s) not drawn", g.groups_not_drawn));
    let bench_key = (!g.marks.is_empty()).then_some(" · long dashes: the benchmark");
    let bench = bench_lines(&g.marks);
    view! {
        <svg id="field-series" class="chart" role="img" aria-labelledby="field-series-title field-series-desc"
            width=WIDTH height=HEIGHT viewBox=format!("0 0 {WIDTH} {HEIGHT}")>
            <title id="field-series-title">{format!("{} percentiles over time", series.metric)}</title>
            <desc id="field-series-desc">{description}</desc>
            {y_ticks}
            {x_ticks}
            <text class="tick" x=RIGHT y=HEIGHT - 2.0 text-anchor="end">"time (UTC)"</text>
            {lines}
            {bench}
        </svg>
        <p class="legend">"solid p50 · dashed p75 · dotted p95; colour per group: " {legend} {more} {bench_key}</p>
        <SeriesTable series/>
    }
    .into_any()
}

/// The benchmark's marks: a line across the plot at each, labelled at its right end.
fn bench_lines(marks: &[(f64, Mark)]) -> impl IntoView + use<> {
    marks
        .iter()
        .map(|(y, m)| {
            view! {
                <line class="bench-mark" x1=LEFT x2=RIGHT y1=*y y2=*y
                    data-percentile=format!("p{}", m.p) data-value-ms=m.value_ms/>
                <text class="bench-label" x=RIGHT - 4.0 y=y - 3.0 text-anchor="end">{m.label.clone()}</text>
            }
        })
        .collect_view()
}

/// The chart's figures as a table, folded away.
#[component]
fn SeriesTable(series: Series) -> impl IntoView {
    let with_day = series
        .groups
        .iter()
        .flat_map(|g| g.points.first().zip(g.points.last()))
        .any(|(a, b)| b.start_unix_ms - a.start_unix_ms >= 86_400_000.0);
    let rows = series
        .groups
        .iter()
        .take(MAX_LINE_GROUPS)
        .flat_map(|g| {
            let name = group_name(&g.key, series.by.as_deref());
            g.points.iter().map(move |p| {
                view! {
                    <tr>
                        <td>{name.clone()}</td>
                        <td>{utc(p.start_unix_ms, with_day)}</td>
                        <td class="num">{p.count}</td>
                        <td class="num">{num(p.p50)}</td>
                        <td class="num">{num(p.p75)}</td>
                        <td class="num">{num(p.p95)}</td>
                    </tr>
                }
            })
        })
        .collect_view();
    view! {
        <details class="data">
            <summary>"the chart's figures"</summary>
            <table id="field-series-table">
                <thead><tr><th>"group"</th><th>"bucket (UTC)"</th><th>"n"</th>
                    <th>"p50"</th><th>"p75"</th><th>"p95"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </details>
    }
}

/// `1800000` → `30 min`.
fn duration_text(ms: f64) -> String {
    match ms {
        m if m >= 86_400_000.0 => format!("{} d", m / 86_400_000.0),
        m if m >= 3_600_000.0 => format!("{} h", m / 3_600_000.0),
        m => format!("{} min", m / 60_000.0),
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::field::api::{SeriesGroup, parse};
    use wasm_bindgen_test::wasm_bindgen_test;

    fn point(start: f64, p50: f64) -> Point {
        Point {
            start_unix_ms: start,
            count: 1,
            p50,
            p75: p50 * 1.5,
            p95: p50 * 2.0,
        }
    }

    fn series(groups: Vec<SeriesGroup>) -> Series {
        Series {
            metric: "ttft_ms".into(),
            bucket_ms: 3_600_000.0,
            by: Some("label".into()),
            groups,
            groups_left_off: 0,
            since_unix_ms: None,
        }
    }

    #[wasm_bindgen_test]
    fn points_scale_into_the_view_box() {
        let hour = 3_600_000.0;
        let s = series(vec![SeriesGroup {
            key: "a".into(),
            count: 3,
            points: vec![
                point(0.0, 100.0),
                point(hour, 200.0),
                point(2.0 * hour, 50.0),
            ],
        }]);
        let g = geometry(&s, &[]);
        assert_eq!(g.lines.len(), 3, "one line per percentile");
        assert_eq!(
            g.lines.iter().map(|l| l.percentile).collect::<Vec<_>>(),
            ["p50", "p75", "p95"]
        );
        for l in &g.lines {
            assert_eq!(l.points.len(), 3);
            for (x, y) in &l.points {
                assert!(
                    (LEFT..=RIGHT).contains(x) && (TOP..=BOTTOM).contains(y),
                    "{x} {y}"
                );
            }
            assert!(
                l.path.starts_with('M') && l.path.matches('L').count() == 2,
                "{}",
                l.path
            );
        }
        // Time runs left to right, a bucket's point at its middle; the largest p95 (400)
        // is the top of the plot and 0 its bottom.
        let p50 = &g.lines[0].points;
        assert!(p50[0].0 < p50[1].0 && p50[1].0 < p50[2].0);
        assert!((p50[1].0 - (LEFT + RIGHT) / 2.0).abs() < 1e-9);
        let p95 = &g.lines[2].points;
        assert!((p95[1].1 - TOP).abs() < 1e-9, "{p95:?}");
        assert!(p50[2].1 > p50[0].1, "a smaller value is lower down");
        assert_eq!(g.y_ticks.first().map(|t| t.1.as_str()), Some("0 ms"));
        assert!(g.y_ticks.iter().all(|(y, _, _)| (TOP..=BOTTOM).contains(y)));
        assert_eq!(g.x_ticks.first().map(|t| t.1.as_str()), Some("00:00"));
        assert_eq!(g.x_ticks.last().map(|t| t.1.as_str()), Some("03:00"));
    }

    #[wasm_bindgen_test]
    fn benchmark_marks_lie_on_the_y_axis_and_raise_it() {
        let s = series(vec![SeriesGroup {
            key: "a".into(),
            count: 1,
            points: vec![point(0.0, 100.0)],
        }]);
        let mark = |p, v: f64| Mark {
            p,
            value_ms: v,
            label: format!("bench p{p} {v} ms"),
        };
        let g = geometry(&s, &[mark(50, 150.0), mark(99, 800.0)]);
        // The highest mark is the top of the plot; a mark sits where the axis puts its value.
        assert_eq!(g.marks.len(), 2);
        assert!((g.marks[1].0 - TOP).abs() < 1e-9, "{:?}", g.marks);
        let (y0, _, v0) = g.y_ticks[0].clone();
        let (y1, _, v1) = g.y_ticks[1].clone();
        let expected = y0 + (150.0 - v0) / (v1 - v0) * (y1 - y0);
        assert!((g.marks[0].0 - expected).abs() < 1e-9, "{:?}", g.marks);
    }

    #[wasm_bindgen_test]
    fn a_sliced_series_draws_a_few_groups_and_counts_the_rest() {
        let groups = (0..6)
            .map(|i| SeriesGroup {
                key: format!("g{i}").into(),
                count: 1,
                points: vec![point(0.0, 10.0 * f64::from(i + 1))],
            })
            .collect();
        let mut s = series(groups);
        s.groups_left_off = 2;
        let g = geometry(&s, &[]);
        assert_eq!(g.lines.len(), 3 * MAX_LINE_GROUPS);
        assert_eq!(g.groups_not_drawn, 4);
        assert_eq!(g.lines[3].group_name, "g1");
    }

    #[wasm_bindgen_test]
    fn empty_data_draws_nothing_and_says_so() {
        let g = geometry(&series(Vec::new()), &[]);
        assert!(g.is_empty() && g.x_ticks.is_empty() && g.y_ticks.is_empty());

        let s: Series = parse(
            "series",
            r#"{"metric": "ttft_ms", "bucket": "1h", "bucket_ms": 3600000.0, "by": null,
                "groups": [], "groups_left_off": 0}"#,
        )
        .unwrap();
        let document = web_sys::window().unwrap().document().unwrap();
        let host: web_sys::HtmlElement =
            wasm_bindgen::JsCast::unchecked_into(document.create_element("div").unwrap());
        document.body().unwrap().append_child(&host).unwrap();
        let _handle =
            leptos::mount::mount_to(host.clone(), move || view! { <SeriesChart series=s/> });
        assert!(host.query_selector("svg").unwrap().is_none());
        assert_eq!(
            host.text_content().unwrap(),
            "No ttft_ms values in this period: nothing to draw."
        );
    }

    #[wasm_bindgen_test]
    fn times_are_utc() {
        // 2026-11-14 22:13:20 UTC.
        assert_eq!(utc(1_794_694_400_000.0, true), "11-14 22:13");
        assert_eq!(utc(0.0, true), "01-01 00:00");
        assert_eq!(civil(19_723), (2024, 1, 1));
        assert_eq!(civil(19_782), (2024, 2, 29));
    }
}
