// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ttfx_core::Milestone;
use ttfx_core::report::{BatchReport, Run};
use ttfx_core::timeline::Anomaly;

use super::*;
use crate::test_fixture;

fn page(heading: &str, batch: &BatchReport, verdicts: &[Verdict]) -> String {
    render(&Document {
        title: "ttfx run",
        sections: &[Section {
            heading,
            batch,
            verdicts,
        }],
    })
}

/// The value of attribute `name` in each element whose opening tag starts with `tag`.
fn attributes<'a>(html: &'a str, tag: &str, name: &str) -> Vec<&'a str> {
    html.match_indices(tag)
        .filter_map(|(i, _)| {
            let element = &html[i..i + html[i..].find('>')?];
            let from = element.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(&element[from..from + element[from..].find('"')?])
        })
        .collect()
}

#[test]
fn a_batch_shows_its_runs_budgets_percentiles_and_gaps() {
    let batch = test_fixture::batch();
    let verdicts = test_fixture::verdicts(&batch);
    let html = page("sim/default", &batch, &verdicts);

    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert_eq!(attributes(&html, "<section", "data-runs"), ["3"]);
    assert_eq!(html.matches("<tr data-run=").count(), 3);
    assert_eq!(html.matches("<details class=\"run\"").count(), 3);
    // One budget passed, one failed, each with what was measured.
    assert!(
        html.contains("data-passed=\"1\" data-failed=\"1\">Budgets: 1 passed, 1 failed."),
        "{html}"
    );
    let fail = &verdicts[1];
    assert!(!fail.passed && verdicts[0].passed);
    assert!(
        html.contains("<tr class=\"fail\" data-budget=\"ttft_visible.p50&lt;=100ms\">"),
        "{html}"
    );
    assert!(html.contains(&text(&fail.describe())), "{html}");
    // The percentile row of ttft_visible_ms holds the batch's own statistics and the
    // budgets on it.
    let s = &batch.statistics["ttft_visible_ms"];
    let row_start = html.find("<tr data-metric=\"ttft_visible_ms\">").unwrap();
    let row = &html[row_start..row_start + html[row_start..].find("</tr>").unwrap()];
    for v in [s.mean, s.p50, s.p90, s.p95, s.p99, s.min, s.max] {
        assert!(row.contains(&format!("<td>{v:.2}</td>")), "{v} in {row}");
    }
    assert!(
        row.contains("mark pass") && row.contains("mark fail"),
        "{row}"
    );
    // The gap: both milestones the server timed, client − server = 30 and 40 ms.
    assert_eq!(
        attributes(&html, "<tr data-milestone", "data-milestone"),
        ["first_byte", "first_token"]
    );
    assert!(
        html.contains("<tr class=\"gap\" data-metric=\"gap.first_token_ms\">"),
        "{html}"
    );
    let gap_row = &html[html.find("<tr data-milestone=\"first_token\">").unwrap()..];
    assert!(
        gap_row.starts_with(&format!(
            "<tr data-milestone=\"first_token\"><th scope=\"row\">first_token</th><td>3</td><td>{:.2}</td><td>{:.2}</td><td>40.00</td>",
            batch.statistics["ttft_ms"].p50,
            batch.statistics["ttft_ms"].p50 - 40.0
        )),
        "{gap_row}"
    );
}

/// Reads each waterfall's marks back as times through its own axis: the positions the
/// page draws are the report's milestones, and the server's marks the server's times.
#[test]
fn waterfall_marks_sit_at_the_report_s_times() {
    let batch = test_fixture::batch();
    let html = page("sim/default", &batch, &[]);
    let waterfalls: Vec<&str> = html
        .split("<svg class=\"waterfall\"")
        .skip(1)
        .map(|s| &s[..s.find("</svg>").unwrap()])
        .collect();
    assert_eq!(waterfalls.len(), batch.runs.len());
    for (svg, run) in waterfalls.iter().zip(&batch.runs) {
        let ticks: Vec<(f64, f64)> = attributes(svg, "<line class=\"tick\"", "data-ms")
            .iter()
            .zip(attributes(svg, "<line class=\"tick\"", "x1"))
            .map(|(ms, x)| (ms.parse().unwrap(), x.parse().unwrap()))
            .collect();
        let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
        let time_at = |x: f64| first.0 + (x - first.1) / (last.1 - first.1) * (last.0 - first.0);
        let marks = |class: &str| -> Vec<(f64, f64)> {
            let tag = format!("<circle class=\"{class}\"");
            attributes(svg, &tag, "data-ms")
                .iter()
                .zip(attributes(svg, &tag, "cx"))
                .map(|(ms, x)| (ms.parse().unwrap(), time_at(x.parse().unwrap())))
                .collect()
        };
        let client = marks("client");
        let expected: Vec<f64> = Milestone::ALL
            .into_iter()
            .filter(|m| !matches!(m, Milestone::RequestStart | Milestone::FirstEvent))
            .filter_map(|m| run.timeline.milestones.get(m))
            .collect();
        assert_eq!(client.iter().map(|c| c.0).collect::<Vec<_>>(), expected);
        let server = marks("server");
        let server_times: Vec<f64> = run.metrics.gaps.iter().map(|g| g.server_ms).collect();
        assert_eq!(server.len(), 2);
        for (value, drawn) in client.iter().chain(&server) {
            // Positions are written to 0.01 px on a ~500 px axis of ~1,000 ms.
            assert!((value - drawn).abs() < 0.05, "{value} drawn at {drawn}");
        }
        for (value, _) in &server {
            assert!(
                server_times.contains(value),
                "{value} not in {server_times:?}"
            );
        }
    }
}

/// A hostile page's strings: a label, an id, a URL, an anomaly and a server timing
/// that would open a script, an image with a handler, or end the page's elements.
#[test]
fn a_script_in_a_report_s_strings_is_shown_as_text() {
    let mut batch = test_fixture::batch();
    let evil = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'</details>\x1b[2J";
    for run in &mut batch.runs {
        run.id = Some(evil.to_owned());
        run.target = Some(evil.to_owned());
        run.timeline.request.url = Some(format!("http://127.0.0.1:9/{evil}"));
        run.timeline.anomalies.push(Anomaly {
            at_ms: 1.0,
            class: evil.to_owned(),
            detail: evil.to_owned(),
        });
        run.timeline.server.timings[0].name = evil.to_owned();
    }
    let html = page(evil, &batch, &[]);
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "{html}");
    assert!(!lower.contains("<img"), "{html}");
    assert!(!html.contains('\x1b'), "{html}");
    // Shown, escaped, in the heading and in each run's details.
    let shown = "&lt;script&gt;alert(1)&lt;&#x2F;script&gt;&lt;img src=x onerror=alert(2)&gt;\
                 &quot;&#x27;&lt;&#x2F;details&gt;\\x1b[2J";
    assert!(html.contains(&format!("<h2>{shown}</h2>")), "{html}");
    // The heading, then per run: its id (table row and summary), target, URL, the
    // anomaly's class and detail, the server timing's name.
    assert_eq!(html.matches(shown).count(), 1 + 3 * 7, "{html}");
    // The page's own elements are intact: every run's details open and close.
    assert_eq!(html.matches("<details").count(), 3);
    assert_eq!(html.matches("</details>").count(), 3);
    // And a script could not run anyway: the policy allows none, and no fetch.
    assert!(
        html.contains("content=\"default-src 'none'; style-src 'unsafe-inline'\""),
        "{html}"
    );
}

/// Nothing on the page names the network: no external URL, stylesheet, image, font or
/// script; the report's own URLs are text (their slashes escaped), and the only links
/// are to the page's own runs.
#[test]
fn the_page_loads_nothing() {
    let mut batch = test_fixture::batch();
    for run in &mut batch.runs {
        run.timeline.request.url = Some("https://example.com/v1/chat".to_owned());
    }
    let html = page("https://example.com/", &batch, &[]);
    assert!(
        html.contains("https:&#x2F;&#x2F;example.com&#x2F;v1&#x2F;chat"),
        "{html}"
    );
    for never in [
        "http://", "https://", "<link", "src=", "url(", "@import", "<script", "<iframe",
    ] {
        assert!(!html.contains(never), "{never} in {html}");
    }
    let links = attributes(&html, "<a ", "href");
    assert_eq!(links.len(), 3);
    for href in links {
        assert!(href.starts_with("#s0-r"), "{href}");
        assert!(html.contains(&format!("id=\"{}\"", &href[1..])), "{href}");
    }
}

/// A batch of many runs lists them all but draws only the first ones, and says so; the
/// cap holds across sections.
#[test]
fn many_runs_are_all_listed_but_only_the_first_are_drawn() {
    let one = test_fixture::runs().remove(0);
    let runs: Vec<Run> = (0..120)
        .map(|i| Run {
            id: Some(format!("r{i}")),
            ..one.clone()
        })
        .collect();
    let batch = BatchReport::from_runs(runs, &[]);
    let sections = [
        Section {
            heading: "a",
            batch: &batch,
            verdicts: &[],
        },
        Section {
            heading: "b",
            batch: &batch,
            verdicts: &[],
        },
    ];
    let html = render(&Document {
        title: "t",
        sections: &sections,
    });
    assert_eq!(html.matches("<tr data-run=").count(), 240);
    assert_eq!(html.matches("<details").count(), MAX_DETAILED_RUNS);
    assert_eq!(
        html.matches("<svg class=\"waterfall\"").count(),
        MAX_DETAILED_RUNS
    );
    assert_eq!(
        attributes(&html, "<p class=\"capped\"", "data-shown"),
        [MAX_DETAILED_RUNS.to_string(), "0".to_owned()]
    );
    // Rows past the cap link nowhere.
    assert_eq!(attributes(&html, "<a ", "href").len(), MAX_DETAILED_RUNS);
}

/// A page's strings are bounded on the page, however long and however many.
#[test]
fn long_and_many_strings_are_cut_and_counted() {
    let mut batch = test_fixture::batch();
    let long = "x".repeat(100_000);
    for run in &mut batch.runs {
        run.timeline.request.url = Some(long.clone());
        for i in 0..1000 {
            run.timeline.anomalies.push(Anomaly {
                at_ms: f64::from(i),
                class: "c".to_owned(),
                detail: long.clone(),
            });
        }
    }
    let html = page(&long, &batch, &[]);
    assert!(html.len() < 200_000, "{} bytes", html.len());
    assert!(html.contains(&format!("{}…", "x".repeat(MAX_TEXT_CHARS))));
    assert!(!html.contains(&"x".repeat(MAX_TEXT_CHARS + 1)));
    assert_eq!(
        html.matches("<li class=\"more\">and 980 more (in the JSON report)</li>")
            .count(),
        3
    );
}

/// Runs without a server record have no gap, and a run that failed before any
/// milestone has no waterfall: the page says so instead of drawing nothing.
#[test]
fn missing_server_times_and_milestones_are_said() {
    let mut run = ttfx_core::report::Run::new(
        Some("failed".to_owned()),
        None,
        ttfx_core::timeline::Timeline::default(),
    )
    .unwrap();
    run.timeline.milestones.set(Milestone::RequestStart, 0.0);
    let batch = BatchReport::from_runs(vec![run], &[]);
    let html = page("t", &batch, &[]);
    assert!(html.contains("class=\"no-gap\""), "{html}");
    assert!(html.contains("class=\"no-waterfall\""), "{html}");
    assert!(html.contains("No budgets were given."), "{html}");
}
