//! `ttfx run --html` / `--summary-md` and `ttfx report --html` as a person meets them:
//! one real `ttfx run` (Chromium, against the simulator, with a budget that passes and
//! one that fails) writes its batch, its page and its summary; the page is opened from
//! its file in each engine, offline, and what it shows is read back against the batch:
//! the runs, the budgets' verdicts, the percentiles, and where the waterfall draws each
//! milestone (measured on screen through its own axis). A second page, made by `ttfx
//! report --html` from the batch with a page's script in its strings, shows the script
//! as text and runs none of it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use ttfx_e2e::engines::Engine;
use ttfx_e2e::{Browser, engines, paths};

/// Injected: first token 300 ms after arrival, 20 answer tokens at 200 tok/s.
const TARGET: &str = "sim/default?ttft_ms=300&tokens_per_second=200&output_tokens=20&seed=3";

/// Passes (the first token is ~300 ms) and fails (it cannot be under 50 ms).
const BUDGETS: [&str; 2] = ["ttft_visible.p90<=5s", "ttft_visible.p50<=50ms"];

/// A page's string that would run a script, load an image with a handler, or close the
/// report's elements, if it were not escaped.
const EVIL: &str =
    "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"></details>";

/// What the one `ttfx run` made, shared by every engine's test.
struct Made {
    batch: Value,
    html: PathBuf,
    hostile_html: PathBuf,
}

fn made() -> anyhow::Result<&'static Made> {
    static MADE: OnceLock<Result<Made, String>> = OnceLock::new();
    MADE.get_or_init(|| make().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))
}

fn make() -> anyhow::Result<Made> {
    // One folder, emptied first: what the last run made stays there to look at.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html_report");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let (json, html, md) = (
        dir.join("batch.json"),
        dir.join("report.html"),
        dir.join("summary.md"),
    );
    let mut command = Command::new(paths::ttfx_bin()?);
    command
        .arg("run")
        .arg("--probe-pkg")
        .arg(paths::probe_pkg()?)
        .args(["--target", TARGET, "--runs", "3", "--warmup", "1"])
        .args(BUDGETS.iter().flat_map(|b| ["--budget", b]))
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .arg("--summary-md")
        .arg(&md);
    let out = ttfx_e2e::process::output_within(&mut command, std::time::Duration::from_secs(240))?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if out.status.code() != Some(1) {
        bail!(
            "ttfx run should exit 1 (one budget fails): {:?}\n{stdout}\n{stderr}",
            out.status
        );
    }
    let batch: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;

    // The summary: both verdicts, and the batch's own p50.
    let summary = std::fs::read_to_string(&md)?;
    let p50 = batch["statistics"]["ttft_visible_ms"]["p50"]
        .as_f64()
        .context("no ttft_visible_ms p50")?;
    for expected in [
        "❌ **1 of 2 budget(s) failed.**".to_owned(),
        format!("| ✅ PASS | `{}` |", BUDGETS[0]),
        format!("| ❌ FAIL | `{}` |", BUDGETS[1]),
        format!("| `ttft_visible_ms` | 3 | {p50:.2} |"),
    ] {
        if !summary.contains(&expected) {
            bail!("the summary lacks {expected}:\n{summary}");
        }
    }
    if summary.contains("](") || summary.contains("http") {
        bail!("the summary has a link:\n{summary}");
    }

    // The same batch with a page's script in its strings, through `ttfx report --html`.
    let mut hostile = batch.clone();
    for run in hostile["runs"].as_array_mut().context("no runs")? {
        run["id"] = json!(EVIL);
        run["target"] = json!(EVIL);
    }
    let hostile_json = dir.join("hostile.json");
    let hostile_html = dir.join("hostile.html");
    std::fs::write(&hostile_json, serde_json::to_string(&hostile)?)?;
    let out = Command::new(paths::ttfx_bin()?)
        .arg("report")
        .arg(&hostile_json)
        .arg("--html")
        .arg(&hostile_html)
        .output()?;
    if !out.status.success() {
        bail!(
            "ttfx report --html: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(Made {
        batch,
        html,
        hostile_html,
    })
}

fn file_url(path: &Path) -> anyhow::Result<String> {
    let path = path.canonicalize()?;
    Ok(format!(
        "file://{}",
        path.to_str().context("a path that is not UTF-8")?
    ))
}

/// What the page shows, read in the browser.
const READ_PAGE: &str = r#"
const text = (sel) => [...document.querySelectorAll(sel)].map((e) => e.textContent.trim());
const center = (e) => { const r = e.getBoundingClientRect(); return r.left + r.width / 2; };
const svg = document.querySelector('details.run[data-run="0"] svg.waterfall');
return {
  resources: performance.getEntriesByType('resource').length,
  sections: document.querySelectorAll('section.batch').length,
  heading: text('section.batch h2')[0],
  runRows: document.querySelectorAll('table.runs tbody tr').length,
  budgetSummary: text('.budget-summary')[0],
  budgets: [...document.querySelectorAll('table.budgets tbody tr')].map((tr) => ({
    verdict: tr.querySelector('.verdict').textContent,
    budget: tr.querySelector('code').textContent,
  })),
  p50: document.querySelector('table.stats tr[data-metric="ttft_visible_ms"] td:nth-child(4)').textContent,
  waterfallShown: svg.getBoundingClientRect().width > 0,
  ticks: [...svg.querySelectorAll('line.tick')].map((l) => [Number(l.getAttribute('data-ms')), center(l)]),
  client: [...svg.querySelectorAll('g.row')].map((g) => [g.getAttribute('data-milestone'), center(g.querySelector('circle.client'))]),
  server: [...svg.querySelectorAll('g.row')].filter((g) => g.querySelector('circle.server'))
    .map((g) => [g.getAttribute('data-milestone'), center(g.querySelector('circle.server'))]),
};
"#;

async fn the_html_report_shows_the_run_offline(engine: Engine) -> anyhow::Result<()> {
    let made = made()?;
    let browser = Browser::start(engine)?;
    let client = browser.session().await?;
    let result = check(&client, made).await;
    let _ = client.close().await;
    result
}

async fn check(client: &fantoccini::Client, made: &Made) -> anyhow::Result<()> {
    let batch = &made.batch;
    client.goto(&file_url(&made.html)?).await?;
    let page: Value = client.execute(READ_PAGE, vec![]).await?;
    // Nothing was fetched: styles and charts are in the file.
    assert_eq!(page["resources"], 0, "{page}");
    assert_eq!(page["sections"], 1, "{page}");
    assert_eq!(page["heading"], TARGET, "{page}");
    let runs = batch["runs"].as_array().context("no runs")?;
    assert_eq!(runs.len(), 3);
    assert_eq!(page["runRows"], 3, "{page}");
    assert_eq!(
        page["budgetSummary"], "Budgets: 1 passed, 1 failed.",
        "{page}"
    );
    assert_eq!(
        page["budgets"],
        json!([
            {"verdict": "PASS", "budget": BUDGETS[0]},
            {"verdict": "FAIL", "budget": BUDGETS[1]},
        ]),
        "{page}"
    );
    let p50 = batch["statistics"]["ttft_visible_ms"]["p50"]
        .as_f64()
        .context("no p50")?;
    assert_eq!(page["p50"], format!("{p50:.2}"), "{page}");
    assert_eq!(page["waterfallShown"], true, "{page}");

    // Where the first run's marks are on screen, read as times through the axis's
    // ticks, against the batch's own numbers for that run.
    let ticks: Vec<(f64, f64)> = serde_json::from_value(page["ticks"].clone())?;
    let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
    let px_per_ms = (last.1 - first.1) / (last.0 - first.0);
    assert!(px_per_ms > 0.0, "{page}");
    let time_at = |x: f64| first.0 + (x - first.1) / px_per_ms;
    // A mark's center is where the browser drew it, to a pixel.
    let tolerance_ms = 1.0 / px_per_ms;
    let run = &runs[0];
    let client_marks: Vec<(String, f64)> = serde_json::from_value(page["client"].clone())?;
    let milestones = run["timeline"]["milestones"]
        .as_object()
        .context("no milestones")?;
    let drawn: Vec<&str> = client_marks.iter().map(|(m, _)| m.as_str()).collect();
    for expected in [
        "first_byte",
        "first_token",
        "first_visible_token",
        "first_paint",
        "last_token",
    ] {
        assert!(drawn.contains(&expected), "{expected} not drawn: {drawn:?}");
    }
    assert_eq!(
        drawn.len(),
        milestones.len() - 2,
        "all but request_start and first_event"
    );
    for (milestone, x) in &client_marks {
        let value = milestones[milestone]
            .as_f64()
            .context("a milestone's time")?;
        let shown = time_at(*x);
        assert!(
            (shown - value).abs() <= tolerance_ms,
            "{milestone}: {value} ms in the report, drawn at {shown:.2} ms (±{tolerance_ms:.2})"
        );
    }
    // The server's marks at the server's own times for the same moments (the
    // simulator's record, joined by `ttfx run`).
    let server_marks: Vec<(String, f64)> = serde_json::from_value(page["server"].clone())?;
    let gaps = run["metrics"]["gaps"].as_array().context("no gaps")?;
    // Every gap on a drawn row (first_event, the framing step, has none).
    let drawn_gaps = gaps
        .iter()
        .filter(|g| g["milestone"].as_str().is_some_and(|m| drawn.contains(&m)))
        .count();
    assert!(!server_marks.is_empty(), "no server marks: {page}");
    assert_eq!(server_marks.len(), drawn_gaps, "{page}");
    for (milestone, x) in &server_marks {
        let gap = gaps
            .iter()
            .find(|g| g["milestone"] == milestone.as_str())
            .context("a server mark without its gap")?;
        let value = gap["server_ms"].as_f64().context("server_ms")?;
        let shown = time_at(*x);
        assert!(
            (shown - value).abs() <= tolerance_ms,
            "server {milestone}: {value} ms, drawn at {shown:.2} ms"
        );
    }

    // A page's script in the report's strings: shown as text, never run.
    client.goto(&file_url(&made.hostile_html)?).await?;
    let hostile: Value = client
        .execute(
            "return { pwned: window.__pwned === undefined ? null : window.__pwned, \
             images: document.images.length, scripts: document.scripts.length, \
             details: document.querySelectorAll('details').length, \
             heading: document.querySelector('section.batch h2').textContent, \
             firstId: document.querySelector('table.runs tbody tr td:nth-child(2)').textContent, \
             resources: performance.getEntriesByType('resource').length }",
            vec![],
        )
        .await?;
    assert_eq!(
        hostile,
        json!({
            "pwned": null,
            "images": 0,
            "scripts": 0,
            "details": 3,
            "heading": EVIL,
            "firstId": EVIL,
            "resources": 0,
        })
    );
    Ok(())
}

engines!(the_html_report_shows_the_run_offline);
