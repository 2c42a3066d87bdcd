//! The report as one self-contained HTML page (`ttfx run --html`, `ttfx report --html`):
//! styles inline, charts as inline SVG drawn here, no script and nothing fetched, so
//! it opens offline from a file in any browser and can be mailed or archived as it is.
//!
//! A report's strings come from pages and files nobody vetted (a target label, a URL, an
//! anomaly's text, a server's timing names): every one goes through [`text`], which
//! shows control characters as escapes, cuts it to a bounded length and HTML-escapes
//! it, in text and attributes alike. The page's Content-Security-Policy allows no
//! script and no fetch at all, so a string that slipped through would still be inert.

use std::fmt::Write as _;

use ttfx_core::Milestone;
use ttfx_core::printable::{cut, escape_controls};
use ttfx_core::report::{BatchReport, Run};

use crate::budget::Verdict;
use crate::document::{Document, Section, gap_rows};
use crate::metric_rows::row_order;

mod charts;

/// Runs drawn in detail (waterfall, request, server timings, anomalies) across the
/// whole page: a batch of thousands of runs would make a page no browser opens
/// quickly. Every run still has its row in its section's run table.
pub const MAX_DETAILED_RUNS: usize = 50;

/// Characters of any one string from the report shown (a URL, an anomaly's detail).
const MAX_TEXT_CHARS: usize = 300;

/// Anomalies and server timings listed per run; the rest are counted.
const MAX_LIST_ITEMS: usize = 20;

const STYLE: &str = include_str!("html/style.css");

/// `value` (from a report, a page, a file) fit to put in HTML text or a quoted
/// attribute: control characters shown as escapes, cut to [`MAX_TEXT_CHARS`], then
/// `& < > " ' /` escaped.
pub(crate) fn text(value: &str) -> String {
    html_escape::encode_safe(&escape_controls(&cut(value, MAX_TEXT_CHARS))).into_owned()
}

/// A number as the tables print it (two decimals), or `–` when there is none.
fn num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.2}"),
        _ => "–".to_owned(),
    }
}

/// The whole page.
pub fn render(doc: &Document<'_>) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let title = text(doc.title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n"
    );
    let total: u64 = doc.sections.iter().map(|s| s.batch.outcomes.total).sum();
    let generator = doc
        .sections
        .first()
        .map_or(String::new(), |s| text(&s.batch.generator));
    let _ = write!(
        out,
        "<header>\n<h1>{title}</h1>\n<p class=\"about\">{total} run(s) in {} batch(es); \
         report by {generator}. Times are ms since each request's start on the page's \
         clock; the server's are from its own record of the request.</p>\n",
        doc.sections.len()
    );
    out.push_str(&budget_summary(doc));
    out.push_str("</header>\n");
    let mut detailed = 0;
    for (index, section) in doc.sections.iter().enumerate() {
        out.push_str(&render_section(index, section, &mut detailed));
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// Every budget of the page at a glance: how many passed and failed.
fn budget_summary(doc: &Document<'_>) -> String {
    let (passed, failed) =
        doc.verdicts().fold(
            (0, 0),
            |(p, f), v| if v.passed { (p + 1, f) } else { (p, f + 1) },
        );
    if passed + failed == 0 {
        return "<p class=\"budget-summary none\">No budgets were given.</p>\n".to_owned();
    }
    let class = if failed > 0 { "fail" } else { "pass" };
    format!(
        "<p class=\"budget-summary {class}\" data-passed=\"{passed}\" data-failed=\"{failed}\">\
         Budgets: {passed} passed, {failed} failed.</p>\n"
    )
}

fn render_section(index: usize, section: &Section<'_>, detailed: &mut usize) -> String {
    let batch = section.batch;
    let o = batch.outcomes;
    let mut out = String::new();
    let _ = write!(
        out,
        "<section class=\"batch\" id=\"s{index}\" data-runs=\"{}\">\n<h2>{}</h2>\n\
         <p class=\"outcomes\">{} run(s): {} completed, {} aborted, {} failed, {} incomplete</p>\n",
        o.total,
        text(section.heading),
        o.total,
        o.completed,
        o.aborted,
        o.failed,
        o.incomplete,
    );
    out.push_str(&budgets(section.verdicts));
    out.push_str(&goodput(batch));
    out.push_str(&percentiles(batch, section.verdicts));
    out.push_str(&gap(batch));
    out.push_str(&run_table(index, batch, *detailed));
    out.push_str(&run_details(index, batch, detailed));
    out.push_str("</section>\n");
    out
}

/// The budgets judged on this batch, each with its verdict and what was measured.
fn budgets(verdicts: &[Verdict]) -> String {
    if verdicts.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>Budgets</h3>\n<table class=\"budgets\">\n<thead><tr><th>verdict</th>\
         <th>budget</th><th>measured</th></tr></thead>\n<tbody>\n",
    );
    for v in verdicts {
        let (class, mark) = if v.passed {
            ("pass", "PASS")
        } else {
            ("fail", "FAIL")
        };
        let _ = writeln!(
            out,
            "<tr class=\"{class}\" data-budget=\"{}\"><td class=\"verdict\">{mark}</td>\
             <td><code>{}</code></td><td>{}</td></tr>",
            text(&v.budget.text),
            text(&v.budget.text),
            text(&v.describe())
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

fn goodput(batch: &BatchReport) -> String {
    let Some(g) = &batch.goodput else {
        return String::new();
    };
    let budgets: Vec<String> = g
        .budgets
        .iter()
        .map(|b| {
            let op = if b.is_minimum() { ">=" } else { "<=" };
            format!("{}{op}{}", b.metric, b.limit)
        })
        .collect();
    let ratio = g
        .ratio
        .map_or("n/a".to_owned(), |r| format!("{:.1} %", r * 100.0));
    format!(
        "<p class=\"goodput\">Goodput: {} of {} run(s) ({ratio}) met every per-request \
         budget: {}.</p>\n",
        g.good,
        g.total,
        text(&budgets.join(", "))
    )
}

/// Every metric's statistics, the rows in the text table's order, with the budgets on
/// each metric and their verdicts in the last column.
fn percentiles(batch: &BatchReport, verdicts: &[Verdict]) -> String {
    let mut out = String::from(
        "<h3>Percentiles</h3>\n<table class=\"stats\">\n<thead><tr><th>metric</th>\
         <th>count</th><th>mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th>\
         <th>min</th><th>max</th><th>budgets</th></tr></thead>\n<tbody>\n",
    );
    for name in row_order(batch) {
        let Some(s) = batch.statistics.get(name) else {
            continue;
        };
        let marks: Vec<String> = verdicts
            .iter()
            .filter(|v| v.budget.metric == name)
            .map(|v| {
                let (class, mark) = if v.passed {
                    ("pass", "PASS")
                } else {
                    ("fail", "FAIL")
                };
                format!(
                    "<span class=\"mark {class}\">{mark} <code>{}</code></span>",
                    text(&v.budget.text)
                )
            })
            .collect();
        let class = if name.starts_with("gap.") {
            " class=\"gap\""
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr{class} data-metric=\"{}\"><th scope=\"row\">{}</th><td>{}</td>",
            text(name),
            text(name),
            s.count
        );
        for v in [s.mean, s.p50, s.p90, s.p95, s.p99, s.min, s.max] {
            let _ = write!(out, "<td>{}</td>", num(Some(v)));
        }
        let _ = writeln!(out, "<td class=\"marks\">{}</td></tr>", marks.join(" "));
    }
    out.push_str("</tbody>\n</table>\n");
    out.push_str(
        "<p class=\"legend\">Durations in ms; <code>gap.*</code> rows are client − server \
         for the same milestone.</p>\n",
    );
    out
}

/// The client against the server: per milestone both sides timed, the medians and
/// the gap's percentiles, drawn and tabulated.
fn gap(batch: &BatchReport) -> String {
    let rows = gap_rows(batch);
    let mut out = String::from("<h3>Client − server gap</h3>\n");
    if rows.is_empty() {
        out.push_str(
            "<p class=\"no-gap\">No run has the server's own time for a milestone the \
             client saw (Server-Timing, the simulator's or the proxy's record), so there \
             is no gap to show.</p>\n",
        );
        return out;
    }
    out.push_str(&charts::gap_chart(&rows));
    out.push_str(
        "<table class=\"gaps\">\n<thead><tr><th>milestone</th><th>runs</th>\
         <th>client p50</th><th>server p50</th><th>gap p50</th><th>gap p90</th>\
         <th>gap p99</th></tr></thead>\n<tbody>\n",
    );
    for r in &rows {
        let _ = writeln!(
            out,
            "<tr data-milestone=\"{m}\"><th scope=\"row\">{m}</th><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.gap.count,
            num(Some(r.client.p50)),
            num(Some(r.server.p50)),
            num(Some(r.gap.p50)),
            num(Some(r.gap.p90)),
            num(Some(r.gap.p99)),
            m = r.milestone.as_str(),
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out.push_str(
        "<p class=\"legend\">Both sides count from their own start (the client's request \
         start, the server's receipt), so no clock offset enters: the gap is the network, \
         proxies and the client's own work.</p>\n",
    );
    out
}

/// The value of a run's metric by its report name.
fn metric(run: &Run, name: &str) -> Option<f64> {
    run.metrics.scalar(name)
}

/// A serde enum's wire name (`completed`, `raf_estimate`), as the JSON report spells it.
fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}

/// Every run of the batch, one row each; a row links to its details when they are drawn.
fn run_table(section: usize, batch: &BatchReport, detailed_before: usize) -> String {
    let mut out = String::from(
        "<h3>Runs</h3>\n<table class=\"runs\">\n<thead><tr><th>#</th><th>id</th>\
         <th>outcome</th><th>ttft</th><th>ttft_visible</th><th>first_paint</th><th>e2e</th>\
         <th>tokens</th><th>gap first_token</th><th>buffered</th><th>stalls</th></tr>\
         </thead>\n<tbody>\n",
    );
    for (i, run) in batch.runs.iter().enumerate() {
        let m = &run.metrics;
        let number = if detailed_before + i < MAX_DETAILED_RUNS {
            format!("<a href=\"#s{section}-r{i}\">{}</a>", i + 1)
        } else {
            (i + 1).to_string()
        };
        let gap_first_token = m
            .gaps
            .iter()
            .find(|g| g.milestone == Milestone::FirstToken)
            .map(|g| g.gap_ms);
        let _ = writeln!(
            out,
            "<tr data-run=\"{i}\" class=\"{outcome}\"><td>{number}</td><td>{}</td>\
             <td>{outcome}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>",
            text(run.id.as_deref().unwrap_or("")),
            num(metric(run, "ttft_ms")),
            num(metric(run, "ttft_visible_ms")),
            num(run.timeline.milestones.get(Milestone::FirstPaint)),
            num(metric(run, "e2e_ms")),
            m.output_tokens
                .map_or("–".to_owned(), |t| format!("{:.0}", t.value)),
            num(gap_first_token),
            wire_name(&m.buffered.verdict),
            m.stalls.map_or("–".to_owned(), |s| s.count.to_string()),
            outcome = wire_name(&m.outcome),
        );
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// Each run's waterfall and details, in `<details>`, while the page's budget of
/// [`MAX_DETAILED_RUNS`] lasts; the page says how many it left out.
fn run_details(section: usize, batch: &BatchReport, detailed: &mut usize) -> String {
    let mut out = String::from("<h3>Each run</h3>\n");
    let room = MAX_DETAILED_RUNS.saturating_sub(*detailed);
    let shown = batch.runs.len().min(room);
    if shown < batch.runs.len() {
        let _ = writeln!(
            out,
            "<p class=\"capped\" data-shown=\"{shown}\">Waterfalls and details of the first \
             {shown} of {} run(s) here (at most {MAX_DETAILED_RUNS} on one page, to keep it \
             quick to open); the run table above lists every run.</p>",
            batch.runs.len()
        );
    }
    for (i, run) in batch.runs.iter().take(shown).enumerate() {
        let open = if *detailed == 0 { " open" } else { "" };
        *detailed += 1;
        let ttft_visible = metric(run, "ttft_visible_ms")
            .map_or(String::new(), |v| format!(" · ttft_visible {v:.1} ms"));
        let id = run
            .id
            .as_deref()
            .map_or(String::new(), |id| format!(" · {}", text(id)));
        let _ = write!(
            out,
            "<details class=\"run\" id=\"s{section}-r{i}\" data-run=\"{i}\"{open}>\n\
             <summary>run {}{id} · {}{ttft_visible}</summary>\n",
            i + 1,
            wire_name(&run.metrics.outcome),
        );
        out.push_str(&charts::waterfall(run));
        out.push_str(&run_facts(run));
        out.push_str("</details>\n");
    }
    out
}

/// What a run's report says besides its milestones: the request, the browser, the
/// server's timings as it named them, the failure and the anomalies.
fn run_facts(run: &Run) -> String {
    let t = &run.timeline;
    let r = &t.request;
    let mut facts: Vec<(&str, String)> = Vec::new();
    if let Some(target) = &run.target {
        facts.push(("target", text(target)));
    }
    let request = [
        r.method.as_deref(),
        r.url.as_deref(),
        r.transport.as_deref(),
    ]
    .into_iter()
    .flatten()
    .map(text)
    .collect::<Vec<_>>()
    .join(" ");
    if !request.is_empty() {
        facts.push(("request", request));
    }
    let response = [
        r.status.map(|s| s.to_string()),
        r.content_type.as_deref().map(text),
        r.dialect.as_deref().map(|d| format!("dialect {}", text(d))),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    if !response.is_empty() {
        facts.push(("response", response));
    }
    let engine = [
        t.environment.engine.as_deref(),
        t.environment.engine_version.as_deref(),
    ]
    .into_iter()
    .flatten()
    .map(text)
    .collect::<Vec<_>>()
    .join(" ");
    if !engine.is_empty() {
        facts.push(("browser", engine));
    }
    if let Some(p) = &t.paint_method {
        facts.push(("paint method", wire_name(p)));
    }
    if let Some(f) = &t.failure {
        let status = f
            .http_status
            .map_or(String::new(), |s| format!(" (HTTP {s})"));
        let detail = f
            .detail
            .as_deref()
            .map_or(String::new(), |d| format!(": {}", text(d)));
        facts.push((
            "failure",
            format!("{}{status}{detail}", wire_name(&f.class)),
        ));
    }
    let b = &run.metrics.buffered;
    facts.push((
        "buffered",
        format!(
            "{} ({} visible tokens)",
            wire_name(&b.verdict),
            b.visible_tokens
        ),
    ));
    if let Some(s) = run.metrics.stalls {
        facts.push((
            "stalls",
            format!(
                "{} ({} ms stalled; longest gap {} ms, threshold {} ms)",
                s.count,
                num(Some(s.stalled_ms)),
                num(Some(s.longest_gap_ms)),
                num(Some(s.threshold_ms))
            ),
        ));
    }
    let chunks = t.chunk_summary.as_ref().map_or(0, |s| s.chunks) + t.chunks.len() as u64;
    facts.push(("chunks", chunks.to_string()));
    let mut out = String::from("<dl class=\"facts\">\n");
    for (name, value) in facts {
        let _ = writeln!(out, "<dt>{name}</dt><dd>{value}</dd>");
    }
    out.push_str("</dl>\n");
    out.push_str(&listed(
        "server timings",
        "server-timings",
        t.server.timings.iter().map(|s| {
            format!(
                "{} = {} ms ({})",
                text(&s.name),
                num(s.duration_ms),
                wire_name(&s.source)
            )
        }),
    ));
    out.push_str(&listed(
        "anomalies",
        "anomalies",
        t.anomalies.iter().map(|a| {
            format!(
                "at {} ms: {}: {}",
                num(Some(a.at_ms)),
                text(&a.class),
                text(&a.detail)
            )
        }),
    ));
    out
}

/// A bounded list of items (already escaped), or nothing when there are none.
fn listed(title: &str, class: &str, items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    if total == 0 {
        return String::new();
    }
    let mut out = format!("<p class=\"list-title\">{title}</p>\n<ul class=\"{class}\">\n");
    for item in items.take(MAX_LIST_ITEMS) {
        let _ = writeln!(out, "<li>{item}</li>");
    }
    if total > MAX_LIST_ITEMS {
        let _ = writeln!(
            out,
            "<li class=\"more\">and {} more (in the JSON report)</li>",
            total - MAX_LIST_ITEMS
        );
    }
    out.push_str("</ul>\n");
    out
}

/// A summary's statistic as the charts label it.
fn ms1(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "–".to_owned()
    }
}

#[cfg(test)]
mod tests;
