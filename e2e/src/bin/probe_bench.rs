//! `cargo xtask bench` section: the probe's cost in headless Chromium.
//!
//! Prints the probe's main-thread time per chunk, at stream end and per report (µs, on a
//! cross-origin isolated page: 5 µs clock) and the app's chunk-to-DOM time (server send →
//! the app's DOM write) with and without the probe, measured A/B on the same simulated
//! stream in one run.

use anyhow::Context;
use serde_json::json;
use ttfx_core::stats::Summary;
use ttfx_e2e::site::Site;
use ttfx_e2e::{Chromedriver, ServeProcess, page, paths};

/// The numbers in `value` (a JSON array); empty when it is not one.
fn numbers(value: &serde_json::Value) -> Vec<f64> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_f64)
        .collect()
}

/// ttfx's own statistics (numpy-linear percentiles), so the figures read like a report's.
fn summary(value: &serde_json::Value) -> anyhow::Result<Summary> {
    Summary::of(&numbers(value)).context("the page returned no samples")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let site = Site::assemble()?;
    // Cross-origin isolated, so the page clock steps 5 µs instead of 0.1 ms: the probe's
    // cost per chunk is tens of µs.
    let server = ServeProcess::start(
        &paths::ttfx_bin()?,
        &["--dist", site.dist_arg(), "--cross-origin-isolated"],
    )?;
    let driver = Chromedriver::start()?;
    let client = driver.session().await?;
    page::open_harness(&client, &format!("{}harness.html", server.url)).await?;
    let runs = 10;
    let tokens = 60;
    let url = format!(
        "{}sim/default/v1/chat/completions?ttft_ms=50&output_tokens={tokens}&tokens_per_second=100",
        server.url
    );
    let init = json!({ "method": "POST", "headers": { "content-type": "application/json" },
        "body": "{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}" });
    let out = page::call(
        &client,
        "bench",
        json!({ "url": url, "init": init, "runs": runs }),
    )
    .await?;
    client.close().await?;

    println!(
        "\n## probe cost in headless Chromium ({runs} A/B pairs, {tokens} tokens each, 100 tok/s)"
    );
    let step_us = out["clockStepMs"].as_f64().unwrap_or(f64::NAN) * 1000.0;
    println!(
        "page clock: cross-origin isolated {}, step {step_us:.0} µs",
        out["isolated"]
    );
    let mut chunk_work_ms = 0.0;
    for (hook, what) in [
        ("chunk", "per chunk as it arrives (copy into the batch)"),
        (
            "onChunks",
            "per batch decode (each 16 KiB and at stream end)",
        ),
        ("onEnd", "at stream end"),
        (
            "report",
            "per report (timeline, metrics, JSON, delivery; once per run)",
        ),
    ] {
        let cost = summary(&out["cost"][hook]).with_context(|| format!("cost of {hook}"))?;
        if hook == "chunk" || hook == "onChunks" {
            chunk_work_ms += cost.mean * cost.count as f64;
        }
        println!(
            "probe main-thread time {what}: median {:.0} µs, mean {:.0} µs, p90 {:.0} µs, max {:.0} µs ({} calls)",
            cost.p50 * 1000.0,
            cost.mean * 1000.0,
            cost.p90 * 1000.0,
            cost.max * 1000.0,
            cost.count
        );
    }
    // Everything the probe did on the main thread for the stream's chunks, over the
    // chunks: what one chunk costs the page, batch decoding included.
    let chunks = numbers(&out["cost"]["chunk"]).len();
    println!(
        "probe main-thread time per chunk, all chunk work (copy + batch decode) / chunks: {:.1} µs ({chunks} chunks)",
        chunk_work_ms * 1000.0 / chunks.max(1) as f64
    );
    // Both ends read this machine's wall clock (server: SystemTime; page: timeOrigin +
    // performance.now()); any offset between the two is the same in both arms and
    // cancels in the paired difference.
    let without = summary(&out["without"])?;
    let with = summary(&out["withProbe"])?;
    let diff = summary(&out["differences"])?;
    println!(
        "app chunk-to-DOM (server sends the chunk → app writes its text): without probe median {:.2} ms (p90 {:.2}), with probe median {:.2} ms (p90 {:.2})",
        without.p50, without.p90, with.p50, with.p90
    );
    println!(
        "paired difference (with − without, same DOM update of an ABBA pair): median {:+.2} ms, p90 {:+.2} ms ({} pairs)",
        diff.p50, diff.p90, diff.count
    );
    Ok(())
}
