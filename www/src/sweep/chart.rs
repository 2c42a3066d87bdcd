//! One sweep chart as SVG, in the Field chart's style (`svg.chart`, grid and ticks, a
//! colour per target `g0`–`g3`): the [`Geometry`]'s lines with a dot per step, each
//! budget's limit as a dashed line labelled at its right end, and a mark at the step
//! where it first broke. Every drawn element carries what it stands for in `data-`
//! attributes (level, value, target, figure, budget), so a test reads what is drawn.

use leptos::prelude::*;
use ttfx_core::sweep_file::LoadKind;

use super::geometry::{BOTTOM, ChartSpec, Geometry, HEIGHT, LEFT, RIGHT, TOP, WIDTH};

#[component]
pub fn SweepChart(spec: &'static ChartSpec, geometry: Geometry, kind: LoadKind) -> impl IntoView {
    let g = geometry;
    if g.lines.is_empty() {
        return view! {
            <p class="empty" id=format!("{}-empty", spec.id)>
                {format!("No step has the figures of the {}: nothing to draw.", spec.title)}
            </p>
        }
        .into_any();
    }
    let axis = format!("{} ({})", kind.as_str(), kind.unit());
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
        .map(|(x, level)| {
            view! {
                <line class="grid" x1=*x x2=*x y1=TOP y2=BOTTOM data-level=*level/>
                <text class="tick" x=*x y=BOTTOM + 16.0 text-anchor="middle">{level.to_string()}</text>
            }
        })
        .collect_view();
    let lines = g
        .lines
        .iter()
        .map(|l| {
            let dots = l
                .points
                .iter()
                .map(|p| {
                    view! {
                        <circle class=format!("sweep-pt g{}", l.target) cx=p.x cy=p.y r="3"
                            data-target=l.target_label.clone() data-figure=l.figure.id
                            data-level=p.level data-value=p.value_ms>
                            <title>{format!("{} {}: {} ms at {}={}", l.target_label, l.figure.name,
                                crate::fmt::num(p.value_ms), kind.as_str(), p.level)}</title>
                        </circle>
                    }
                })
                .collect_view();
            view! {
                <path class=format!("sweep-line g{} {}", l.target, l.figure.dash) d=l.path.clone()
                    data-target=l.target_label.clone() data-figure=l.figure.id>
                    <title>{format!("{} {}", l.target_label, l.figure.name)}</title>
                </path>
                {dots}
            }
        })
        .collect_view();
    let budgets = g
        .budget_lines
        .iter()
        .map(|b| {
            view! {
                <line class="budget-line" x1=LEFT x2=RIGHT y1=b.y y2=b.y
                    data-budget=b.text.clone() data-limit-ms=b.limit_ms/>
                // Labelled at the left: the curves rising with load cross it on the right.
                <text class="budget-label" x=LEFT + 4.0 y=b.y - 3.0>{b.text.clone()}</text>
            }
        })
        .collect_view();
    let breaks = g
        .breaks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            // Labels sit low beside the mark (the curves rise to the right, away from
            // the bottom), several stacked up so they do not overlap.
            let label_y = BOTTOM - 6.0 - 12.0 * i as f64;
            let anchor = if b.x > (LEFT + RIGHT) / 2.0 { "end" } else { "start" };
            let label_x = if anchor == "end" { b.x - 4.0 } else { b.x + 4.0 };
            let ring = b.y.map(|y| {
                view! { <circle class="break-value" cx=b.x cy=y r="5" data-value=b.value_ms.unwrap_or(f64::NAN)/> }
            });
            view! {
                <g class="budget-break" data-budget=b.text.clone() data-step=b.step
                    data-level=b.level data-level-label=b.level_label.clone()>
                    <line class="break-mark" x1=b.x x2=b.x y1=TOP y2=BOTTOM/>
                    {ring}
                    <text class="break-label" x=label_x y=label_y text-anchor=anchor>
                        {format!("{} breaks at {}", b.text, b.level_label)}
                    </text>
                </g>
            }
        })
        .collect_view();
    let mut targets: Vec<(usize, String)> = Vec::new();
    for l in &g.lines {
        if !targets.iter().any(|(t, _)| *t == l.target) {
            targets.push((l.target, l.target_label.clone()));
        }
    }
    let legend_targets = targets
        .into_iter()
        .map(|(t, label)| view! { <span class=format!("key g{t}")>{label}</span> })
        .collect_view();
    let dashes = spec
        .figures
        .iter()
        .filter(|f| g.lines.iter().any(|l| l.figure.id == f.id))
        .map(|f| format!("{}: {}", f.dash, f.name))
        .collect::<Vec<_>>()
        .join(" · ");
    let more = (g.targets_not_drawn > 0).then(|| {
        format!(
            " · {} more target(s) not drawn (in the table)",
            g.targets_not_drawn
        )
    });
    view! {
        <h3>{spec.title}</h3>
        <svg id=spec.id class="chart sweep-chart" role="img" data-kind=kind.as_str()
            width=WIDTH height=HEIGHT viewBox=format!("0 0 {WIDTH} {HEIGHT}")>
            <title>{format!("{} per {} level", spec.title, kind.as_str())}</title>
            {y_ticks}
            {x_ticks}
            <text class="tick axis-x" x=RIGHT y=HEIGHT - 4.0 text-anchor="end">{axis}</text>
            <text class="tick axis-y" x=4.0 y=TOP - 4.0>"ms"</text>
            {budgets}
            {lines}
            {breaks}
        </svg>
        <p class="legend">{dashes} "; colour per target: " {legend_targets} {more}</p>
    }
    .into_any()
}
