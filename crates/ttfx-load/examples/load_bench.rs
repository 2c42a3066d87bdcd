//! `cargo xtask bench load`: the highest open-loop rate the generator holds against the
//! simulator (issue #33: 1,000 streams/s on a two-core machine with its own lateness
//! p99 ≤ 2 ms). `ttfx serve` runs as a separate process on 127.0.0.1:0, a profile with
//! short replies; a ladder of rates, a few seconds each; per step the figures, then the
//! highest rate held. Loopback only, bounded in count and time; nothing asserted.
//!
//! Usage: `load_bench PATH_TO_TTFX [--quick]` (release builds).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ttfx_core::ChatApi;
use ttfx_load::{
    ACHIEVED_SHARE_MIN, CancellationToken, Endpoint, LATENESS_P99_LIMIT_MS, LoadReport, LoadSpec,
    Mode,
};

/// Short replies: the first token after 20 ms, eight tokens at 400/s (about 40 ms a
/// stream), so a rate of thousands holds only tens of streams open: the bench measures
/// the generator's sending, not the server's capacity for streams.
const QUERY: &str = "ttft_ms=20&tokens_per_second=400&output_tokens=8";
const RATES: [f64; 10] = [
    250.0, 500.0, 1000.0, 1500.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0, 8000.0,
];
/// The ladder stops after this many steps in a row not held.
const MISSES_TO_STOP: usize = 2;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(bin: &str) -> Result<(Server, String), String> {
    let mut child = Command::new(bin)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {bin}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let base = line
        .trim()
        .strip_prefix("ttfx serve: listening on ")
        .ok_or_else(|| format!("no listening line: {line:?}"))?
        .trim_end_matches('/')
        .to_owned();
    Ok((server, base))
}

fn spec(base: &str, rate: f64, warmup: Duration, duration: Duration) -> LoadSpec {
    LoadSpec {
        endpoint: Endpoint {
            url: format!("{base}/sim/default/v1/chat/completions?{QUERY}"),
            api: ChatApi::OpenAiChat,
            headers: Vec::new(),
            ca_file: None,
        },
        label: format!("sim/default?{QUERY}"),
        model: "bench".into(),
        prompts: vec!["hi".into()],
        mode: Mode::Rate(rate),
        warmup,
        duration: Some(duration),
        seed: 1,
        timeout: Duration::from_secs(10),
        goodput: Vec::new(),
    }
}

fn row(rate: f64, r: &LoadReport) -> String {
    let g = &r.generator;
    let l = g.lateness_ms;
    let m = |name: &str, f: fn(&ttfx_core::stats::Summary) -> f64| {
        r.metrics.get(name).map_or(f64::NAN, f)
    };
    format!(
        "{rate:>8.0} {:>10.1} {:>10.1} {:>9.3} {:>9.3} {:>9.3} {:>7} {:>9.2} {:>9.2}  {}",
        g.scheduled_per_s.unwrap_or(f64::NAN),
        g.achieved_per_s,
        l.map_or(f64::NAN, |l| l.p50),
        l.map_or(f64::NAN, |l| l.p99),
        l.map_or(f64::NAN, |l| l.max),
        r.errors.total,
        m("ttft_ms", |s| s.p50),
        m("ttft_ms", |s| s.p99),
        if held(r) { "held" } else { "NOT held" },
    )
}

/// Held: the generator's own verdict, with no error (a failing server is not a held
/// load).
fn held(r: &LoadReport) -> bool {
    r.generator.held == Some(true) && r.errors.total == 0
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let bin = args
        .next()
        .ok_or("usage: load_bench PATH_TO_TTFX [--quick]")?;
    let quick = args.any(|a| a == "--quick");
    let (warmup, duration) = if quick {
        (Duration::from_millis(500), Duration::from_secs(2))
    } else {
        (Duration::from_secs(1), Duration::from_secs(5))
    };
    let (_server, base) = start_server(&bin)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    println!(
        "\n## ttfx load: open loop against `ttfx serve` (another process), sim/default?{QUERY}; \
         {} s per step after {} s of warm-up, seed 1; {} cores, load average {}",
        duration.as_secs_f64(),
        warmup.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "{:>8} {:>10} {:>10} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9}",
        "rate/s",
        "sched/s",
        "achieved/s",
        "late p50",
        "late p99",
        "late max",
        "errors",
        "ttft p50",
        "ttft p99"
    );
    let mut best = None;
    let mut misses = 0;
    for rate in RATES {
        let report = runtime
            .block_on(ttfx_load::run(
                spec(&base, rate, warmup, duration),
                CancellationToken::new(),
            ))
            .map_err(|e| e.to_string())?;
        println!("{}", row(rate, &report));
        if held(&report) {
            best = Some(rate);
            misses = 0;
        } else {
            misses += 1;
            if misses >= MISSES_TO_STOP {
                break;
            }
        }
    }
    println!(
        "highest rate held (lateness p99 ≤ {LATENESS_P99_LIMIT_MS} ms, achieved ≥ {:.0} % of \
         the schedule's rate, no error): {}",
        ACHIEVED_SHARE_MIN * 100.0,
        best.map_or("none".to_owned(), |r| format!("{r}/s"))
    );
    Ok(())
}
