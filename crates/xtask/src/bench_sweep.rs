//! `cargo xtask bench load`'s second half (#33 point 6): a sweep of five steps with two
//! browsers per step must finish within its steps' durations plus 20 %. The steps'
//! durations are what the sweep promises (warm-up + measured window per step); what it
//! adds on top is the browsers' start, each step's batch beyond its window, and the
//! load's stop (its open streams awaited). Run through `ttfx run --sweep` as a user runs
//! it, timed from outside; the per-step seconds come from its `--json`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::Context;

use crate::{paths, setup};

const LEVELS: &str = "concurrency=1,2,4,8,16";
const STEPS: usize = 5;
/// The allowance over the steps' own durations.
const ALLOWED: f64 = 1.20;

/// Runs the sweep with the release `ttfx` in `release` and prints its figures.
pub fn sweep_timing(release: &Path, quick: bool) -> anyhow::Result<()> {
    // The probe package's build tools and Chromium, as the fidelity bench.
    setup::ensure(setup::BENCH_TOOLS)?;
    let pkg = crate::probe_pkg::build()?;
    // The full run: long enough steps that a sweep's fixed costs are a fair share of a
    // real one (GuideLLM's default step is 30 s; 10 s keeps the bench near a minute).
    // Either way the browsers' four runs (two per session, about 1.2 s each with the
    // page's report) fit in the window: a step whose runs outlast it is longer by design.
    let (warmup_s, duration_s) = if quick { (1.0, 5.0) } else { (2.0, 10.0) };
    let json = paths::target().join("bench-sweep.json");
    let promised = STEPS as f64 * (warmup_s + duration_s);
    println!(
        "\n## ttfx run --sweep {LEVELS}: {STEPS} steps × ({warmup_s} s warm-up + \
         {duration_s} s), two Chromium sessions per step (goal: ≤ {:.0} s, the steps' \
         {promised:.0} s + 20 %)",
        promised * ALLOWED
    );
    let started = Instant::now();
    let out = Command::new(release.join("ttfx"))
        .arg("run")
        .arg("--probe-pkg")
        .arg(&pkg)
        .args(["--driver", setup::CHROMEDRIVER])
        .args([
            "--target",
            // A reply of about 0.7 s idle; each stream in the batch adds 20 ms to TTFT.
            "sim/default?ttft_ms=200&tokens_per_second=100&output_tokens=50&load_ttft_ms=20&seed=11",
            "--sweep",
            LEVELS,
            "--concurrency",
            "2",
            "--runs",
            "4",
            "--step-warmup-s",
            &warmup_s.to_string(),
            "--step-duration-s",
            &duration_s.to_string(),
            "--json",
        ])
        .arg(&json)
        .output()
        .context("cannot start ttfx run")?;
    let wall = started.elapsed().as_secs_f64();
    if !out.status.success() {
        anyhow::bail!(
            "ttfx run --sweep failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let sweep: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json).with_context(|| format!("{}", json.display()))?,
    )?;
    let steps = sweep["steps"].as_array().context("no steps in the sweep")?;
    println!(
        "| step | steps' own s | took s | browser runs | load requests | load ttft p50 ms | browser ttft p50 ms |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut in_steps = 0.0;
    for step in steps {
        let seconds = step["seconds"].as_f64().unwrap_or(f64::NAN);
        in_steps += seconds;
        let target = &step["targets"][0];
        println!(
            "| {}={} | {:.0} | {seconds:.1} | {} | {} | {:.1} | {:.1} |",
            step["level"]["kind"].as_str().unwrap_or("?"),
            step["level"]["value"],
            warmup_s + duration_s,
            target["browser"]["outcomes"]["total"],
            target["load"]["requests"]["completed"],
            target["load"]["metrics"]["ttft_ms"]["p50"]
                .as_f64()
                .unwrap_or(f64::NAN),
            target["browser"]["statistics"]["ttft_ms"]["p50"]
                .as_f64()
                .unwrap_or(f64::NAN),
        );
    }
    let ratio = wall / promised;
    println!(
        "whole sweep: {wall:.1} s wall ({in_steps:.1} s in steps, {:.1} s before and after \
         them: the server, the browsers' start and stop) against the steps' {promised:.0} s: \
         {ratio:.2}× ({})",
        wall - in_steps,
        if ratio <= ALLOWED {
            "within the goal"
        } else {
            "OVER the goal"
        }
    );
    let _ = std::fs::remove_file(&json);
    Ok(())
}
