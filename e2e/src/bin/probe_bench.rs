//! `cargo xtask bench` section: the probe's cost in headless Chromium.
//!
//! Prints the probe's main-thread time per chunk (median and p90, µs) and the app's
//! token-to-DOM time with and without the probe, measured A/B on the same simulated
//! stream in one run.

use serde_json::json;
use ttfx_e2e::site::Site;
use ttfx_e2e::{Chromedriver, ServeProcess, page, paths};

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    // numpy's default (linear) interpolation, like the rest of ttfx.
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn sorted(value: &serde_json::Value) -> Vec<f64> {
    let mut v: Vec<f64> = value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_f64())
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let site = Site::assemble()?;
    let server = ServeProcess::start(&paths::ttfx_bin()?, &["--dist", site.dist_arg()])?;
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

    let cost = sorted(&out["cost"]);
    let diff = sorted(&out["differences"]);
    let without = sorted(&out["without"]);
    let with = sorted(&out["withProbe"]);
    println!(
        "\n## probe cost in headless Chromium ({runs} A/B pairs, {tokens} tokens each, 100 tok/s)"
    );
    // The page clock steps 0.1 ms (not cross-origin isolated), so single samples are 0 or
    // 100 µs; their mean over many calls is still an unbiased estimate of the true mean.
    let mean = cost.iter().sum::<f64>() / cost.len().max(1) as f64;
    println!(
        "probe main-thread time per chunk call: mean {:.1} µs, p90 {:.1} µs, max {:.1} µs ({} calls; 100 µs clock step)",
        mean * 1000.0,
        percentile(&cost, 0.9) * 1000.0,
        cost.last().copied().unwrap_or(f64::NAN) * 1000.0,
        cost.len()
    );
    println!(
        "token-to-DOM since request start: without probe median {:.1} ms, with probe median {:.1} ms",
        percentile(&without, 0.5),
        percentile(&with, 0.5)
    );
    println!(
        "paired difference (with − without, same token index): median {:+.2} ms, p90 {:+.2} ms ({} pairs)",
        percentile(&diff, 0.5),
        percentile(&diff, 0.9),
        diff.len()
    );
    Ok(())
}
