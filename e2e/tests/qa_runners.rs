//! The probe package in other test runners (issue #34, docs/qa.md): the Playwright
//! fixture (`ttfx-probe/playwright`) under `npx playwright test`, and the Puppeteer recipe
//! (`evaluateOnNewDocument` with `ttfx-probe/runner`), each measuring the React chat UI
//! (e2e/chat-uis/react-openai, the `openai` client over fetch) against `ttfx serve` on
//! loopback in Debian's Chromium (`executablePath`: no runner downloads a browser).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use ttfx_e2e::bounds::above_injected;
use ttfx_e2e::chat_uis::{ChatUi, Kind};
use ttfx_e2e::machine::Machine;
use ttfx_e2e::paths;
use ttfx_e2e::qa_runners::{Project, node_modules};

/// Injected at the server, as in e2e/tests/inject.rs: first token 400 ms after the
/// request arrives, 20 tokens at 50 tok/s.
const DELAYS: &str = "ttft_ms=400&tokens_per_second=50&output_tokens=20&seed=5";
const TTFT_MS: f64 = 400.0;

/// How late after DevTools' `dataReceived` the probe may name the first byte: the bound
/// of e2e/tests/first_byte_truth.rs (its bench measured p99 0.4–0.7 ms, docs/fidelity.md;
/// 150 ms still catches a probe that timed another event).
const LATE_BOUND_MS: f64 = 150.0;

/// One test at a time in this binary: each drives a browser at full speed.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn milestone(run: &Value, name: &str) -> Option<f64> {
    run["timeline"]["milestones"][name].as_f64()
}

/// What every measured turn of the React page must show (as `ttfx run --inject`'s do,
/// e2e/tests/inject.rs), and their `ttft_visible` against the injected TTFT
/// (bounds.rs: each run within the loaded machine's bound, the lower median within two
/// busy frames).
fn check_runs(batch: &Value, what: &str) -> anyhow::Result<()> {
    let runs = batch["runs"].as_array().context("runs")?;
    anyhow::ensure!(runs.len() == 3, "{what}: {} runs", runs.len());
    let mut ttfts = Vec::new();
    for run in runs {
        let ttft = milestone(run, "first_visible_token").context("first_visible_token")?;
        let dom = milestone(run, "first_dom").context("first_dom")?;
        let paint = milestone(run, "first_paint").context("first_paint")?;
        let submit = milestone(run, "submit").context("submit")?;
        eprintln!(
            "{what}: ttft_visible {ttft:.1} ms, first_dom {dom:.1}, first_paint {paint:.1}, submit {submit:.1}"
        );
        anyhow::ensure!(
            submit <= 0.0 && dom >= ttft && paint >= dom,
            "{what}: submit {submit} ≤ 0, first_visible_token {ttft} ≤ first_dom {dom} ≤ first_paint {paint}"
        );
        let tokens = run["metrics"]["output_tokens"]["value"].as_f64();
        anyhow::ensure!(tokens == Some(20.0), "{what}: {tokens:?} output tokens");
        let timeline = &run["timeline"];
        for (field, want) in [
            (&timeline["environment"]["analysis"], "runner"),
            (&timeline["request"]["transport"], "fetch"),
            (&timeline["request"]["dialect"], "openai-chat"),
            (
                &timeline["selection"]["reply_element"],
                "li.message.assistant",
            ),
            (
                &timeline["selection"]["stream"],
                "first_streaming_after_submit",
            ),
        ] {
            anyhow::ensure!(field == want, "{what}: {field} where {want} was expected");
        }
        ttfts.push(ttft);
    }
    above_injected(&format!("{what}: ttft_visible"), TTFT_MS, &ttfts)?;
    // The batch is a report `ttfx report` reads.
    let file = tempfile::NamedTempFile::new()?;
    std::fs::write(file.path(), batch.to_string())?;
    let out = std::process::Command::new(paths::ttfx_bin()?)
        .arg("report")
        .arg(file.path())
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{what}: ttfx report refused the batch: {}",
        text(&out.stderr)
    );
    Ok(())
}

/// Every spec of a Playwright JSON report, depth first.
fn specs(suite: &Value, out: &mut Vec<Value>) {
    for spec in suite["specs"].as_array().into_iter().flatten() {
        out.push(spec.clone());
    }
    for inner in suite["suites"].as_array().into_iter().flatten() {
        specs(inner, out);
    }
}

/// The one result of the spec titled `title`.
fn result_of<'a>(all: &'a [Value], title: &str) -> anyhow::Result<&'a Value> {
    let spec = all
        .iter()
        .find(|s| s["title"] == title)
        .with_context(|| format!("no spec `{title}` in the JSON report"))?;
    spec["tests"][0]["results"][0]
        .as_object()
        .map(|_| &spec["tests"][0]["results"][0])
        .with_context(|| format!("spec `{title}` has no result"))
}

/// The attachment `name` of a result, as a path on disk.
fn attachment(result: &Value, name: &str) -> anyhow::Result<PathBuf> {
    result["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["name"] == name)
        .and_then(|a| a["path"].as_str())
        .map(PathBuf::from)
        .with_context(|| format!("no attachment {name}: {}", result["attachments"]))
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

/// `npx playwright test` on e2e/playwright/chat.spec.mjs: the fixture measures three
/// turns (after a warm-up) within the injected delay's bound, attaches the batch and
/// its HTML page, one first byte agrees with Chromium's DevTools record within
/// docs/fidelity.md's error bars, and a missed budget's message names the metric, the
/// percentile, the budget, the value and the runs.
#[test]
fn the_playwright_fixture_measures_the_react_chat_page() -> anyhow::Result<()> {
    let _alone = alone();
    let _machine = Machine::take_now(false)?;
    let ui = ChatUi::serve(Kind::ReactOpenAi)?;
    let url = ui.page_url("default", DELAYS);
    let project = Project::new("e2e/playwright")?;
    let cli = node_modules()?.join("@playwright/test/cli.js");
    let results = project.dir.join("results.json");
    let bin = paths::ttfx_bin()?;
    let out = project.node(
        &[
            &cli.to_string_lossy(),
            "test",
            "--config",
            "playwright.config.mjs",
        ],
        &[
            ("TTFX_CHAT_URL", &url),
            ("TTFX_BIN", &bin.to_string_lossy()),
            ("PLAYWRIGHT_JSON_OUTPUT_NAME", &results.to_string_lossy()),
        ],
        Duration::from_secs(300),
    )?;
    let said = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    anyhow::ensure!(out.status.success(), "npx playwright test failed:\n{said}");
    let report = read_json(&results).with_context(|| said.clone())?;
    let mut all = Vec::new();
    specs(&report, &mut all);
    for suite in report["suites"].as_array().into_iter().flatten() {
        specs(suite, &mut all);
    }

    let measured = result_of(
        &all,
        "the React chat page is measured and one first byte matches DevTools",
    )?;
    anyhow::ensure!(measured["status"] == "passed", "{}", measured["errors"]);
    let batch = read_json(&attachment(measured, "ttfx-report.json")?)?;
    check_runs(&batch, "playwright fixture")?;
    let html = std::fs::read_to_string(attachment(measured, "ttfx-report.html")?)?;
    anyhow::ensure!(
        html.contains("<html") && html.contains("ttft_visible"),
        "the HTML report: {}",
        &html[..html.len().min(300)]
    );

    // One first byte against DevTools (docs/fidelity.md, "First byte against the network
    // record"): never earlier than the page clock's step allows (the probe's reading is
    // coarsened to a step, the tie to Resource Timing's responseStart another), never
    // later than the bound of first_byte_truth.rs.
    let figures = read_json(&attachment(measured, "first-byte-devtools.json")?)?;
    let probe = figures["probe_first_byte_after_response_start_ms"]
        .as_f64()
        .context("the probe's first byte (response_start missing?)")?;
    let devtools = figures["devtools_first_data_after_headers_start_ms"]
        .as_f64()
        .context("DevTools' first data")?;
    let step = figures["timer_resolution_ms"].as_f64().unwrap_or(0.1);
    let diff = probe - devtools;
    eprintln!(
        "playwright fixture: first_byte − DevTools dataReceived {diff:+.3} ms (probe {probe:.3}, \
         DevTools {devtools:.3} after the headers; step {step} ms)"
    );
    anyhow::ensure!(
        (-2.0 * step..=LATE_BOUND_MS).contains(&diff),
        "first_byte − DevTools dataReceived {diff:+.3} ms, outside [−{}, +{LATE_BOUND_MS}] ms",
        2.0 * step
    );

    // The missed budget: expected to fail (test.fail), with the named message.
    let missed = result_of(
        &all,
        "a missed budget names the metric, the percentile, the budget, the value and the runs",
    )?;
    let message = missed["errors"][0]["message"].as_str().unwrap_or("");
    anyhow::ensure!(missed["status"] == "failed", "{missed}");
    for part in [
        "ttfx budget failed",
        "p90 of ttft_visible_ms is ",
        "over its budget <= 5 ms by ",
        "runs (2): ",
    ] {
        anyhow::ensure!(message.contains(part), "`{part}` not in: {message}");
    }
    eprintln!("playwright fixture: the missed budget said: {message}");
    Ok(())
}

/// docs/qa.md's Puppeteer recipe (e2e/puppeteer/recipe.mjs): the bundle added with
/// `evaluateOnNewDocument`, three turns measured after a warm-up with
/// `ttfx-probe/runner`, within the injected delay's bound.
#[test]
fn the_puppeteer_recipe_measures_the_react_chat_page() -> anyhow::Result<()> {
    let _alone = alone();
    // The package's inject.js is the bundle `ttfx run --inject` compiles in, byte for byte.
    let bundle = std::fs::read(paths::probe_pkg()?.join("inject.js"))?;
    let built_in =
        std::fs::read(paths::workspace_root().join("crates/ttfx-run/src/inject_bundle.js"))?;
    anyhow::ensure!(
        bundle == built_in,
        "the package's inject.js is not ttfx run's bundle"
    );
    let _machine = Machine::take_now(false)?;
    let ui = ChatUi::serve(Kind::ReactOpenAi)?;
    let url = ui.page_url("default", DELAYS);
    let project = Project::new("e2e/puppeteer")?;
    let batch_path = project.dir.join("batch.json");
    let out = project.node(
        &["recipe.mjs"],
        &[
            ("TTFX_CHAT_URL", &url),
            ("TTFX_QA_OUT", &batch_path.to_string_lossy()),
        ],
        Duration::from_secs(180),
    )?;
    anyhow::ensure!(
        out.status.success(),
        "the Puppeteer recipe failed:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    check_runs(&read_json(&batch_path)?, "puppeteer recipe")
}
