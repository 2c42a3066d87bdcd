//! What `ttfx load` prints: a line as it starts (stderr), and the report as a table
//! (stdout), in the layout of `ttfx run`'s and `ttfx report`'s tables.

use std::fmt::Write as _;

use crate::report::{ACHIEVED_SHARE_MIN, LATENESS_P99_LIMIT_MS, LoadReport};
use crate::sample::{ICL, SCALARS};
use crate::spec::{LoadSpec, Mode};

/// The rows of the table, in order: the scalars with the pooled gaps after `tpot_ms`.
fn row_order() -> Vec<&'static str> {
    let mut rows: Vec<&str> = SCALARS.to_vec();
    let at = rows
        .iter()
        .position(|n| *n == "tpot_ms")
        .map_or(rows.len(), |i| i + 1);
    rows.insert(at, ICL);
    rows
}

fn pace(mode: Mode, seed: u64) -> String {
    match mode {
        Mode::Rate(r) => format!("open loop at {r} req/s (Poisson, seed {seed})"),
        Mode::Concurrency(c) => format!("closed loop at {c} stream(s)"),
    }
}

/// The line printed as a load starts (the URL without userinfo or query).
pub fn starting(spec: &LoadSpec) -> String {
    let duration = spec.duration.map_or("until stopped".to_owned(), |d| {
        format!("for {} s", d.as_secs_f64())
    });
    format!(
        "ttfx load: {} ({}) at {}: {}, {duration} after {} s of warm-up",
        spec.label,
        spec.endpoint.api,
        ttfx_core::target::url_for_report(&spec.endpoint.url),
        pace(spec.mode, spec.seed),
        spec.warmup.as_secs_f64()
    )
}

/// The report as text.
pub fn render(r: &LoadReport) -> String {
    let mut out = String::new();
    let mode = match (r.mode.rate_per_s, r.mode.concurrency) {
        (Some(rate), _) => Mode::Rate(rate),
        (None, c) => Mode::Concurrency(c.unwrap_or(0)),
    };
    let stopped = if r.stopped { " (stopped early)" } else { "" };
    // Writing to a String cannot fail; the results are ignored for that reason.
    let _ = writeln!(
        out,
        "ttfx load: {} ({}): {}, {:.2} s measured{stopped} after {} s of warm-up",
        ttfx_core::printable::escape_line(&r.target),
        r.api,
        pace(mode, r.seed),
        r.window_s,
        r.warmup_s
    );
    let q = r.requests;
    let _ = writeln!(
        out,
        "requests: {} sent, {} completed, {} failed, {} cancelled; {} still open at the \
         window's end (awaited up to {} s, counted); {} warm-up request(s) excluded",
        q.sent, q.completed, q.failed, q.cancelled, q.finished_after_window, r.timeout_s, q.warmup
    );
    let t = &r.throughput;
    let _ = write!(
        out,
        "throughput: {:.2} req/s, {:.1} output tokens/s over {:.2} s",
        t.requests_per_s, t.output_tokens_per_s, r.elapsed_s
    );
    if let (Some(per_s), Some(g)) = (t.goodput_per_s, &t.goodput) {
        let slos: Vec<String> = g.budgets.iter().map(crate::slo::shown).collect();
        let share = g
            .ratio
            .map_or("n/a".to_owned(), |x| format!("{:.1} %", x * 100.0));
        let _ = write!(
            out,
            "; goodput {per_s:.2} req/s ({}/{}, {share}) meeting {}",
            g.good,
            g.total,
            slos.join(", ")
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "{:<22} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "metric", "count", "mean", "p50", "p90", "p99", "min", "max"
    );
    for name in row_order() {
        if let Some(s) = r.metrics.get(name) {
            let _ = writeln!(
                out,
                "{name:<22} {:>8} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2}",
                s.count, s.mean, s.p50, s.p90, s.p99, s.min, s.max
            );
        }
    }
    if r.errors.total == 0 {
        out.push_str("errors: none\n");
    } else {
        let classes: Vec<String> = r
            .errors
            .by_class
            .iter()
            .map(|(class, n)| format!("{class} {n}"))
            .collect();
        let _ = writeln!(out, "errors: {} ({})", r.errors.total, classes.join(", "));
    }
    out.push_str(&generator(r));
    out
}

/// The generator's own line: its lateness and whether it held the rate.
fn generator(r: &LoadReport) -> String {
    let g = &r.generator;
    let (Some(l), Some(scheduled)) = (g.lateness_ms, g.scheduled_per_s) else {
        return match r.mode.concurrency {
            Some(c) => format!(
                "generator: closed loop, {c} stream(s), {:.2} req/s sent; no schedule, so no \
                 lateness (each request leaves when the last one ends)\n",
                g.achieved_per_s
            ),
            None => "generator: no measured request\n".to_owned(),
        };
    };
    let verdict = match g.held {
        Some(true) => format!("held the rate (lateness p99 ≤ {LATENESS_P99_LIMIT_MS} ms)"),
        _ => format!(
            "did NOT hold the rate (needs lateness p99 ≤ {LATENESS_P99_LIMIT_MS} ms and \
             achieved ≥ {:.0} % of scheduled): the server saw a lighter, later load than asked",
            ACHIEVED_SHARE_MIN * 100.0
        ),
    };
    format!(
        "generator: lateness p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; scheduled {:.2} req/s, \
         achieved {:.2} req/s: {verdict}\n",
        l.p50, l.p99, l.max, scheduled, g.achieved_per_s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gaps_row_follows_tpot() {
        let rows = row_order();
        let tpot = rows.iter().position(|n| *n == "tpot_ms").unwrap();
        assert_eq!(rows[tpot + 1], "icl_ms");
        assert_eq!(rows.len(), SCALARS.len() + 1);
    }
}
