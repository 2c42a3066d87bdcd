//! A Chromium CPU profile of the analysis's runs (DevTools `Profiler`, through the
//! session's debugger address): self time per function, the wasm's by the names its
//! names-kept build carries, so the decoder's engineer sees where the time goes.

use std::collections::HashMap;

use anyhow::Context;
use fantoccini::Client;
use serde_json::{Value, json};
use ttfx_webdriver::devtools::Cdp;

use crate::call;

/// Sampling interval, µs: fine enough for functions of a few µs per call over a few
/// hundred ms of runs.
const INTERVAL_US: u64 = 100;

/// Profiled runs over the body.
const RUNS: usize = 5;

/// Functions printed.
const TOP: usize = 25;

/// Profiles the analysis on `dialect` × `events` in the open page and prints its top
/// self-time functions.
pub async fn analysis(client: &Client, dialect: &str, events: usize) -> anyhow::Result<()> {
    let (cdp, _events) = Cdp::attach(client.capabilities())
        .await
        .context("cannot attach to the page's DevTools")?;
    let prepared = call(
        client,
        "prepareProfile",
        json!({ "dialect": dialect, "events": events }),
    )
    .await?;
    cdp.call("Profiler.enable", json!({})).await?;
    cdp.call(
        "Profiler.setSamplingInterval",
        json!({ "interval": INTERVAL_US }),
    )
    .await?;
    cdp.call("Profiler.start", json!({})).await?;
    let runs = call(client, "profile", json!({ "runs": RUNS })).await;
    let stopped = cdp.call("Profiler.stop", json!({})).await?;
    let runs = runs?;
    let top = self_times(&stopped["profile"]).context("the profile has no samples")?;
    let total: f64 = top.iter().map(|(_, us)| us).sum();
    println!(
        "\n### Chromium CPU profile: the analysis (names kept, no wasm-opt) over {dialect} \
         {events} events ({} B), {RUNS} runs (ms: {}), sampled every {INTERVAL_US} µs; \
         self time",
        prepared["bytes"],
        runs["ms"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .map(|ms| format!("{ms:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (name, us) in top.iter().take(TOP) {
        println!(
            "{:>8.1} ms {:>5.1} %  {name}",
            us / 1e3,
            100.0 * us / total.max(1.0)
        );
    }
    Ok(())
}

/// (function, self µs) from a DevTools `Profile`, largest first; functions of the same
/// name and script are one row.
fn self_times(profile: &Value) -> Option<Vec<(String, f64)>> {
    let names: HashMap<u64, String> = profile["nodes"]
        .as_array()?
        .iter()
        .filter_map(|node| {
            let frame = &node["callFrame"];
            let name = frame["functionName"].as_str().filter(|n| !n.is_empty());
            let script = frame["url"].as_str().unwrap_or("");
            let script = script.rsplit('/').next().unwrap_or(script);
            let label = match (name, script) {
                (Some(n), "") => n.to_owned(),
                (Some(n), s) => format!("{n}  [{s}]"),
                (None, s) => format!("(anonymous)  [{s}]"),
            };
            Some((node["id"].as_u64()?, label))
        })
        .collect();
    let samples = profile["samples"].as_array()?;
    let deltas = profile["timeDeltas"].as_array()?;
    let mut by_name: HashMap<&str, f64> = HashMap::new();
    // timeDeltas[i] is the time before sample i: the time after it is the next delta.
    for (i, sample) in samples.iter().enumerate() {
        let Some(name) = sample.as_u64().and_then(|id| names.get(&id)) else {
            continue;
        };
        let us = deltas.get(i + 1).and_then(Value::as_f64).unwrap_or(0.0);
        *by_name.entry(name).or_default() += us;
    }
    let mut rows: Vec<(String, f64)> = by_name
        .into_iter()
        .map(|(name, us)| (name.to_owned(), us))
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    (!rows.is_empty()).then_some(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_time_goes_to_the_sampled_node() {
        let profile = json!({
            "nodes": [
                { "id": 1, "callFrame": { "functionName": "(root)", "url": "" } },
                { "id": 2, "callFrame": { "functionName": "decode", "url": "http://x/pkg/a.wasm" } },
            ],
            "samples": [2, 2, 1],
            "timeDeltas": [0, 100, 100],
        });
        let rows = self_times(&profile).unwrap();
        assert_eq!(rows[0], ("decode  [a.wasm]".to_owned(), 200.0));
        assert!(self_times(&json!({})).is_none());
    }
}
