//! The browser probe in every engine (headless Chromium and Firefox, WebKitGTK on Xvfb)
//! against real streaming servers on loopback: `ttfx serve`'s simulated endpoints
//! (injected delays, buffering, failures) and a byte server whose output is known
//! exactly. Each test is one body run per engine (`NAME::chromium`, `NAME::firefox`,
//! `NAME::webkit`); what an engine cannot do is said by `missing`, in one line.

use serde_json::{Value, json};
use ttfx_core::field::{FIELD_BINS, FieldReport, MAX_FIELD_REPORT_BYTES};
use ttfx_e2e::bounds::LOOPBACK_BOUND_MS;
use ttfx_e2e::engines::{Engine, missing};
use ttfx_e2e::site::{self, Site};
use ttfx_e2e::{Browser, ServeProcess, byte_server, engines, page, paths};

/// A served site and a browser of one engine on its harness page.
struct Fixture {
    client: fantoccini::Client,
    server: ServeProcess,
    _driver: Browser,
    _site: Site,
}

impl Fixture {
    async fn new(engine: Engine) -> anyhow::Result<Fixture> {
        Fixture::serving(engine, &[]).await
    }

    /// The fixture with extra `ttfx serve` flags.
    async fn serving(engine: Engine, flags: &[&str]) -> anyhow::Result<Fixture> {
        let site = site::assemble()?;
        let mut args = vec!["--dist", site.dist_arg()];
        args.extend_from_slice(flags);
        let server = ServeProcess::start(&paths::ttfx_bin()?, &args)?;
        let driver = Browser::start(engine)?;
        let client = driver.session().await?;
        page::open_harness(&client, &format!("{}harness.html", server.url)).await?;
        Ok(Fixture {
            client,
            server,
            _driver: driver,
            _site: site,
        })
    }

    async fn measure(&self, arg: Value) -> anyhow::Result<Value> {
        page::call(&self.client, "measure", arg).await
    }

    fn sim(&self, query: &str) -> String {
        format!("{}sim/default/v1/chat/completions?{query}", self.server.url)
    }
}

fn post_chat() -> Value {
    json!({
        "method": "POST",
        "headers": { "content-type": "application/json" },
        "body": ttfx_core::ChatApi::OpenAiChat.streaming_body("sim", "hi")
    })
}

/// The engine's name as the probe reports it (docs/report.md: `run.engine`).
fn probe_engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Chromium => "chromium",
        Engine::Firefox => "gecko",
        Engine::WebKit => "webkit",
    }
}

/// The state a new `AudioContext` reaches within 1 s of `resume()`: `running` where the
/// page can play sound; headless Firefox and WebKitGTK without a sound server stay
/// `suspended`.
async fn audio_context_state(client: &fantoccini::Client) -> anyhow::Result<String> {
    let state = client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             const ctx = new AudioContext();
             const give = () => { const s = ctx.state; ctx.close().catch(() => {}); done(s); };
             const timer = setTimeout(give, 1000);
             ctx.resume().then(() => { clearTimeout(timer); give(); }, () => {});",
            vec![],
        )
        .await?;
    Ok(state.as_str().unwrap_or("none").to_owned())
}

/// The page's `performance.now()` step in ms: the smallest change over 20 changes.
async fn clock_step(client: &fantoccini::Client) -> anyhow::Result<f64> {
    let step = client
        .execute(
            "let prev = performance.now(), min = Infinity, seen = 0;
             for (let i = 0; i < 1e7 && seen < 20; i++) {
               const t = performance.now();
               if (t !== prev) { min = Math.min(min, t - prev); prev = t; seen++; }
             }
             return min;",
            vec![],
        )
        .await?;
    step.as_f64()
        .filter(|s| s.is_finite())
        .ok_or_else(|| anyhow::anyhow!("no clock step measured: {step}"))
}

/// Whether the page's engine has Element Timing (Chromium only, so far), and whether its
/// entries carry `presentationTime` (Chromium 156 and later).
async fn element_timing(client: &fantoccini::Client) -> anyhow::Result<(bool, bool)> {
    let has = client
        .execute(
            "return [PerformanceObserver.supportedEntryTypes.includes('element'), \
             typeof PerformanceElementTiming !== 'undefined' && \
             'presentationTime' in PerformanceElementTiming.prototype]",
            vec![],
        )
        .await?;
    Ok((has[0] == Value::Bool(true), has[1] == Value::Bool(true)))
}

fn milestone(report: &Value, name: &str) -> Option<f64> {
    report["run"]["timeline"]["milestones"][name].as_f64()
}

async fn milestones_honour_the_injected_delay_and_arrive_in_order(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let ttft = 300.0;
    let out = f
        .measure(json!({
            "url": f.sim(&format!("ttft_ms={ttft}&output_tokens=40&tokens_per_second=80")),
            "init": post_chat(),
        }))
        .await?;
    let report = &out["report"];
    assert_eq!(out["appError"], Value::Null, "{out}");
    assert!(
        !out["text"].as_str().unwrap_or_default().is_empty(),
        "the app rendered text: {out}"
    );

    let m = |n| milestone(report, n).unwrap_or_else(|| panic!("no {n} in {report}"));
    let first_byte = m("first_byte");
    let first_token = m("first_token");
    println!("first_byte {first_byte:.1} ms, first_token {first_token:.1} ms, injected {ttft} ms");
    assert!(
        first_token >= ttft,
        "first_token {first_token} < injected {ttft}"
    );
    assert!(
        first_token - ttft < LOOPBACK_BOUND_MS,
        "first_token {first_token} vs {ttft}"
    );
    // The order a user meets them in.
    let order = [
        "request_start",
        "headers",
        "first_byte",
        "first_event",
        "first_token",
        "first_visible_token",
        "last_token",
        "done",
    ];
    for pair in order.windows(2) {
        assert!(
            m(pair[0]) <= m(pair[1]),
            "{} after {}: {report}",
            pair[0],
            pair[1]
        );
    }
    // Render: the app inserts text after the token arrives, and paints after that.
    let dom = m("first_dom");
    let paint = m("first_paint");
    assert!(
        m("first_visible_token") <= dom,
        "first_dom before the token: {report}"
    );
    assert!(dom <= paint, "first_paint before first_dom: {report}");
    // Element Timing's presentation time where the engine has it (its paint time then
    // beside it), its render time in an older Chromium, else the probe's own estimate.
    let paint_method = match element_timing(&f.client).await? {
        (true, true) => {
            let painted = m("paint_time");
            assert!(
                dom <= painted && painted <= paint,
                "paint_time outside first_dom..first_paint: {report}"
            );
            "presentation_time"
        }
        (true, false) => "element_timing",
        (false, _) => {
            missing(
                engine,
                "milestones_honour_the_injected_delay_and_arrive_in_order",
                "Element Timing",
                "no `element` in PerformanceObserver.supportedEntryTypes; first_paint is \
                 raf_next_frame, the start of the frame after the one that rendered the text",
            );
            assert_eq!(milestone(report, "paint_time"), None, "{report}");
            "raf_next_frame"
        }
    };
    assert_eq!(
        report["run"]["timeline"]["paint_method"], paint_method,
        "{report}"
    );
    // Server-Timing from the headers and the browser's own Resource Timing entry.
    let timings = report["run"]["timeline"]["server"]["timings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        timings
            .iter()
            .any(|t| t["name"] == "queue" && t["source"] == "server_timing_header"),
        "{report}"
    );
    // ttfx serve reports its receive/send wall times; client and server share this
    // machine's clock, so the true offset is 0 and the estimate must lie within its own
    // error bound (half the round trip plus the page clock's step) plus the 1 µs rounding
    // of the server's desc values.
    let offset = &report["run"]["metrics"]["clock_offset"];
    let (value, bound) = (
        offset["offset_ms"].as_f64(),
        offset["error_bound_ms"].as_f64(),
    );
    let (Some(value), Some(bound)) = (value, bound) else {
        panic!("no clock offset: {report}")
    };
    assert!(
        value.abs() <= bound + 0.01,
        "offset {value} ms outside ±{bound} ms"
    );
    let rt = &report["run"]["timeline"]["resource_timing"];
    assert!(
        rt["response_start_ms"].as_f64().is_some(),
        "no Resource Timing: {report}"
    );
    // The network boundary is a milestone of its own, before the page's first byte (the
    // engine's hop between them is the report's engine_hop_ms; a step of slack for
    // Firefox's jittered clock).
    let step = clock_step(&f.client).await?;
    let response_start = m("response_start");
    assert_eq!(rt["response_start_ms"].as_f64(), Some(response_start));
    let hop = report["run"]["metrics"]["engine_hop_ms"]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no engine_hop_ms: {report}"));
    assert_eq!(hop, m("first_byte") - response_start, "{report}");
    assert!(
        hop >= -step,
        "response_start after first_byte by {hop} ms: {report}"
    );
    assert_eq!(report["run"]["metrics"]["outcome"], "completed", "{report}");
    Ok(())
}

/// `first_dom` is the app's own first DOM write of the reply: the probe's MutationObserver
/// callback runs in the same task as the write, at its microtask checkpoint. Measured
/// against the write time the app takes itself, over several replies.
async fn first_dom_is_the_apps_own_first_write(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let step = clock_step(&f.client).await?;
    let mut lags = Vec::new();
    for ttft in (0..8).map(|i| 50 + 20 * i) {
        let out = f
            .measure(json!({
                "url": f.sim(&format!("ttft_ms={ttft}&output_tokens=20&tokens_per_second=200")),
                "init": post_chat(),
            }))
            .await?;
        let report = &out["report"];
        let dom = milestone(report, "first_dom").unwrap_or_else(|| panic!("no first_dom: {out}"));
        let write = out["firstWriteMs"]
            .as_f64()
            .unwrap_or_else(|| panic!("the app wrote nothing: {out}"));
        lags.push(dom - write);
    }
    println!(
        "{} first_dom - app write: {lags:?} ms (clock step {step} ms)",
        engine.name()
    );
    // Both times come from the same clock in the same task, so they differ by one clock
    // step of rounding and the work between the write and the microtask checkpoint (the
    // app's own bookkeeping, the observer reading textContent: 0.1–0.6 ms seen in
    // Chromium, whose clock shows it). The median gets a step and 1 ms. A run may also
    // lose the core between the two on a loaded 2-core machine (CFS hands out slices of
    // a few ms; 5.4 ms seen once in CI): all runs but the slowest get a step and 5 ms.
    // The issue's Firefox figure (p90 6.9 ms, max 24 ms, on an independent page) fails
    // these.
    lags.sort_by(f64::total_cmp);
    let median = lags[lags.len() / 2];
    assert!(
        median <= step + 1.0,
        "median first_dom - write {median} ms: {lags:?}"
    );
    assert!(
        lags[0] >= -step,
        "first_dom before the app's write: {lags:?}"
    );
    let second_slowest = lags[lags.len() - 2];
    assert!(
        second_slowest <= step + 5.0,
        "first_dom {second_slowest} ms after the app's write in two runs or more: {lags:?}"
    );
    Ok(())
}

/// `ttfx serve --cross-origin-isolated` makes the page cross-origin isolated, and the
/// probe says which clock it had: Chromium steps `performance.now()` 0.1 ms on a plain
/// page and 5 µs on an isolated one.
async fn an_isolated_page_gets_and_reports_the_finer_clock(engine: Engine) -> anyhow::Result<()> {
    let mut environments = Vec::new();
    for flags in [&[][..], &["--cross-origin-isolated"][..]] {
        let f = Fixture::serving(engine, flags).await?;
        let out = f
            .measure(json!({ "url": f.sim("ttft_ms=20&output_tokens=4"), "init": post_chat() }))
            .await?;
        let isolated = f
            .client
            .execute("return self.crossOriginIsolated", vec![])
            .await?;
        let env = out["report"]["run"]["timeline"]["environment"].clone();
        assert_eq!(env["cross_origin_isolated"], isolated, "{flags:?}: {env}");
        environments.push(env);
    }
    let [plain, isolated] = &environments[..] else {
        unreachable!("two servers measured")
    };
    let step = |env: &Value| env["timer_resolution_ms"].as_f64().unwrap_or(f64::NAN);
    println!(
        "{}: clock step {} ms plain, {} ms isolated",
        engine.name(),
        step(plain),
        step(isolated)
    );
    assert_eq!(plain["cross_origin_isolated"], false, "{plain}");
    assert_eq!(isolated["cross_origin_isolated"], true, "{isolated}");
    // Half the plain step: the isolated clock must be finer, whatever its exact step.
    assert!(
        step(plain) >= 0.099,
        "plain page clock step {} ms",
        step(plain)
    );
    assert!(
        step(isolated) <= 0.05,
        "isolated page clock step {} ms",
        step(isolated)
    );
    Ok(())
}

/// A page whose main thread is descheduled while the probe reads the clock's step (a
/// loaded machine; CI saw Firefox's 20 µs clock reported as 8.06 ms, then WebKit's 1 ms
/// as 5 ms after a second pause): no pause is taken for the step.
async fn a_pause_while_the_probe_reads_the_clock_is_not_taken_for_its_step(
    engine: Engine,
) -> anyhow::Result<()> {
    // One pause of 12 ms, and two in a row.
    let mut cases = vec![&[12.0][..], &[8.06, 5.0][..]];
    if engine == Engine::WebKit {
        missing(
            engine,
            "a_pause_while_the_probe_reads_the_clock_is_not_taken_for_its_step",
            "a pause of the test's making",
            "WebKit stalls the page's first spin by 5–10 ms of its own (near the 34th \
             reading, in several runs here), which can agree with a pause the test makes or \
             add to it; the frozen clock below is checked",
        );
        cases.clear();
    }
    for pauses in cases {
        let f = Fixture::new(engine).await?;
        let calls = page::call(
            &f.client,
            "clockStepAfterPauses",
            json!({ "pausesMs": pauses }),
        )
        .await?;
        // Every pause came, and the probe read on after them.
        let readings = calls.as_f64().unwrap_or(0.0);
        assert!(
            readings >= pauses.len() as f64 + 2.0,
            "{pauses:?}: {calls} readings"
        );
        let out = f
            .measure(json!({ "url": f.sim("ttft_ms=20&output_tokens=4"), "init": post_chat() }))
            .await?;
        let env = &out["report"]["run"]["timeline"]["environment"];
        let reported = env["timer_resolution_ms"]
            .as_f64()
            .ok_or_else(|| anyhow::anyhow!("no timer_resolution_ms: {env}"))?;
        let step = clock_step(&f.client).await?;
        println!(
            "{}: step {reported} ms after pauses of {pauses:?} ms ({readings} readings); \
             measured {step} ms",
            engine.name()
        );
        // Every engine's step here is at most 1 ms; the shortest pause is 5.
        assert!(
            reported > 0.0 && reported <= 1.0,
            "{pauses:?}: the probe took {reported} ms for the step; the clock steps {step} ms: \
             {env}"
        );
    }
    // A clock that never moves cannot hang the page: the spin gives up after its
    // million readings, and the page's next probe measures the real clock.
    let f = Fixture::new(engine).await?;
    let calls = page::call(&f.client, "clockStepAfterPauses", json!({ "frozen": true })).await?;
    assert!(calls.as_f64().unwrap_or(0.0) >= 1e6, "{calls} readings");
    let out = f
        .measure(json!({ "url": f.sim("ttft_ms=20&output_tokens=4"), "init": post_chat() }))
        .await?;
    let reported = &out["report"]["run"]["timeline"]["environment"]["timer_resolution_ms"];
    assert!(
        reported.as_f64().is_some_and(|r| r > 0.0 && r <= 1.0),
        "after a frozen clock: {reported}"
    );
    Ok(())
}

async fn a_buffered_response_is_reported_buffered_and_a_streamed_one_streamed(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let query = "ttft_ms=50&output_tokens=64&tokens_per_second=100";
    let buffered = f
        .measure(json!({ "url": f.sim(&format!("{query}&buffered=true")), "init": post_chat() }))
        .await?;
    let streamed = f
        .measure(json!({ "url": f.sim(query), "init": post_chat() }))
        .await?;
    let verdict = |v: &Value| v["report"]["run"]["metrics"]["buffered"]["verdict"].clone();
    assert_eq!(verdict(&buffered), "buffered", "{buffered}");
    assert_eq!(verdict(&streamed), "streamed", "{streamed}");
    Ok(())
}

async fn an_abort_is_reported_as_aborted_not_as_an_error(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let out = f
        .measure(json!({
            "url": f.sim("ttft_ms=50&output_tokens=200&tokens_per_second=20"),
            "init": post_chat(),
            "abortAfterMs": 300,
        }))
        .await?;
    let report = &out["report"];
    assert_eq!(
        out["appError"], "AbortError",
        "the app sees its own abort: {out}"
    );
    let aborted = milestone(report, "aborted").unwrap_or_else(|| panic!("no aborted: {report}"));
    // The page arms its 300 ms abort timer just before run.fetch takes request_start, so
    // on the run's clock the abort is due 300 ms minus that head start. A timer never
    // fires early (by one step of the page's clock at most: 0.1 ms in Chromium, 1 ms in
    // Firefox and WebKit, as the report says); late by scheduling at most.
    let head_start = out["armedBeforeStartMs"]
        .as_f64()
        .unwrap_or_else(|| panic!("no head start: {out}"));
    // Measured in the page: WebKit's report of an aborted run sometimes lacks
    // `timer_resolution_ms`.
    let step = clock_step(&f.client).await?;
    let due = 300.0 - head_start;
    assert!(
        aborted >= due - step && aborted < due + LOOPBACK_BOUND_MS,
        "aborted at {aborted}, due at {due} (clock step {step} ms)"
    );
    assert_eq!(milestone(report, "error"), None, "{report}");
    assert_eq!(report["run"]["metrics"]["outcome"], "aborted", "{report}");
    Ok(())
}

async fn http_500_and_a_dropped_connection_are_errors_with_their_class(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let failed = f
        .measure(json!({ "url": f.sim("fail=500"), "init": post_chat() }))
        .await?;
    let failure = &failed["report"]["run"]["timeline"]["failure"];
    assert_eq!(failed["status"], 500, "{failed}");
    assert_eq!(failure["class"], "http_status", "{failed}");
    assert_eq!(failure["http_status"], 500, "{failed}");

    let drop_url = f.sim("ttft_ms=20&output_tokens=30&fail=drop");
    let dropped = f
        .measure(json!({ "url": drop_url, "init": post_chat() }))
        .await?;
    let failure = &dropped["report"]["run"]["timeline"]["failure"];
    // The app sees the network error as it would without the probe.
    let without_probe = page::call(
        &f.client,
        "direct",
        json!({ "url": drop_url, "init": post_chat() }),
    )
    .await;
    if let Ok(plain) = &without_probe {
        missing(
            engine,
            "http_500_and_a_dropped_connection_are_errors_with_their_class",
            "a network error for the app on a dropped connection",
            &format!(
                "the engine ends the body without an error even without the probe ({} bytes)",
                plain["bytes"]
            ),
        );
        assert_eq!(dropped["appError"], Value::Null, "{dropped}");
        // What the probe can tell from a body that just ends: a truncated stream.
        assert_eq!(failure["class"], "decode", "{dropped}");
    } else {
        assert_eq!(
            dropped["appError"], "TypeError",
            "the app sees the network error: {dropped}"
        );
        assert_eq!(failure["class"], "network", "{dropped}");
    }
    assert!(
        milestone(&dropped["report"], "error").is_some(),
        "{dropped}"
    );
    Ok(())
}

async fn the_app_gets_exact_bytes_even_when_the_probe_fails_inside(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let (seed, len) = (42u64, 200_000usize);
    let expected = sha256_hex(&byte_server::bytes(seed, len));
    let url = format!("http://{bytes}/bytes?seed={seed}&len={len}&chunk=7001&gap_ms=2");

    // A healthy probe whose report callback throws.
    let thrown = f
        .measure(json!({ "url": url, "throwInCallback": true, "watch": false }))
        .await?;
    assert_eq!(thrown["sha256"], expected.as_str(), "{thrown}");
    let anomalies = thrown["report"]["run"]["timeline"]["anomalies"].to_string();
    assert!(anomalies.contains("callback_threw"), "{thrown}");
    // Every byte reached the decoder, in arrival order, through several 16 KiB batches.
    let chunks = thrown["report"]["run"]["timeline"]["chunks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let decoded: u64 = chunks.iter().filter_map(|c| c["bytes"].as_u64()).sum();
    assert_eq!(decoded, len as u64, "{thrown}");
    let times: Vec<f64> = chunks.iter().filter_map(|c| c["at_ms"].as_f64()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    // The byte server is another origin and sends no Timing-Allow-Origin: the entry has
    // no responseStart, and the report says why response_start is missing.
    let run = &thrown["report"]["run"];
    assert_eq!(
        milestone(&thrown["report"], "response_start"),
        None,
        "{thrown}"
    );
    assert!(
        run["metrics"]["notes"]
            .to_string()
            .contains("without Timing-Allow-Origin"),
        "{}",
        run["metrics"]["notes"]
    );

    // A probe whose decoder panics on the first chunk.
    let panicked = f
        .measure(json!({ "url": url, "options": { "__faultInjection": "decoder-panic" }, "watch": false }))
        .await?;
    assert_eq!(panicked["appError"], Value::Null, "{panicked}");
    assert_eq!(panicked["bytes"], len, "{panicked}");
    assert_eq!(panicked["sha256"], expected.as_str(), "{panicked}");
    let anomalies = panicked["report"]["run"]["timeline"]["anomalies"].to_string();
    assert!(anomalies.contains("probe_fault"), "{panicked}");
    assert!(anomalies.contains("decoder forced to fail"), "{panicked}");

    // The page keeps running, and the disabled probe still passes the app's data through.
    let after = f.measure(json!({ "url": url, "watch": false })).await?;
    assert_eq!(after["sha256"], expected.as_str(), "{after}");
    let anomalies = after["report"]["run"]["timeline"]["anomalies"].to_string();
    assert!(
        anomalies.contains("probe_fault"),
        "a disabled probe still settles: {after}"
    );
    let alive: Value = f.client.execute("return 6 * 7", vec![]).await?;
    assert_eq!(alive, 42);
    Ok(())
}

/// An app that moves each chunk's buffer away as soon as it reads it (to a worker, say)
/// takes nothing from the probe: the tapped body is a byte stream and the probe keeps its
/// own copy of each chunk (before byte streams it was left with detached buffers and
/// reported `chunk_detached`). The app's bytes and the page are untouched.
async fn chunks_the_app_transfers_away_are_still_measured(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let (seed, len) = (7u64, 20_000usize);
    let expected = sha256_hex(&byte_server::bytes(seed, len));
    let url = format!("http://{bytes}/bytes?seed={seed}&len={len}&chunk=5000&gap_ms=2");
    let out = f
        .measure(json!({ "url": url, "watch": false, "transferChunks": true }))
        .await?;
    assert_eq!(out["appError"], Value::Null, "{out}");
    assert_eq!(out["sha256"], expected.as_str(), "{out}");
    let timeline = &out["report"]["run"]["timeline"];
    assert!(
        !timeline["anomalies"].to_string().contains("chunk_detached"),
        "{out}"
    );
    assert_eq!(chunk_bytes(timeline), len as u64, "{out}");
    let alive: Value = f.client.execute("return 6 * 7", vec![]).await?;
    assert_eq!(alive, 42);
    Ok(())
}

/// Bytes in the report's chunk series.
fn chunk_bytes(timeline: &Value) -> u64 {
    timeline["chunks"]
        .as_array()
        .map_or(0, |c| c.iter().filter_map(|c| c["bytes"].as_u64()).sum())
}

/// The body the app gets is a byte stream, as the browser's own is: a BYOB reader with
/// buffers smaller than a chunk reads exactly the server's bytes, and the probe still
/// sees every byte, timed as the network delivered it.
async fn a_byob_reader_reads_the_exact_bytes_and_the_probe_sees_every_byte(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let (seed, len) = (11u64, 30_000usize);
    let expected = sha256_hex(&byte_server::bytes(seed, len));
    let url = format!("http://{bytes}/bytes?seed={seed}&len={len}&chunk=3000&gap_ms=5");
    let byob: Value = f
        .client
        .execute(
            "try { new Response('x').body.getReader({ mode: 'byob' }); return true; } \
             catch (e) { return String(e); }",
            vec![],
        )
        .await?;
    if byob != Value::Bool(true) {
        missing(
            engine,
            "a_byob_reader_reads_the_exact_bytes_and_the_probe_sees_every_byte",
            "BYOB readers",
            &format!(
                "a fetch body is not a byte stream in this engine, even without the probe ({byob})"
            ),
        );
        return Ok(());
    }
    let plain = page::call(&f.client, "direct", json!({ "url": url, "byob": true })).await?;
    assert_eq!(
        plain["sha256"],
        expected.as_str(),
        "without the probe: {plain}"
    );
    let out = f
        .measure(json!({ "url": url, "watch": false, "byob": true }))
        .await?;
    assert_eq!(out["appError"], Value::Null, "{out}");
    assert_eq!(out["sha256"], expected.as_str(), "{out}");
    // Every byte reached the probe too. (How many chunks the network delivers them in
    // depends on the machine's load: a busy browser coalesces the 5 ms pieces.)
    let timeline = &out["report"]["run"]["timeline"];
    assert_eq!(chunk_bytes(timeline), len as u64, "{out}");
    Ok(())
}

async fn keys_in_headers_and_query_never_reach_the_report(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    // Keys in request headers (same origin, so no CORS preflight is involved).
    let mut init = post_chat();
    init["headers"]["authorization"] = json!("Bearer sk-live-SECRET-1234");
    init["headers"]["x-api-key"] = json!("sk-live-SECRET-1234");
    let in_headers = f
        .measure(json!({ "url": f.sim("ttft_ms=10&output_tokens=5"), "init": init }))
        .await?;
    assert_eq!(
        in_headers["report"]["run"]["metrics"]["outcome"], "completed",
        "{in_headers}"
    );
    // A key in the query string (the simulators reject unknown parameters, so this goes
    // to the byte server, which ignores them). This run also beacons its field report to
    // the byte server's collector; the beacon must be as clean as the report.
    let server = byte_server::start().await?;
    let collector = format!("http://{}/collect", server.addr);
    let url = format!(
        "http://{}/bytes?seed=1&len=64&chunk=64&gap_ms=0&api_key=sk-live-SECRET-1234",
        server.addr
    );
    let in_query = f
        .measure(json!({ "url": url, "watch": false, "options": { "collectorUrl": collector } }))
        .await?;
    assert_eq!(
        in_query["report"]["run"]["metrics"]["outcome"], "completed",
        "{in_query}"
    );
    for out in [&in_headers, &in_query] {
        let report = out["report"].to_string();
        assert!(
            !report.contains("SECRET"),
            "a key leaked into the report: {report}"
        );
        assert!(report.contains("\"url\":\"http://127.0.0.1:"), "{report}");
    }
    // sendBeacon is asynchronous: give it up to 5 s to land.
    let mut beacons = Vec::new();
    for _ in 0..100 {
        beacons = server.beacons.lock().map(|b| b.clone()).unwrap_or_default();
        if !beacons.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(beacons.len(), 1, "one report beaconed: {beacons:?}");
    let beacon: Value = serde_json::from_str(&beacons[0].body)?;
    assert_eq!(
        beacon["run"]["id"], in_query["report"]["run"]["id"],
        "{beacon}"
    );
    assert!(
        !beacons[0].body.contains("SECRET"),
        "a key leaked into the beacon: {}",
        beacons[0].body
    );
    Ok(())
}

/// Beacons the collector has received, waiting (up to 5 s: a beacon is sent
/// asynchronously) until one satisfies `until`.
async fn beacons_until(
    server: &byte_server::ByteServer,
    until: impl Fn(&[byte_server::Beacon]) -> bool,
) -> Vec<byte_server::Beacon> {
    let mut beacons = Vec::new();
    for _ in 0..100 {
        beacons = server.beacons.lock().map(|b| b.clone()).unwrap_or_default();
        if until(&beacons) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    beacons
}

fn field_of(beacon: &byte_server::Beacon) -> anyhow::Result<FieldReport> {
    Ok(serde_json::from_str(&beacon.body)?)
}

fn labelled<'a>(beacons: &'a [byte_server::Beacon], label: &str) -> Vec<&'a byte_server::Beacon> {
    beacons
        .iter()
        .filter(|b| field_of(b).is_ok_and(|f| f.run.label.as_deref() == Some(label)))
        .collect()
}

/// What the beacon carries (#17): the field report of a 2,000-token stream (the simulator
/// writes one event per token, 4 ms apart; the browser reads them in 1,700–2,000 chunks,
/// by load), sent with sendBeacon to a collector on another loopback origin, is a valid
/// `FieldReport` of at most 16 KiB whose page path has lost the page's query (which holds
/// a fake key) and which holds the key nowhere. A run sampled out sends nothing; where sendBeacon refuses,
/// a keepalive fetch delivers; a collector URL nothing can send to throws nothing into
/// the page.
async fn the_beacon_carries_a_bounded_field_report_without_the_pages_query(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    page::open_harness(
        &f.client,
        &format!("{}harness.html?token=sk-secret#frag", f.server.url),
    )
    .await?;
    let collector = byte_server::start().await?;
    let collector_url = format!("http://{}/collect", collector.addr);
    let sampled = |label: &str, rate: f64| json!({ "collectorUrl": collector_url, "sampleRate": rate, "label": label });

    // What sendBeacon answers, so the test knows the beacon (not the fallback) delivered.
    f.client
        .execute(
            "const send = navigator.sendBeacon.bind(navigator); window.__sent = []; \
             navigator.sendBeacon = (url, data) => { const ok = send(url, data); \
             window.__sent.push(ok); return ok; }; return 0",
            vec![],
        )
        .await?;
    let long = f
        .measure(json!({
            "url": f.sim("ttft_ms=20&output_tokens=2000&tokens_per_second=250"),
            "init": post_chat(),
            "options": sampled("field", 1.0),
        }))
        .await?;
    let report = &long["report"];
    assert_eq!(report["run"]["metrics"]["outcome"], "completed", "{long}");
    let beacons = beacons_until(&collector, |b| !labelled(b, "field").is_empty()).await;
    let sent = labelled(&beacons, "field");
    assert_eq!(sent.len(), 1, "one field report: {beacons:?}");
    let body = &sent[0].body;
    println!(
        "field report of a 2,000-token stream in {} chunks: {} bytes",
        report["run"]["timeline"]["chunks"]
            .as_array()
            .map_or(0, Vec::len),
        body.len()
    );
    assert_eq!(
        sent[0].content_type.as_deref(),
        Some("application/json"),
        "{body}"
    );
    assert!(body.len() <= MAX_FIELD_REPORT_BYTES, "{} bytes", body.len());
    for secret in ["sk-secret", "token=", "frag", "?"] {
        assert!(!body.contains(secret), "`{secret}` in the beacon: {body}");
    }
    let answers: Value = f.client.execute("return window.__sent", vec![]).await?;
    assert_eq!(answers, json!([true]), "sendBeacon took the report");
    let field = field_of(sent[0])?;
    field.validate().map_err(anyhow::Error::msg)?;
    let r = &field.run;
    assert_eq!(r.page_path.as_deref(), Some("/harness.html"), "{body}");
    assert_eq!(r.id.as_deref(), report["run"]["id"].as_str(), "{body}");
    assert!(
        r.target
            .as_deref()
            .is_some_and(|t| t.ends_with("/sim/default/v1/chat/completions")),
        "{body}"
    );
    assert_eq!(r.sample_rate, 1.0);
    assert_eq!(r.outcome, ttfx_core::metrics::Outcome::Completed);
    assert_eq!(
        r.engine.as_deref(),
        Some(probe_engine_name(engine)),
        "{body}"
    );
    assert!(r.engine_version.is_some(), "{body}");
    assert_eq!(r.cross_origin_isolated, Some(false), "{body}");
    assert!(!r.hidden, "{body}");
    assert!(r.request_start_unix_ms.is_some(), "{body}");
    assert_eq!(
        r.metrics.get("ttft_ms"),
        report["run"]["metrics"]["ttft_ms"]["value"].as_f64(),
        "{body}"
    );
    // Every chunk of the stream: those the report keeps one by one and those its
    // summary folded in (a long stream passes the recorder's kept chunks).
    let timeline = &report["run"]["timeline"];
    let chunks = timeline["chunks"].as_array().map_or(0, Vec::len) as u64
        + timeline["chunk_summary"]["chunks"].as_u64().unwrap_or(0);
    assert_eq!(r.chunks.count, chunks, "{body}");
    assert_eq!(r.chunks.visible_tokens, 2_000, "{body}");
    assert!(!r.chunks.bins.is_empty() && r.chunks.bins.len() <= FIELD_BINS);

    // Sampled out: nothing is sent. A sampled run after it is the marker: once its
    // beacon is in, an earlier one would be too. The marker's page names its route.
    for (label, rate) in [("unsampled", 0.0), ("marker", 1.0)] {
        let mut options = sampled(label, rate);
        options["pagePath"] = json!("/chat/:id?user=7");
        let out = f
            .measure(json!({
                "url": f.sim("ttft_ms=10&output_tokens=5"),
                "init": post_chat(),
                "options": options,
            }))
            .await?;
        assert_eq!(
            out["report"]["run"]["metrics"]["outcome"], "completed",
            "{out}"
        );
    }
    let beacons = beacons_until(&collector, |b| !labelled(b, "marker").is_empty()).await;
    let marker = labelled(&beacons, "marker");
    assert_eq!(marker.len(), 1, "{beacons:?}");
    assert_eq!(
        field_of(marker[0])?.run.page_path.as_deref(),
        Some("/chat/:id"),
        "{beacons:?}"
    );
    assert!(labelled(&beacons, "unsampled").is_empty(), "{beacons:?}");

    // The browser's beacon queue refuses (sendBeacon returns false): a keepalive fetch
    // sends the same report.
    f.client
        .execute("navigator.sendBeacon = () => false; return 0", vec![])
        .await?;
    f.measure(json!({
        "url": f.sim("ttft_ms=10&output_tokens=5"),
        "init": post_chat(),
        "options": sampled("fetched", 1.0),
    }))
    .await?;
    f.client
        .execute("delete navigator.sendBeacon; return 0", vec![])
        .await?;
    let beacons = beacons_until(&collector, |b| !labelled(b, "fetched").is_empty()).await;
    let fetched = labelled(&beacons, "fetched");
    assert_eq!(fetched.len(), 1, "{beacons:?}");
    assert_eq!(fetched[0].content_type.as_deref(), Some("application/json"));
    field_of(fetched[0])?
        .validate()
        .map_err(anyhow::Error::msg)?;

    // A collector URL neither API accepts: the run reports as usual, and nothing is
    // thrown or left rejected in the page.
    let out = f
        .measure(json!({
            "url": f.sim("ttft_ms=10&output_tokens=5"),
            "init": post_chat(),
            "options": { "collectorUrl": "http://[::1", "label": "nowhere" },
        }))
        .await?;
    assert_eq!(
        out["report"]["run"]["metrics"]["outcome"], "completed",
        "{out}"
    );
    let anomalies = out["report"]["run"]["timeline"]["anomalies"].to_string();
    assert!(!anomalies.contains("probe_fault"), "{out}");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let unhandled: Value = f
        .client
        .execute("return window.__unhandled", vec![])
        .await?;
    assert_eq!(unhandled, json!([]), "rejections left in the page");
    Ok(())
}

async fn instrument_fetch_measures_plain_fetch_calls_and_restores(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let out = page::call(
        &f.client,
        "instrumented",
        json!({ "url": f.sim("ttft_ms=30&output_tokens=8"), "init": post_chat() }),
    )
    .await?;
    assert_eq!(out["wrapped"], true, "{out}");
    assert_eq!(out["restored"], true, "{out}");
    assert_eq!(
        out["back"], true,
        "window.fetch is the original again: {out}"
    );
    assert_eq!(out["unmatched"], 200, "{out}");
    let reports = out["reports"].as_array().cloned().unwrap_or_default();
    assert_eq!(reports.len(), 1, "one matching request, one report: {out}");
    assert!(
        reports[0]["run"]["timeline"]["milestones"]["first_token"]
            .as_f64()
            .is_some(),
        "{out}"
    );
    // onStart saw the run as it started; the report names its transport.
    let started = out["started"].as_array().cloned().unwrap_or_default();
    assert_eq!(started.len(), 1, "{out}");
    assert_eq!(started[0]["transport"], "fetch", "{out}");
    assert!(
        started[0]["url"]
            .as_str()
            .unwrap_or_default()
            .contains("/sim/"),
        "{out}"
    );
    assert!(started[0]["requestStart"].as_f64().is_some(), "{out}");
    assert_eq!(
        reports[0]["run"]["timeline"]["request"]["transport"], "fetch",
        "{out}"
    );
    Ok(())
}

/// The checks every transport's report passes: the transport named, the milestones from
/// the first message no earlier than the server's injected delay (the server waits that
/// long after it got the request, which comes after `request_start`), `first_byte` no
/// later than the app itself first saw data (`app_first`, the same page clock: the
/// probe's clock is taken first, not a task later), and one visible token decoded per
/// token sent. The app's own time is the upper bound, not a fixed loopback bound: on a
/// loaded machine an XHR's headers and first text reached the page 160 ms late, probe
/// and app alike.
fn check_transport_report(
    report: &Value,
    transport: &str,
    ttft: f64,
    tokens: u64,
    app_first: Option<f64>,
) {
    let timeline = &report["run"]["timeline"];
    assert_eq!(timeline["request"]["transport"], transport, "{report}");
    let m = |n| milestone(report, n).unwrap_or_else(|| panic!("no {n} in {report}"));
    for name in ["first_byte", "first_token", "first_visible_token", "done"] {
        let at = m(name);
        assert!(at >= ttft, "{name} {at} < injected {ttft}: {report}");
    }
    let app_first = app_first.unwrap_or_else(|| panic!("the app saw no data: {report}"));
    assert!(
        m("first_byte") <= app_first,
        "first_byte {} after the app saw data at {app_first}: {report}",
        m("first_byte")
    );
    assert!(m("first_byte") <= m("first_token"), "{report}");
    assert!(milestone(report, "error").is_none(), "{report}");
    let visible: u64 = timeline["chunks"].as_array().map_or(0, |c| {
        c.iter().filter_map(|c| c["visible_tokens"].as_u64()).sum()
    });
    assert_eq!(
        visible, tokens,
        "one visible token per delta sent: {report}"
    );
}

/// An app's EventSource, measured: it receives exactly the server's events (the probe
/// listens beside it and re-encodes what it saw for the decoder), the constructor is the
/// probe's subclass yet looks native, and `restore()` puts the original back.
async fn eventsource_streams_are_measured_and_the_app_gets_every_event(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let (tokens, ttft) = (12usize, 150.0);
    let url = format!("http://{bytes}/chat_sse?tokens={tokens}&ttft_ms={ttft}&gap_ms=15");
    let out = page::call(
        &f.client,
        "transport",
        json!({ "kind": "eventsource", "url": url, "match": "/chat_sse" }),
    )
    .await?;
    assert_eq!(out["appError"], Value::Null, "{out}");
    assert_eq!(
        out["received"],
        json!(byte_server::chat_sse_data(tokens)),
        "{out}"
    );
    assert_eq!(out["looksNative"], true, "{out}");
    assert_eq!(
        (out["restored"].clone(), out["back"].clone()),
        (json!(true), json!(true)),
        "{out}"
    );
    let text: String = (0..tokens).map(byte_server::token).collect();
    assert_eq!(out["text"], text.as_str(), "{out}");
    assert_eq!(out["runs"][0]["transport"], "eventsource", "{out}");
    assert_eq!(out["runs"][0]["url"], url.as_str(), "{out}");
    let reports = out["reports"].as_array().cloned().unwrap_or_default();
    assert_eq!(reports.len(), 1, "{out}");
    let report = &reports[0];
    check_transport_report(
        report,
        "eventsource",
        ttft,
        tokens as u64,
        out["appFirst"].as_f64(),
    );
    let timeline = &report["run"]["timeline"];
    assert_eq!(timeline["request"]["dialect"], "openai-chat", "{report}");
    assert_eq!(timeline["request"]["status"], 200, "{report}");
    // The app closed after [DONE]: the stream is complete, not truncated.
    assert!(milestone(report, "headers").is_some(), "{report}");
    assert!(milestone(report, "first_dom").is_some(), "{report}");
    Ok(())
}

/// Named event types an app listens to with addEventListener (an Anthropic stream over
/// EventSource) reach the probe too, with their type and id, so the dialect is found and
/// every token decoded; the app gets each event as sent.
async fn eventsource_named_events_are_measured_when_the_app_listens_to_them(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let (tokens, ttft) = (8usize, 100.0);
    let url = format!(
        "http://{bytes}/chat_sse?tokens={tokens}&ttft_ms={ttft}&gap_ms=10&format=anthropic"
    );
    let types = [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ];
    let out = page::call(
        &f.client,
        "transport",
        json!({ "kind": "eventsource", "url": url, "match": "/chat_sse", "types": types }),
    )
    .await?;
    assert_eq!(out["appError"], Value::Null, "{out}");
    let expected: Vec<Value> = byte_server::anthropic_sse_events(tokens)
        .into_iter()
        .map(|(t, d, id)| json!([t, d, id]))
        .collect();
    assert_eq!(out["received"], json!(expected), "{out}");
    let report = &out["reports"][0];
    check_transport_report(
        report,
        "eventsource",
        ttft,
        tokens as u64,
        out["appFirst"].as_f64(),
    );
    let timeline = &report["run"]["timeline"];
    assert_eq!(timeline["request"]["dialect"], "anthropic", "{report}");
    assert!(
        !timeline["anomalies"].to_string().contains("truncated"),
        "message_stop reached the decoder: {report}"
    );
    Ok(())
}

/// An app's XMLHttpRequest, measured from `responseText` as it grows: the app's text and
/// events are the browser's own, the report decodes every token; a non-text
/// `responseType` is left unread by the probe and reported `not_streamed`.
async fn xhr_streams_are_measured_and_the_app_gets_the_exact_text(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let (tokens, ttft, gap) = (20usize, 150.0, 15);
    let url = format!("http://{bytes}/chat_sse?tokens={tokens}&ttft_ms={ttft}&gap_ms={gap}");
    let body: String = byte_server::chat_sse_data(tokens)
        .iter()
        .map(|d| format!("data: {d}\n\n"))
        .collect();
    let out = page::call(
        &f.client,
        "transport",
        json!({ "kind": "xhr", "url": url, "match": "/chat_sse" }),
    )
    .await?;
    assert_eq!(out["status"], 200, "{out}");
    assert_eq!(out["body"], body.as_str(), "{out}");
    assert_eq!(out["looksNative"], true, "{out}");
    assert_eq!(
        (out["restored"].clone(), out["back"].clone()),
        (json!(true), json!(true)),
        "{out}"
    );
    let reports = out["reports"].as_array().cloned().unwrap_or_default();
    assert_eq!(reports.len(), 1, "{out}");
    let report = &reports[0];
    check_transport_report(report, "xhr", ttft, tokens as u64, out["appFirst"].as_f64());
    let timeline = &report["run"]["timeline"];
    assert_eq!(timeline["request"]["dialect"], "openai-chat", "{report}");
    assert_eq!(
        chunk_bytes(timeline),
        body.len() as u64,
        "every byte, once: {report}"
    );
    // How often the engine let the page see the text grow (docs/probe.md, Transports).
    let chunks = timeline["chunks"].as_array().map_or(0, Vec::len);
    println!(
        "{}: {} events {gap} ms apart reached the probe in {chunks} chunks; the app saw {} progress and {} readystatechange events",
        engine.name(),
        tokens + 1,
        out["progressEvents"],
        out["readyStateChanges"]
    );

    let buffer = page::call(
        &f.client,
        "transport",
        json!({ "kind": "xhr", "url": url, "match": "/chat_sse", "responseType": "arraybuffer" }),
    )
    .await?;
    assert_eq!(buffer["body"], body.as_str(), "{buffer}");
    let report = &buffer["reports"][0];
    assert_eq!(
        report["run"]["timeline"]["request"]["transport"], "xhr",
        "{report}"
    );
    assert!(
        report["run"]["timeline"]["anomalies"]
            .to_string()
            .contains("not_streamed"),
        "{report}"
    );
    assert_eq!(chunk_bytes(&report["run"]["timeline"]), 0, "{report}");
    assert!(milestone(report, "headers").is_some(), "{report}");
    Ok(())
}

/// An app's WebSocket speaking OpenAI Realtime, measured: one run per reply, from the
/// app's send() to `response.done`; the app gets every message, text and binary, exactly
/// as sent; the binary one is an anomaly, not decoded.
async fn websocket_replies_are_measured_one_run_each_and_the_app_gets_every_message(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let ws = ttfx_e2e::ws_server::start().await?;
    let (tokens, ttft) = (10usize, 150.0);
    let url = format!("ws://{ws}/v1/realtime");
    let out = page::call(
        &f.client,
        "transport",
        json!({ "kind": "websocket", "url": url, "match": "/v1/realtime", "replies": 2,
                "create": { "tokens": tokens, "ttft_ms": ttft, "gap_ms": 15 } }),
    )
    .await?;
    let mut expected: Vec<Value> = Vec::new();
    for reply in 0..2 {
        for (k, m) in ttfx_e2e::ws_server::realtime_messages(reply, tokens)
            .into_iter()
            .enumerate()
        {
            expected.push(json!(m));
            if reply == 0 && k == 1 {
                expected.push(json!({ "binary": ttfx_e2e::ws_server::BINARY }));
            }
        }
    }
    assert_eq!(out["received"], json!(expected), "{out}");
    assert_eq!(out["looksNative"], true, "{out}");
    assert_eq!(
        (out["restored"].clone(), out["back"].clone()),
        (json!(true), json!(true)),
        "{out}"
    );
    let text: String = (0..tokens)
        .map(byte_server::token)
        .collect::<String>()
        .repeat(2);
    assert_eq!(out["text"], text.as_str(), "{out}");
    let reports = out["reports"].as_array().cloned().unwrap_or_default();
    assert_eq!(reports.len(), 2, "one run per reply: {out}");
    for (i, report) in reports.iter().enumerate() {
        // The app's first sight of data is the first reply's.
        let app_first = if i == 0 {
            out["appFirst"].as_f64()
        } else {
            milestone(report, "first_byte")
        };
        check_transport_report(report, "websocket", ttft, tokens as u64, app_first);
        let timeline = &report["run"]["timeline"];
        assert_eq!(
            timeline["request"]["dialect"], "openai-realtime",
            "{report}"
        );
        assert_eq!(
            timeline["server"]["usage"]["completion_tokens"], tokens,
            "{report}"
        );
        assert!(
            milestone(report, "headers").is_none(),
            "no headers on a socket: {report}"
        );
        let binary = timeline["anomalies"].to_string().contains("binary_message");
        assert_eq!(
            binary,
            i == 0,
            "the binary message is in the first reply: {report}"
        );
        assert!(
            !timeline["anomalies"].to_string().contains("quiet_end"),
            "ended by response.done: {report}"
        );
    }
    Ok(())
}

/// Every instrument function checks its options as `instrumentFetch` does, with an Error
/// naming the key, and installs nothing when they are wrong.
async fn every_instrument_function_checks_its_options_alike(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let out: Value = f
        .client
        .execute(
            "const probe = new window.harness.ttfx.Probe();
             const originals = [window.fetch, window.EventSource, window.WebSocket, XMLHttpRequest.prototype.open];
             const errors = {};
             for (const name of ['instrumentFetch', 'instrumentEventSource', 'instrumentXhr', 'instrumentWebSocket']) {
               errors[name] = [{ match: 5 }, { match: 'x', watch: 'p' }, { match: 'x', onStart: 1 }, { match: 'x', quietMs: -1 }, undefined]
                 .map((o) => { try { probe[name](o); return 'no error'; } catch (e) { return e.message; } });
             }
             const after = [window.fetch, window.EventSource, window.WebSocket, XMLHttpRequest.prototype.open];
             return { errors, untouched: originals.every((v, i) => v === after[i]) };",
            vec![],
        )
        .await?;
    assert_eq!(out["untouched"], true, "{out}");
    let expected = json!([
        "ttfx: match must be a string, a RegExp or a function",
        "ttfx: watch must be an Element or a function",
        "ttfx: onStart must be a function",
        "ttfx: quietMs must be a number of ms above 0 and at most 600000, got -1",
        "ttfx: match must be a string, a RegExp or a function",
    ]);
    for name in [
        "instrumentFetch",
        "instrumentEventSource",
        "instrumentXhr",
        "instrumentWebSocket",
    ] {
        assert_eq!(out["errors"][name], expected, "{name}: {out}");
    }
    Ok(())
}

/// A WebSocket reply without `response.done` ends `quietMs` after its last message, with
/// a `quiet_end` anomaly; the app still gets every message.
async fn a_websocket_reply_without_an_end_message_ends_when_quiet(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let ws = ttfx_e2e::ws_server::start().await?;
    let (tokens, quiet) = (4usize, 300.0);
    let out = page::call(
        &f.client,
        "transport",
        json!({ "kind": "websocket", "url": format!("ws://{ws}/v1/realtime"), "match": "/v1/realtime",
                "quietMs": quiet, "create": { "tokens": tokens, "ttft_ms": 50, "gap_ms": 15, "done": false, "binary": false } }),
    )
    .await?;
    let mut expected = ttfx_e2e::ws_server::realtime_messages(0, tokens);
    expected.pop();
    assert_eq!(out["received"], json!(expected), "{out}");
    let report = &out["reports"][0];
    let timeline = &report["run"]["timeline"];
    assert!(
        timeline["anomalies"].to_string().contains("quiet_end"),
        "{report}"
    );
    // The run ends at its last message, not quietMs later.
    let last = timeline["chunks"]
        .as_array()
        .and_then(|c| c.last())
        .and_then(|c| c["at_ms"].as_f64());
    assert_eq!(milestone(report, "done"), last, "{report}");
    Ok(())
}

/// Whatever fails inside the probe, every transport's app gets exactly the server's data:
/// the analysis panics on the first batch (`__faultInjection`), each in a fresh page.
async fn every_transport_passes_the_apps_data_through_when_the_probe_fails_inside(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let ws = ttfx_e2e::ws_server::start().await?;
    let tokens = 6usize;
    let sse = format!("http://{bytes}/chat_sse?tokens={tokens}&ttft_ms=20&gap_ms=5");
    let body: String = byte_server::chat_sse_data(tokens)
        .iter()
        .map(|d| format!("data: {d}\n\n"))
        .collect();
    let fault = json!({ "__faultInjection": "decoder-panic" });
    for kind in ["eventsource", "xhr", "websocket"] {
        page::open_harness(&f.client, &format!("{}harness.html", f.server.url)).await?;
        let (url, matching) = if kind == "websocket" {
            (format!("ws://{ws}/v1/realtime"), "/v1/realtime")
        } else {
            (sse.clone(), "/chat_sse")
        };
        let out = page::call(
            &f.client,
            "transport",
            json!({ "kind": kind, "url": url, "match": matching, "options": fault, "replies": 2,
                    "create": { "tokens": tokens, "ttft_ms": 20, "gap_ms": 5 } }),
        )
        .await?;
        match kind {
            "eventsource" => assert_eq!(
                out["received"],
                json!(byte_server::chat_sse_data(tokens)),
                "{out}"
            ),
            "xhr" => assert_eq!(out["body"], body.as_str(), "{out}"),
            _ => {
                let mut expected = Vec::new();
                for reply in 0..2 {
                    for (k, m) in ttfx_e2e::ws_server::realtime_messages(reply, tokens)
                        .into_iter()
                        .enumerate()
                    {
                        expected.push(json!(m));
                        if reply == 0 && k == 1 {
                            expected.push(json!({ "binary": ttfx_e2e::ws_server::BINARY }));
                        }
                    }
                }
                assert_eq!(out["received"], json!(expected), "{out}");
            }
        }
        assert_eq!(out["appError"], Value::Null, "{kind}: {out}");
        let anomalies = out["reports"][0]["run"]["timeline"]["anomalies"].to_string();
        assert!(anomalies.contains("probe_fault"), "{kind}: {out}");
        let alive: Value = f.client.execute("return 6 * 7", vec![]).await?;
        assert_eq!(alive, 42);
    }
    Ok(())
}

/// A stream that fails reaches the app as the browser's own event, and the report says
/// how it failed, on every transport: an EventSource refused before it opens, an
/// XMLHttpRequest whose connection is cut mid-body, one that times out, and a WebSocket
/// whose server goes away without a close frame.
async fn every_transports_failures_reach_the_app_as_the_browser_gives_them_and_are_reported(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let ws = ttfx_e2e::ws_server::start().await?;
    let failure = |out: &Value| out["reports"][0]["run"]["timeline"]["failure"].clone();
    let detail = |out: &Value| failure(out)["detail"].as_str().unwrap_or("").to_owned();

    // An EventSource refused before it opens (a 404 without CORS headers): the app's
    // error event finds it CLOSED, and the report a network failure with no first byte.
    let refused = page::call(
        &f.client,
        "transport",
        json!({ "kind": "eventsource", "url": format!("http://{bytes}/no_such_stream"),
                "match": "/no_such_stream" }),
    )
    .await?;
    assert_eq!(
        refused["appError"], "error event, readyState 2",
        "{refused}"
    );
    assert_eq!(refused["received"], json!([]), "{refused}");
    assert_eq!(failure(&refused)["class"], "network", "{refused}");
    assert!(
        detail(&refused).starts_with("EventSource failed"),
        "{refused}"
    );
    let report = &refused["reports"][0];
    assert!(milestone(report, "error").is_some(), "{refused}");
    assert_eq!(milestone(report, "first_byte"), None, "{refused}");

    // An XMLHttpRequest cut after 4 of 13 events: the app's request ends with the
    // browser's error event, and so does the run. WebKit ends a cut body as if complete
    // (`load`), as it does a fetch body (above); the probe, which only listens, reports
    // what it can tell: a stream that ended before `[DONE]`.
    let cut = page::call(
        &f.client,
        "transport",
        json!({ "kind": "xhr", "match": "/chat_sse",
                "url": format!("http://{bytes}/chat_sse?tokens=10&ttft_ms=20&gap_ms=60&cut_after=4") }),
    )
    .await?;
    if engine == Engine::WebKit && cut["ended"] == "load" {
        missing(
            engine,
            "every_transports_failures_reach_the_app_as_the_browser_gives_them_and_are_reported",
            "an XMLHttpRequest error on a connection cut mid-body",
            "the engine ends the request with `load`",
        );
        assert_eq!(failure(&cut)["class"], "decode", "{cut}");
    } else {
        assert_eq!(cut["ended"], "error", "{cut}");
        assert_eq!(failure(&cut)["class"], "network", "{cut}");
        assert_eq!(
            detail(&cut),
            "XMLHttpRequest error (network or CORS)",
            "{cut}"
        );
    }
    assert!(
        milestone(&cut["reports"][0], "first_token").is_some(),
        "{cut}"
    );

    // An XMLHttpRequest whose own timeout (150 ms) fires before the first byte (3 s):
    // the app gets `timeout`, and the run fails then, within the loopback bound.
    let timeout = 150.0;
    let timed_out = page::call(
        &f.client,
        "transport",
        json!({ "kind": "xhr", "match": "/chat_sse", "timeout": timeout,
                "url": format!("http://{bytes}/chat_sse?tokens=3&ttft_ms=3000&gap_ms=10") }),
    )
    .await?;
    assert_eq!(timed_out["ended"], "timeout", "{timed_out}");
    assert_eq!(failure(&timed_out)["class"], "network", "{timed_out}");
    assert_eq!(
        detail(&timed_out),
        "XMLHttpRequest timed out (timeout 150 ms)",
        "{timed_out}"
    );
    let error = milestone(&timed_out["reports"][0], "error")
        .unwrap_or_else(|| panic!("no error milestone: {timed_out}"));
    let step = clock_step(&f.client).await?;
    assert!(
        error >= timeout - step && error < timeout + LOOPBACK_BOUND_MS,
        "error at {error}, the timeout {timeout} ms (clock step {step} ms): {timed_out}"
    );

    // A WebSocket whose server drops the connection after 3 messages, with no close
    // frame: the app gets those messages and an unclean close (1006); the run fails
    // with its code, after the tokens it saw.
    let tokens = 6;
    let dropped = page::call(
        &f.client,
        "transport",
        json!({ "kind": "websocket", "url": format!("ws://{ws}/v1/realtime"), "match": "/v1/realtime",
                "create": { "tokens": tokens, "ttft_ms": 20, "gap_ms": 5, "drop_after": 3 } }),
    )
    .await?;
    assert_eq!(
        dropped["close"],
        json!({ "code": 1006, "wasClean": false }),
        "{dropped}"
    );
    let sent = ttfx_e2e::ws_server::realtime_messages(0, tokens);
    // The first reply carries a binary message after its first delta (ws_server).
    let expected = json!([
        sent[0],
        sent[1],
        { "binary": ttfx_e2e::ws_server::BINARY },
        sent[2]
    ]);
    assert_eq!(dropped["received"], expected, "{dropped}");
    assert_eq!(failure(&dropped)["class"], "network", "{dropped}");
    assert_eq!(
        detail(&dropped),
        "WebSocket closed uncleanly (code 1006)",
        "{dropped}"
    );
    let report = &dropped["reports"][0];
    let m = |n| milestone(report, n).unwrap_or_else(|| panic!("no {n} in {dropped}"));
    assert!(m("first_token") <= m("error"), "{dropped}");
    Ok(())
}

async fn the_plain_example_page_streams_and_reports(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    f.client
        .goto(&format!(
            "{}example.html?ttft_ms=150&output_tokens=12",
            f.server.url
        ))
        .await?;
    let script = "const done = arguments[arguments.length - 1];
        const wait = () => window.chat ? window.chat.send('hello').then(done, (e) => done({ error: String(e) })) : setTimeout(wait, 20);
        wait();";
    let out = f.client.execute_async(script, vec![]).await?;
    assert!(out.get("error").is_none(), "{out}");
    assert!(
        !out["text"].as_str().unwrap_or_default().is_empty(),
        "{out}"
    );
    let report = &out["report"];
    assert_eq!(report["run"]["target"], "example-chat", "{out}");
    assert!(
        milestone(report, "first_token").is_some_and(|t| t >= 150.0),
        "{out}"
    );
    assert!(milestone(report, "first_paint").is_some(), "{out}");
    let queued: Value = f
        .client
        .execute("return window.__ttfx.length", vec![])
        .await?;
    assert_eq!(queued, 1);
    Ok(())
}

async fn a_voice_run_reports_text_and_audio_on_one_clock(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let ttfa = 200.0;
    let out = page::call(
        &f.client,
        "voice",
        json!({
            "llmUrl": f.sim("ttft_ms=100&output_tokens=40&tokens_per_second=40"),
            "llmInit": post_chat(),
            "ttsUrl": format!("{}sim/default/v1/audio/speech?ttfa_ms={ttfa}&rtf=0.25", f.server.url),
        }),
    )
    .await?;
    let report = &out["report"];
    let m = |n| milestone(report, n).unwrap_or_else(|| panic!("no {n} in {report}"));
    let audio = audio_context_state(&f.client).await?;
    if audio != "running" {
        missing(
            engine,
            "a_voice_run_reports_text_and_audio_on_one_clock",
            "audio out (tts_request, first_audio_out, ttfa_ms)",
            &format!("the page's AudioContext stays `{audio}` (headless, no sound server)"),
        );
        // The text side and the handoff still hold.
        assert!(m("first_visible_token") <= m("first_sentence"), "{report}");
        assert_eq!(
            report["run"]["metrics"]["handoff"]["verdict"], "streaming",
            "{report}"
        );
        return Ok(());
    }
    // One clock: the sentence completes after its last token, goes to TTS, and is heard
    // no earlier than the TTS server's injected time to first audio after that.
    assert!(m("first_visible_token") <= m("first_sentence"), "{report}");
    assert!(m("first_sentence") <= m("tts_request"), "{report}");
    assert!(m("tts_request") + ttfa <= m("first_audio_byte"), "{report}");
    assert!(m("first_audio_byte") <= m("first_audio_out"), "{report}");
    // The first sentence left for TTS while the reply was still streaming.
    assert!(m("tts_request") < m("last_token"), "{report}");
    assert_eq!(
        report["run"]["metrics"]["handoff"]["verdict"], "streaming",
        "{report}"
    );
    assert!(
        report["run"]["metrics"]["ttfa_ms"]["value"]
            .as_f64()
            .is_some(),
        "{report}"
    );
    Ok(())
}

async fn the_text_build_leaves_the_voice_api_out_and_the_voice_build_has_both(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let out = page::call(&f.client, "exportsOf", json!({})).await?;
    let names = |build: &str| -> Vec<String> {
        out[build]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (text, voice) = (names("text"), names("voice"));
    for api in ["Probe", "FetchHandle", "version", "now"] {
        assert!(
            text.iter().any(|n| n == api),
            "text build lacks {api}: {out}"
        );
    }
    for api in ["TtsPlayer", "AudioTap", "VoiceHandoff"] {
        assert!(
            !text.iter().any(|n| n == api),
            "text build has {api}: {out}"
        );
        assert!(
            voice.iter().any(|n| n == api),
            "voice build lacks {api}: {out}"
        );
    }
    // The voice build is the text build plus the voice API.
    assert!(text.iter().all(|n| voice.contains(n)), "{out}");
    Ok(())
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A body the app leaves unread is not held by the probe forever: once the app has not
/// read for `abandonAfterMs` while bytes wait, the run reports with an `abandoned` anomaly
/// (before the server has even finished), and the probe stops reading ahead. Nothing is
/// taken from the app: when it reads later, it gets every byte.
async fn a_body_the_app_leaves_unread_is_reported_abandoned_and_kept_for_the_app(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let server = byte_server::start().await?.addr;
    let name = "openai-chat-basic";
    let sent = std::fs::read(byte_server::vectors_dir().join(format!("{name}.in")))?;
    let expected = sha256_hex(&sent);
    // Three pieces 1.5 s apart: the server is still sending when the probe gives up,
    // 300 ms after the first piece waits unread.
    let url = format!("http://{server}/vector?name={name}&pieces=3&gap_ms=1500");
    let out = page::call(
        &f.client,
        "unread",
        json!({ "url": url, "options": { "abandonAfterMs": 300 } }),
    )
    .await?;
    let timeline = &out["report"]["run"]["timeline"];
    let anomalies = timeline["anomalies"].to_string();
    assert!(anomalies.contains("abandoned"), "{out}");
    // Reported before the last piece was sent (3 gaps of 1.5 s).
    let reported = out["reportedAt"].as_f64().unwrap_or(f64::INFINITY);
    assert!(reported < 4_500.0, "{out}");
    assert!(out["readAt"].as_f64().unwrap_or(0.0) >= 4_500.0, "{out}");
    assert_eq!(out["bytes"], sent.len(), "{out}");
    assert_eq!(out["sha256"], expected.as_str(), "{out}");
    // What arrived before the probe gave up was analysed.
    assert!(timeline["milestones"]["first_byte"].is_number(), "{out}");
    Ok(())
}

/// A 500 MB body: the app gets every byte, and the bytes the probe holds for its
/// analysis never pass its stated bound (16 MiB), however fast the body comes; the
/// analysis keeps a bounded chunk series.
async fn a_500_mb_body_keeps_the_probes_memory_bounded(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let bytes = byte_server::start().await?.addr;
    let len: u64 = 500 * 1000 * 1000;
    let url = format!("http://{bytes}/large?len={len}&chunk=65536");
    // The check is the memory bound, not the speed: WebKitGTK took over WebDriver's
    // default 30 s script timeout on the loaded 2-core machine.
    let mut timeouts = fantoccini::wd::TimeoutConfiguration::default();
    timeouts.set_script(Some(std::time::Duration::from_secs(180)));
    f.client.update_timeouts(timeouts).await?;
    let started = std::time::Instant::now();
    let out = page::call(&f.client, "large", json!({ "url": url })).await?;
    println!(
        "{}: 500 MB read in {:.1} s",
        engine.name(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(out["bytes"], len, "{}", out["memory"]);
    let memory = &out["memory"];
    let peak = memory["peakHeldBytes"].as_f64().unwrap_or(f64::INFINITY);
    let bound = memory["maxHeldBytes"].as_f64().unwrap_or(0.0);
    assert_eq!(bound, 16.0 * 1024.0 * 1024.0, "{memory}");
    assert!(
        peak > 0.0 && peak <= bound,
        "{memory}; the run's anomalies: {}",
        out["report"]["run"]["timeline"]["anomalies"]
    );
    assert_eq!(
        memory["heldBytes"], 0,
        "every held byte was released: {memory}"
    );
    let timeline = &out["report"]["run"]["timeline"];
    let chunks = timeline["chunks"].as_array().map_or(0, Vec::len);
    assert!(chunks > 0, "{timeline}");
    // Bytes analysed plus bytes the report says were skipped cover the body.
    let analysed = chunk_bytes(timeline);
    let skipped: u64 = timeline["anomalies"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["class"] == "analysis_skipped")
        .filter_map(|a| a["detail"].as_str()?.split(' ').next()?.parse::<u64>().ok())
        .sum();
    assert!(
        analysed + skipped >= len,
        "analysed {analysed} + skipped {skipped} of {len}"
    );
    Ok(())
}

/// `window.__ttfx` is a ring of the last 100 reports: a page that measures every request
/// for hours holds a bounded number, oldest dropped first.
async fn the_report_queue_keeps_the_last_hundred(engine: Engine) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    f.client
        .execute(
            "window.__ttfx = Array.from({ length: 99 }, (_, i) => ({ earlier: i })); return 0",
            vec![],
        )
        .await?;
    let url = f.sim("ttft_ms=10&output_tokens=3&seed=1");
    for _ in 0..2 {
        let out = f
            .measure(json!({ "url": url, "init": post_chat() }))
            .await?;
        assert_eq!(out["appError"], Value::Null, "{out}");
    }
    let queue: Value = f
        .client
        .execute(
            "const q = window.__ttfx; \
             return { length: q.length, first: q[0].earlier, last: q[q.length - 1].run?.id };",
            vec![],
        )
        .await?;
    assert_eq!(queue["length"], 100, "{queue}");
    assert_eq!(queue["first"], 1, "the oldest went first: {queue}");
    assert!(
        queue["last"].is_string(),
        "the newest report is last: {queue}"
    );
    Ok(())
}

/// Nothing the browser measures depends on where the analysis runs: for every recorded
/// stream of ttfx-core's conformance vectors, sent in several pieces, the report the
/// browser produces has the milestones, chunk series, dialect and failure that ttfx-core
/// computes natively from the report's own (arrival time, bytes) series and the bytes
/// the server sent.
async fn the_browser_report_equals_the_native_analysis_of_the_same_series(
    engine: Engine,
) -> anyhow::Result<()> {
    use ttfx_core::decode::Limits;
    use ttfx_core::{Milestone, Recorder};
    let f = Fixture::new(engine).await?;
    let server = byte_server::start().await?.addr;
    let names = byte_server::vector_names();
    assert!(names.len() >= 20, "{names:?}");
    let (mut with_tokens, mut multi_chunk) = (0, 0);
    for name in &names {
        let url = format!("http://{server}/vector?name={name}&pieces=3&gap_ms=20");
        let out = f.measure(json!({ "url": url, "watch": false })).await?;
        let timeline = &out["report"]["run"]["timeline"];
        let sent = std::fs::read(byte_server::vectors_dir().join(format!("{name}.in")))?;
        let browser_ms = |m: Milestone| timeline["milestones"][m.as_str()].as_f64();
        let headers = browser_ms(Milestone::Headers)
            .ok_or_else(|| anyhow::anyhow!("{name}: no headers\n{timeline}"))?;
        let done = browser_ms(Milestone::Done)
            .ok_or_else(|| anyhow::anyhow!("{name}: no done\n{timeline}"))?;
        // The native analysis of the same series.
        let mut recorder = Recorder::new(None, Limits::DEFAULT);
        let content_type = byte_server::vector_content_type(name);
        recorder.headers(headers, 200, Some(content_type), &[]);
        let mut rest = sent.as_slice();
        let chunks = timeline["chunks"].as_array().cloned().unwrap_or_default();
        for chunk in chunks.iter().filter(|c| c["bytes"].as_u64() != Some(0)) {
            let n = usize::try_from(chunk["bytes"].as_u64().unwrap_or(0))?;
            anyhow::ensure!(
                n <= rest.len(),
                "{name}: the report has more bytes than sent"
            );
            let (piece, tail) = rest.split_at(n);
            recorder.chunk(chunk["at_ms"].as_f64().unwrap_or(f64::NAN), piece);
            rest = tail;
        }
        assert!(
            rest.is_empty(),
            "{name}: the report's chunks cover the body"
        );
        recorder.end(done);
        let native = recorder.finish();
        // Milestones the stream decides (render milestones are the browser's alone).
        for m in Milestone::ALL
            .into_iter()
            .filter(|m| !matches!(m, Milestone::FirstDom | Milestone::FirstPaint))
        {
            assert_eq!(
                browser_ms(m),
                native.milestones.get(m),
                "{name}: {m}\n{timeline}"
            );
        }
        with_tokens += usize::from(native.milestones.get(Milestone::FirstToken).is_some());
        multi_chunk += usize::from(native.chunks.len() >= 2);
        let browser_chunks: Vec<ttfx_core::timeline::Chunk> =
            serde_json::from_value(timeline["chunks"].clone())?;
        assert_eq!(native.chunks, browser_chunks, "{name}: chunk series");
        assert_eq!(
            native.request.dialect.as_deref(),
            timeline["request"]["dialect"].as_str(),
            "{name}"
        );
        assert_eq!(
            native
                .failure
                .map(|x| serde_json::to_value(x.class))
                .transpose()?,
            timeline["failure"].get("class").cloned(),
            "{name}"
        );
    }
    assert!(with_tokens >= 15, "{with_tokens} streams with tokens");
    // Events split across chunks are part of what is compared. (How many streams arrive
    // in pieces depends on load, as a busy browser coalesces reads; on an idle machine
    // most do. One is enough to exercise the split.)
    assert!(multi_chunk >= 1, "{multi_chunk} streams in several chunks");
    Ok(())
}

/// The package's analysis worker (a module Worker running ttfx-analysis's wasm) turns a
/// page's observations into the very report the same code computes natively: for every
/// recorded stream, sent in three batches, the report texts are identical byte for byte.
async fn the_analysis_worker_writes_the_native_report_for_every_recorded_stream(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    let names = byte_server::vector_names();
    let mut runs = Vec::new();
    let mut expected = Vec::new();
    for (run, name) in (1u32..).zip(&names) {
        let bytes = std::fs::read(byte_server::vectors_dir().join(format!("{name}.in")))?;
        let content_type = byte_server::vector_content_type(name);
        let step = bytes.len().div_ceil(3).max(1);
        let mut meta = Vec::new();
        for (i, piece) in bytes.chunks(step).enumerate() {
            meta.extend([12.5 + 10.0 * i as f64, piece.len() as f64]);
        }
        runs.push(json!({
            "run": run,
            "messages": [
                ["begin", null, name, "worker", null],
                ["request", "GET", "http://h/v1/stream?key=secret", 1_767_225_600_000.5],
                ["headers", 4.25, 200, content_type, "queue;dur=1.5"],
                ["chunks", { "f64": meta }, { "u8": bytes }],
                ["end", 60.0],
                ["observed", "first_dom", 40.5, null],
                ["environment", "chromium", "156", null, false, 0.1, 1, "worker"],
                ["finish"],
            ]
        }));
        expected.push(native_report(run, name, content_type, &meta, &bytes)?);
    }
    let out = page::call(&f.client, "analysisWorker", json!({ "runs": runs })).await?;
    let results = out["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), names.len(), "{out}");
    for ((name, got), want) in names.iter().zip(&results).zip(&expected) {
        assert_eq!(got["error"], Value::Null, "{name}: {got}");
        assert_eq!(got["report"].as_str(), Some(want.as_str()), "{name}");
    }
    Ok(())
}

/// The same observations through ttfx-analysis natively.
fn native_report(
    run: u32,
    name: &str,
    content_type: &str,
    meta: &[f64],
    bytes: &[u8],
) -> anyhow::Result<String> {
    use ttfx_core::Milestone;
    let mut native = ttfx_analysis::Runs::default();
    native.begin(run, None).map_err(anyhow::Error::msg)?;
    native.recorder(run).map_err(anyhow::Error::msg)?.headers(
        4.25,
        200,
        Some(content_type),
        &["queue;dur=1.5"],
    );
    native
        .chunks(run, meta, bytes)
        .map_err(anyhow::Error::msg)?;
    native.recorder(run).map_err(anyhow::Error::msg)?.end(60.0);
    let page = native.page(run).map_err(anyhow::Error::msg)?;
    page.id = Some(name.to_owned());
    page.label = Some("worker".into());
    page.request.method = Some("GET".into());
    // The query never reaches a report: the analysis strips it.
    page.request.url = Some("http://h/v1/stream".into());
    page.request_start_unix_ms = Some(1_767_225_600_000.5);
    page.milestones.set(Milestone::FirstDom, 40.5);
    let env = &mut page.environment;
    env.engine = Some("chromium".into());
    env.engine_version = Some("156".into());
    env.cross_origin_isolated = Some(false);
    env.timer_resolution_ms = Some(0.1);
    env.concurrency = Some(1);
    env.analysis = Some(ttfx_core::timeline::AnalysisSite::Worker);
    native
        .finish(run)
        .map(|f| f.report)
        .map_err(anyhow::Error::msg)
}

/// The vantage proxy's key cannot be spent by another site: a page on a second loopback
/// origin sends the simple `text/plain` POST a browser sends without a preflight, and
/// the proxy refuses it (403) before it reaches the upstream; the same request from the
/// proxy's own origin streams.
async fn a_page_on_another_loopback_origin_cannot_use_the_proxys_key(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    // A directory per test: the three engines' tests run at once in one process.
    let dir = tempfile::Builder::new()
        .prefix("ttfx-e2e-keyed-")
        .tempdir()?;
    let config = dir.path().join("keyed.toml");
    std::fs::write(
        &config,
        format!(
            "[upstreams.up]\nbase_url = \"{}sim/default/v1\"\napi_key = \"sk-e2e-secret\"\n",
            f.server.url
        ),
    )?;
    let keyed = ServeProcess::start(
        &paths::ttfx_bin()?,
        &["--config", &config.to_string_lossy()],
    )?;
    let url = format!("{}proxy/up/chat/completions?output_tokens=3", keyed.url);
    let script = r#"
        const [url, done] = arguments;
        fetch(url, { method: "POST", headers: { "content-type": "text/plain" },
                     body: JSON.stringify({ stream: true, messages: [{ role: "user", content: "hi" }] }) })
          .then(async (r) => done({ status: r.status, text: await r.text() }),
                (e) => done({ error: String(e) }));"#;
    // The harness page: another origin (another port) to the keyed server.
    let foreign = f.client.execute_async(script, vec![json!(url)]).await?;
    assert_eq!(foreign["status"], 403, "{foreign}");
    assert!(
        foreign["text"]
            .as_str()
            .is_some_and(|t| t.contains("may not use this proxy")),
        "{foreign}"
    );
    // The keyed server's own origin.
    f.client.goto(&keyed.url).await?;
    let own = f.client.execute_async(script, vec![json!(url)]).await?;
    assert_eq!(own["status"], 200, "{own}");
    assert!(
        own["text"].as_str().is_some_and(|t| t.contains("data: ")),
        "{own}"
    );
    drop(keyed);
    drop(dir);
    Ok(())
}

/// The whole field path: a page's probe beacons to a real `ttfx serve --collect` on
/// another loopback origin (allowed by `--collect-origin`), the rows are committed, and
/// `ttfx field` reads them back weighted by the inverse sample rate.
async fn beacons_land_in_the_collector_and_count_by_their_sample_rate(
    engine: Engine,
) -> anyhow::Result<()> {
    let f = Fixture::new(engine).await?;
    page::open_harness(&f.client, &format!("{}harness.html", f.server.url)).await?;
    // A directory per test: the three engines' tests run at once in one process, so a
    // name from the process id alone had them open one SQLite file ("disk I/O error").
    let dir = tempfile::Builder::new()
        .prefix("ttfx-e2e-field-")
        .tempdir()?;
    let db = dir.path().join("field.db");
    let page_origin = f.server.url.trim_end_matches('/').to_owned();
    let collector = ServeProcess::start(
        &paths::ttfx_bin()?,
        &[
            "--collect",
            db.to_str().unwrap_or_default(),
            "--collect-origin",
            &page_origin,
        ],
    )?;
    let collector_url = format!("{}collect", collector.url);
    // The second run is sampled at 1/4: the page's draw is pinned so it is sent.
    let mut ttfts = Vec::new();
    for (rate, draw) in [(1.0, 0.5), (0.25, 0.1)] {
        f.client
            // The page's own Math: geckodriver runs scripts in a sandbox whose global
            // builtins (Math) are not the page's, though its window is.
            .execute(
                &format!("window.Math.random = () => {draw}; return 0"),
                vec![],
            )
            .await?;
        let out = f
            .measure(json!({
                "url": f.sim("ttft_ms=40&output_tokens=5"),
                "init": post_chat(),
                "options": { "collectorUrl": collector_url, "sampleRate": rate, "label": "field-e2e" },
            }))
            .await?;
        let ttft = out["report"]["run"]["metrics"]["ttft_ms"]["value"].as_f64();
        ttfts.push(ttft.ok_or_else(|| anyhow::anyhow!("no ttft: {out}"))?);
    }
    // The beacon is sent after the report; give the collector its commit.
    let mut summary = Value::Null;
    for _ in 0..50 {
        let out = std::process::Command::new(paths::ttfx_bin()?)
            .args([
                "field",
                db.to_str().unwrap_or_default(),
                "--metric",
                "ttft_ms",
                "--by",
                "label",
                "--json",
            ])
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        summary = serde_json::from_slice(&out.stdout)?;
        if summary["runs"] == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    drop(collector);
    drop(dir);
    assert_eq!(summary["runs"], 2, "{summary}");
    let group = &summary["metrics"][0]["groups"][0];
    assert_eq!(group["key"], "field-e2e", "{summary}");
    assert_eq!(group["count"], 2, "{summary}");
    assert_eq!(group["weighted_count"], 5.0, "1 + 1/0.25: {summary}");
    let max = ttfts.iter().copied().fold(f64::MIN, f64::max);
    assert_eq!(group["max"].as_f64(), Some(max), "{summary} vs {ttfts:?}");
    Ok(())
}

engines!(milestones_honour_the_injected_delay_and_arrive_in_order);
engines!(first_dom_is_the_apps_own_first_write);
engines!(an_isolated_page_gets_and_reports_the_finer_clock);
engines!(a_pause_while_the_probe_reads_the_clock_is_not_taken_for_its_step);
engines!(a_buffered_response_is_reported_buffered_and_a_streamed_one_streamed);
engines!(an_abort_is_reported_as_aborted_not_as_an_error);
engines!(http_500_and_a_dropped_connection_are_errors_with_their_class);
engines!(the_app_gets_exact_bytes_even_when_the_probe_fails_inside);
engines!(chunks_the_app_transfers_away_are_still_measured);
engines!(a_byob_reader_reads_the_exact_bytes_and_the_probe_sees_every_byte);
engines!(keys_in_headers_and_query_never_reach_the_report);
engines!(the_beacon_carries_a_bounded_field_report_without_the_pages_query);
engines!(instrument_fetch_measures_plain_fetch_calls_and_restores);
engines!(eventsource_streams_are_measured_and_the_app_gets_every_event);
engines!(xhr_streams_are_measured_and_the_app_gets_the_exact_text);
engines!(websocket_replies_are_measured_one_run_each_and_the_app_gets_every_message);
engines!(a_websocket_reply_without_an_end_message_ends_when_quiet);
engines!(every_instrument_function_checks_its_options_alike);
engines!(eventsource_named_events_are_measured_when_the_app_listens_to_them);
engines!(every_transport_passes_the_apps_data_through_when_the_probe_fails_inside);
engines!(every_transports_failures_reach_the_app_as_the_browser_gives_them_and_are_reported);
engines!(the_plain_example_page_streams_and_reports);
engines!(a_voice_run_reports_text_and_audio_on_one_clock);
engines!(the_text_build_leaves_the_voice_api_out_and_the_voice_build_has_both);
engines!(a_body_the_app_leaves_unread_is_reported_abandoned_and_kept_for_the_app);
// Both cores busy for seconds (14–36 s in WebKit): beside it, a Chromium reply came
// 1.7 s late and a first_dom 5.4 ms after its write in one CI run.
engines!(alone a_500_mb_body_keeps_the_probes_memory_bounded);
engines!(the_report_queue_keeps_the_last_hundred);
engines!(the_browser_report_equals_the_native_analysis_of_the_same_series);
engines!(the_analysis_worker_writes_the_native_report_for_every_recorded_stream);
engines!(a_page_on_another_loopback_origin_cannot_use_the_proxys_key);
engines!(beacons_land_in_the_collector_and_count_by_their_sample_rate);
