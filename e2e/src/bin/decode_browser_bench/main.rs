//! `cargo xtask bench decode-browser` (issue #35): the probe's analysis (the package's
//! `analysis/ttfx_analysis.js`, called as probe.js calls it) against what a team's own
//! JavaScript does (npm `eventsource-parser` 3 + `JSON.parse` for SSE; a TextDecoder +
//! `split("\n")` + `JSON.parse` loop for NDJSON), on the main thread of one page per
//! engine, over OpenAI chat, Anthropic and Ollama bodies of 2,000 and 50,000 events in
//! 1 KiB chunks. Prints MB/s of each side, their ratio, and a 2,000-event reply's cost on
//! a fresh browser's first call and warm. Figures only: no bound is checked, but both
//! sides must decode every body right (the page throws otherwise).
//!
//! `--peer DIR`: eventsource-parser's package folder (xtask installs it); `--names DIR`:
//! the analysis built with its function names kept, for a Chromium CPU profile;
//! `--engines a,b`: chromium, firefox, webkit (default all); `--rounds N` (default 7);
//! `--summary FILE`: the medians also written as JSON (`figures::summary`), for a caller
//! that sets runs side by side (`cargo xtask bench analysis-options`).
//! The probe package: `$TTFX_PROBE_PKG`, else the target folder's.

mod figures;
mod profile;
mod server;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use fantoccini::Client;
use fantoccini::wd::TimeoutConfiguration;
use serde_json::{Value, json};
use ttfx_e2e::engines::Engine;
use ttfx_e2e::{Browser, page, paths};

use figures::{First, Warm};

const DIALECTS: [&str; 3] = ["openai-chat", "anthropic", "ollama"];
const SIZES: [usize; 2] = [2_000, 50_000];
/// The reply whose per-reply cost is printed.
const REPLY_EVENTS: usize = 2_000;
/// Fresh browsers per side and body for the first call.
const FIRST_SAMPLES: usize = 3;
/// A page call's bound: 50,000-event rounds in a slow engine on a busy machine.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(600);

struct Args {
    peer: PathBuf,
    names: Option<PathBuf>,
    engines: Vec<Engine>,
    rounds: usize,
    summary: Option<PathBuf>,
}

fn args() -> anyhow::Result<Args> {
    let mut peer = None;
    let mut names = None;
    let mut summary = None;
    let mut engines = Engine::ALL.to_vec();
    let mut rounds = 7;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--peer" => peer = Some(PathBuf::from(value()?)),
            "--names" => names = Some(PathBuf::from(value()?)),
            "--summary" => summary = Some(PathBuf::from(value()?)),
            "--rounds" => {
                rounds = value()?
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .context("--rounds needs a number ≥ 1")?;
            }
            "--engines" => {
                engines = value()?
                    .split(',')
                    .map(|name| {
                        Engine::ALL
                            .into_iter()
                            .find(|e| e.name() == name)
                            .with_context(|| format!("unknown engine {name}"))
                    })
                    .collect::<anyhow::Result<_>>()?;
            }
            other => bail!(
                "unknown argument {other} (expected --peer DIR, --names DIR, --engines LIST, \
                 --rounds N, --summary FILE)"
            ),
        }
    }
    let peer = peer.context("--peer DIR (eventsource-parser's package folder) is required")?;
    if !peer.join("dist/index.js").is_file() {
        bail!("no eventsource-parser at {}", peer.display());
    }
    Ok(Args {
        peer,
        names,
        engines,
        rounds,
        summary,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let pkg = paths::probe_pkg()?;
    let mut mounts: server::Mounts = vec![
        ("/", paths::workspace_root().join("e2e/pages")),
        ("/pkg/", pkg.clone()),
        ("/esp/", args.peer.clone()),
    ];
    if let Some(names) = &args.names {
        mounts.push(("/pkg-names/", names.clone()));
    }
    let base = server::start(mounts).await?;
    let version = std::fs::read_to_string(args.peer.join("package.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|p| p["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".into());
    println!(
        "\n## decode in the browser (#35): the probe's analysis ({}) against \
         eventsource-parser {version} + JSON.parse (SSE) and a TextDecoder + split + \
         JSON.parse loop (NDJSON), main thread, 1 KiB chunks (analysis: 16 KiB batches); \
         medians; MB = 10^6 B",
        pkg.join("analysis/ttfx_analysis.js").display()
    );
    let (mut warm, mut first) = (Vec::new(), Vec::new());
    for engine in &args.engines {
        match engine_bench(*engine, &base, &args).await {
            Ok((w, f)) => {
                warm.extend(w);
                first.extend(f);
            }
            Err(e) => println!("{}: not measured: {e:#}", engine.name()),
        }
    }
    println!(
        "\n### throughput: {} alternating rounds (analysis, peer) after one warm-up pair \
         per body (×3 for 2,000 events); ratio = analysis MB/s ÷ peer MB/s",
        args.rounds
    );
    figures::print_warm(&warm);
    println!(
        "\n### a {REPLY_EVENTS}-event reply's first call: a fresh browser per call (median of \
         {FIRST_SAMPLES}), no HTTP or code cache (no-store); load = the module's import, \
         and for the analysis its wasm fetched, compiled and instantiated, `new \
         Analysis()` and `Analysis.warmUp()` (as the probe's Worker loads it); then 100 ms \
         (a short TTFT: the probe loads the analysis when the request starts); run = the \
         first decode; the body made before the clock starts. Warm cost: the table above's \
         ms/reply at {REPLY_EVENTS} events"
    );
    figures::print_first(&first);
    if let Some(path) = &args.summary {
        let text = serde_json::to_string_pretty(&figures::summary(&warm, &first))?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Opens a session of `browser` on the bench page, with a script bound long enough for
/// the long bodies.
async fn open(browser: &Browser, base: &str) -> anyhow::Result<Client> {
    let client = browser.session().await?;
    client
        .update_timeouts(TimeoutConfiguration::new(
            Some(SCRIPT_TIMEOUT),
            Some(Duration::from_secs(60)),
            Some(Duration::ZERO),
        ))
        .await?;
    page::open_harness(&client, &format!("{base}decode_bench.html")).await?;
    Ok(client)
}

/// Calls `window.decodeBench[function](arg)` and returns what its promise resolved to.
pub async fn call(client: &Client, function: &str, arg: Value) -> anyhow::Result<Value> {
    let script = format!(
        "const done = arguments[arguments.length - 1];
         window.decodeBench.{function}(arguments[0]).then(done,
           (e) => done({{ benchError: String((e && e.stack) || e) }}));"
    );
    let value = client.execute_async(&script, vec![arg]).await?;
    if let Some(error) = value.get("benchError") {
        bail!("decodeBench.{function} failed in the page: {error}");
    }
    Ok(value)
}

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .collect()
}

/// Every body's rounds in one page, then the first calls, each in a fresh browser; for
/// Chromium with `--names`, the profile.
async fn engine_bench(
    engine: Engine,
    base: &str,
    args: &Args,
) -> anyhow::Result<(Vec<Warm>, Vec<First>)> {
    let browser = Browser::start(engine)?;
    let client = open(&browser, base).await?;
    // The wasm tiers up (Liftoff, then TurboFan) and the JS is optimized over the first
    // runs: a long body of each side first, so the first body measured is not the one
    // that pays for it.
    call(
        &client,
        "warm",
        json!({ "dialect": "openai-chat", "events": 50_000, "rounds": 1 }),
    )
    .await?;
    let mut warm = Vec::new();
    for dialect in DIALECTS {
        for events in SIZES {
            let rounds = if events == REPLY_EVENTS {
                3 * args.rounds
            } else {
                args.rounds
            };
            let out = call(
                &client,
                "warm",
                json!({ "dialect": dialect, "events": events, "rounds": rounds }),
            )
            .await?;
            if warm.is_empty() {
                println!(
                    "{}: page clock step {:.3} ms, cross-origin isolated {}",
                    engine.name(),
                    out["clockStepMs"].as_f64().unwrap_or(f64::NAN),
                    out["isolated"]
                );
            }
            warm.push(Warm {
                engine: engine.name(),
                dialect,
                events,
                bytes: out["bytes"].as_f64().unwrap_or(f64::NAN),
                analysis: numbers(&out["analysisMs"]),
                peer: numbers(&out["peerMs"]),
            });
        }
    }
    if engine == Engine::Chromium
        && let Some(_) = &args.names
        && let Err(e) = profile::analysis(&client, "openai-chat", 50_000).await
    {
        println!("chromium: no profile: {e:#}");
    }
    client.close().await?;

    let mut first = Vec::new();
    for dialect in DIALECTS {
        let mut f = First {
            engine: engine.name(),
            dialect,
            analysis_load: Vec::new(),
            analysis_run: Vec::new(),
            peer_load: Vec::new(),
            peer_run: Vec::new(),
        };
        for _ in 0..FIRST_SAMPLES {
            for side in ["analysis", "peer"] {
                let client = open(&browser, base).await?;
                let out = call(
                    &client,
                    "first",
                    json!({ "side": side, "dialect": dialect, "events": REPLY_EVENTS }),
                )
                .await;
                client.close().await?;
                let out = out?;
                let (load, run) = if side == "analysis" {
                    (&mut f.analysis_load, &mut f.analysis_run)
                } else {
                    (&mut f.peer_load, &mut f.peer_run)
                };
                load.push(out["loadMs"].as_f64().unwrap_or(f64::NAN));
                run.push(out["runMs"].as_f64().unwrap_or(f64::NAN));
            }
        }
        first.push(f);
    }
    Ok((warm, first))
}
