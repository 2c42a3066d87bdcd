//! `ttfx run` as a real process: its own server and runner page, a real chromedriver and
//! headless Chromium, against the simulator with injected delays. Exit codes, the table,
//! the JSON batch and the JUnit XML are checked against each other.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::Context;
use serde_json::Value;
use ttfx_e2e::bounds::{above_injected, within};
use ttfx_e2e::site;
use ttfx_e2e::{ServeProcess, paths};

/// Injected: first token 400 ms after arrival, 30 answer tokens at 200 tok/s.
const TARGET: &str = "sim/default?ttft_ms=400&tokens_per_second=200&output_tokens=30&seed=7";

/// The machine alone for the whole of a test whose timing a busy machine would break
/// (voice turns: the microphone is PulseAudio fed in real time): no test that holds the
/// machine lock (the `engines!` tests of every binary) runs meanwhile. This file's
/// `ttfx run`s take no lock of their own: a second lock on another descriptor would wait
/// for the first (flock), as `page_streams` (alone) would wait for itself.
fn alone() -> anyhow::Result<ttfx_e2e::machine::Machine> {
    ttfx_e2e::machine::Machine::take_now(true)
}

fn ttfx_run(args: &[&str]) -> anyhow::Result<Output> {
    let pkg = paths::probe_pkg()?;
    let mut command = Command::new(paths::ttfx_bin()?);
    command.arg("run").arg("--probe-pkg").arg(&pkg).args(args);
    // The longest run here (the sweep, the voice turns) takes under a minute.
    ttfx_e2e::process::output_within(&mut command, std::time::Duration::from_secs(240))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ttfx-run-test-{}-{name}", std::process::id()))
}

/// `ttfx run ARGS --json TEMP`, which must exit 0: the table (stdout) and the batch.
fn run_ok_with_batch(name: &str, args: &[&str]) -> anyhow::Result<(String, Value)> {
    let json = temp(name);
    let path = json.to_string_lossy().into_owned();
    let mut full = args.to_vec();
    full.extend(["--json", path.as_str()]);
    let out = ttfx_run(&full)?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let batch: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    let _ = std::fs::remove_file(&json);
    Ok((stdout, batch))
}

/// The table's value of `stat` (p50, p90, …) on the row of `metric`.
fn table_value(stdout: &str, metric: &str, stat: &str) -> Option<f64> {
    let column = ["count", "mean", "p50", "p90", "p95", "p99", "min", "max"]
        .iter()
        .position(|c| *c == stat)?;
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(metric))?;
    line.split_whitespace().nth(column + 1)?.parse().ok()
}

/// The JUnit test cases as (name, failed).
fn junit_cases(path: &Path) -> anyhow::Result<Vec<(String, bool)>> {
    use quick_xml::events::Event;
    let xml = std::fs::read_to_string(path)?;
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut cases: Vec<(String, bool)> = Vec::new();
    loop {
        match reader.read_event()? {
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == "testcase" => {
                let name = e
                    .try_get_attribute("name")?
                    .ok_or_else(|| anyhow::anyhow!("a testcase without a name"))?
                    .normalized_value(quick_xml::XmlVersion::Implicit1_0)?
                    .into_owned();
                cases.push((name, false));
            }
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == "failure" => {
                if let Some(last) = cases.last_mut() {
                    last.1 = true;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(cases)
}

#[test]
fn a_loose_budget_passes_a_tight_one_fails_and_the_outputs_agree() -> anyhow::Result<()> {
    let (json, junit) = (temp("a.json"), temp("a.xml"));
    let out = ttfx_run(&[
        "--target",
        TARGET,
        "--runs",
        "4",
        "--concurrency",
        "2",
        "--budget",
        "ttft_visible.p90<=3s",
        "--budget",
        "ttft_visible.p90<=100ms",
        "--json",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ])?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("1 of 2 budget(s) failed"), "{stderr}");
    // Nothing but the report on stdout: no progress bar when stderr is not a terminal.
    assert!(stdout.starts_with("ttfx run: "), "{stdout}");

    // The injected 400 ms is what the page waited for, plus loopback and the page's
    // own scheduling; 250 ms of slack absorbs a debug build with two Chromiums on two
    // cores, and the lower bound is hard (the server cannot send before its deadline).
    let p50 = table_value(&stdout, "ttft_visible_ms", "p50").unwrap();
    assert!((400.0..650.0).contains(&p50), "p50 {p50}\n{stdout}");
    assert!(
        stdout.contains("<- FAIL ttft_visible.p90<=100ms by"),
        "{stdout}"
    );
    assert!(stdout.contains("FAIL  ttft_visible.p90<=100ms"), "{stdout}");

    // JSON: a ttfx-core batch that agrees with the table to the printed precision.
    let batch: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    assert_eq!(batch["kind"], "batch");
    assert_eq!(batch["outcomes"]["completed"], 4);
    assert_eq!(batch["runs"].as_array().unwrap().len(), 4);
    for stat in ["p50", "p90", "p99"] {
        let from_json = batch["statistics"]["ttft_visible_ms"][stat]
            .as_f64()
            .unwrap();
        let from_table = table_value(&stdout, "ttft_visible_ms", stat).unwrap();
        assert!(
            (from_json - from_table).abs() <= 0.005,
            "{stat}: {from_json} vs {from_table}"
        );
    }
    // The server's record was merged, so the client-vs-server gaps exist.
    assert!(
        batch["statistics"]["gap.first_token_ms"]["p50"].is_number(),
        "{batch}"
    );
    assert!(
        table_value(&stdout, "gap.first_token_ms", "p50").is_some(),
        "{stdout}"
    );

    // DevTools ground truth, one per run. Both times count from the request's creation;
    // the probe sees a chunk a task after the network stack hands it to the renderer,
    // so the probe is later by a little, not earlier by much (the anchor itself differs
    // by the IPC from fetch() to the network service, well under 5 ms on loopback).
    let truth = batch["ground_truth"].as_array().unwrap();
    assert_eq!(truth.len(), 4, "{batch}");
    for g in truth {
        let d = g["probe_minus_devtools_ms"].as_f64().unwrap();
        assert!((-5.0..50.0).contains(&d), "{g}");
    }
    assert!(
        stdout.contains("ground truth: probe first_byte"),
        "{stdout}"
    );

    // JUnit: one test case per budget, the tight one failed.
    let cases = junit_cases(&junit)?;
    assert_eq!(
        cases,
        vec![
            ("ttft_visible.p90<=3s".to_owned(), false),
            ("ttft_visible.p90<=100ms".to_owned(), true)
        ]
    );

    // The batch reads back with `ttfx report`.
    let report = Command::new(paths::ttfx_bin()?)
        .args(["report", json.to_str().unwrap()])
        .output()?;
    assert!(report.status.success(), "{}", text(&report.stderr));
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&junit);
    Ok(())
}

#[test]
fn a_remote_webdriver_endpoint_is_used_instead_of_a_local_driver() -> anyhow::Result<()> {
    // A driver the test started stands in for a remote endpoint or a Grid: the runner must
    // use it (and start no driver of its own) and still produce the batch.
    let driver = ttfx_e2e::Chromedriver::start()?;
    let json = temp("remote.json");
    let out = ttfx_run(&[
        "--target",
        TARGET,
        "--runs",
        "2",
        "--webdriver",
        driver.url(),
        "--json",
        json.to_str().unwrap(),
    ])?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let batch: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    assert_eq!(batch["runs"].as_array().map(Vec::len), Some(2), "{batch}");

    // A remote endpoint that does not answer is a clear exit 2.
    let out = ttfx_run(&[
        "--target",
        TARGET,
        "--runs",
        "1",
        "--webdriver",
        "http://127.0.0.1:9",
    ])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    Ok(())
}

/// `--listen` and `--public-url` (issue #20 point 6): the runner's page and simulated
/// endpoints listen on a second loopback address, as they would on an address a Grid
/// reaches, and a separately started WebDriver endpoint (`--webdriver`) loads them
/// there. The browser loads what `--public-url` names: naming a host where nothing
/// listens fails the run.
#[test]
fn a_remote_browser_loads_the_runner_from_the_listen_address_and_public_url() -> anyhow::Result<()>
{
    let driver = ttfx_e2e::Chromedriver::start()?;
    // A free port on 127.0.0.2, released for the runner (nothing else binds there).
    let port = std::net::TcpListener::bind("127.0.0.2:0")?
        .local_addr()?
        .port();
    let listen = format!("127.0.0.2:{port}");
    let (_, batch) = run_ok_with_batch(
        "listen.json",
        &[
            "--target",
            TARGET,
            "--runs",
            "2",
            "--webdriver",
            driver.url(),
            "--listen",
            &listen,
            "--public-url",
            &format!("http://127.0.0.2:{port}"),
        ],
    )?;
    assert_eq!(batch["runs"].as_array().map(Vec::len), Some(2), "{batch}");
    assert!(batch["statistics"]["ttft_visible_ms"]["p50"].as_f64() >= Some(400.0));

    // The same server, but the browser told to load 127.0.0.1 where it does not listen.
    let out = ttfx_run(&[
        "--target",
        TARGET,
        "--runs",
        "1",
        "--webdriver",
        driver.url(),
        "--listen",
        &listen,
        "--public-url",
        &format!("http://127.0.0.1:{port}"),
    ])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot load the runner page http://127.0.0.1:{port}/"
        )),
        "{stderr}"
    );
    // An unspecified address cannot be loaded: refused before a browser starts.
    let out = ttfx_run(&["--target", TARGET, "--listen", "0.0.0.0:0"])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--public-url"), "{stderr}");
    Ok(())
}

#[test]
fn a_scenario_file_with_loose_budgets_exits_zero() -> anyhow::Result<()> {
    // The file holds the target, the counts and the gate; a flag adds one more budget.
    let scenario = temp("scenario.toml");
    std::fs::write(
        &scenario,
        format!(
            "target = \"{TARGET}\"\nruns = 2\nwarmup = 1\nprompts = [\"Hello\", \"Why?\"]\n\
             budgets = [\"ttft_visible.p90<=3s\"]\n"
        ),
    )?;
    let out = ttfx_run(&[
        "--scenario",
        scenario.to_str().unwrap(),
        "--budget",
        "decode_tokens_per_s.p50>=20",
    ])?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("budgets: 2 passed, 0 failed"), "{stdout}");
    assert!(stdout.contains(": 2 run(s), 1 warm-up"), "{stdout}");

    // A typo in the file is refused, not ignored.
    std::fs::write(&scenario, "runz = 2\n")?;
    let out = ttfx_run(&["--scenario", scenario.to_str().unwrap()])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("runz"), "{stderr}");
    let _ = std::fs::remove_file(&scenario);
    Ok(())
}

#[test]
fn a_missing_driver_and_a_bad_budget_exit_two_with_one_clear_line() -> anyhow::Result<()> {
    let out = ttfx_run(&["--runs", "1", "--chromedriver", "/nonexistent/chromedriver"])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "no chromedriver at /nonexistent/chromedriver: --browser chromium is not installed"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(out.stdout.is_empty());

    let out = ttfx_run(&["--budget", "ttft_visible.p90=800ms"])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("budget `ttft_visible.p90=800ms`: no <= or >="),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    Ok(())
}

#[test]
fn against_interleaves_two_targets_and_prints_the_crossover() -> anyhow::Result<()> {
    // A: 100 ms, 50 tok/s; B: 500 ms, 200 tok/s → n* = 400 / (20 − 5) ≈ 26.7 tokens.
    let json = temp("ab.json");
    let out = ttfx_run(&[
        "--target",
        "sim/default?ttft_ms=100&tokens_per_second=50&output_tokens=40",
        "--against",
        "sim/default?ttft_ms=500&tokens_per_second=200&output_tokens=40",
        "--runs",
        "3",
        "--json",
        json.to_str().unwrap(),
    ])?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let n_star: f64 = stdout
        .split("n* = ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no n* in\n{stdout}"));
    // Measured TTFTs run a few ms late on both sides and the measured rates a little
    // under the set ones; ±8 tokens covers that without accepting a wrong side.
    assert!((18.0..35.0).contains(&n_star), "n* {n_star}\n{stdout}");
    assert!(stdout.contains("-> sim/default?ttft_ms=500"), "{stdout}");
    // Interleaved: the job ids alternate A B A B, so A's runs are the even ones.
    let a: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    let b_path = json.with_file_name(format!(
        "{}.against.json",
        json.file_stem().unwrap().to_str().unwrap()
    ));
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&b_path)?)?;
    let ids = |v: &Value| -> Vec<u64> {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["id"]
                    .as_str()
                    .unwrap()
                    .rsplit('-')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(ids(&a), vec![0, 2, 4]);
    assert_eq!(ids(&b), vec![1, 3, 5]);
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&b_path);
    Ok(())
}

#[test]
fn the_plain_example_page_is_measured_through_url() -> anyhow::Result<()> {
    let site = site::assemble()?;
    let server = ServeProcess::start(&paths::ttfx_bin()?, &["--dist", site.dist_arg()])?;
    let url = format!("{}example.html?ttft_ms=300&output_tokens=10", server.url);
    // The page's request carries no id of the runner's: the browser's own record of it
    // is found by its URL, method and start (#36), DevTools' in Chromium, BiDi's in
    // Firefox (the headers leave before the first token here, so BiDi's figure is about
    // the TTFT; inject.rs checks it where the two leave together).
    for (browser, witness) in [("chromium", "DevTools"), ("firefox", "BiDi")] {
        let out = ttfx_run(&[
            "--url",
            &url,
            "--browser",
            browser,
            "--runs",
            "2",
            "--budget",
            "ttft_visible.p50<=2s",
        ])?;
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        let p50 = table_value(&stdout, "ttft_visible_ms", "p50").unwrap();
        assert!((300.0..550.0).contains(&p50), "p50 {p50}\n{stdout}");
        // The label drops the page's query (it may carry a key).
        assert!(stdout.contains("/example.html: 2 run(s)"), "{stdout}");
        let line = format!("ground truth: probe first_byte - {witness} ");
        assert!(
            stdout.contains(&line) && !stdout.contains("ground truth: none"),
            "{browser}: {stdout}"
        );
    }
    Ok(())
}

/// Firefox through geckodriver, when `cargo xtask setup --browsers all` installed it;
/// otherwise the test says so and passes (the tests' own stage installs Chromium only).
#[test]
fn firefox_is_measured_through_geckodriver_when_installed() -> anyhow::Result<()> {
    let installed = ["/usr/bin/firefox-esr", "/usr/bin/firefox"]
        .iter()
        .any(|p| Path::new(p).is_file());
    // With the probe package given, so the driver is what is missing.
    let probe = ttfx_run(&[
        "--browser",
        "firefox",
        "--runs",
        "1",
        "--driver",
        "/nonexistent/geckodriver",
    ])?;
    // A missing driver names the browser and how to install it.
    let stderr = text(&probe.stderr);
    assert_eq!(probe.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--browser firefox is not installed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cargo xtask setup --browsers all"),
        "{stderr}"
    );

    let gecko = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cargo/bin/geckodriver"))
        .filter(|p| p.is_file());
    let (true, Some(gecko)) = (installed, gecko) else {
        eprintln!("skipped: Firefox or geckodriver is not installed");
        return Ok(());
    };
    let out = ttfx_run(&[
        "--browser",
        "firefox",
        "--driver",
        gecko.to_str().unwrap(),
        "--target",
        TARGET,
        "--runs",
        "2",
        "--budget",
        "ttft_visible.p90<=3s",
    ])?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // Firefox coarsens performance.now() to 1 ms; the bounds are the Chromium test's.
    let p50 = table_value(&stdout, "ttft_visible_ms", "p50").unwrap();
    assert!((400.0..650.0).contains(&p50), "p50 {p50}\n{stdout}");
    // No DevTools performance log in geckodriver: its ground truth is WebDriver BiDi's
    // network record, one entry per run (here the headers leave before the first token,
    // so the entry's figure is the TTFT; a_pages_own_request_gets_its_server_record_and_
    // ground_truth checks it against the first byte).
    assert!(
        stdout.contains("ground truth: probe first_byte - BiDi responseStart")
            && stdout.contains(", 2 run(s): p50"),
        "{stdout}"
    );
    assert!(!stdout.contains("ground truth: none"), "{stdout}");
    Ok(())
}

/// WebKitGTK through WebKitWebDriver, when installed. MiniBrowser has no headless mode:
/// without DISPLAY the runner starts Xvfb (itself installed by `setup --browsers all`),
/// and the display is gone again after the run.
#[test]
fn webkit_is_measured_through_webkitwebdriver_on_xvfb_when_installed() -> anyhow::Result<()> {
    let driver = Path::new("/usr/bin/WebKitWebDriver");
    let xvfb = Path::new("/usr/bin/Xvfb");
    if !(driver.is_file() && (xvfb.is_file() || std::env::var_os("DISPLAY").is_some())) {
        eprintln!("skipped: WebKitWebDriver or Xvfb is not installed");
        return Ok(());
    }
    let displays = || -> Vec<String> {
        std::fs::read_dir("/tmp/.X11-unix")
            .map(|d| {
                d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = displays();
    let (stdout, batch) = run_ok_with_batch(
        "webkit.json",
        &[
            "--browser",
            "webkit",
            "--driver",
            "/usr/bin/WebKitWebDriver",
            "--target",
            TARGET,
            "--runs",
            "2",
            "--budget",
            "ttft_visible.p90<=3s",
        ],
    )?;
    let p50 = table_value(&stdout, "ttft_visible_ms", "p50").unwrap();
    assert!((400.0..650.0).contains(&p50), "p50 {p50}\n{stdout}");
    // The server's records reach the page: the gaps are filled.
    assert!(
        table_value(&stdout, "gap.first_byte_ms", "p50").is_some(),
        "{stdout}"
    );
    // WebKitWebDriver has neither DevTools nor BiDi: no ground truth, and the report
    // says why, in the table and in each run.
    assert!(
        stdout.contains("ground truth: none for 2 of 2 run(s): WebKitWebDriver speaks neither"),
        "{stdout}"
    );
    assert!(batch.get("ground_truth").is_none(), "{batch}");
    for run in batch["runs"].as_array().unwrap() {
        let anomalies = run["timeline"]["anomalies"].to_string();
        assert!(anomalies.contains("no_ground_truth"), "{anomalies}");
    }
    // No Element Timing in WebKit: the paint is estimated from animation frames (the
    // start of the frame after the one that rendered the text).
    for run in batch["runs"].as_array().unwrap() {
        assert_eq!(run["timeline"]["paint_method"], "raf_next_frame", "{run}");
    }
    // The Xvfb the runner started is gone with its socket.
    let left: Vec<String> = displays()
        .into_iter()
        .filter(|d| !before.contains(d))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    Ok(())
}

/// `--voice`: the runner's page speaks the first sentence through the simulator's TTS
/// and plays it; the batch then has the audio metrics, ordered on one clock.
#[test]
fn voice_runs_report_time_to_first_audio() -> anyhow::Result<()> {
    let (stdout, batch) = run_ok_with_batch(
        "voice.json",
        &[
            "--voice",
            "--target",
            "sim/default?ttft_ms=300&tokens_per_second=100&output_tokens=40&seed=7&ttfa_ms=200&rtf=0.25",
            "--runs",
            "2",
            "--budget",
            "ttfa.p90<=5s",
        ],
    )?;
    let stats = &batch["statistics"];
    let ttfa = &stats["ttfa_ms"];
    assert_eq!(ttfa["count"], 2, "{stats}");
    // Heard no earlier than the first sentence plus the TTS server's injected 200 ms
    // to first audio; the TTS leg alone is at least that.
    let ttfa_p50 = ttfa["p50"].as_f64().unwrap();
    let from_tts = stats["ttfa_from_tts_ms"]["p50"].as_f64().unwrap();
    let ttft = stats["ttft_visible_ms"]["p50"].as_f64().unwrap();
    assert!((200.0..1500.0).contains(&from_tts), "{stats}");
    assert!(ttfa_p50 >= ttft + 200.0, "{stats}");
    assert!(stats["rtf"]["count"] == 2, "{stats}");
    // The table shows the same figure.
    let table = table_value(&stdout, "ttfa_ms", "p50").unwrap();
    assert!(
        (table - ttfa_p50).abs() < 0.01,
        "{table} vs {ttfa_p50}\n{stdout}"
    );
    // The first sentence went to TTS while the reply was still streaming.
    for run in batch["runs"].as_array().unwrap() {
        assert_eq!(run["metrics"]["handoff"]["verdict"], "streaming", "{run}");
    }

    // Voice needs the simulator's TTS: another target is refused before a browser starts.
    let refused = ttfx_run(&["--voice", "--target", "http://127.0.0.1:9/v1/chat"])?;
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--voice needs sim/PROFILE targets"),
        "{stderr}"
    );
    Ok(())
}

/// The voice turn's server stages and the delay injected for each (TURN_TARGET): the
/// STT's final transcript after the upload, the LLM's first token, the TTS's first audio.
const SERVER_STAGES: [(&str, f64); 3] = [
    ("transcription", 400.0),
    ("llm_first_token", 300.0),
    ("tts_first_byte", 200.0),
];
const TURN_TARGET: &str = "sim/default?stt_first_partial_ms=150&stt_final_ms=400&ttft_ms=300\
    &tokens_per_second=100&output_tokens=40&ttfa_ms=200&rtf=0.25&audio_ms=6000&seed=11";

/// The detector's defaults (docs/metrics.md): its hangover, its frame.
const HANGOVER_MS: f64 = 500.0;
const FRAME_MS: f64 = 10.0;

/// How far the detector's decision may come after `speech_end` plus its hangover: the
/// frame in progress (10 ms), the audio callback that delivers the samples in blocks
/// (Chromium's fake capture: 10 ms, `getSettings().latency`), the message to the page and
/// a main thread inside one frame (16.7 ms): 36.7 ms.
const DECISION_SLACK_MS: f64 = 37.0;

/// `--voice-turn`: a fake microphone speaks (espeak-ng), the page's detector finds the
/// end of speech, the simulator's STT transcribes, the LLM answers, TTS speaks; every
/// stage is at least its injected delay and exceeds it by less than the slack above,
/// the stages sum to voice_to_voice_ms, and the detector's speech matches the
/// recording's.
/// In Chromium the speech comes from its fake capture device; in Firefox (whose fake
/// device plays a tone) from a PulseAudio null sink the runner plays it into.
#[test]
fn voice_turns_are_measured_stage_by_stage_from_the_end_of_speech() -> anyhow::Result<()> {
    let _machine = alone()?;
    for browser in ["chromium", "firefox"] {
        turns_in(browser)?;
    }
    // Turns need a microphone the detector hears and the simulator's STT: refused before
    // a browser starts, in one line.
    for (args, says) in [
        (
            vec!["--voice-turn", "--browser", "webkit"],
            "--voice-turn needs Chromium or Firefox",
        ),
        (
            vec!["--voice-turn", "--target", "http://127.0.0.1:9/v1/chat"],
            "--voice-turn needs sim/PROFILE targets",
        ),
        (vec!["--barge-in"], "--voice-turn"),
    ] {
        let refused = ttfx_run(&args)?;
        let stderr = text(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    Ok(())
}

fn turns_in(browser: &str) -> anyhow::Result<()> {
    let (stdout, batch) = run_ok_with_batch(
        &format!("turn-{browser}.json"),
        &[
            "--voice-turn",
            "--browser",
            browser,
            "--target",
            TURN_TARGET,
            "--runs",
            "3",
        ],
    )?;
    println!("{browser}:\n{stdout}");
    let speech_ms = batch["speech"]["speech_ms"]
        .as_f64()
        .context("no speech in the batch")?;
    assert!((500.0..5000.0).contains(&speech_ms), "{}", batch["speech"]);
    let runs = batch["runs"].as_array().context("no runs")?;
    assert_eq!(runs.len(), 3);
    let (mut endpointing, mut server_stages): (Vec<f64>, [Vec<f64>; 3]) = Default::default();
    for run in runs {
        let m = &run["timeline"]["milestones"];
        let at = |name: &str| {
            m[name]
                .as_f64()
                .unwrap_or_else(|| panic!("no {name}: {run}"))
        };
        let turn = &run["metrics"]["turn"];
        let stage = |name: &str| -> f64 {
            turn["stages"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| s["stage"] == name)
                .and_then(|s| s["ms"].as_f64())
                .unwrap_or_else(|| panic!("no stage {name}: {turn}"))
        };
        // The user spoke before the request: negative, in order.
        assert!(at("speech_start") < at("speech_end"), "{m}");
        assert!(
            at("speech_end") < at("stt_final") && at("stt_final") <= 0.0,
            "{m}"
        );
        assert!(at("stt_first_partial") <= at("stt_final"), "{m}");
        // The detector's speech against the recording's: both ends are found to the
        // frame (10 ms each), and espeak-ng's soft onset and decay lie between the
        // truth's −50 dBFS peak and the detector's −45 dBFS RMS for a few ms at most.
        let heard = at("speech_end") - at("speech_start");
        assert!(
            (heard - speech_ms).abs() <= 4.0 * FRAME_MS,
            "detector {heard:.1} ms vs recording {speech_ms:.1} ms"
        );
        endpointing.push(stage("endpointing"));
        for ((name, _), measured) in SERVER_STAGES.iter().zip(&mut server_stages) {
            measured.push(stage(name));
        }
        let v2v = run["metrics"]["voice_to_voice_ms"]["value"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let sum: f64 = turn["stages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| s["ms"].as_f64().unwrap_or(f64::NAN))
            .sum();
        assert!((sum - v2v).abs() < 1e-6, "{sum} vs {v2v}");
        assert!((v2v - (at("first_audio_out") - at("speech_end"))).abs() < 1e-6);
    }
    // The detector decides a frame early at most; the slack above is for the median,
    // a single run has the loaded machine's bound (bounds.rs).
    within(
        &format!("{browser} endpointing"),
        HANGOVER_MS - FRAME_MS,
        HANGOVER_MS + DECISION_SLACK_MS,
        &endpointing,
    )?;
    // Each server stage is at least its injected delay; bounds.rs says by how much more.
    for ((name, injected), ms) in SERVER_STAGES.iter().zip(&server_stages) {
        above_injected(&format!("{browser} {name}"), *injected, ms)?;
    }
    assert_eq!(
        batch["schema_version"], 3,
        "a turn makes the batch version 3"
    );
    // The table shows the same median and the stage breakdown.
    let v2v_p50 = batch["statistics"]["voice_to_voice_ms"]["p50"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let table =
        table_value(&stdout, "voice_to_voice_ms", "p50").context("no voice_to_voice_ms row")?;
    assert!((table - v2v_p50).abs() < 0.01, "{stdout}");
    assert!(
        stdout.contains("voice turns: 3 of 3 reached audio"),
        "{stdout}"
    );
    assert!(stdout.contains("detector: speech_start"), "{stdout}");
    Ok(())
}

/// `--voice-turn --barge-in`: the user speaks again over the reply (the microphone's
/// loop) and the page stops it; interrupt_ms runs from that speech's start to the
/// reply's last sample, and holds the detector's onset (60 ms) and the device.
#[test]
fn a_barge_in_stops_the_reply_and_reports_interrupt_ms() -> anyhow::Result<()> {
    let _machine = alone()?;
    let (stdout, batch) = run_ok_with_batch(
        "barge.json",
        &[
            "--voice-turn",
            "--barge-in",
            "--target",
            TURN_TARGET,
            "--runs",
            "2",
        ],
    )?;
    println!("{stdout}");
    for run in batch["runs"].as_array().unwrap() {
        let barge = &run["timeline"]["turn"]["barge_in"];
        let start = barge["speech_start_ms"]
            .as_f64()
            .unwrap_or_else(|| panic!("{run}"));
        let stopped = barge["playback_stopped_ms"].as_f64().unwrap();
        let heard = run["timeline"]["milestones"]["first_audio_out"]
            .as_f64()
            .unwrap();
        // The interruption came while the reply played, and stopped it after it began.
        assert!(
            start > heard,
            "barge-in at {start} before the reply at {heard}"
        );
        let interrupt = run["metrics"]["interrupt_ms"]["value"].as_f64().unwrap();
        assert!((interrupt - (stopped - start)).abs() < 1e-6);
        // At least the detector's onset (60 ms of speech frames); at most that, a frame,
        // the capture block, a busy main thread and the output latency Chromium
        // reports for its fake device (≤ 50 ms here): 60 + 10 + 10 + 16.7 + 50.
        assert!(
            (60.0..150.0).contains(&interrupt),
            "interrupt_ms {interrupt}"
        );
    }
    assert!(
        table_value(&stdout, "interrupt_ms", "p50").is_some(),
        "{stdout}"
    );
    Ok(())
}

/// `--api` for each API ttfx speaks: the runner sends that API's body to the simulator's
/// path for it, the probe decodes the reply in its dialect, and the server's record
/// joins (a gap for the first visible token).
#[test]
fn every_api_is_measured_with_its_own_body_and_dialect() -> anyhow::Result<()> {
    for api in ttfx_core::ChatApi::ALL {
        let (stdout, batch) = run_ok_with_batch(
            &format!("api-{api}.json"),
            &[
                "--target",
                "sim/default?ttft_ms=50&tokens_per_second=400&output_tokens=8&seed=3",
                "--api",
                api.as_str(),
                "--runs",
                "1",
                "--warmup",
                "0",
            ],
        )?;
        assert_eq!(batch["outcomes"]["completed"], 1, "{api}: {stdout}");
        let run = &batch["runs"][0];
        let timeline = &run["timeline"];
        assert_eq!(
            timeline["request"]["dialect"],
            api.dialect().as_str(),
            "{api}: {timeline}"
        );
        assert!(
            timeline["milestones"]["first_visible_token"].is_number(),
            "{api}: {timeline}"
        );
        let gaps = run["metrics"]["gaps"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            gaps.iter().any(|g| g["milestone"] == "first_visible_token"),
            "{api}: the record joined: {gaps:?}"
        );
    }
    let out = ttfx_run(&["--api", "gemini", "--runs", "1"])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--api: unknown API `gemini`"), "{stderr}");
    Ok(())
}

/// `proxy/NAME` of a preset upstream: the runner speaks that provider's API at its path
/// and the probe reads the reply in the preset's dialect. The "providers" are another
/// `ttfx serve`, whose simulator answers each API the way the provider does.
#[test]
fn a_preset_upstream_is_measured_in_its_own_api_and_dialect() -> anyhow::Result<()> {
    let provider = ServeProcess::start(&paths::ttfx_bin()?, &[])?;
    let base = format!("{}sim/default", provider.url);
    let config = temp("presets.toml");
    std::fs::write(
        &config,
        format!(
            "[upstreams.claude]\npreset = \"anthropic\"\nbase_url = \"{base}\"\n\
             api_key = \"sk-ant-run-test\"\n\
             [upstreams.llama]\npreset = \"llamacpp\"\nbase_url = \"{base}\"\n"
        ),
    )?;
    let config_arg = config.to_string_lossy().into_owned();
    let json = temp("presets.json");
    let out = ttfx_run(&[
        "--config",
        &config_arg,
        "--target",
        "proxy/claude?ttft_ms=60&output_tokens=6&seed=2",
        "--against",
        "proxy/llama?ttft_ms=60&output_tokens=6&seed=2",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--json",
        json.to_str().unwrap(),
    ])?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let b_path = json.with_file_name(format!(
        "{}.against.json",
        json.file_stem().unwrap().to_str().unwrap()
    ));
    for (path, dialect, route) in [
        (&json, "anthropic", "/proxy/claude/v1/messages"),
        (&b_path, "llamacpp", "/proxy/llama/v1/chat/completions"),
    ] {
        let batch: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let _ = std::fs::remove_file(path);
        assert_eq!(batch["outcomes"]["completed"], 1, "{dialect}: {stdout}");
        let timeline = &batch["runs"][0]["timeline"];
        assert_eq!(timeline["request"]["dialect"], dialect, "{timeline}");
        assert!(
            timeline["request"]["url"]
                .as_str()
                .unwrap_or("")
                .contains(route),
            "{timeline}"
        );
        // The proxy's record joined: its first token is a server timing of the run.
        let first_token = timeline["milestones"]["first_token"].as_f64().unwrap();
        assert!(first_token >= 60.0, "{dialect}: {timeline}");
    }
    // An upstream the config does not name stops the run before a browser starts.
    let out = ttfx_run(&["--config", &config_arg, "--target", "proxy/nope"])?;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no upstream `nope`") && stderr.contains("claude, llama"),
        "{stderr}"
    );
    let _ = std::fs::remove_file(&config);
    Ok(())
}

/// The process group ids of `pid`'s children (each driver leads its own group).
fn child_groups(pid: u32) -> Vec<u32> {
    let mut groups = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp …; comm may hold spaces, so read after its `)`.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid)
            && let Some(group) = fields.get(2).and_then(|g| g.parse::<u32>().ok())
        {
            groups.push(group);
        }
    }
    groups
}

/// Processes still in process group `group` (zombies included: a test that passes left
/// nothing at all).
fn members(group: u32) -> usize {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().nth(2)?.parse::<u32>().ok())
                    == Some(group)
            })
        })
        .count()
}

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP mid-run stop `ttfx run` with its driver and browsers:
/// once it has exited, no process of the driver's group is left.
#[test]
fn a_signal_mid_run_stops_the_run_and_every_browser_it_started() -> anyhow::Result<()> {
    for (signal, code) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129)] {
        let child = Command::new(paths::ttfx_bin()?)
            .arg("run")
            .arg("--probe-pkg")
            .arg(paths::probe_pkg()?)
            .args(["--target", TARGET, "--runs", "200"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        // Wait until the driver and its browser run.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let group = loop {
            let groups: Vec<u32> = child_groups(child.id())
                .into_iter()
                .filter(|&g| g != child.id())
                .collect();
            if let Some(&g) = groups.first()
                && members(g) >= 2
            {
                break g;
            }
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "no driver with a browser under ttfx run within 30 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        std::thread::sleep(std::time::Duration::from_millis(500));
        Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()?;
        let out = child.wait_with_output()?;
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("stopped by"),
            "{}",
            text(&out.stderr)
        );
        // SIGKILL is delivered at once; a browser's processes take a moment to die.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while members(group) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(
            members(group),
            0,
            "{signal}: processes of the driver's group are left"
        );
    }
    Ok(())
}

/// A page that never reports, served on loopback until the test ends: a run against it
/// waits (up to its timeout) with its browser open.
fn silent_page() -> anyhow::Result<String> {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0; 4096];
            let _ = stream.read(&mut request);
            let body = "<!doctype html><title>silent</title><p>no probe here</p>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(url)
}

/// SIGHUP (the terminal closed, the SSH session dropped) stops `ttfx run` like SIGTERM:
/// exit 129, stderr says so, and no process of the driver's group (chromedriver,
/// Chromium) is left. Needs no probe package: a `--url` page without the probe.
#[test]
fn a_sighup_when_the_terminal_closes_stops_every_browser_of_the_run() -> anyhow::Result<()> {
    let url = silent_page()?;
    let child = Command::new(paths::ttfx_bin()?)
        .args(["run", "--url", &url, "--runs", "1", "--warmup", "0"])
        .args(["--timeout-s", "120"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let group = loop {
        let groups: Vec<u32> = child_groups(child.id())
            .into_iter()
            .filter(|&g| g != child.id())
            .collect();
        // chromedriver and at least one Chromium process.
        if let Some(&g) = groups.first()
            && members(g) >= 2
        {
            break g;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no driver with a browser under ttfx run within 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // Let the session open and the page load: the run is waiting on the page.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let browsers = members(group);
    Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()?;
    let out = child.wait_with_output()?;
    assert_eq!(out.status.code(), Some(129), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("stopped by SIGHUP; its browsers and drivers are stopped"),
        "{}",
        text(&out.stderr)
    );
    // SIGKILL is delivered at once; a browser's processes take a moment to die.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while members(group) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        members(group),
        0,
        "of {browsers} processes of the driver's group, some are left"
    );
    Ok(())
}

/// A page that pushes `report` onto `window.__ttfx` two seconds after it loads (no
/// probe: the report is the page's own), served on loopback until the test ends.
fn page_pushing(report: &str) -> anyhow::Result<String> {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/", listener.local_addr()?);
    let body = format!(
        "<!doctype html><title>pushes</title><script>setTimeout(() => \
         {{ window.__ttfx = [{report}]; }}, 2000);</script>"
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(url)
}

/// `pid`'s effective uid and command line, from `/proc`.
fn uid_and_cmdline(pid: u32) -> Option<(u32, String)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some((uid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
}

/// Every process of process group `group`.
fn pids_of(group: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let pgrp: u32 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(2)?
                .parse()
                .ok()?;
            (pgrp == group).then_some(pid)
        })
        .collect()
}

/// A page nobody here wrote meets Chromium in its sandbox: run as root, `ttfx run`
/// starts chromedriver and Chromium as `nobody`, without `--no-sandbox`; the table and
/// the JSON say so. Where the sandbox cannot be on, both say it is off and why, and
/// stderr does too.
#[test]
fn a_hostile_page_meets_chromium_in_its_sandbox_or_the_run_says_why_not() -> anyhow::Result<()> {
    use ttfx_core::Milestone;
    use ttfx_core::report::{Run, RunReport};
    let mut timeline = ttfx_core::Timeline::default();
    for (m, at) in [
        (Milestone::FirstToken, 100.0),
        (Milestone::FirstVisibleToken, 100.0),
        (Milestone::Done, 150.0),
    ] {
        timeline.milestones.set(m, at);
    }
    let report = serde_json::to_string(&RunReport::new(Run::new(None, None, timeline)?))?;
    let url = page_pushing(&report)?;
    let json = temp("sandbox.json");
    let child = Command::new(paths::ttfx_bin()?)
        .args(["run", "--url", &url, "--runs", "1", "--warmup", "0"])
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    // While the page waits to push its report, read who the browsers run as.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let browsers = loop {
        let groups: Vec<u32> = child_groups(child.id())
            .into_iter()
            .filter(|&g| g != child.id())
            .collect();
        let procs: Vec<(u32, String)> = groups
            .first()
            .map(|&g| pids_of(g).into_iter().filter_map(uid_and_cmdline).collect())
            .unwrap_or_default();
        if procs.iter().any(|(_, c)| c.contains("--type=renderer")) {
            break procs;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no renderer under ttfx run within 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = child.wait_with_output()?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let batch: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    let _ = std::fs::remove_file(&json);
    let sandbox = &batch["sandbox"];
    let line = stdout
        .lines()
        .find(|l| l.starts_with("sandbox: "))
        .unwrap_or_else(|| panic!("no sandbox line in:\n{stdout}"));
    let am_root = uid_and_cmdline(std::process::id()).map(|(u, _)| u) == Some(0);
    match sandbox["state"].as_str() {
        Some("on") => {
            for (uid, cmdline) in &browsers {
                assert!(!cmdline.contains("--no-sandbox"), "{cmdline}");
                if am_root {
                    assert_ne!(*uid, 0, "a browser process runs as root: {cmdline}");
                }
            }
            if am_root {
                assert_eq!(sandbox["user"], "nobody", "{batch}");
                assert!(
                    line.contains("sandbox is on (the driver and its browsers run as nobody)"),
                    "{line}"
                );
            }
        }
        Some("off") => {
            let why = sandbox["why"].as_str().unwrap_or_default();
            assert!(!why.is_empty(), "{batch}");
            assert!(
                line.contains(why) && stderr.contains(why),
                "{line}\n{stderr}"
            );
        }
        other => panic!("sandbox {other:?} in {batch}"),
    }
    Ok(())
}

/// `--sweep`: at each step the simulator carries the load generator's streams, and the
/// browsers' runs meet the batch it fills. The simulator's load model (docs/serve.md,
/// "Under load") adds `load_ttft_ms` to a stream's first token per other stream running,
/// so the step at 6 streams must show the browsers' and the load's TTFT higher by about
/// 5 × 40 ms than at 1; a budget that holds at the first step breaks at the second.
#[test]
fn a_sweep_measures_the_browsers_under_each_load_level() -> anyhow::Result<()> {
    let json = temp("sweep.json");
    let junit = temp("sweep.xml");
    let started = std::time::Instant::now();
    let out = ttfx_run(&[
        "--target",
        "sim/default?ttft_ms=100&tokens_per_second=200&output_tokens=20&load_ttft_ms=40&seed=3",
        "--sweep",
        "concurrency=1,6",
        "--runs",
        "3",
        "--step-warmup-s",
        "1",
        "--step-duration-s",
        "3",
        "--budget",
        "ttft.p50<=220ms",
        "--json",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ])?;
    let seconds = started.elapsed().as_secs_f64();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // The budget breaks at the second step: exit 1, said where.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("budget ttft.p50<=220ms breaks at concurrency=6"),
        "{stdout}"
    );
    let sweep: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    assert_eq!(sweep["schema"], "ttfx-sweep/1");
    let steps = sweep["steps"].as_array().context("steps")?;
    assert_eq!(steps.len(), 2, "{sweep}");
    let figure = |step: &Value, side: &str, metric: &str| -> anyhow::Result<f64> {
        let target = &step["targets"][0];
        let stats = match side {
            "browser" => &target["browser"]["statistics"][metric],
            _ => &target["load"]["metrics"][metric],
        };
        stats["p50"]
            .as_f64()
            .with_context(|| format!("{side} {metric} p50 in {step}"))
    };
    for (step, level) in steps.iter().zip([1.0, 6.0]) {
        assert_eq!(step["level"]["kind"], "concurrency");
        assert_eq!(step["level"]["value"].as_f64(), Some(level));
        // The browsers made their runs, and only theirs are in the batch.
        assert_eq!(
            step["targets"][0]["browser"]["outcomes"]["total"], 3,
            "{step}"
        );
        // The load's own requests, none of them failed; closed loop at the level.
        let load = &step["targets"][0]["load"];
        assert_eq!(load["mode"]["concurrency"].as_f64(), Some(level), "{load}");
        assert_eq!(load["errors"]["total"], 0, "{load}");
        assert!(load["requests"]["completed"].as_u64() > Some(0), "{load}");
    }
    // 5 more streams in the batch at 6 than at 1: +200 ms by the model. Below it by
    // the scheduling of the closed loop (a stream between requests is not in the batch
    // for the moment it takes to send the next), above it never by more than the
    // browser's own stream (+40 ms) and timer lateness.
    for side in ["browser", "load"] {
        let low = figure(&steps[0], side, "ttft_ms")?;
        let high = figure(&steps[1], side, "ttft_ms")?;
        let added = high - low;
        assert!(
            (120.0..=300.0).contains(&added),
            "{side}: ttft p50 {low:.1} → {high:.1} ms (+{added:.1}, model +200)\n{stdout}"
        );
    }
    // One JUnit suite per step, the budget failing in the second only.
    let cases = junit_cases(&junit)?;
    assert_eq!(cases.len(), 2, "{cases:?}");
    assert!(!cases[0].1 && cases[1].1, "{cases:?}");
    // Each step: 1 s warm-up + at least 3 s of load; the browsers' sessions and runs fit
    // inside or add a little. 2 × 4 s plus the browser's start is well under 40 s.
    assert!(seconds < 40.0, "the sweep took {seconds:.1} s");
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&junit);
    Ok(())
}

/// `--page-streams`: a stream of 480 ms (first token 300 ms after arrival, then 9 more
/// at 50 tokens/s; no jitter), 8 at once from one page over plain HTTP/1.1 on loopback.
const QUEUE_TARGET: &str =
    "sim/default?ttft_ms=300&tokens_per_second=50&output_tokens=10&jitter=0&seed=5";

/// Streams each page sends at once in the queue test: two past HTTP/1.1's six.
const PAGE_STREAMS: usize = 8;

/// How long a stream that was not queued may read: the engine's own set-up between
/// `fetchStart` and `requestStart` (cache lookup, the hop to its network process),
/// measured on this 2-core machine at up to 3 ms idle and up to 31 ms while it also
/// builds (all three engines). The same bound as the report's note
/// (`QUEUED_NOTE_MS`): a stream below it gets no note, one above it does.
const NOT_QUEUED_BELOW_MS: f64 = ttfx_core::metrics::network::QUEUED_NOTE_MS;

/// One page's 8 streams (in the order it sent them): the first six go out at once, the
/// 7th and 8th wait for a connection. All times here are one page's clock (each run's
/// `request_start_unix_ms` is the page's `timeOrigin` plus its start, so their
/// differences are the page's own): a queued stream's request goes out once one of the
/// six connections is free, no earlier than the first of the six responses ends (2 ms:
/// two steps of the engines' 1 ms clocks) and no later than the last of them ends plus
/// the engine's hand-over of the freed connection (WebKit took up to 80 ms, the others
/// under 10 ms: 120 ms). The simulator holds each of the six 480 ms, so the wait is about
/// one stream's duration; 400 ms is that less the 8 sends' spread in one task (under
/// 30 ms measured) and a loaded machine's lateness.
fn check_page_of_streams(page: &[Value]) -> Result<(), String> {
    let value = |run: &Value, metric: &str| run["metrics"][metric]["value"].as_f64();
    let queued: Vec<Option<f64>> = page.iter().map(|r| value(r, "request_queued_ms")).collect();
    let shown = || format!("request_queued_ms of the page's streams: {queued:?}");
    // A Resource Timing time of a run on the page's clock, from the page's time origin.
    let at = |run: &Value, field: &str| -> Option<f64> {
        let t = &run["timeline"];
        Some(t["request_start_unix_ms"].as_f64()? + t["resource_timing"][field].as_f64()?)
    };
    let (first, rest) = page.split_at(6);
    let ends: Vec<f64> = first
        .iter()
        .filter_map(|r| at(r, "response_end_ms"))
        .collect();
    let (Some(earliest), Some(latest), 6) = (
        ends.iter().copied().reduce(f64::min),
        ends.iter().copied().reduce(f64::max),
        ends.len(),
    ) else {
        return Err(format!(
            "the first six streams' entries have no end: {}",
            shown()
        ));
    };
    let notes = |run: &Value| run["metrics"]["notes"].to_string();
    for (i, run) in first.iter().enumerate() {
        match value(run, "request_queued_ms") {
            Some(q) if q < NOT_QUEUED_BELOW_MS && !notes(run).contains("connection limit") => {}
            _ => return Err(format!("stream {} was held back: {}", i + 1, shown())),
        }
    }
    for (i, run) in rest.iter().enumerate() {
        let n = i + 7;
        let (Some(q), Some(sent)) = (value(run, "request_queued_ms"), at(run, "request_start_ms"))
        else {
            return Err(format!("stream {n} has no figure: {}", shown()));
        };
        if !(earliest - 2.0..=latest + 120.0).contains(&sent) {
            return Err(format!(
                "stream {n} was sent {:.1} ms after the first of the six ended ({:.1} ms \
                 before the last did): {}",
                sent - earliest,
                latest - sent,
                shown()
            ));
        }
        if q < 400.0 {
            return Err(format!(
                "stream {n} waited {q:.1} ms, not a 480 ms stream: {}",
                shown()
            ));
        }
        let note = notes(run);
        if !(note.contains("per-host connection limit") && note.contains("http/1.1")) {
            return Err(format!("stream {n}'s note: {note}"));
        }
    }
    Ok(())
}

/// `--page-streams 8` against the simulator over plain HTTP (HTTP/1.1) on loopback: each
/// page's first six streams go out at once, the 7th and 8th wait for one of the six
/// connections a browser opens to a host, and the report says so (`request_queued_ms`,
/// the note, the table's line) in every engine that holds them in that order.
async fn page_streams_past_six_wait_for_a_connection(
    engine: ttfx_e2e::engines::Engine,
) -> anyhow::Result<()> {
    let runs = (2 * PAGE_STREAMS).to_string();
    let streams = PAGE_STREAMS.to_string();
    let name = format!("queue-{}.json", engine.name());
    let (stdout, batch) = run_ok_with_batch(
        &name,
        &[
            "--browser",
            engine.name(),
            "--target",
            QUEUE_TARGET,
            "--runs",
            &runs,
            "--page-streams",
            &streams,
        ],
    )?;
    let runs = batch["runs"].as_array().context("runs")?;
    assert_eq!(runs.len(), 2 * PAGE_STREAMS, "{stdout}");
    // Every run's figure is in the batch's statistics and the table.
    let stats = &batch["statistics"]["request_queued_ms"];
    assert_eq!(stats["count"].as_u64(), Some(runs.len() as u64), "{stats}");
    assert!(
        table_value(&stdout, "request_queued_ms", "max").is_some(),
        "{stdout}"
    );
    // Each run of a page is its own stream: its own request id, all over HTTP/1.1.
    for run in runs {
        assert_eq!(
            run["timeline"]["resource_timing"]["next_hop_protocol"], "http/1.1",
            "{run}"
        );
    }
    let mut failures = Vec::new();
    for page in runs.chunks(PAGE_STREAMS) {
        if let Err(e) = check_page_of_streams(page) {
            failures.push(e);
        }
    }
    if failures.is_empty() {
        assert!(
            stdout.contains("browser queue: 4 of 16 run(s) held by the browser"),
            "{stdout}"
        );
        assert!(
            stdout.contains("per-host limit of six connections"),
            "{stdout}"
        );
        return Ok(());
    }
    match engine {
        // WebKitGTK (libsoup) holds streams back, but not always the 7th and 8th of a
        // page: one session sent all 8 of a page at once, another held its 3rd stream
        // 102 ms, and its queued streams waited up to 584 ms for 480 ms ones.
        ttfx_e2e::engines::Engine::WebKit => {
            ttfx_e2e::engines::missing(
                engine,
                "page_streams_past_six_wait_for_a_connection",
                "the 7th and 8th of 8 streams wait for a connection, the first six do not",
                &failures.join("; "),
            );
            // What it does instead, said as the report says it: each held stream has a
            // figure, and one held past the note's bound has the note.
            for run in runs {
                let q = run["metrics"]["request_queued_ms"]["value"].as_f64();
                let note = run["metrics"]["notes"]
                    .to_string()
                    .contains("connection limit");
                assert_eq!(q.map(|q| q > NOT_QUEUED_BELOW_MS), Some(note), "{run}");
            }
            Ok(())
        }
        _ => panic!("{}\n{stdout}", failures.join("\n")),
    }
}

// Alone: its bounds are one machine's timing, not three browsers' streams at once.
ttfx_e2e::engines!(alone page_streams_past_six_wait_for_a_connection);
