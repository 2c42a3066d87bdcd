//! The lab page, served by `ttfx serve`, rendered by the wasm app in headless Chromium:
//! it mounts, runs a simulated scenario through the probe, shows tables that agree with
//! the report it exports, and renders server-supplied strings as text.

use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::Value;
use ttfx_core::Recorder;
use ttfx_core::decode::Limits;
use ttfx_core::field::{FieldContext, FieldReport};
use ttfx_core::report::Run;
use ttfx_e2e::{Chromedriver, ServeProcess, paths};

/// A `ttfx serve` with the lab page and a browser on it.
struct Lab {
    client: Client,
    _server: ServeProcess,
    _driver: Chromedriver,
    /// The machine, shared with other binaries' tests (`ttfx_e2e::machine`); released
    /// last, after the browser and the server.
    _machine: ttfx_e2e::machine::Machine,
}

impl Lab {
    async fn open() -> anyhow::Result<Lab> {
        Lab::open_with(&[]).await
    }

    /// As `open`, with more `ttfx serve` arguments (a `--config`).
    async fn open_with(extra: &[&str]) -> anyhow::Result<Lab> {
        Lab::open_in(extra, &[]).await
    }

    /// As `open_with`, with more Chromium flags (a fake microphone).
    async fn open_in(extra: &[&str], browser_args: &[String]) -> anyhow::Result<Lab> {
        let machine = ttfx_e2e::machine::Machine::take(false).await?;
        let dist = paths::lab_dist()?;
        let dist = dist.to_str().unwrap_or_default();
        let mut args = vec!["--dist", dist];
        args.extend(extra);
        let server = ServeProcess::start(&paths::ttfx_bin()?, &args)?;
        let driver = Chromedriver::start()?;
        let client = driver.session_with(browser_args).await?;
        client.goto(&server.url).await?;
        // The form exists only once the wasm app has mounted: index.html carries none.
        client
            .wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::Css("#run"))
            .await?;
        Ok(Lab {
            client,
            _server: server,
            _driver: driver,
            _machine: machine,
        })
    }

    async fn fill(&self, css: &str, text: &str) -> anyhow::Result<()> {
        let input = self.client.find(Locator::Css(css)).await?;
        input.clear().await?;
        input.send_keys(text).await?;
        Ok(())
    }

    async fn text(&self, css: &str) -> anyhow::Result<String> {
        Ok(self.client.find(Locator::Css(css)).await?.text().await?)
    }

    /// Runs `runs` requests to a simulated profile and waits until the batch holds
    /// `total` runs (the page keeps earlier runs).
    async fn run_sim(
        &self,
        profile: &str,
        runs: usize,
        concurrency: usize,
        total: usize,
    ) -> anyhow::Result<()> {
        self.fill("#profile", profile).await?;
        self.fill("#runs", &runs.to_string()).await?;
        self.fill("#concurrency", &concurrency.to_string()).await?;
        self.client
            .find(Locator::Css("#run"))
            .await?
            .click()
            .await?;
        let done = format!("//p[@id='outcomes' and starts-with(text(), '{total} runs')]");
        self.client
            .wait()
            .at_most(Duration::from_secs(60))
            .for_element(Locator::XPath(&done))
            .await?;
        Ok(())
    }

    /// The batch report the page exports (its `data-report`).
    async fn exported(&self) -> anyhow::Result<Value> {
        let json = self
            .client
            .find(Locator::Css("#export"))
            .await?
            .attr("data-report")
            .await?
            .ok_or_else(|| anyhow::anyhow!("no data-report on #export"))?;
        Ok(serde_json::from_str(&json)?)
    }

    /// Each row of a table's body as its cells' text.
    async fn rows(&self, css: &str) -> anyhow::Result<Vec<Vec<String>>> {
        let mut rows = Vec::new();
        for row in self
            .client
            .find_all(Locator::Css(&format!("{css} tbody tr")))
            .await?
        {
            let mut cells = Vec::new();
            for cell in row.find_all(Locator::Css("td")).await? {
                cells.push(cell.text().await?);
            }
            rows.push(cells);
        }
        Ok(rows)
    }

    /// A table's rows once `ready` holds for them (the page fetches again after a
    /// control changes), within 20 s.
    async fn rows_once(
        &self,
        css: &str,
        ready: impl Fn(&[Vec<String>]) -> bool,
    ) -> anyhow::Result<Vec<Vec<String>>> {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            // A table being replaced can go stale between finding and reading it.
            if let Ok(rows) = self.rows(css).await
                && ready(&rows)
            {
                return Ok(rows);
            }
            if std::time::Instant::now() > deadline {
                anyhow::bail!(
                    "{css}: not ready within 20 s: {:?}",
                    self.rows(css).await.ok()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Loads a report file through the page's file input.
    async fn import(&self, name: &str, contents: &str) -> anyhow::Result<String> {
        let dir = std::env::temp_dir().join(format!("ttfx-lab-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(name);
        std::fs::write(&path, contents)?;
        let input = self.client.find(Locator::Css("#import")).await?;
        input.send_keys(path.to_str().unwrap_or_default()).await?;
        let message = self
            .client
            .wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::XPath(&format!(
                "//p[@id='import-message' and contains(text(), '{name}')]"
            )))
            .await?
            .text()
            .await;
        let _ = std::fs::remove_file(&path);
        Ok(message?)
    }
}

/// What the page prints for a number (one decimal).
fn shown(v: &Value) -> String {
    v.as_f64()
        .map(|v| format!("{v:.1}"))
        .unwrap_or_else(|| "–".into())
}

#[tokio::test]
async fn lab_page_renders_in_headless_chromium() -> anyhow::Result<()> {
    let lab = Lab::open().await?;
    let status = lab.text("#probe-status").await?;
    let title = lab.text("h1").await?;
    lab.client.close().await?;

    assert_eq!(title, "ttfx lab");
    // "probe 0.1.0 · clock 123.4 ms": the probe read the page's performance.now().
    let clock: f64 = status
        .split("clock ")
        .nth(1)
        .and_then(|s| s.strip_suffix(" ms"))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no clock reading in {status:?}"))?;
    assert!(
        status.starts_with(&format!("probe {}", env!("CARGO_PKG_VERSION"))),
        "{status}"
    );
    assert!(clock > 0.0, "{status}");
    Ok(())
}

#[tokio::test]
async fn a_simulated_batch_shows_tables_that_match_its_export() -> anyhow::Result<()> {
    let lab = Lab::open().await?;
    lab.run_sim("default", 3, 2, 3).await?;
    let report = lab.exported().await?;
    let stats_rows = lab.rows("#stats").await?;
    let clock_rows = lab.rows("#clocks").await?;
    let run_rows = lab.rows("#run-table").await?;
    let replies: Vec<String> = {
        let mut texts = Vec::new();
        for el in lab
            .client
            .find_all(Locator::Css(".bubble.assistant"))
            .await?
        {
            texts.push(el.text().await?);
        }
        texts
    };
    let waterfall_rows = lab
        .client
        .find_all(Locator::Css("#waterfall g.row"))
        .await?
        .len();
    let first_byte_row = lab
        .client
        .find(Locator::Css(
            "#waterfall g.row[data-milestone='first_byte']",
        ))
        .await?
        .prop("textContent")
        .await?
        .unwrap_or_default();
    lab.client.close().await?;

    // The export is a batch of the three runs, all measured to the end.
    assert_eq!(report["kind"], "batch");
    assert_eq!(report["outcomes"]["total"], 3);
    assert_eq!(report["outcomes"]["completed"], 3);
    let runs = report["runs"].as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 3);
    // The simulator's fixed reply streamed into the chat view, as text.
    assert_eq!(replies.len(), 3);
    for reply in &replies {
        assert!(reply.starts_with("Streaming feels fast"), "{reply:?}");
    }
    // Each run's row shows that run's own figures.
    assert_eq!(run_rows.len(), 3);
    for (row, run) in run_rows.iter().zip(&runs) {
        let m = &run["metrics"];
        assert_eq!(row[1], "sim/default");
        assert_eq!(row[2], "completed");
        assert_eq!(row[3], shown(&m["ttft_visible_ms"]["value"]), "{row:?}");
        assert_eq!(row[4], shown(&m["e2e_ms"]["value"]), "{row:?}");
        // The simulator's record was joined: the first token has its in-band counterpart.
        let gaps = m["gaps"].as_array().cloned().unwrap_or_default();
        assert!(
            gaps.iter()
                .any(|g| g["milestone"] == "first_token" && g["source"] == "in_band"),
            "{gaps:?}"
        );
    }
    // The statistics table is the export's statistics, metric by metric.
    let stats = report["statistics"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(stats.contains_key("ttft_visible_ms") && stats.contains_key("gap.first_token_ms"));
    assert_eq!(stats_rows.len(), stats.len());
    for row in &stats_rows {
        let s = &stats[&row[0]];
        assert_eq!(row[1], s["count"].to_string(), "{row:?}");
        let expected: Vec<String> = ["mean", "p50", "p90", "p99"]
            .iter()
            .map(|k| shown(&s[*k]))
            .collect();
        assert_eq!(row[2..6], expected[..], "{row:?}");
    }
    // The clock table's gap columns agree with the export's gap.* statistics.
    assert!(!clock_rows.is_empty());
    for row in &clock_rows {
        let s = &stats[&format!("gap.{}_ms", row[0])];
        let expected: Vec<String> = ["p50", "p90", "p99"]
            .iter()
            .map(|k| shown(&s[*k]))
            .collect();
        assert_eq!(row[7..10], expected[..], "{row:?}");
    }
    // The first run's waterfall has a row per observed milestone from headers on.
    let observed = runs[0]["timeline"]["milestones"]
        .as_object()
        .map(|m| {
            m.keys()
                .filter(|k| {
                    !["request_start", "first_event", "first_sentence"].contains(&k.as_str())
                })
                .count()
        })
        .unwrap_or(0);
    assert_eq!(waterfall_rows, observed);
    // The network boundary has its row, and the first byte's row names the engine's hop.
    assert!(
        runs[0]["timeline"]["milestones"]["response_start"].is_number(),
        "{}",
        runs[0]
    );
    let hop = &runs[0]["metrics"]["engine_hop_ms"]["value"];
    assert!(
        first_byte_row.contains(&format!("engine hop {} ms", shown(hop))),
        "{first_byte_row:?} (hop {hop})"
    );
    Ok(())
}

#[tokio::test]
async fn markup_from_a_loaded_report_is_shown_as_text() -> anyhow::Result<()> {
    const MARKUP: &str = "<img src=x onerror=alert(1)>";
    let lab = Lab::open().await?;
    lab.run_sim("default", 1, 1, 1).await?;
    // A real report, with a target name and a server timing that are markup.
    let mut report = lab.exported().await?;
    report["runs"][0]["target"] = Value::from(MARKUP);
    if let Some(timings) = report["runs"][0]["timeline"]["server"]["timings"].as_array_mut() {
        timings.push(serde_json::json!({"name": MARKUP, "duration_ms": 1.0, "source": "server_timing_header"}));
    }
    let loaded = lab.import("markup.json", &report.to_string()).await?;
    let target_cell = lab.text("#run-table tbody tr td.target").await?;
    let timings = lab.text(".server-timings").await?;
    let images = lab.client.find_all(Locator::Css("img")).await?.len();
    let alert = lab.client.get_alert_text().await;

    // A malformed file is a message naming the problem, and the page keeps working.
    let bad = lab
        .import("broken.json", "{\"schema_version\": 1, \"kind\": \"batch\"")
        .await?;
    let still = lab.text("#run-table tbody tr td.target").await?;
    lab.client.close().await?;

    assert_eq!(loaded, "markup.json: loaded 1 run(s)");
    assert_eq!(target_cell, MARKUP);
    assert!(timings.contains(&format!("{MARKUP} = 1.0 ms")), "{timings}");
    assert_eq!(images, 0, "the markup became an element");
    assert!(alert.is_err(), "an alert opened: {alert:?}");
    assert!(bad.starts_with("broken.json: not a ttfx report"), "{bad}");
    assert_eq!(still, MARKUP);
    Ok(())
}

/// n* from two targets' medians, as `ttfx_core::crossover` defines it.
fn n_star(report: &Value, target: &str) -> (f64, f64) {
    let median = |metric: &str| {
        let mut v: Vec<f64> = report["runs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["target"] == target)
            .filter_map(|r| r["metrics"][metric]["value"].as_f64())
            .collect();
        v.sort_by(f64::total_cmp);
        // numpy linear median: the mean of the middle two for an even count.
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    (median("ttft_ms"), median("decode_tokens_per_s"))
}

#[tokio::test]
async fn two_targets_cross_where_their_medians_say() -> anyhow::Result<()> {
    let lab = Lab::open().await?;
    lab.run_sim("fast-start-slow-stream", 2, 2, 2).await?;
    lab.run_sim("slow-start-fast-stream", 2, 2, 4).await?;
    let crossover = lab.text("#crossover").await?;
    let report = lab.exported().await?;
    if let Ok(path) = std::env::var("TTFX_LAB_SCREENSHOT") {
        // Tall enough for every panel: the README shows the whole page.
        lab.client.set_window_size(1200, 3500).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::write(path, lab.client.screenshot().await?)?;
    }
    lab.client.close().await?;

    let (ttft_a, rate_a) = n_star(&report, "sim/fast-start-slow-stream");
    let (ttft_b, rate_b) = n_star(&report, "sim/slow-start-fast-stream");
    // ttft in ms, rates in tokens/s.
    let expected = (ttft_b - ttft_a) / 1000.0 / (1.0 / rate_a - 1.0 / rate_b);
    assert!(
        crossover.starts_with(&format!("n* ≈ {expected:.1} tokens")),
        "{crossover} (expected {expected:.1})"
    );
    // docs/design.md's deployments A and B cross near 29 tokens; measured rates wander a bit.
    assert!((20.0..40.0).contains(&expected), "n* = {expected}");
    assert!(
        crossover.ends_with("shorter answers finish first on A, longer ones on B"),
        "{crossover}"
    );
    Ok(())
}

#[tokio::test]
async fn stalls_and_a_buffered_reply_are_flagged() -> anyhow::Result<()> {
    let lab = Lab::open().await?;
    // A pause of 900 ms before token 10 of a 40 tok/s stream (25 ms gaps).
    lab.fill("#overrides", "stall_at=10&stall_ms=900").await?;
    lab.run_sim("default", 1, 1, 1).await?;
    let stall_badge = lab.text("#stall-verdict").await?;
    let stall_marks = lab
        .client
        .find_all(Locator::Css("#chunk-strip rect.stall"))
        .await?
        .len();
    // The whole reply at the end: every visible token in one burst.
    lab.fill("#overrides", "").await?;
    lab.run_sim("buffered-pipeline", 1, 1, 2).await?;
    lab.client
        .find(Locator::Css("#run-table tbody tr:nth-child(2)"))
        .await?
        .click()
        .await?;
    let buffered_badge = lab.text("#buffered-verdict").await?;
    let report = lab.exported().await?;
    lab.client.close().await?;

    // The injected pause is a stall; a loaded machine can add more (the page's own
    // clock sees the browser's hiccups too), so the badge and the shading must agree
    // with the export's count rather than with a fixed one.
    let stalls = &report["runs"][0]["metrics"]["stalls"];
    let count = stalls["count"].as_u64().unwrap_or(0);
    assert!(count >= 1, "{stalls}");
    assert!(
        stalls["longest_gap_ms"].as_f64().unwrap_or(0.0) >= 900.0,
        "{stalls}"
    );
    assert!(
        stall_badge.starts_with(&format!(
            "{count} stall(s), {} ms",
            shown(&stalls["stalled_ms"])
        )),
        "{stall_badge}"
    );
    assert_eq!(stall_marks as u64, count);
    assert_eq!(
        report["runs"][1]["metrics"]["buffered"]["verdict"],
        "buffered"
    );
    assert!(
        buffered_badge.starts_with("buffered: 120 visible tokens · 100 % in one 100 ms window"),
        "{buffered_badge}"
    );
    Ok(())
}

#[tokio::test]
async fn a_failed_request_is_counted_and_said() -> anyhow::Result<()> {
    let lab = Lab::open().await?;
    lab.fill("#overrides", "fail=500").await?;
    lab.run_sim("default", 1, 1, 1).await?;
    let outcomes = lab.text("#outcomes").await?;
    let row = lab.rows("#run-table").await?;
    let error = lab.text(".exchange .error").await?;
    let report = lab.exported().await?;
    lab.client.close().await?;

    assert_eq!(
        outcomes,
        "1 runs: 0 completed, 1 failed, 0 aborted, 0 incomplete"
    );
    assert_eq!(row[0][2], "failed");
    assert!(error.starts_with("HTTP 500"), "{error}");
    let failure = &report["runs"][0]["timeline"]["failure"];
    assert_eq!(failure["class"], "http_status", "{failure}");
    assert_eq!(failure["http_status"], 500, "{failure}");
    Ok(())
}

#[tokio::test]
async fn a_voice_turn_puts_first_audio_on_the_waterfall() -> anyhow::Result<()> {
    let lab = Lab::open().await?;
    // The simulator's TTS sends its first audio 200 ms after the request arrives.
    lab.fill("#overrides", "ttfa_ms=200").await?;
    lab.client
        .find(Locator::Css("#voice"))
        .await?
        .click()
        .await?;
    lab.run_sim("default", 1, 1, 1).await?;
    let rows: Vec<String> = {
        let mut names = Vec::new();
        for row in lab
            .client
            .find_all(Locator::Css("#waterfall g.row"))
            .await?
        {
            names.push(row.attr("data-milestone").await?.unwrap_or_default());
        }
        names
    };
    let stats = lab.rows("#stats").await?;
    let report = lab.exported().await?;
    lab.client.close().await?;

    let anomalies = &report["runs"][0]["timeline"]["anomalies"];
    assert!(
        !anomalies.to_string().contains("voice_"),
        "a voice part went missing: {anomalies}"
    );
    assert!(
        stats
            .iter()
            .any(|r| r.first().is_some_and(|c| c == "ttfa_ms")),
        "no ttfa_ms row in {stats:?}"
    );
    let milestones = &report["runs"][0]["timeline"]["milestones"];
    let at = |name: &str| milestones[name].as_f64();
    let (Some(sentence), Some(request), Some(out)) = (
        at("first_sentence"),
        at("tts_request"),
        at("first_audio_out"),
    ) else {
        panic!("voice milestones missing: {milestones}");
    };
    assert!(sentence <= request, "{milestones}");
    assert!(out >= request + 200.0, "{milestones}");
    for name in [
        "first_sentence",
        "tts_request",
        "first_audio_byte",
        "first_audio_scheduled",
        "first_audio_out",
    ] {
        assert!(rows.iter().any(|r| r == name), "{name} not in {rows:?}");
    }
    Ok(())
}

/// The voice-turn box: the page's microphone (Chromium's fake device playing espeak-ng's
/// speech) is heard to its end, transcribed by the simulator's STT, and the transcript
/// is the prompt; the run holds the turn and the waterfall draws it from speech_start,
/// with the voice-to-voice bar cut into its stages.
#[tokio::test]
async fn a_voice_turn_from_the_microphone_draws_its_stages() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let speech = ttfx_hostaudio::SpeechFile::say(dir.path(), "lab", "Tell me a story", 1.0, 3.0)?;
    let lab = Lab::open_in(&[], &speech.chromium_args()).await?;
    lab.fill(
        "#overrides",
        "stt_final_ms=300&ttft_ms=200&ttfa_ms=150&transcript=Tell me a story",
    )
    .await?;
    lab.client
        .find(Locator::Css("#voice-turn"))
        .await?
        .click()
        .await?;
    lab.run_sim("default", 1, 1, 1).await?;
    let report = lab.exported().await?;
    let mut stages = Vec::new();
    for rect in lab
        .client
        .find_all(Locator::Css("#waterfall rect.stage"))
        .await?
    {
        stages.push(rect.attr("data-stage").await?.unwrap_or_default());
    }
    let prompt = lab.text(".bubble.user").await?;
    lab.client.close().await?;

    let run = &report["runs"][0];
    let m = &run["timeline"]["milestones"];
    assert!(m["speech_end"].as_f64().is_some_and(|t| t < 0.0), "{m}");
    assert!(m["stt_final"].as_f64().is_some(), "{m}");
    let v2v = run["metrics"]["voice_to_voice_ms"]["value"].as_f64();
    // At least the detector's hangover and the injected STT, LLM and TTS delays.
    assert!(
        v2v.is_some_and(|v| v >= 500.0 + 300.0 + 200.0 + 150.0),
        "{}",
        run["metrics"]
    );
    assert_eq!(
        stages,
        [
            "endpointing",
            "transcription",
            "llm_request",
            "llm_first_token",
            "first_sentence",
            "tts_first_byte",
            "playout"
        ]
    );
    assert!(prompt.contains("Tell me a story"), "{prompt}");
    Ok(())
}

/// The run form lists the proxy's configured upstreams; picking a preset upstream
/// measures it in that provider's API (here Anthropic Messages, answered by another
/// `ttfx serve`'s simulator the way Anthropic streams).
#[tokio::test]
async fn a_configured_upstream_is_picked_and_measured_in_its_api() -> anyhow::Result<()> {
    let provider = ServeProcess::start(&paths::ttfx_bin()?, &[])?;
    let config = std::env::temp_dir().join(format!("ttfx-lab-{}-up.toml", std::process::id()));
    std::fs::write(
        &config,
        format!(
            "[upstreams.claude]\npreset = \"anthropic\"\nbase_url = \"{}sim/default\"\n\
             api_key = \"sk-ant-lab-test\"\n",
            provider.url
        ),
    )?;
    let lab = Lab::open_with(&["--config", config.to_str().unwrap_or_default()]).await?;
    let kind = lab.client.find(Locator::Css("#target-kind")).await?;
    kind.select_by_value("url").await?;
    let picker = lab
        .client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#upstream"))
        .await?;
    picker.select_by_value("claude").await?;
    let url = lab
        .client
        .find(Locator::Css("#target-url"))
        .await?
        .prop("value")
        .await?;
    let api = lab
        .client
        .find(Locator::Css("#api"))
        .await?
        .prop("value")
        .await?;
    lab.fill("#runs", "1").await?;
    lab.fill("#concurrency", "1").await?;
    lab.client.find(Locator::Css("#run")).await?.click().await?;
    lab.client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::XPath(
            "//p[@id='outcomes' and starts-with(text(), '1 runs')]",
        ))
        .await?;
    let report = lab.exported().await?;
    lab.client.close().await?;
    let _ = std::fs::remove_file(&config);

    assert_eq!(url.as_deref(), Some("/proxy/claude/v1/messages"));
    assert_eq!(api.as_deref(), Some("anthropic"));
    let timeline = &report["runs"][0]["timeline"];
    assert_eq!(report["outcomes"]["completed"], 1, "{report}");
    assert_eq!(timeline["request"]["dialect"], "anthropic", "{timeline}");
    assert!(
        timeline["milestones"]["first_visible_token"].is_number(),
        "{timeline}"
    );
    Ok(())
}

/// A collector's SQLite file (and its WAL files), removed when dropped.
struct TempDb(std::path::PathBuf);

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

/// A run as a production page's probe would beacon it: the first token at `ttft_ms`,
/// then 30 tokens 20 ms apart, started `ago_ms` before now; runs 0 to 2 are labelled
/// `prod-chat`, the others `canary`.
fn field_report(i: usize, ttft_ms: f64, ago_ms: f64) -> anyhow::Result<(Run, FieldReport)> {
    let mut r = Recorder::new(None, Limits::DEFAULT);
    r.headers(ttft_ms / 2.0, 200, Some("text/event-stream"), &[]);
    let event = "data: {\"choices\":[{\"delta\":{\"content\":\"word \"}}]}\n\n";
    for k in 0..30 {
        r.chunk(ttft_ms + 20.0 * f64::from(k), event.as_bytes());
    }
    r.chunk(ttft_ms + 600.0, b"data: [DONE]\n\n");
    r.end(ttft_ms + 601.0);
    let mut timeline = r.finish();
    timeline.request.url = Some("https://api.example.com/v1/chat/completions".into());
    timeline.environment.engine = Some("chromium".into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs_f64()
        * 1000.0;
    timeline.request_start_unix_ms = Some(now - ago_ms);
    let label = if i < 3 { "prod-chat" } else { "canary" };
    let run = Run::new(Some(format!("req-{i}")), Some(label.into()), timeline)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let context = FieldContext {
        page_path: Some("/chat".into()),
        sample_rate: 1.0,
    };
    let report = FieldReport::of_run(&run, &context);
    Ok((run, report))
}

/// A `ttfx serve --collect` holding five field reports: the Field view's summary shows
/// ttfx's own p50, the chart one line per percentile, the histogram bars, and the slowest
/// run opens in the waterfall with its milestones.
#[tokio::test]
async fn the_field_view_shows_a_collectors_runs_and_opens_the_slowest() -> anyhow::Result<()> {
    // Declared before the server, so removed after it stops.
    let db = TempDb(std::env::temp_dir().join(format!("ttfx-lab-{}-field.db", std::process::id())));
    let lab = Lab::open_with(&["--collect", db.0.to_str().unwrap_or_default()]).await?;
    // Spread over the last few hours, so the chart has more than one bucket.
    let ttfts = [420.0, 180.0, 650.0, 300.0, 240.0];
    let mut runs = Vec::new();
    let mut body = String::new();
    for (i, ttft) in ttfts.iter().enumerate() {
        let (run, report) = field_report(i, *ttft, 3_600_000.0 * i as f64 + 60_000.0)?;
        body.push_str(&serde_json::to_string(&report)?);
        body.push('\n');
        runs.push(run);
    }
    // Posted from the page itself, as a same-origin beacon would be.
    let status = lab
        .client
        .execute_async(
            "const [body, done] = arguments; \
             fetch('/collect', {method: 'POST', body}).then(r => done(r.status), e => done(String(e)));",
            vec![Value::from(body)],
        )
        .await?;
    // The collector places runs by their arrival (docs/field.md, "Which time"): make each
    // have arrived a second after it started, as if beaconed then, so the runs stay spread
    // over the last hours (the file is shared with the running server, WAL).
    let conn = rusqlite::Connection::open(&db.0)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.execute("UPDATE runs SET received_unix_ms = at_unix_ms + 1000", [])?;
    drop(conn);
    lab.client
        .find(Locator::Css("#tab-field"))
        .await?
        .click()
        .await?;
    let wait = |css: &'static str| {
        lab.client
            .wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css(css))
    };
    wait("#field-summary tbody tr").await?;
    wait("#field-series path.pline").await?;
    wait("#field-histogram rect.bar").await?;
    // No benchmark imported: the view says how to import one, and draws no benchmark line.
    let no_bench = lab
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::XPath(
            "//p[@id='field-bench-status' and starts-with(text(), 'no benchmark')]",
        ))
        .await?
        .text()
        .await?;
    let bench_lines = lab
        .client
        .find_all(Locator::Css("line.bench-mark"))
        .await?
        .len();
    let metric = lab
        .client
        .find(Locator::Css("#field-metric"))
        .await?
        .prop("value")
        .await?;
    let summary = lab.rows("#field-summary").await?;
    let mut percentiles = Vec::new();
    for path in lab
        .client
        .find_all(Locator::Css("#field-series path.pline"))
        .await?
    {
        percentiles.push(path.attr("data-percentile").await?.unwrap_or_default());
    }
    let bars = lab
        .client
        .find_all(Locator::Css("#field-histogram rect.bar"))
        .await?
        .len();
    wait("#field-slowest tbody tr").await?;
    let slowest = lab.rows("#field-slowest").await?;
    lab.client
        .find(Locator::Css("#field-slowest tbody tr"))
        .await?
        .click()
        .await?;
    wait("#field-waterfall g.row").await?;
    let mut rows = Vec::new();
    for row in lab
        .client
        .find_all(Locator::Css("#field-waterfall g.row"))
        .await?
    {
        rows.push(row.attr("data-milestone").await?.unwrap_or_default());
    }
    let note = lab.text("#field-run-note").await?;
    // Sliced by label: a row and a line set per label, the largest group first.
    lab.client
        .find(Locator::Css("#field-by"))
        .await?
        .select_by_value("label")
        .await?;
    let sliced = lab
        .rows_once("#field-summary", |rows| rows.len() == 2)
        .await?;
    let sliced_paths = lab
        .client
        .find_all(Locator::Css("#field-series path.pline"))
        .await?
        .len();
    let still_open = lab
        .client
        .find(Locator::Css("#field-waterfall"))
        .await
        .is_ok();
    if let Ok(path) = std::env::var("TTFX_FIELD_SCREENSHOT") {
        lab.client.set_window_size(1200, 2600).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        std::fs::write(path, lab.client.screenshot().await?)?;
    }
    // Kept to one label: one row.
    lab.client
        .find(Locator::Css("#field-filter"))
        .await?
        .select_by_value("label=canary")
        .await?;
    let filtered = lab
        .rows_once("#field-summary", |rows| rows.len() == 1)
        .await?;
    // The last hour holds run 0 only: no canary run, and the kept filter says so.
    lab.client
        .find(Locator::Css("#field-since"))
        .await?
        .select_by_value("1h")
        .await?;
    let last_hour = lab
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("#field-summary-empty"))
        .await?
        .text()
        .await?;
    let kept_filter = lab
        .client
        .find(Locator::Css("#field-filter"))
        .await?
        .prop("value")
        .await?;
    lab.client
        .find(Locator::Css("#field-filter"))
        .await?
        .select_by_value("")
        .await?;
    let unfiltered = lab
        .rows_once("#field-summary", |rows| rows.len() == 1)
        .await?;
    lab.client.close().await?;

    assert_eq!(status, Value::from(204), "POST /collect answered {status}");
    assert!(
        no_bench.starts_with(
            "no benchmark stored: import one with `ttfx import results.json --into FILE.db`"
        ),
        "{no_bench}"
    );
    assert_eq!(bench_lines, 0);
    // The view starts on the first visible token; its p50 is ttfx's own over the runs.
    assert_eq!(metric.as_deref(), Some("ttft_visible_ms"));
    let values: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.metrics.ttft_visible_ms.map(|m| m.value))
        .collect();
    assert_eq!(values.len(), ttfts.len());
    let p50 =
        ttfx_core::stats::percentile(&values, 50.0).ok_or_else(|| anyhow::anyhow!("no p50"))?;
    assert_eq!(summary.len(), 1, "{summary:?}");
    assert_eq!(summary[0][0], "all runs");
    assert_eq!(summary[0][1], "5", "{summary:?}");
    assert_eq!(summary[0][3], format!("{p50:.1}"), "{summary:?}");
    // One line per percentile (not sliced), and bars.
    assert_eq!(percentiles, ["p50", "p75", "p95"]);
    assert!(bars >= 2, "{bars} bars");
    // The slowest run first; opened, its milestones are the waterfall's rows.
    let slow = &runs[2];
    assert_eq!(slowest.len(), 5, "{slowest:?}");
    assert_eq!(slowest[0][3], "req-2", "{slowest:?}");
    let expected: Vec<&str> = slow
        .timeline
        .milestones
        .iter()
        .map(|(m, _)| m.as_str())
        .filter(|m| !["request_start", "first_event"].contains(m))
        .collect();
    assert!(expected.contains(&"first_visible_token") && expected.contains(&"done"));
    assert_eq!(rows, expected);
    assert!(note.contains("not every chunk"), "{note}");
    let p50_of = |range: std::ops::Range<usize>| {
        ttfx_core::stats::percentile(&values[range], 50.0).map(|v| format!("{v:.1}"))
    };
    assert_eq!(sliced[0][..2], ["prod-chat", "3"], "{sliced:?}");
    assert_eq!(Some(sliced[0][3].clone()), p50_of(0..3), "{sliced:?}");
    assert_eq!(sliced[1][..2], ["canary", "2"], "{sliced:?}");
    assert_eq!(Some(sliced[1][3].clone()), p50_of(3..5), "{sliced:?}");
    assert_eq!(sliced_paths, 6, "three percentiles for each of two labels");
    assert!(still_open, "slicing closed the opened run");
    assert_eq!(filtered[0][..2], ["canary", "2"], "{filtered:?}");
    assert_eq!(last_hour, "No ttft_visible_ms values in this period.");
    assert_eq!(kept_filter.as_deref(), Some("label=canary"));
    assert_eq!(unfiltered[0][..2], ["prod-chat", "1"], "{unfiltered:?}");
    Ok(())
}

#[tokio::test]
async fn the_field_view_without_a_collector_says_how_to_start_one() -> anyhow::Result<()> {
    let lab = Lab::open().await?;
    lab.client
        .find(Locator::Css("#tab-field"))
        .await?
        .click()
        .await?;
    let status = lab
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::XPath(
            "//p[@id='field-status' and starts-with(text(), 'no collector')]",
        ))
        .await?
        .text()
        .await?;
    let lab_hidden = lab
        .client
        .find(Locator::Css("#lab-view"))
        .await?
        .attr("hidden")
        .await?;
    lab.client.close().await?;

    assert_eq!(status, "no collector: start ttfx serve --collect FILE.db");
    assert!(lab_hidden.is_some(), "the lab's panels are still shown");
    Ok(())
}

/// Runs the OTLP export dropped are said in the Field view, never lost silently: a
/// collector exporting to a port nothing listens on, its backlog bounded to 2, gets five
/// runs; the three oldest leave the backlog and the view says so with what still waits.
#[tokio::test]
async fn the_field_view_says_what_the_otlp_export_dropped() -> anyhow::Result<()> {
    let db =
        TempDb(std::env::temp_dir().join(format!("ttfx-lab-{}-export.db", std::process::id())));
    let closed = std::net::TcpListener::bind("127.0.0.1:0")?;
    let nowhere = format!("http://{}", closed.local_addr()?);
    drop(closed);
    let lab = Lab::open_with(&[
        "--collect",
        db.0.to_str().unwrap_or_default(),
        "--otlp-endpoint",
        &nowhere,
        "--otlp-max-backlog",
        "2",
    ])
    .await?;
    let mut body = String::new();
    for i in 0..5 {
        let (_, report) = field_report(i, 300.0 + i as f64, 60_000.0)?;
        body.push_str(&serde_json::to_string(&report)?);
        body.push('\n');
    }
    let status = lab
        .client
        .execute_async(
            "const [body, done] = arguments; \
             fetch('/collect', {method: 'POST', body}).then(r => done(r.status), e => done(String(e)));",
            vec![Value::from(body)],
        )
        .await?;
    lab.client
        .find(Locator::Css("#tab-field"))
        .await?
        .click()
        .await?;
    let line = lab
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("#field-export"))
        .await?
        .text()
        .await?;
    lab.client.close().await?;

    assert_eq!(status, Value::from(204));
    assert_eq!(
        line,
        "OTLP export: 3 run(s) dropped from a full backlog (--otlp-max-backlog); 2 waiting \
         (ttfx field FILE.db --health)"
    );
    Ok(())
}

/// `ttfx import FILE --into DB` with the built binary: the benchmark stored as a user
/// stores it.
fn import_bench(db: &std::path::Path, name: &str, contents: &str) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ttfx-lab-{}-bench", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(name);
    std::fs::write(&path, contents)?;
    let out = std::process::Command::new(paths::ttfx_bin()?)
        .arg("import")
        .arg(&path)
        .arg("--into")
        .arg(db)
        .output()?;
    let _ = std::fs::remove_file(&path);
    anyhow::ensure!(
        out.status.success(),
        "ttfx import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// vLLM's `bench serve` results: three requests' TTFT (s) and ITL, summary E2E p99.
fn vllm_file(model: &str, concurrency: u32, ttfts_s: [f64; 3], e2e_p99_ms: f64) -> String {
    serde_json::json!({
        "model_id": model, "max_concurrency": concurrency, "completed": 3,
        "ttfts": ttfts_s, "itls": [[0.01], [0.02], []], "p99_e2el_ms": e2e_p99_ms
    })
    .to_string()
}

/// A chart's benchmark marks: `(percentile, value in ms, position)`, the position being
/// the attribute `along` (`y1` across the series chart, `x1` on the histogram).
async fn bench_marks(
    client: &Client,
    svg: &str,
    along: &str,
) -> anyhow::Result<Vec<(String, f64, f64)>> {
    let mut out = Vec::new();
    for line in client
        .find_all(Locator::Css(&format!("{svg} line.bench-mark")))
        .await?
    {
        let attr = |v: Option<String>| v.unwrap_or_default().parse::<f64>().unwrap_or(f64::NAN);
        out.push((
            line.attr("data-percentile").await?.unwrap_or_default(),
            attr(line.attr("data-value-ms").await?),
            attr(line.attr(along).await?),
        ));
    }
    Ok(out)
}

/// `(value, position)` of an element's `data-value` and its `along` attribute.
async fn axis_point(client: &Client, css: &str, along: &str) -> anyhow::Result<(f64, f64)> {
    let e = client.find(Locator::Css(css)).await?;
    let num = |v: Option<String>| v.unwrap_or_default().parse::<f64>().unwrap_or(f64::NAN);
    Ok((num(e.attr("data-value").await?), num(e.attr(along).await?)))
}

/// Where `v` lies on the axis through `a` and `b` (each `(value, position)`).
fn on_axis(a: (f64, f64), b: (f64, f64), v: f64) -> f64 {
    a.1 + (v - a.0) / (b.0 - a.0) * (b.1 - a.1)
}

/// Two vLLM results imported into a collector that holds five field runs: the Field
/// view opens on the latest, says the gap in one sentence with the worked figures,
/// lists both in its picker, shows the gap's rows, and draws the benchmark's p50/p90/p99
/// TTFT on the chart and the histogram where their axes put those values; picking the
/// other benchmark moves them.
#[tokio::test]
async fn the_field_view_sets_an_imported_benchmark_beside_the_field() -> anyhow::Result<()> {
    let db = TempDb(std::env::temp_dir().join(format!("ttfx-lab-{}-gap.db", std::process::id())));
    import_bench(
        &db.0,
        "bench-a.json",
        &vllm_file("m-a", 4, [0.05, 0.1, 0.15], 700.0),
    )?;
    // Imported later: the latest.
    import_bench(
        &db.0,
        "bench-b.json",
        &vllm_file("m-b", 2, [0.1, 0.2, 0.3], 900.0),
    )?;
    let lab = Lab::open_with(&["--collect", db.0.to_str().unwrap_or_default()]).await?;
    let ttfts = [420.0, 180.0, 650.0, 300.0, 240.0];
    let mut body = String::new();
    let mut values = Vec::new();
    for (i, ttft) in ttfts.iter().enumerate() {
        let (run, report) = field_report(i, *ttft, 60_000.0 * i as f64 + 60_000.0)?;
        body.push_str(&serde_json::to_string(&report)?);
        body.push('\n');
        values.extend(run.metrics.ttft_visible_ms.map(|m| m.value));
    }
    let status = lab
        .client
        .execute_async(
            "const [body, done] = arguments; \
             fetch('/collect', {method: 'POST', body}).then(r => done(r.status), e => done(String(e)));",
            vec![Value::from(body)],
        )
        .await?;
    lab.client
        .find(Locator::Css("#tab-field"))
        .await?
        .click()
        .await?;
    let wait = |css: String| {
        let client = lab.client.clone();
        async move {
            client
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(&css))
                .await
        }
    };
    wait("#field-gap tbody tr".into()).await?;
    wait("#field-series line.bench-mark".into()).await?;
    wait("#field-histogram line.bench-mark".into()).await?;
    let sentence = lab.text("#field-gap-sentence").await?;
    let mut options = Vec::new();
    for o in lab
        .client
        .find_all(Locator::Css("#field-bench option"))
        .await?
    {
        options.push((o.attr("value").await?.unwrap_or_default(), o.text().await?));
    }
    let mut gap_rows = Vec::new();
    for tr in lab
        .client
        .find_all(Locator::Css("#field-gap tbody tr"))
        .await?
    {
        gap_rows.push(tr.attr("data-field-metric").await?.unwrap_or_default());
    }
    let visible_row = lab
        .rows("#field-gap")
        .await?
        .into_iter()
        .find(|r| r.get(1).is_some_and(|c| c.contains("ttft_visible_ms")))
        .unwrap_or_default();
    let chart_marks = bench_marks(&lab.client, "#field-series", "y1").await?;
    let mut labels = Vec::new();
    for t in lab
        .client
        .find_all(Locator::Css("#field-series text.bench-label"))
        .await?
    {
        labels.push(t.text().await?);
    }
    let grid = lab
        .client
        .find_all(Locator::Css("#field-series line.grid[data-value]"))
        .await?;
    anyhow::ensure!(grid.len() >= 2, "the chart has {} y grid lines", grid.len());
    let g0 = axis_point(&lab.client, "#field-series line.grid[data-value]", "y1").await?;
    let g1 = {
        let e = &grid[1];
        let num = |v: Option<String>| v.unwrap_or_default().parse::<f64>().unwrap_or(f64::NAN);
        (num(e.attr("data-value").await?), num(e.attr("y1").await?))
    };
    let hist_marks = bench_marks(&lab.client, "#field-histogram", "x1").await?;
    let h0 = axis_point(&lab.client, "#field-histogram text.axis-start", "x").await?;
    let h1 = axis_point(&lab.client, "#field-histogram text.axis-end", "x").await?;

    // The other benchmark: its figures replace the latest's.
    let first_id = options.last().map(|o| o.0.clone()).unwrap_or_default();
    lab.client
        .find(Locator::Css("#field-bench"))
        .await?
        .select_by_value(&first_id)
        .await?;
    lab.client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::XPath(
            "//p[@id='field-gap-sentence' and contains(text(), 'p50 TTFT 100 ms')]",
        ))
        .await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let picked_marks = loop {
        let m = bench_marks(&lab.client, "#field-series", "y1")
            .await
            .unwrap_or_default();
        if m.first().is_some_and(|m| (m.1 - 100.0).abs() < 1e-6)
            || std::time::Instant::now() > deadline
        {
            break m;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let picked_sentence = lab.text("#field-gap-sentence").await?;
    lab.client.close().await?;

    assert_eq!(status, Value::from(204));
    let at = |p: f64| ttfx_core::stats::percentile(&values, p).unwrap_or(f64::NAN);
    let (p50, p90, p99) = (at(50.0), at(90.0), at(99.0));
    assert_eq!(p50, 300.0);
    // numpy's linear rule over 100, 200, 300 ms: p50 200, p90 280, p99 298.
    assert_eq!(
        sentence,
        "the benchmark says p50 TTFT 200 ms; your users wait 300 ms for the first visible \
         token (+100 ms, 1.5x)"
    );
    assert_eq!(
        picked_sentence,
        "the benchmark says p50 TTFT 100 ms; your users wait 300 ms for the first visible \
         token (+200 ms, 3.0x)"
    );
    // Newest import first, the latest selected to start.
    assert_eq!(options.len(), 2, "{options:?}");
    assert_eq!(
        options[0].1,
        "bench-b.json · vllm · model m-b · concurrency 2"
    );
    assert_eq!(
        options[1].1,
        "bench-a.json · vllm · model m-a · concurrency 4"
    );
    assert_eq!(
        gap_rows,
        [
            "first_byte_ms",
            "ttft_visible_ms",
            "first_paint_ms",
            "chunk_gap_ms",
            "tpot_ms",
            "e2e_ms"
        ]
    );
    // TTFT | waits for | n | p50 bench, field, diff | p90 … | p99 …
    assert_eq!(visible_row[0], "TTFT", "{visible_row:?}");
    assert_eq!(visible_row[2], "5", "{visible_row:?}");
    assert_eq!(
        visible_row[3..6],
        ["200", "300", "+100 (1.5x)"],
        "{visible_row:?}"
    );
    assert_eq!(
        visible_row[6..8],
        ["280".to_owned(), format!("{p90:.0}")],
        "{visible_row:?}"
    );
    assert_eq!(
        visible_row[9..11],
        ["298".to_owned(), format!("{p99:.0}")],
        "{visible_row:?}"
    );
    // The shown metric is the first visible token: TTFT stands beside it.
    let want = [("p50", 200.0), ("p90", 280.0), ("p99", 298.0)];
    for marks in [&chart_marks, &hist_marks] {
        assert_eq!(marks.len(), 3, "{marks:?}");
        for ((p, v, _), (wp, wv)) in marks.iter().zip(want) {
            assert_eq!(p, wp);
            assert!((v - wv).abs() < 1e-6, "{marks:?}");
        }
    }
    assert_eq!(
        labels,
        ["bench p50 200 ms", "bench p90 280 ms", "bench p99 298 ms"]
    );
    // Each mark lies where the axis puts its value.
    for (_, v, y) in &chart_marks {
        assert!(
            (y - on_axis(g0, g1, *v)).abs() < 0.01,
            "chart: {v} ms at y {y}, axis {g0:?} {g1:?}"
        );
    }
    for (_, v, x) in &hist_marks {
        assert!(
            (x - on_axis(h0, h1, *v)).abs() < 0.01,
            "histogram: {v} ms at x {x}, axis {h0:?} {h1:?}"
        );
    }
    assert_eq!(
        h0.0, 180.0,
        "the histogram's axis starts at the smallest value"
    );
    assert_eq!(h1.0, 650.0);
    assert_eq!(picked_marks.len(), 3, "{picked_marks:?}");
    assert!((picked_marks[0].1 - 100.0).abs() < 1e-6, "{picked_marks:?}");
    Ok(())
}

/// A run made in the lab page served with a collector is stored there with source
/// `lab`, its figures the page's own, and `source=field` leaves it out.
#[tokio::test]
async fn a_run_made_in_the_lab_page_lands_in_the_collector_as_source_lab() -> anyhow::Result<()> {
    let db =
        TempDb(std::env::temp_dir().join(format!("ttfx-lab-{}-labruns.db", std::process::id())));
    let lab = Lab::open_with(&["--collect", db.0.to_str().unwrap_or_default()]).await?;
    lab.run_sim("default", 2, 1, 2).await?;
    let stored = lab
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::XPath(
            "//span[@id='lab-stored' and starts-with(text(), '2 run(s)')]",
        ))
        .await?
        .text()
        .await?;
    let report = lab.exported().await?;
    lab.client
        .find(Locator::Css("#tab-field"))
        .await?
        .click()
        .await?;
    let lab_option = lab
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("#field-filter option[value='source=lab']"))
        .await?
        .text()
        .await?;
    lab.client.close().await?;

    let field = |filter: &str| -> anyhow::Result<Value> {
        let out = std::process::Command::new(paths::ttfx_bin()?)
            .arg("field")
            .arg(&db.0)
            .args(["--json", "--metric", "ttft_visible_ms", "--where", filter])
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    };
    let lab_runs = field("source=lab")?;
    let field_runs = field("source=field")?;
    assert_eq!(
        stored,
        "2 run(s) stored in this server's collector as source lab"
    );
    assert_eq!(lab_option, "source = lab (2)");
    assert_eq!(lab_runs["runs"], 2, "{lab_runs}");
    assert_eq!(field_runs["runs"], 0, "{field_runs}");
    // The collector's p50 over the two runs is the page's own.
    let page = report["statistics"]["ttft_visible_ms"]["p50"].as_f64();
    let stored_p50 = lab_runs["metrics"][0]["groups"][0]["p50"].as_f64();
    assert!(
        page.zip(stored_p50)
            .is_some_and(|(a, b)| (a - b).abs() < 1e-6),
        "page {page:?}, collector {stored_p50:?}"
    );
    Ok(())
}

/// A vLLM result picked with the file input (no collector) is read in the page by the
/// same reader as `ttfx import`: its tool, model, load and counts, and its TTFT
/// percentiles beside the lab runs' own; a file that is not a benchmark is the reader's
/// message.
#[tokio::test]
async fn a_benchmark_file_is_read_in_the_page_beside_its_runs() -> anyhow::Result<()> {
    let lab = Lab::open().await?;
    lab.run_sim("default", 2, 1, 2).await?;
    let report = lab.exported().await?;
    let dir = std::env::temp_dir().join(format!("ttfx-lab-{}-file", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let good = dir.join("results.json");
    std::fs::write(&good, vllm_file("m", 2, [0.1, 0.2, 0.3], 900.0))?;
    let bad = dir.join("notes.json");
    std::fs::write(&bad, r#"{"hello": "world"}"#)?;
    let input = lab.client.find(Locator::Css("#bench-file")).await?;
    input.send_keys(good.to_str().unwrap_or_default()).await?;
    lab.client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css(".bench-table tbody tr"))
        .await?;
    let name = lab.text("#bench-file-name").await?;
    let about = lab.text(".bench-about").await?;
    let rows = lab.rows(".bench-table").await?;
    let input = lab.client.find(Locator::Css("#bench-file")).await?;
    input.send_keys(bad.to_str().unwrap_or_default()).await?;
    let error = lab
        .client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("#bench-file-error"))
        .await?
        .text()
        .await?;
    // Dropped rather than picked: a drop event carrying the file, as a browser fires it
    // (the zone cancels dragover, or the browser would open the file instead).
    lab.client
        .execute(
            "const dt = new DataTransfer();
             dt.items.add(new File([arguments[0]], 'dropped.json', {type: 'application/json'}));
             const zone = document.getElementById('bench-drop');
             for (const type of ['dragover', 'drop']) {
               zone.dispatchEvent(new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
             }",
            vec![serde_json::json!(vllm_file("dropped-model", 8, [0.4, 0.5, 0.6], 1200.0))],
        )
        .await?;
    let mut dropped = String::new();
    for _ in 0..100 {
        dropped = lab.text(".bench-about").await.unwrap_or_default();
        if dropped.contains("dropped-model") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let dropped_name = lab.text("#bench-file-name").await?;
    lab.client.close().await?;
    let _ = std::fs::remove_dir_all(&dir);

    assert_eq!(
        dropped,
        "vllm · model dropped-model · concurrency 8 · 3 completed, 0 failed"
    );
    assert_eq!(dropped_name, "dropped.json: beside the lab's runs (ms)");
    assert_eq!(name, "results.json: beside the lab's runs (ms)");
    assert_eq!(
        about,
        "vllm · model m · concurrency 2 · 3 completed, 0 failed"
    );
    let row = |title: &str| {
        rows.iter()
            .find(|r| r.first().is_some_and(|t| t == title))
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(
        row("benchmark TTFT"),
        ["benchmark TTFT", "3", "200.0", "280.0", "298.0"]
    );
    assert_eq!(row("benchmark ITL")[1..], ["2", "15.0", "19.0", "19.9"]);
    assert_eq!(row("benchmark E2E latency")[2..], ["–", "–", "900.0"]);
    for (title, metric) in [
        ("lab first token", "ttft_ms"),
        ("lab first visible token", "ttft_visible_ms"),
        ("lab end to end", "e2e_ms"),
    ] {
        let s = &report["statistics"][metric];
        let want = ["count", "p50", "p90", "p99"].map(|k| match k {
            "count" => s[k].to_string(),
            _ => shown(&s[k]),
        });
        assert_eq!(row(title)[1..], want, "{title}");
    }
    assert!(
        error.starts_with("notes.json: not a benchmark file ttfx knows"),
        "{error}"
    );
    Ok(())
}

/// Where a sweep step's target holds a figure.
type Figure = fn(&Value) -> &Value;

/// A real sweep (`ttfx run --sweep concurrency=1,2,4,8` against two simulated
/// deployments that slow down with load; ttfx-core's reader fixture, docs/load.md's
/// worked sweep) loaded through "load a report" is drawn against the load level: one
/// line per target and figure, each point at its step's level and the file's value and
/// where the axes put them, the budget's limit as a line, and its break marked at the
/// first step that failed it. A document of another schema is the reader's message.
#[tokio::test]
async fn a_sweep_file_is_drawn_as_curves_against_load() -> anyhow::Result<()> {
    let text = std::fs::read_to_string(
        paths::workspace_root()
            .join("crates/ttfx-core/testdata/sweep/two-targets-concurrency.json"),
    )?;
    let sweep: Value = serde_json::from_str(&text)?;
    let lab = Lab::open().await?;
    let loaded = lab.import("sweep.json", &text).await?;
    lab.client
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#sweep-wait"))
        .await?;
    // Everything drawn, in one script: what each element says it stands for and where
    // it is.
    let drawn = lab
        .client
        .execute(
            "const svg = document.getElementById('sweep-wait');
             const all = (css, f) => [...svg.querySelectorAll(css)].map(f);
             const n = (e, a) => parseFloat(e.getAttribute(a));
             return {
               kind: svg.dataset.kind,
               axis: svg.querySelector('text.axis-x').textContent,
               lines: all('path.sweep-line', p => [p.dataset.target, p.dataset.figure]),
               points: all('circle.sweep-pt', c => ({target: c.dataset.target,
                 figure: c.dataset.figure, level: n(c, 'data-level'),
                 value: n(c, 'data-value'), x: n(c, 'cx'), y: n(c, 'cy')})),
               y_ticks: all('line.grid[data-value]', l => [n(l, 'data-value'), n(l, 'y1')]),
               x_ticks: all('line.grid[data-level]', l => [n(l, 'data-level'), n(l, 'x1')]),
               budgets: all('line.budget-line', l => [l.dataset.budget, n(l, 'data-limit-ms'), n(l, 'y1')]),
               breaks: all('g.budget-break', g => ({budget: g.dataset.budget,
                 step: n(g, 'data-step'), label: g.dataset.levelLabel,
                 x: n(g.querySelector('line.break-mark'), 'x1'),
                 text: g.querySelector('text').textContent})),
             };",
            Vec::new(),
        )
        .await?;
    let budget_items = lab.text("#sweep-budgets").await?;
    let table_rows = lab.rows(".sweep-table").await?;
    let mut table_targets = Vec::new();
    for table in lab
        .client
        .find_all(Locator::Css("table.sweep-table"))
        .await?
    {
        table_targets.push(table.attr("data-target").await?.unwrap_or_default());
    }
    if let Ok(path) = std::env::var("TTFX_SWEEP_SCREENSHOT") {
        // docs/load.md's picture: the Sweep panel alone.
        lab.client.set_window_size(1200, 2400).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let panel = lab.client.find(Locator::Css("#sweep")).await?;
        std::fs::write(path, panel.screenshot().await?)?;
    }
    let other = lab
        .import(
            "load.json",
            r#"{"schema": "ttfx-load", "schema_version": 1}"#,
        )
        .await?;
    let still = lab
        .client
        .find_all(Locator::Css("#sweep-wait path.sweep-line"))
        .await?
        .len();
    lab.client.close().await?;

    let steps = sweep["steps"].as_array().cloned().unwrap_or_default();
    let targets: Vec<String> = steps[0]["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["target"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        loaded,
        format!(
            "sweep.json: loaded a sweep of {} step(s) of concurrency, {} target(s)",
            steps.len(),
            targets.len()
        )
    );
    assert_eq!(drawn["kind"], "concurrency");
    assert_eq!(drawn["axis"], "concurrency (streams at once)");
    // The figure each line draws, read from the file as the page should.
    let figures: [(&str, Figure); 3] = [
        ("browser-ttft-visible", |t| {
            &t["browser"]["statistics"]["ttft_visible_ms"]["p50"]
        }),
        (
            "browser-ttft",
            |t| &t["browser"]["statistics"]["ttft_ms"]["p50"],
        ),
        ("load-ttft", |t| &t["load"]["metrics"]["ttft_ms"]["p50"]),
    ];
    let lines = drawn["lines"].as_array().cloned().unwrap_or_default();
    assert_eq!(lines.len(), targets.len() * figures.len(), "{lines:?}");
    let points = drawn["points"].as_array().cloned().unwrap_or_default();
    assert_eq!(points.len(), targets.len() * figures.len() * steps.len());
    let num = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let axis = |ticks: &Value| -> Vec<(f64, f64)> {
        ticks
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| (num(&t[0]), num(&t[1])))
            .collect()
    };
    let (y_ticks, x_ticks) = (axis(&drawn["y_ticks"]), axis(&drawn["x_ticks"]));
    assert!(
        y_ticks.len() >= 3 && x_ticks.len() == steps.len(),
        "{drawn}"
    );
    for target in &targets {
        for (figure, read) in figures {
            assert!(
                lines.iter().any(|l| l[0] == *target && l[1] == figure),
                "no {figure} line for {target}"
            );
            for step in &steps {
                let level = num(&step["level"]["value"]);
                let t = step["targets"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|t| t["target"] == *target)
                    .unwrap_or(&Value::Null);
                let value = num(read(t));
                let p = points
                    .iter()
                    .find(|p| {
                        p["target"] == *target && p["figure"] == figure && num(&p["level"]) == level
                    })
                    .unwrap_or(&Value::Null);
                // The page's serde_json parses floats the fast way (no float_roundtrip
                // in its wasm): within a unit in the last place of the file's.
                assert!(
                    (num(&p["value"]) - value).abs() <= 1e-12 * value.abs(),
                    "{target} {figure} at {level}: {} drawn, {value} in the file",
                    p["value"]
                );
                let y = on_axis(y_ticks[0], y_ticks[1], value);
                let x = on_axis(x_ticks[0], x_ticks[1], level);
                assert!((num(&p["y"]) - y).abs() < 0.01, "{p} against y {y}");
                assert!((num(&p["x"]) - x).abs() < 0.01, "{p} against x {x}");
            }
        }
    }
    // The first visible token waits longer under load at the last step than at the first.
    let first_vis =
        |s: &Value| num(&s["targets"][0]["browser"]["statistics"]["ttft_visible_ms"]["p50"]);
    assert!(first_vis(&steps[steps.len() - 1]) > first_vis(&steps[0]));

    // The budget: its limit across the chart, its break at the first failing step.
    let budget = &steps[0]["budgets"][0];
    let text = budget["budget"].as_str().unwrap_or_default();
    let limit = num(&budget["limit"]);
    let budgets = drawn["budgets"].as_array().cloned().unwrap_or_default();
    assert_eq!(budgets.len(), 1, "{budgets:?}");
    assert_eq!(
        (budgets[0][0].as_str(), num(&budgets[0][1])),
        (Some(text), limit)
    );
    assert!((num(&budgets[0][2]) - on_axis(y_ticks[0], y_ticks[1], limit)).abs() < 0.01);
    let broke = steps
        .iter()
        .position(|s| s["budgets"][0]["passed"] == false)
        .ok_or_else(|| anyhow::anyhow!("the fixture's budget breaks"))?;
    let label = format!("concurrency={}", num(&steps[broke]["level"]["value"]));
    let breaks = drawn["breaks"].as_array().cloned().unwrap_or_default();
    assert_eq!(breaks.len(), 1, "{breaks:?}");
    assert_eq!(breaks[0]["step"].as_f64(), Some(broke as f64));
    assert_eq!(breaks[0]["label"].as_str(), Some(label.as_str()));
    assert_eq!(
        breaks[0]["text"].as_str(),
        Some(format!("{text} breaks at {label}").as_str())
    );
    let x = on_axis(x_ticks[0], x_ticks[1], num(&steps[broke]["level"]["value"]));
    assert!((num(&breaks[0]["x"]) - x).abs() < 0.01, "{breaks:?}");
    assert!(
        budget_items.contains(&format!("budget {text} breaks at {label} (")),
        "{budget_items}"
    );
    // The tables: one per target, a row per step, their figures the file's.
    assert_eq!(
        table_rows.len(),
        steps.len() * targets.len(),
        "{table_rows:?}"
    );
    let in_order =
        (0..targets.len()).flat_map(|t| steps.iter().map(move |s| (s, &s["targets"][t])));
    for (row, (step, target)) in table_rows.iter().zip(in_order) {
        let stats = &target["browser"]["statistics"];
        assert_eq!(
            row[..5],
            [
                format!("concurrency={}", num(&step["level"]["value"])),
                target["browser"]["outcomes"]["total"].to_string(),
                shown(&stats["ttft_visible_ms"]["p50"]),
                shown(&stats["ttft_visible_ms"]["p90"]),
                shown(&stats["ttft_ms"]["p50"]),
            ],
            "{row:?}"
        );
        assert_eq!(
            row[9],
            shown(&target["load"]["metrics"]["ttft_ms"]["p50"]),
            "{row:?}"
        );
    }
    assert_eq!(table_targets, targets);

    // Another ttfx document with a schema is the reader's message; the sweep stays drawn.
    assert_eq!(
        other,
        "load.json: unsupported schema \"ttfx-load\" (this ttfx reads ttfx-sweep/1 sweeps)"
    );
    assert_eq!(still, lines.len());
    Ok(())
}
