//! The probe as a frontend team ships it: the tarball `npm pack` wrote is installed into
//! a Vite app (e2e/vite-app), the app is built by Vite (pinned by `cargo xtask setup`),
//! served by `ttfx serve` and measures a stream in headless Chromium. The bundler, not
//! the probe's own folder layout, resolves the package's entry, its analysis Worker and
//! the Worker's wasm.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use ttfx_e2e::machine::Machine;
use ttfx_e2e::site::copy_dir;
use ttfx_e2e::{Chromedriver, ServeProcess, paths};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let out = command.output()?;
    anyhow::ensure!(out.status.success(), "{what} failed:\n{}", text(&out));
    Ok(())
}

/// The app folder with the packed probe installed and Vite's build in `dist/`.
fn build_app(dir: &Path) -> anyhow::Result<()> {
    copy_dir(&paths::workspace_root().join("e2e/vite-app"), dir)?;
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "vite-app", "private": true, "type": "module" }"#,
    )?;
    // Offline: the tarball has no dependencies, so npm needs no registry.
    run(
        Command::new("npm")
            .args([
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--silent",
            ])
            .arg(paths::probe_tarball()?)
            .current_dir(dir),
        "npm install of the packed probe",
    )?;
    run(
        Command::new("node")
            .arg(paths::vite()?)
            .args(["build", "--logLevel", "warn"])
            .current_dir(dir),
        "vite build",
    )
}

/// The built app in a fresh folder (removed on drop).
struct App(PathBuf);

impl App {
    fn build(name: &str) -> anyhow::Result<App> {
        let dir = std::env::temp_dir().join(format!("ttfx-vite-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        build_app(&dir)?;
        Ok(App(dir))
    }

    fn dist(&self) -> PathBuf {
        self.0.join("dist")
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens `page` (the app, with the stream's URL in its query) in headless Chromium and
/// returns what the app left in `window.appResult`.
async fn app_result(page: &str, endpoint: &str) -> anyhow::Result<Value> {
    let driver = Chromedriver::start()?;
    let client = driver.session().await?;
    client
        .goto(&format!("{page}?{}", urlencode(endpoint)))
        .await?;
    let mut result = Value::Null;
    for _ in 0..200 {
        result = client
            .execute("return window.appResult || null", vec![])
            .await?;
        if !result.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = client.close().await;
    Ok(result)
}

const ENDPOINT: &str = "/sim/default/v1/chat/completions?ttft_ms=60&output_tokens=6&seed=4";

#[tokio::test]
async fn a_vite_app_bundles_the_packed_probe_and_measures_a_stream() -> anyhow::Result<()> {
    let _machine = Machine::take(false).await?;
    let app = App::build("plain")?;
    let server = ServeProcess::start(
        &paths::ttfx_bin()?,
        &["--dist", &app.dist().to_string_lossy()],
    )?;
    let result = app_result(&server.url, ENDPOINT).await?;
    assert!(result["error"].is_null(), "{result}");
    let run = &result["report"]["run"];
    assert_eq!(run["target"], "vite-app", "{result}");
    let milestones = &run["timeline"]["milestones"];
    let first_visible = milestones["first_visible_token"].as_f64().unwrap_or(0.0);
    // The simulator's first token is due 60 ms after the request arrives.
    assert!(first_visible >= 60.0, "{result}");
    assert!(milestones["first_dom"].is_number(), "{result}");
    assert_eq!(run["timeline"]["request"]["dialect"], "openai-chat");
    // The analysis ran in the package's Worker, which the bundler emitted with its wasm
    // (renamed with a content hash); the page itself fetched no wasm.
    assert_eq!(
        run["timeline"]["environment"]["analysis"], "worker",
        "{result}"
    );
    let page_wasm = result["wasm"].as_array().map_or(0, Vec::len);
    assert_eq!(page_wasm, 0, "the page fetched wasm up front: {result}");
    let assets: Vec<String> = std::fs::read_dir(app.dist().join("assets"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert!(
        assets
            .iter()
            .any(|a| a.starts_with("ttfx_analysis_bg") && a.ends_with(".wasm")),
        "{assets:?}"
    );
    assert!(
        assets
            .iter()
            .any(|a| a.starts_with("worker") && a.ends_with(".js")),
        "{assets:?}"
    );
    Ok(())
}

/// Percent-encodes a path with its query for the app's own query string.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The bundled app from a static server that sends a Content-Security-Policy header; the
/// stream comes from `ttfx serve` on another origin (CORS).
async fn csp_server(dist: PathBuf, policy: &'static str) -> anyhow::Result<String> {
    use axum::http::header;
    use axum::response::Response;
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let dist = dist.clone();
        async move {
            let path = match uri.path() {
                "/" => "index.html",
                p => p.trim_start_matches('/'),
            };
            let file = (!path.contains(".."))
                .then(|| std::fs::read(dist.join(path)).ok())
                .flatten();
            let content_type = match path.rsplit('.').next() {
                Some("html") => "text/html",
                Some("js") => "text/javascript",
                Some("wasm") => "application/wasm",
                _ => "application/octet-stream",
            };
            let builder = Response::builder().header("content-security-policy", policy);
            match file {
                Some(bytes) => builder
                    .header(header::CONTENT_TYPE, content_type)
                    .body(axum::body::Body::from(bytes)),
                None => builder.status(404).body(axum::body::Body::empty()),
            }
            .unwrap_or_default()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{addr}/"))
}

/// docs/probe.md's CSP: no inline script, no eval, only wasm compilation allowed. The
/// probe measures under it with its analysis in a Worker; with `worker-src 'none'` the
/// analysis runs on the main thread and the report says so; without `'wasm-unsafe-eval'`
/// the analysis cannot start anywhere, which shows the header is enforced, and the app's
/// stream is still untouched (the report says why the probe stopped).
#[tokio::test]
async fn the_probe_measures_under_a_strict_content_security_policy() -> anyhow::Result<()> {
    // Alone on the machine: the main-thread page's 4 ms slices are wall time (see
    // `main_thread_tasks_hold_the_slice`); the whole test takes about ten seconds.
    let _machine = Machine::take(true).await?;
    let app = App::build("csp")?;
    let sim = ServeProcess::start(&paths::ttfx_bin()?, &[])?;
    let endpoint = format!("{}{}", sim.url.trim_end_matches('/'), ENDPOINT);
    let mut texts = Vec::new();
    for (policy, site) in [
        (
            "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'",
            "worker",
        ),
        (
            "script-src 'self' 'wasm-unsafe-eval'; worker-src 'none'",
            "main_thread",
        ),
    ] {
        let page = csp_server(app.dist(), policy).await?;
        let mut result = app_result(&page, &endpoint).await?;
        if site == "main_thread" {
            result = main_thread_tasks_hold_the_slice(result, &page, &endpoint).await?;
        }
        assert!(result["error"].is_null(), "{policy}: {result}");
        let timeline = &result["report"]["run"]["timeline"];
        assert!(
            timeline["milestones"]["first_visible_token"]
                .as_f64()
                .unwrap_or(0.0)
                >= 60.0,
            "{policy}: {result}"
        );
        assert_eq!(
            timeline["environment"]["analysis"], site,
            "{policy}: {result}"
        );
        texts.push(result["text"].clone());
    }

    let no_wasm = csp_server(app.dist(), "script-src 'self'").await?;
    let refused = app_result(&no_wasm, &endpoint).await?;
    assert!(refused["error"].is_null(), "{refused}");
    assert_eq!(
        refused["text"], texts[0],
        "the app's reply is unchanged: {refused}"
    );
    let anomalies = refused["report"]["run"]["timeline"]["anomalies"].to_string();
    assert!(
        anomalies.contains("probe_fault")
            && (anomalies.contains("WebAssembly")
                || anomalies.contains("wasm")
                || anomalies.contains("Content Security Policy")),
        "{refused}"
    );
    Ok(())
}

/// The main-thread fallback runs the analysis in idle slices of 4 ms (analysis_host.js,
/// #35). `result["cost"]` is the front's cost samples (cost.js) as name, ms, name, ms, …:
/// "analysis OP" per call, then "slice" closing the idle task that ran them (the first
/// calls are the priming steps, ttfx-analysis's prime.rs, "analysis primeStep K").
///
/// Asserted: the report was built in more than one task (`finishBegin` and
/// `finishWrite` in different slices), no slice is a long task (50 ms, where browsers
/// report one and a user can feel it), and no slice is over 4 ms. A slice's time is
/// wall time, so on a loaded machine the kernel can take the core from a 1 ms slice for
/// a few ms (CFS's scheduling latency); such a preemption strikes one page, not the
/// next, while a step that does too much work is over in every fresh browser. So the
/// caller holds the machine alone (no other e2e binary's browsers beside it), and a page
/// with a slice over 4 ms is measured again in a fresh browser (the wasm compiled anew),
/// three pages at most, and the bound must hold on one of them; every page's figures are
/// printed. Measured with the 12 priming steps: slowest slice 1.0–3.0 ms idle (once 5.5,
/// the next page 1.8), 1.0–3.5 ms beside a release build on both cores; in a fresh-clone
/// `cargo xtask test` without the machine held, beside two lanes of other binaries'
/// browsers, one slice over 4 ms on each of three pages, each a different call (`begin`
/// 8.0 ms, under 0.8 ms on the other pages): preemption, not work. With the 5 steps
/// before, up to 8.1 ms beside a build (docs/probe.md).
async fn main_thread_tasks_hold_the_slice(
    mut result: Value,
    page: &str,
    endpoint: &str,
) -> anyhow::Result<Value> {
    const PAGES: usize = 3;
    let mut seen = Vec::new();
    loop {
        let slowest = slowest_main_thread_slice(&result)?;
        if slowest.0 <= SLICE_MS {
            return Ok(result);
        }
        seen.push(slowest);
        anyhow::ensure!(
            seen.len() < PAGES,
            "a main-thread analysis task over {SLICE_MS} ms on {PAGES} fresh pages: {seen:?}"
        );
        result = app_result(page, endpoint).await?;
    }
}

/// The 4 ms slice read on this page's clock: it is not cross-origin isolated, so
/// Chromium's clock steps 0.1 ms and a task of 4 ms can read as 4.1. (Only Chromium runs
/// this test.)
const SLICE_MS: f64 = 4.0 + 0.1;

/// One page's main-thread analysis tasks: checks the report was built in more than one
/// and none is a long task, prints them, and gives the slowest with its calls.
fn slowest_main_thread_slice(result: &Value) -> anyhow::Result<(f64, Vec<(String, f64)>)> {
    const LONG_TASK_MS: f64 = 50.0;
    let samples = result["cost"].as_array().cloned().unwrap_or_default();
    let named: Vec<(String, f64)> = samples
        .chunks_exact(2)
        .filter_map(|pair| Some((pair[0].as_str()?.to_string(), pair[1].as_f64()?)))
        .filter(|(name, _)| name == "slice" || name.starts_with("analysis "))
        .collect();
    // Each slice: its ms and the calls it ran.
    let mut slices: Vec<(f64, Vec<(String, f64)>)> = Vec::new();
    let mut calls = Vec::new();
    for (name, ms) in named {
        match name.strip_prefix("analysis ") {
            Some(op) => calls.push((op.to_string(), ms)),
            None => slices.push((ms, std::mem::take(&mut calls))),
        }
    }
    let slice_of = |op: &str| {
        slices
            .iter()
            .position(|(_, c)| c.iter().any(|(o, _)| o == op))
    };
    let (Some(begin), Some(write)) = (slice_of("finishBegin"), slice_of("finishWrite")) else {
        anyhow::bail!("no main-thread finish was sampled: {result}");
    };
    anyhow::ensure!(
        begin < write,
        "the report was built in one task: {slices:?}"
    );
    slices.sort_by(|a, b| b.0.total_cmp(&a.0));
    let Some(slowest) = slices.first().cloned() else {
        anyhow::bail!("no main-thread slice was sampled: {result}");
    };
    println!(
        "main-thread analysis tasks: {} slices, median {:.1} ms, max {:.1} ms, {} over \
         {SLICE_MS} ms; the slowest, with their calls: {:?}",
        slices.len(),
        slices[slices.len() / 2].0,
        slowest.0,
        slices.iter().filter(|(ms, _)| *ms > SLICE_MS).count(),
        &slices[..slices.len().min(4)]
    );
    anyhow::ensure!(
        slowest.0 < LONG_TASK_MS,
        "an analysis task of {:.1} ms (a long task): {slices:?}",
        slowest.0
    );
    Ok(slowest)
}
