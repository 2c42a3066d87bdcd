//! The page's charts as inline SVG: a run's waterfall of client milestones beside the
//! server's times for the same moments, and a batch's client − server gaps. The lab page
//! (`www/src/waterfall.rs`) draws the same waterfall in the browser; this one is text,
//! made natively, with no script.
//!
//! Every mark carries its value in `data-ms`, and the axis's ticks theirs, so a test can
//! read a position back as a time.

use std::fmt::Write as _;

use ttfx_core::Milestone;
use ttfx_core::report::Run;

use super::ms1;
use crate::document::GapRow;

const WIDTH: f64 = 760.0;
/// Left of this, the row labels.
const LABEL_W: f64 = 150.0;
/// Right of this, room for the value labels of late marks.
const PLOT_R: f64 = WIDTH - 110.0;
const ROW_H: f64 = 22.0;

/// A linear map from times (ms) to x positions.
#[derive(Debug, Clone, Copy)]
struct Scale {
    d0: f64,
    d1: f64,
}

impl Scale {
    /// From `min(lo, 0)` to `hi` (at least 1 ms wide): a voice turn's speech comes
    /// before the request, so its axis reaches left of 0.
    fn spanning(lo: f64, hi: f64) -> Scale {
        let d0 = if lo.is_finite() { lo.min(0.0) } else { 0.0 };
        let d1 = if hi.is_finite() && hi > d0 {
            hi
        } else {
            d0 + 1.0
        };
        Scale {
            d0,
            d1: d1.max(d0 + 1.0),
        }
    }

    fn at(self, v: f64) -> f64 {
        let x = LABEL_W + (v - self.d0) / (self.d1 - self.d0) * (PLOT_R - LABEL_W);
        // A non-finite time never reaches here (reports are validated), but a chart
        // must not write NaN into an attribute if one did.
        if x.is_finite() { x } else { LABEL_W }
    }

    /// Round times (1, 2, 5 × 10^k) across the domain, about `n` of them.
    fn ticks(self, n: usize) -> Vec<f64> {
        let span = self.d1 - self.d0;
        let raw = span / n as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .map(|m| m * mag)
            .find(|s| span / s <= n as f64)
            .unwrap_or(10.0 * mag);
        if !(step.is_finite() && step > 0.0) {
            return vec![self.d0];
        }
        let mut ticks = Vec::new();
        let mut t = (self.d0 / step).ceil() * step;
        while t <= self.d1 + step * 1e-9 && ticks.len() <= n * 2 {
            // -0 would print as "-0".
            ticks.push(if t == 0.0 { 0.0 } else { t });
            t += step;
        }
        ticks
    }
}

/// The axis: tick lines down to `axis_y`, their times below.
fn axis(x: Scale, axis_y: f64) -> String {
    let mut out = String::from("<g class=\"axis\">");
    for v in x.ticks(6) {
        let px = x.at(v);
        let _ = write!(
            out,
            "<line class=\"tick\" data-ms=\"{v}\" x1=\"{px:.2}\" x2=\"{px:.2}\" y1=\"0\" \
             y2=\"{axis_y:.1}\"/><text class=\"tick\" x=\"{px:.2}\" y=\"{:.1}\" \
             text-anchor=\"middle\">{v:.0}</text>",
            axis_y + 14.0
        );
    }
    out.push_str("</g>\n");
    out
}

/// Milestones with no row of their own: the origin, and the framing step between the
/// first byte and the first token (as on the lab page).
fn has_row(m: Milestone) -> bool {
    !matches!(m, Milestone::RequestStart | Milestone::FirstEvent)
}

/// One run: each client milestone as a bar from the request's start with a dot at its
/// time; where the server timed the same moment, a hollow mark at the server's time
/// joined to the client's by the gap.
pub(super) fn waterfall(run: &Run) -> String {
    let rows: Vec<(Milestone, f64)> = Milestone::ALL
        .into_iter()
        .filter(|m| has_row(*m))
        .filter_map(|m| run.timeline.milestones.get(m).map(|at| (m, at)))
        .collect();
    if rows.is_empty() {
        return "<p class=\"no-waterfall\">No milestone after the request's start.</p>\n"
            .to_owned();
    }
    let gaps = &run.metrics.gaps;
    let end = rows
        .iter()
        .map(|r| r.1)
        .chain(gaps.iter().map(|g| g.server_ms))
        .fold(0.0, f64::max);
    let start = rows.iter().map(|r| r.1).fold(0.0, f64::min);
    let x = Scale::spanning(start, end);
    let axis_y = ROW_H * rows.len() as f64 + 4.0;
    let height = axis_y + 22.0;
    let mut out = format!(
        "<svg class=\"waterfall\" width=\"{WIDTH}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"waterfall of the \
         run's milestones\">\n"
    );
    out.push_str(&axis(x, axis_y));
    for (i, (m, at)) in rows.iter().enumerate() {
        let y = ROW_H * i as f64 + ROW_H / 2.0;
        let gap = gaps.iter().find(|g| g.milestone == *m);
        // Labels of late milestones go left of their marks, so they stay on the chart.
        let late = x.at(*at) > LABEL_W + (PLOT_R - LABEL_W) * 0.55;
        let (lo, hi) = gap.map_or((*at, *at), |g| (g.server_ms.min(*at), g.server_ms.max(*at)));
        let (label_x, anchor, label_y) = if late {
            (x.at(lo) - 8.0, "end", y - 5.0)
        } else {
            (x.at(hi) + 8.0, "start", y + 4.0)
        };
        let _ = write!(
            out,
            "<g class=\"row\" data-milestone=\"{name}\" data-ms=\"{at}\">\
             <text class=\"label\" x=\"4\" y=\"{:.1}\">{name}</text>\
             <line class=\"client\" x1=\"{:.2}\" x2=\"{:.2}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <circle class=\"client\" data-ms=\"{at}\" cx=\"{:.2}\" cy=\"{y:.1}\" r=\"4\">\
             <title>{name}: {} ms (client)</title></circle>",
            y + 4.0,
            x.at(0.0),
            x.at(*at),
            x.at(*at),
            ms1(*at),
            name = m.as_str(),
        );
        let label = match gap {
            Some(g) => {
                let _ = write!(
                    out,
                    "<line class=\"gap\" x1=\"{:.2}\" x2=\"{:.2}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
                     <circle class=\"server\" data-ms=\"{}\" cx=\"{:.2}\" cy=\"{y:.1}\" r=\"5\">\
                     <title>{}: {} ms (server, {})</title></circle>",
                    x.at(g.server_ms),
                    x.at(*at),
                    g.server_ms,
                    x.at(g.server_ms),
                    m.as_str(),
                    ms1(g.server_ms),
                    super::text(&g.server_name),
                );
                format!(
                    "{} ms · server {} ms · gap {} ms",
                    ms1(*at),
                    ms1(g.server_ms),
                    ms1(g.gap_ms)
                )
            }
            None => format!("{} ms", ms1(*at)),
        };
        let _ = writeln!(
            out,
            "<text class=\"value\" x=\"{label_x:.2}\" y=\"{label_y:.1}\" \
             text-anchor=\"{anchor}\">{label}</text></g>"
        );
    }
    out.push_str("</svg>\n");
    out.push_str(
        "<p class=\"legend\"><span class=\"key client\">●</span> client (ms since the \
         request's start) <span class=\"key server\">○</span> the server's time for the \
         same moment; gap = client − server</p>\n",
    );
    out
}

/// A batch's gaps: per milestone the server's median and the client's, joined, the
/// gap's median and p90 written beside them.
pub(super) fn gap_chart(rows: &[GapRow]) -> String {
    let end = rows
        .iter()
        .flat_map(|r| [r.client.p50, r.server.p50])
        .fold(0.0, f64::max);
    let start = rows
        .iter()
        .flat_map(|r| [r.client.p50, r.server.p50])
        .fold(0.0, f64::min);
    let x = Scale::spanning(start, end);
    let axis_y = ROW_H * rows.len() as f64 + 4.0;
    let height = axis_y + 22.0;
    let mut out = format!(
        "<svg class=\"gap-chart\" width=\"{WIDTH}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\" aria-label=\"client against \
         server, medians per milestone\">\n"
    );
    out.push_str(&axis(x, axis_y));
    for (i, r) in rows.iter().enumerate() {
        let y = ROW_H * i as f64 + ROW_H / 2.0;
        let (c, s) = (r.client.p50, r.server.p50);
        let late = x.at(s.max(c)) > LABEL_W + (PLOT_R - LABEL_W) * 0.55;
        let (label_x, anchor, label_y) = if late {
            (x.at(s.min(c)) - 8.0, "end", y - 5.0)
        } else {
            (x.at(s.max(c)) + 8.0, "start", y + 4.0)
        };
        let _ = writeln!(
            out,
            "<g class=\"row\" data-milestone=\"{name}\"><text class=\"label\" x=\"4\" \
             y=\"{:.1}\">{name}</text><line class=\"gap\" x1=\"{:.2}\" x2=\"{:.2}\" \
             y1=\"{y:.1}\" y2=\"{y:.1}\"/><circle class=\"server\" data-ms=\"{s}\" \
             cx=\"{:.2}\" cy=\"{y:.1}\" r=\"5\"/><circle class=\"client\" data-ms=\"{c}\" \
             cx=\"{:.2}\" cy=\"{y:.1}\" r=\"4\"/><text class=\"value\" x=\"{label_x:.2}\" \
             y=\"{label_y:.1}\" text-anchor=\"{anchor}\">gap p50 {} ms, p90 {} ms</text></g>",
            y + 4.0,
            x.at(s),
            x.at(c),
            x.at(s),
            x.at(c),
            ms1(r.gap.p50),
            ms1(r.gap.p90),
            name = r.milestone.as_str(),
        );
    }
    out.push_str("</svg>\n");
    out.push_str(
        "<p class=\"legend\"><span class=\"key client\">●</span> client p50 \
         <span class=\"key server\">○</span> server p50, over the runs that have both</p>\n",
    );
    out
}
