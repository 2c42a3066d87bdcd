//! What a sweep chart draws, laid out in viewBox units: the load level along x (from 0
//! to the highest level, a tick at each level measured), milliseconds up y (from 0 to
//! the highest value drawn), one line per target and figure through its steps, and for
//! each budget of the chart its limit as a horizontal line and the first step where it
//! broke. Plain numbers, no DOM: the tests run natively.

use ttfx_core::sweep_file::{BudgetSpec, SweepFile, TargetFigures};

use crate::fmt::{Scale, svg_path};

pub const WIDTH: f64 = 760.0;
pub const HEIGHT: f64 = 260.0;
pub const LEFT: f64 = 64.0;
pub const RIGHT: f64 = WIDTH - 16.0;
pub const TOP: f64 = 14.0;
pub const BOTTOM: f64 = HEIGHT - 36.0;
/// Targets drawn: the page has four line colours (`g0`–`g3`); `ttfx run` writes two.
pub const MAX_TARGETS_DRAWN: usize = 4;

/// One figure of a target at each step, drawn as a line.
#[derive(Debug)]
pub struct Figure {
    /// Stable, for the page's attributes and tests: `browser-ttft-visible`.
    pub id: &'static str,
    /// For the legend.
    pub name: &'static str,
    /// The browser batch's metric a budget names, when the figure is one; the load
    /// generator's figures are never judged.
    pub budget_metric: Option<&'static str>,
    /// The line's dash (a CSS class): the colour says the target, the dash the figure.
    pub dash: &'static str,
    pub read: fn(&TargetFigures) -> Option<f64>,
}

/// One chart: which figures it draws.
#[derive(Debug)]
pub struct ChartSpec {
    /// The SVG's id.
    pub id: &'static str,
    pub title: &'static str,
    pub figures: &'static [Figure],
}

/// The user's wait (the browsers' first token and first visible token) beside the
/// server's door (the load generator's first token), and voice's first audio.
pub const WAIT: ChartSpec = ChartSpec {
    id: "sweep-wait",
    title: "time to first token against load",
    figures: &[
        Figure {
            id: "browser-ttft-visible",
            name: "browser ttft_visible p50",
            budget_metric: Some("ttft_visible_ms"),
            dash: "solid",
            read: |t| t.browser.ttft_visible_ms.map(|q| q.p50),
        },
        Figure {
            id: "browser-ttft",
            name: "browser ttft p50",
            budget_metric: Some("ttft_ms"),
            dash: "dashed",
            read: |t| t.browser.ttft_ms.map(|q| q.p50),
        },
        Figure {
            id: "load-ttft",
            name: "load generator ttft p50",
            budget_metric: None,
            dash: "dotted",
            read: |t| t.load.ttft_ms.map(|q| q.p50),
        },
        Figure {
            id: "browser-ttfa",
            name: "browser ttfa p50",
            budget_metric: Some("ttfa_ms"),
            dash: "dashdot",
            read: |t| t.browser.ttfa_ms.map(|q| q.p50),
        },
    ],
};

/// Time per output token, the browsers' beside the load generator's.
pub const STREAM: ChartSpec = ChartSpec {
    id: "sweep-stream",
    title: "time per output token against load",
    figures: &[
        Figure {
            id: "browser-tpot",
            name: "browser tpot p50",
            budget_metric: Some("tpot_ms"),
            dash: "solid",
            read: |t| t.browser.tpot_ms.map(|q| q.p50),
        },
        Figure {
            id: "load-tpot",
            name: "load generator tpot p50",
            budget_metric: None,
            dash: "dotted",
            read: |t| t.load.tpot_ms.map(|q| q.p50),
        },
    ],
};

/// The browser's own queue (#33 point 4): how long it held a request before sending it,
/// the line that shows a browser limit (HTTP/1.1's six connections per host) apart from
/// the server's load.
pub const QUEUE: ChartSpec = ChartSpec {
    id: "sweep-queue",
    title: "time the browser held the request against load",
    figures: &[Figure {
        id: "browser-queue",
        name: "browser request_queued p90",
        budget_metric: Some("request_queued_ms"),
        dash: "solid",
        read: |t| t.browser.request_queued_ms.map(|q| q.p90),
    }],
};

/// Every chart of the view, in order.
pub const CHARTS: [&ChartSpec; 3] = [&WAIT, &STREAM, &QUEUE];

/// The chart a budget is drawn on: the one showing its metric, else the first (its
/// break is still marked there).
pub fn chart_of(budget: &BudgetSpec) -> usize {
    CHARTS
        .iter()
        .position(|c| {
            c.figures
                .iter()
                .any(|f| f.budget_metric.is_some() && f.budget_metric == budget.metric.as_deref())
        })
        .unwrap_or(0)
}

/// A drawn point: the step's level and the figure's value, and where they are drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub level: f64,
    pub value_ms: f64,
    pub x: f64,
    pub y: f64,
}

/// One figure of one target across the steps.
#[derive(Debug, Clone)]
pub struct Line {
    pub target: usize,
    pub target_label: String,
    pub figure: &'static Figure,
    /// In ascending level; a step without the figure leaves a gap in the path.
    pub points: Vec<Point>,
    pub path: String,
}

/// A budget's limit across the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetLine {
    pub budget: usize,
    pub text: String,
    pub limit_ms: f64,
    pub y: f64,
}

/// Where a budget first broke.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakMark {
    pub budget: usize,
    pub text: String,
    pub step: usize,
    /// `concurrency=8`.
    pub level_label: String,
    pub level: f64,
    pub x: f64,
    /// The measured value that broke it, where a millisecond budget has one.
    pub value_ms: Option<f64>,
    pub y: Option<f64>,
}

/// Everything one chart draws.
#[derive(Debug, Clone)]
pub struct Geometry {
    pub lines: Vec<Line>,
    /// `(x, level)` along the bottom, one per level measured.
    pub x_ticks: Vec<(f64, f64)>,
    /// `(y, label, value)` up the left.
    pub y_ticks: Vec<(f64, String, f64)>,
    pub budget_lines: Vec<BudgetLine>,
    pub breaks: Vec<BreakMark>,
    pub targets_not_drawn: usize,
}

/// A step's level and a figure's value there (ms), in the order lines run; `None`
/// where the step lacks the figure.
type LevelValue = (f64, f64);

/// Lays out chart `index` of [`CHARTS`] for `sweep`.
pub fn geometry(sweep: &SweepFile, index: usize) -> Geometry {
    let spec = CHARTS[index.min(CHARTS.len() - 1)];
    let drawn = sweep.targets.len().min(MAX_TARGETS_DRAWN);
    // Lines run left to right whatever order the levels were swept in.
    let mut order: Vec<usize> = (0..sweep.steps.len()).collect();
    order.sort_by(|&a, &b| {
        sweep.steps[a]
            .level
            .value
            .total_cmp(&sweep.steps[b].level.value)
    });
    let top_level = sweep
        .steps
        .iter()
        .map(|s| s.level.value)
        .fold(0.0, f64::max);
    let x = Scale::zero_to(top_level, LEFT, RIGHT);

    // Values first (the y axis reaches the highest), then positions.
    let mut raw: Vec<(usize, &'static Figure, Vec<Option<LevelValue>>)> = Vec::new();
    for target in 0..drawn {
        for figure in spec.figures {
            let values: Vec<Option<LevelValue>> = order
                .iter()
                .map(|&s| {
                    let step = &sweep.steps[s];
                    step.targets
                        .get(target)
                        .and_then(figure.read)
                        .filter(|v| v.is_finite())
                        .map(|v| (step.level.value, v))
                })
                .collect();
            if values.iter().any(Option::is_some) {
                raw.push((target, figure, values));
            }
        }
    }
    let budgets: Vec<(usize, &BudgetSpec)> = sweep
        .budgets
        .iter()
        .enumerate()
        .filter(|(_, b)| chart_of(b) == index.min(CHARTS.len() - 1))
        .collect();
    let break_value = |b: usize| -> Option<(usize, Option<f64>)> {
        let step = sweep.first_break(b)?;
        let ms = sweep.budgets[b]
            .limit_ms()
            .and(sweep.steps[step].verdicts[b].value);
        Some((step, ms.filter(|v| v.is_finite())))
    };
    let top = raw
        .iter()
        .flat_map(|(_, _, v)| v.iter().flatten().map(|(_, ms)| *ms))
        .chain(budgets.iter().filter_map(|(_, b)| b.limit_ms()))
        .chain(budgets.iter().filter_map(|&(b, _)| break_value(b)?.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y = Scale {
        p0: BOTTOM,
        p1: TOP,
        ..Scale::zero_to(top, 0.0, 0.0)
    };

    let lines = raw
        .into_iter()
        .map(|(target, figure, values)| {
            let mut segments: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            let mut points = Vec::new();
            for value in values {
                match value {
                    Some((level, ms)) => {
                        let p = Point {
                            level,
                            value_ms: ms,
                            x: x.at(level),
                            y: y.at(ms),
                        };
                        if let Some(segment) = segments.last_mut() {
                            segment.push((p.x, p.y));
                        }
                        points.push(p);
                    }
                    None => segments.push(Vec::new()),
                }
            }
            let path = segments
                .iter()
                .filter(|s| !s.is_empty())
                .map(|s| svg_path(s))
                .collect::<Vec<_>>()
                .join(" ");
            Line {
                target,
                target_label: sweep.targets[target].clone(),
                figure,
                points,
                path,
            }
        })
        .collect();

    let budget_lines = budgets
        .iter()
        .filter_map(|&(b, spec)| {
            let limit_ms = spec.limit_ms().filter(|v| v.is_finite())?;
            Some(BudgetLine {
                budget: b,
                text: spec.text.clone(),
                limit_ms,
                y: y.at(limit_ms),
            })
        })
        .collect();
    let breaks = budgets
        .iter()
        .filter_map(|&(b, spec)| {
            let (step, value_ms) = break_value(b)?;
            let level = sweep.steps[step].level;
            Some(BreakMark {
                budget: b,
                text: spec.text.clone(),
                step,
                level_label: level.label(),
                level: level.value,
                x: x.at(level.value),
                value_ms,
                y: value_ms.map(|v| y.at(v)),
            })
        })
        .collect();

    let mut levels: Vec<f64> = order.iter().map(|&s| sweep.steps[s].level.value).collect();
    levels.dedup();
    let x_ticks = levels.into_iter().map(|l| (x.at(l), l)).collect();
    let y_ticks = y
        .ticks(4)
        .into_iter()
        .map(|v| (y.at(v), format!("{v} ms"), v))
        .collect();
    Geometry {
        lines,
        x_ticks,
        y_ticks,
        budget_lines,
        breaks,
        targets_not_drawn: sweep.targets.len() - drawn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ttfx_core::sweep_file::SweepFile;

    /// A sweep as `ttfx run` writes one (only the fields read), each step's browser
    /// ttft_visible / ttft, load ttft and tpot from `rows` per target.
    fn sweep(levels: &[f64], rows: &[&[(f64, f64, f64)]], budgets: &str) -> SweepFile {
        let steps: Vec<String> = levels
            .iter()
            .enumerate()
            .map(|(s, level)| {
                let targets: Vec<String> = rows
                    .iter()
                    .enumerate()
                    .map(|(t, r)| {
                        let (vis, ttft, load) = r[s];
                        format!(
                            r#"{{"target": "t{t}",
                               "browser": {{"outcomes": {{"total": 3}}, "runs": [],
                                 "statistics": {{"ttft_visible_ms": {{"p50": {vis}, "p90": {vis}}},
                                                 "ttft_ms": {{"p50": {ttft}, "p90": {ttft}}}}}}},
                               "load": {{"metrics": {{"ttft_ms": {{"p50": {load}, "p90": {load}}},
                                                      "tpot_ms": {{"p50": 20, "p90": 25}}}},
                                         "throughput": {{"requests_per_s": 2, "output_tokens_per_s": 80}},
                                         "errors": {{"total": 0}}}}}}"#
                        )
                    })
                    .collect();
                let budgets = budgets.replace("PASSED", if s + 1 < levels.len() { "true" } else { "false" });
                format!(
                    r#"{{"level": {{"kind": "concurrency", "value": {level}}}, "seconds": 5,
                        "targets": [{}], "budgets": [{budgets}]}}"#,
                    targets.join(",")
                )
            })
            .collect();
        let text = format!(
            r#"{{"schema": "ttfx-sweep/1", "warmup_s": 1, "duration_s": 4, "steps": [{}]}}"#,
            steps.join(",")
        );
        SweepFile::from_json(&text).unwrap()
    }

    const BUDGET: &str = r#"{"budget": "ttft_visible.p90<=500ms", "metric": "ttft_visible_ms",
        "stat": "p90", "at_least": false, "limit": 500.0, "passed": PASSED, "value": 640.0}"#;

    #[test]
    fn levels_run_along_x_and_milliseconds_up_y() {
        let s = sweep(
            &[1.0, 2.0, 4.0],
            &[&[
                (300.0, 290.0, 280.0),
                (350.0, 340.0, 330.0),
                (450.0, 440.0, 430.0),
            ]],
            BUDGET,
        );
        let g = geometry(&s, 0);
        // One target, three figures with values (no voice: no ttfa line).
        let ids: Vec<&str> = g.lines.iter().map(|l| l.figure.id).collect();
        assert_eq!(ids, ["browser-ttft-visible", "browser-ttft", "load-ttft"]);
        let vis = &g.lines[0];
        assert_eq!(
            vis.points
                .iter()
                .map(|p| (p.level, p.value_ms))
                .collect::<Vec<_>>(),
            [(1.0, 300.0), (2.0, 350.0), (4.0, 450.0)]
        );
        // x from 0 to the highest level; the highest value drawn (the break's 640 ms)
        // is the top of the plot, 0 its bottom.
        assert_eq!(vis.points[2].x, RIGHT);
        assert_eq!(vis.points[1].x, LEFT + (RIGHT - LEFT) / 2.0);
        let ms_at = |y: f64| (BOTTOM - y) / (BOTTOM - TOP) * 640.0;
        for p in &vis.points {
            assert!((ms_at(p.y) - p.value_ms).abs() < 1e-9, "{p:?}");
        }
        assert!(vis.path.starts_with('M') && vis.path.matches('L').count() == 2);
        assert_eq!(
            g.x_ticks.iter().map(|t| t.1).collect::<Vec<_>>(),
            [1.0, 2.0, 4.0]
        );
        assert_eq!(g.y_ticks.first().map(|t| t.1.as_str()), Some("0 ms"));
        // The budget: its limit across, and its break at the last step, at its value.
        assert_eq!(g.budget_lines.len(), 1);
        assert!((ms_at(g.budget_lines[0].y) - 500.0).abs() < 1e-9);
        let b = &g.breaks[0];
        assert_eq!(
            (b.step, b.level_label.as_str(), b.x),
            (2, "concurrency=4", RIGHT)
        );
        assert_eq!((b.value_ms, b.y), (Some(640.0), Some(TOP)));
        // The tpot chart has the load's line only, and no budget of its own.
        let stream = geometry(&s, 1);
        assert_eq!(stream.lines.len(), 1);
        assert_eq!(stream.lines[0].figure.id, "load-tpot");
        assert!(stream.budget_lines.is_empty() && stream.breaks.is_empty());
    }

    #[test]
    fn the_browsers_own_queue_is_its_own_line_on_its_own_chart() {
        // Without the figure (no --page-streams), the queue chart has nothing to draw.
        let none = sweep(
            &[1.0, 2.0],
            &[&[(400.0, 390.0, 380.0), (450.0, 440.0, 430.0)]],
            "",
        );
        assert!(geometry(&none, 2).lines.is_empty());
        // With it: the browsers' request_queued p90 per step, its budget on this chart.
        let text = r#"{"schema": "ttfx-sweep/1", "warmup_s": 1, "duration_s": 4, "steps": [
            {"level": {"kind": "concurrency", "value": 1}, "seconds": 5, "budgets": [],
             "targets": [{"target": "t0",
               "browser": {"outcomes": {"total": 8}, "runs": [],
                 "statistics": {"request_queued_ms": {"p50": 2, "p90": 480}}},
               "load": {"metrics": {}, "throughput": {"requests_per_s": 1,
                 "output_tokens_per_s": 1}, "errors": {"total": 0}}}]},
            {"level": {"kind": "concurrency", "value": 8}, "seconds": 5, "budgets": [],
             "targets": [{"target": "t0",
               "browser": {"outcomes": {"total": 8}, "runs": [],
                 "statistics": {"request_queued_ms": {"p50": 3, "p90": 900}}},
               "load": {"metrics": {}, "throughput": {"requests_per_s": 1,
                 "output_tokens_per_s": 1}, "errors": {"total": 0}}}]}]}"#;
        let s = SweepFile::from_json(text).unwrap();
        let g = geometry(&s, 2);
        assert_eq!(g.lines.len(), 1);
        assert_eq!(g.lines[0].figure.id, "browser-queue");
        let values: Vec<f64> = g.lines[0].points.iter().map(|p| p.value_ms).collect();
        assert_eq!(values, [480.0, 900.0]);
        let budget = BudgetSpec {
            text: String::new(),
            metric: Some("request_queued_ms".into()),
            stat: None,
            at_least: None,
            limit: None,
        };
        assert_eq!(chart_of(&budget), 2);
    }

    #[test]
    fn unsorted_levels_draw_left_to_right_and_a_missing_value_is_a_gap() {
        let mut s = sweep(
            &[4.0, 1.0, 2.0, 8.0],
            &[
                &[
                    (400.0, 1.0, 1.0),
                    (100.0, 1.0, 1.0),
                    (200.0, 1.0, 1.0),
                    (800.0, 1.0, 1.0),
                ],
                &[
                    (40.0, 1.0, 1.0),
                    (10.0, 1.0, 1.0),
                    (20.0, 1.0, 1.0),
                    (80.0, 1.0, 1.0),
                ],
            ],
            "",
        );
        // The step at concurrency=2 (file order 3rd) had no visible token on target 0.
        s.steps[2].targets[0].browser.ttft_visible_ms = None;
        let g = geometry(&s, 0);
        let vis = g
            .lines
            .iter()
            .find(|l| l.target == 0 && l.figure.id == "browser-ttft-visible")
            .unwrap();
        assert_eq!(
            vis.points.iter().map(|p| p.level).collect::<Vec<_>>(),
            [1.0, 4.0, 8.0]
        );
        // Two pieces: 1, then 4 → 8 (nothing drawn across the missing step).
        assert_eq!(vis.path.matches('M').count(), 2, "{}", vis.path);
        assert_eq!(vis.path.matches('L').count(), 1, "{}", vis.path);
        assert_eq!(g.lines.iter().filter(|l| l.target == 1).count(), 3);
        assert_eq!(g.lines[3].target_label, "t1");
        assert!(g.budget_lines.is_empty() && g.breaks.is_empty());
    }

    #[test]
    fn a_budget_goes_to_the_chart_of_its_metric() {
        let spec = |metric: Option<&str>| BudgetSpec {
            text: String::new(),
            metric: metric.map(str::to_owned),
            stat: None,
            at_least: None,
            limit: None,
        };
        assert_eq!(chart_of(&spec(Some("ttft_ms"))), 0);
        assert_eq!(chart_of(&spec(Some("tpot_ms"))), 1);
        // No chart shows e2e; a file without the parsed budget names none.
        assert_eq!(chart_of(&spec(Some("e2e_ms"))), 0);
        assert_eq!(chart_of(&spec(None)), 0);
    }

    #[test]
    fn a_budget_that_never_broke_has_its_line_and_no_mark() {
        let budget = BUDGET.replace("PASSED", "true");
        let s = sweep(
            &[1.0, 2.0],
            &[&[(300.0, 1.0, 1.0), (350.0, 1.0, 1.0)]],
            &budget,
        );
        let g = geometry(&s, 0);
        assert_eq!(g.budget_lines.len(), 1);
        assert!(g.breaks.is_empty());
        // The limit is the highest value: the top of the plot.
        assert_eq!(g.budget_lines[0].y, TOP);
    }

    #[test]
    fn more_targets_than_colours_are_counted_not_drawn() {
        let row: &[(f64, f64, f64)] = &[(100.0, 1.0, 1.0)];
        let s = sweep(&[1.0], &[row, row, row, row, row, row], "");
        let g = geometry(&s, 0);
        assert_eq!(g.targets_not_drawn, 2);
        assert!(g.lines.iter().all(|l| l.target < MAX_TARGETS_DRAWN));
    }
}
