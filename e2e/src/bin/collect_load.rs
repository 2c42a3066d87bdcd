//! `cargo xtask bench collect` (#31): the collector under load, in figures.
//!
//! A real `ttfx serve --collect FILE.db` (`$TTFX_BIN`, release) on loopback; this
//! process posts field reports to it open loop (`ttfx_e2e::load`). Printed:
//!
//! 1. the highest rate at which ingest holds p99 ≤ 20 ms for a whole window (short
//!    windows find the bracket, full windows decide), p50/p99 at 2,000 beacons/s, the
//!    server's CPU time per beacon and the database's bytes per run;
//! 2. with 1,000,000 runs stored: the `/field/…` reads and `ttfx field FILE.db` end to
//!    end, each timed several times (medians), and ingest's p99 while a reader loops
//!    over those endpoints.
//!
//! `--quick` shortens every window (development; the headline needs full windows).
//! `--dir PATH` holds the databases (removed at the end). `--fill FILE.db` only stores
//! the million runs the reads are timed over, in that file, and keeps it (to profile
//! a read by hand).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use ttfx_core::stats::percentile;
use ttfx_e2e::load::{self, HttpClient, Window};
use ttfx_e2e::load_report::{self, Seeded};
use ttfx_e2e::{ServeProcess, paths};

/// The latency goal a rate must hold.
const P99_LIMIT_MS: f64 = 20.0;
/// The rate #31 asks the p50/p99 of.
const GOAL_RATE: f64 = 2_000.0;
/// Runs stored for the reads.
const STORED_RUNS: u64 = 1_000_000;
/// Timings per read (medians printed).
const READ_REPS: usize = 5;
/// The ingest rate held while the reads loop.
const RATE_UNDER_READS: f64 = 1_000.0;

struct Options {
    quick: bool,
    dir: PathBuf,
    /// `--fill FILE.db`: only store the million runs the reads are timed over, in this
    /// file, and keep it (to profile a read by hand).
    fill: Option<PathBuf>,
}

fn options() -> anyhow::Result<Options> {
    let mut quick = false;
    let mut dir = None;
    let mut fill = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--dir" => dir = Some(PathBuf::from(args.next().context("--dir needs a path")?)),
            "--fill" => fill = Some(PathBuf::from(args.next().context("--fill needs a path")?)),
            other => {
                bail!("unknown argument {other} (expected --quick, --dir PATH, --fill FILE.db)")
            }
        }
    }
    let dir = dir.context("--dir PATH is required (where the databases go)")?;
    Ok(Options { quick, dir, fill })
}

fn now_unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// A fresh collector on `db`, its token bucket out of the way (the load comes from one
/// loopback address; the bucket's cost per request stays in the figures).
fn serve(ttfx: &Path, db: &Path) -> anyhow::Result<ServeProcess> {
    let db = db.to_str().context("the database path is not UTF-8")?;
    ServeProcess::start(
        ttfx,
        &[
            "--collect",
            db,
            "--collect-rate",
            "1000000",
            "--collect-burst",
            "4000000000",
        ],
    )
}

fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

fn file_len(path: &Path, suffix: &str) -> u64 {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    std::fs::metadata(PathBuf::from(name)).map_or(0, |m| m.len())
}

/// Bodies: one field report each, from a seeded stream, made before the window so the
/// generator's own JSON work is not in it.
fn bodies(n: usize) -> Arc<Vec<Bytes>> {
    let mut rng = Seeded::new(2031);
    let now = now_unix_ms();
    Arc::new(
        (0..n as u64)
            .map(|i| Bytes::from(load_report::field_report(&mut rng, i, now).to_string()))
            .collect(),
    )
}

/// What one window at one rate measured on a fresh database.
struct Measured {
    window: Window,
    db_bytes: u64,
}

async fn ingest_window(
    ttfx: &Path,
    dir: &Path,
    client: &HttpClient,
    bodies: &Arc<Vec<Bytes>>,
    rate: f64,
    seconds: u64,
) -> anyhow::Result<Measured> {
    let db = dir.join("ingest.db");
    remove_db(&db);
    let server = serve(ttfx, &db)?;
    let url = format!("{}collect", server.url);
    let warmup = Duration::from_secs(2);
    let b = bodies.clone();
    let cpu_before = Arc::new(std::sync::Mutex::new(None));
    // The server's CPU is read when the measured window starts: a timer beside the run.
    let pid = server.pid();
    let mark = cpu_before.clone();
    let marker = tokio::spawn(async move {
        tokio::time::sleep(warmup + Duration::from_millis(20)).await;
        if let Ok(mut m) = mark.lock() {
            *m = load::cpu_ms(pid);
        }
    });
    let mut window = load::run(
        client,
        &url,
        rate,
        warmup,
        Duration::from_secs(seconds),
        move |i| b[i as usize % b.len()].clone(),
    )
    .await?;
    let cpu_after = load::cpu_ms(pid);
    let _ = marker.await;
    let before = cpu_before.lock().ok().and_then(|m| *m);
    window.server_cpu_ms = before.zip(cpu_after).map(|(b, a)| a - b);
    drop(server);
    let db_bytes = file_len(&db, "") + file_len(&db, "-wal");
    remove_db(&db);
    Ok(Measured { window, db_bytes })
}

fn print_window(m: &Measured) {
    let w = &m.window;
    let cpu = w
        .cpu_us_per_beacon()
        .map_or("?".to_owned(), |us| format!("{us:.0}"));
    println!(
        "{:>7.0}/s {:>4.0} s  sent {:>7}  stored {:>7}  failed {:>5}  p50 {:>7.2} ms  p99 {:>8.2} ms  \
         max {:>8.1} ms  send lag {:>5.1} ms  server CPU {:>4} µs/beacon  {}  (load {})",
        w.rate_per_s,
        w.seconds,
        w.sent,
        w.stored,
        w.failed,
        w.p50_ms,
        w.p99_ms,
        w.max_ms,
        w.send_lag_ms,
        cpu,
        if w.held(P99_LIMIT_MS) {
            "held"
        } else {
            "NOT held"
        },
        load::loadavg()
    );
}

/// The ingest section: the bracket with short windows, then full windows between the
/// last rate held and the first not held; the goal rate on a full window.
async fn ingest(ttfx: &Path, dir: &Path, quick: bool) -> anyhow::Result<()> {
    let full: u64 = if quick { 10 } else { 60 };
    let short: u64 = if quick { 3 } else { 8 };
    let steps = if quick { 2 } else { 3 };
    let client = load::client();
    let bodies = bodies(4_096);
    let mean_body = bodies.iter().map(Bytes::len).sum::<usize>() / bodies.len();
    println!(
        "\n## ingest: open loop, one field report per POST (mean {mean_body} B), HTTP/1.1 \
         keep-alive, loopback; latency from each request's scheduled time; a window holds \
         when p99 ≤ {P99_LIMIT_MS} ms and every post is stored (204)"
    );
    println!("bracket ({short} s windows, doubling):");
    let mut held = 0.0;
    let mut not_held = None;
    let mut rate = 500.0;
    while rate <= 32_000.0 {
        let m = ingest_window(ttfx, dir, &client, &bodies, rate, short).await?;
        print_window(&m);
        if m.window.held(P99_LIMIT_MS) {
            held = rate;
            rate *= 2.0;
        } else {
            not_held = Some(rate);
            break;
        }
    }
    println!("decided on {full} s windows:");
    let mut best: Option<f64> = None;
    let mut hi = not_held.unwrap_or(held * 2.0);
    // Nothing held: look below the first rate tried.
    let mut lo = if held > 0.0 { held } else { 250.0 };
    // The last held short window must hold a full one too, else step down from it.
    while lo >= 125.0 {
        let m = ingest_window(ttfx, dir, &client, &bodies, lo, full).await?;
        print_window(&m);
        if m.window.held(P99_LIMIT_MS) {
            best = Some(lo);
            break;
        }
        hi = lo;
        lo /= 2.0;
    }
    if best.is_some() {
        for _ in 0..steps {
            let mid = ((lo + hi) / 2.0 / 50.0).round() * 50.0;
            if mid <= lo || mid >= hi {
                break;
            }
            let m = ingest_window(ttfx, dir, &client, &bodies, mid, full).await?;
            print_window(&m);
            if m.window.held(P99_LIMIT_MS) {
                lo = mid;
                best = Some(mid);
            } else {
                hi = mid;
            }
        }
    }
    println!("\n### at {GOAL_RATE}/s for {full} s (the goal: p99 ≤ {P99_LIMIT_MS} ms on 2 cores)");
    let goal = ingest_window(ttfx, dir, &client, &bodies, GOAL_RATE, full).await?;
    print_window(&goal);
    let per_run = goal.db_bytes as f64 / goal.window.stored.max(1) as f64;
    println!("\n### headline (load {})", load::loadavg());
    match best {
        Some(r) => println!(
            "highest rate holding p99 ≤ {P99_LIMIT_MS} ms for {full} s: {r:.0} beacons/s \
             (first not held: {hi:.0}/s)"
        ),
        None => println!("no rate held p99 ≤ {P99_LIMIT_MS} ms for {full} s"),
    }
    println!(
        "at {GOAL_RATE}/s: p50 {:.2} ms, p99 {:.2} ms, {} of {} stored ({})",
        goal.window.p50_ms,
        goal.window.p99_ms,
        goal.window.stored,
        goal.window.sent,
        if goal.window.held(P99_LIMIT_MS) {
            "goal held"
        } else {
            "goal NOT held"
        }
    );
    println!(
        "server CPU per beacon at {GOAL_RATE}/s: {} µs",
        goal.window
            .cpu_us_per_beacon()
            .map_or("?".to_owned(), |us| format!("{us:.0}"))
    );
    println!(
        "database bytes per run: {per_run:.0} B (file + WAL {} B over {} runs incl. warm-up)",
        goal.db_bytes, goal.window.stored
    );
    Ok(())
}

/// The reads #31 times, each as the lab's Field view asks it, over every stored run,
/// and the summary of every metric (`ttfx field`'s default, not timed against a goal on
/// its own: the goal is `ttfx field`'s, end to end).
const READS: [(&str, &str); 5] = [
    (
        "summary",
        "/field/summary?metric=ttft_visible_ms&by=label&since=7d",
    ),
    (
        "series",
        "/field/series?metric=ttft_visible_ms&bucket=1h&since=7d",
    ),
    (
        "histogram",
        "/field/histogram?metric=ttft_visible_ms&bins=20&by=label&since=7d",
    ),
    (
        "slowest",
        "/field/slowest?metric=ttft_visible_ms&limit=10&since=7d",
    ),
    ("summary, every metric", "/field/summary?since=7d"),
];

/// The reads a reader loops over while ingest runs: the four #31 names, as the Field
/// view asks them.
const LOOPED_READS: usize = 4;

/// `ttfx field`'s arguments for the end-to-end timing: the summary above, printed.
const FIELD_ARGS: [&str; 6] = [
    "--metric",
    "ttft_visible_ms",
    "--by",
    "label",
    "--since",
    "7d",
];

/// Goals in ms (#31), by read name.
fn goal_ms(name: &str) -> Option<f64> {
    match name {
        "summary" => Some(300.0),
        "series" | "histogram" | "slowest" => Some(500.0),
        "ttfx field FILE.db --metric" | "ttfx field FILE.db" => Some(1000.0),
        _ => None,
    }
}

/// One GET, timed to its whole answer; fails on any status but 200.
async fn get_ms(client: &HttpClient, url: &str) -> anyhow::Result<f64> {
    let t = Instant::now();
    let req = axum::http::Request::get(url).body(Full::new(Bytes::new()))?;
    let res = client.request(req).await?;
    let status = res.status();
    let body = res.into_body().collect().await?.to_bytes();
    if status != 200 {
        bail!("GET {url}: {status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(t.elapsed().as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 50.0).unwrap_or(f64::NAN)
}

fn print_read(name: &str, times: Vec<f64>) {
    let n = times.len();
    let (lo, hi) = (
        times.iter().copied().fold(f64::INFINITY, f64::min),
        times.iter().copied().fold(0.0, f64::max),
    );
    let m = median(times);
    let verdict = goal_ms(name).map_or(String::new(), |g| {
        format!(
            "goal ≤ {g:.0} ms: {}",
            if m <= g { "held" } else { "NOT held" }
        )
    });
    println!("{name:<24} median {m:>8.1} ms  (min {lo:.1}, max {hi:.1}, n {n})  {verdict}");
}

/// `ttfx field FILE.db ARGS`, the process's wall time.
fn field_cmd_ms(ttfx: &Path, db: &Path, args: &[&str]) -> anyhow::Result<f64> {
    let t = Instant::now();
    let out = Command::new(ttfx)
        .arg("field")
        .arg(db)
        .args(args)
        .output()?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    if !out.status.success() {
        bail!(
            "ttfx field: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(ms)
}

async fn reads(ttfx: &Path, dir: &Path, quick: bool) -> anyhow::Result<()> {
    let db = dir.join("million.db");
    remove_db(&db);
    println!(
        "\n## reads with {STORED_RUNS} runs stored (6 days of runs; every read's slice holds \
         them all)"
    );
    let t = Instant::now();
    let span_ms = 6.0 * 86_400_000.0;
    let fill_db = db.clone();
    tokio::task::spawn_blocking(move || {
        load_report::fill(&fill_db, STORED_RUNS, 20_000, now_unix_ms(), span_ms)
    })
    .await??;
    let bytes = file_len(&db, "");
    println!(
        "filled in {:.1} s through ttfx_collect::db::insert (20,000 rows per transaction): \
         {bytes} B, {:.0} B per run (load {})",
        t.elapsed().as_secs_f64(),
        bytes as f64 / STORED_RUNS as f64,
        load::loadavg()
    );
    let server = serve(ttfx, &db)?;
    let client = load::client();
    // One warm read of each, so the page cache holds the file as it would in service.
    for (_, path) in READS {
        get_ms(
            &client,
            &format!("{}{}", server.url.trim_end_matches('/'), path),
        )
        .await?;
    }
    println!("idle server (load {}):", load::loadavg());
    for (name, path) in READS {
        let url = format!("{}{}", server.url.trim_end_matches('/'), path);
        let mut times = Vec::new();
        for _ in 0..READ_REPS {
            times.push(get_ms(&client, &url).await?);
        }
        print_read(name, times);
    }
    for (name, args) in [
        ("ttfx field FILE.db --metric", &FIELD_ARGS[..]),
        ("ttfx field FILE.db", &[][..]),
    ] {
        let mut times = Vec::new();
        for _ in 0..READ_REPS {
            times.push(field_cmd_ms(ttfx, &db, args)?);
        }
        print_read(name, times);
    }
    println!(
        "(whole processes: `ttfx field FILE.db {}`, and `ttfx field FILE.db`, which \
         summarises every metric with values)",
        FIELD_ARGS.join(" ")
    );

    let seconds = if quick { 10 } else { 60 };
    println!(
        "\n### ingest at {RATE_UNDER_READS}/s for {seconds} s while one reader loops over \
         summary, series, histogram and slowest"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        let client = client.clone();
        let base = server.url.trim_end_matches('/').to_owned();
        tokio::spawn(async move {
            let mut times: Vec<Vec<f64>> = vec![Vec::new(); LOOPED_READS];
            while !stop.load(Ordering::Relaxed) {
                for (i, (_, path)) in READS[..LOOPED_READS].iter().enumerate() {
                    if let Ok(ms) = get_ms(&client, &format!("{base}{path}")).await {
                        times[i].push(ms);
                    }
                }
            }
            times
        })
    };
    let bodies = bodies(4_096);
    let url = format!("{}collect", server.url);
    let b = bodies.clone();
    let m = load::run(
        &client,
        &url,
        RATE_UNDER_READS,
        Duration::from_secs(2),
        Duration::from_secs(seconds),
        move |i| b[i as usize % b.len()].clone(),
    )
    .await?;
    stop.store(true, Ordering::Relaxed);
    let times = reader.await?;
    print_window(&Measured {
        window: m,
        db_bytes: 0,
    });
    for ((name, _), t) in READS[..LOOPED_READS].iter().zip(times) {
        print_read(&format!("{name} (under ingest)"), t);
    }
    drop(server);
    remove_db(&db);
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let opts = options()?;
    if let Some(db) = opts.fill {
        remove_db(&db);
        load_report::fill(&db, STORED_RUNS, 20_000, now_unix_ms(), 6.0 * 86_400_000.0)?;
        println!("{STORED_RUNS} runs stored in {}", db.display());
        return Ok(());
    }
    let ttfx = paths::ttfx_bin()?;
    std::fs::create_dir_all(&opts.dir)
        .with_context(|| format!("cannot create {}", opts.dir.display()))?;
    let date = Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d %H:%M UTC")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!(
        "\n## ttfx serve --collect under load ({date}; {} cores; load {}; {}{})",
        std::thread::available_parallelism().map_or(0, usize::from),
        load::loadavg(),
        ttfx.display(),
        if opts.quick {
            "; --quick: short windows, not the headline"
        } else {
            ""
        }
    );
    ingest(&ttfx, &opts.dir, opts.quick).await?;
    reads(&ttfx, &opts.dir, opts.quick).await?;
    export(&ttfx, &opts.dir, opts.quick).await?;
    Ok(())
}

/// An OTLP/HTTP receiver on loopback that accepts everything (200) and counts the
/// requests and bytes it got: the export's far end, as cheap as a receiver can be, so
/// what is measured is the collector's side.
async fn receiver() -> anyhow::Result<(String, Arc<std::sync::atomic::AtomicU64>)> {
    let requests = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = requests.clone();
    let app = axum::Router::new().fallback(move |body: Bytes| {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::Relaxed);
            drop(body);
            axum::http::StatusCode::OK
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, requests))
}

/// `GET /field/health`'s export counters: (exported, pending).
async fn export_counts(client: &HttpClient, base: &str) -> anyhow::Result<(u64, u64)> {
    let req =
        axum::http::Request::get(format!("{base}field/health")).body(Full::new(Bytes::new()))?;
    let res = client.request(req).await?;
    let body = res.into_body().collect().await?.to_bytes();
    let doc: serde_json::Value = serde_json::from_slice(&body)?;
    let n = |k: &str| doc["otlp"][k].as_u64().unwrap_or(0);
    Ok((n("exported"), n("pending")))
}

/// #31: "exports keep up with that rate". The collector exports every stored run to a
/// loopback receiver while beacons arrive at the goal rate; keeping up means the
/// backlog stays bounded through the window (it does not grow with time) and drains
/// soon after. Printed: ingest's p50/p99 with export on, the backlog's largest and
/// last size, runs exported per second, and the time to drain after the window.
async fn export(ttfx: &Path, dir: &Path, quick: bool) -> anyhow::Result<()> {
    let seconds: u64 = if quick { 10 } else { 60 };
    println!(
        "\n## OTLP export at {GOAL_RATE}/s for {seconds} s (http/protobuf to a loopback \
         receiver that answers 200)"
    );
    let (receiver_url, requests) = receiver().await?;
    let db = dir.join("export.db");
    remove_db(&db);
    let db_arg = db.to_str().context("the database path is not UTF-8")?;
    let server = ServeProcess::start(
        ttfx,
        &[
            "--collect",
            db_arg,
            "--collect-rate",
            "1000000",
            "--collect-burst",
            "4000000000",
            "--otlp-endpoint",
            &receiver_url,
        ],
    )?;
    let client = load::client();
    let base = server.url.clone();
    let stop = Arc::new(AtomicBool::new(false));
    // The backlog once a second through the window.
    let sampler = {
        let (stop, client, base) = (stop.clone(), client.clone(), base.clone());
        tokio::spawn(async move {
            let mut pending = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok((_, p)) = export_counts(&client, &base).await {
                    pending.push(p);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            pending
        })
    };
    let bodies = bodies(4_096);
    let b = bodies.clone();
    let (exported_before, _) = export_counts(&client, &base).await?;
    let t = Instant::now();
    let pid = server.pid();
    let cpu_before = load::cpu_ms(pid);
    let mut window = load::run(
        &client,
        &format!("{base}collect"),
        GOAL_RATE,
        Duration::from_secs(2),
        Duration::from_secs(seconds),
        move |i| b[i as usize % b.len()].clone(),
    )
    .await?;
    let elapsed = t.elapsed().as_secs_f64();
    window.server_cpu_ms = cpu_before.zip(load::cpu_ms(pid)).map(|(b, a)| {
        // Over warm-up and window both: the share of the measured window.
        (a - b) * seconds as f64 / elapsed
    });
    stop.store(true, Ordering::Relaxed);
    let pending = sampler.await?;
    let (exported_end, pending_end) = export_counts(&client, &base).await?;
    let drain = Instant::now();
    let mut drained = pending_end == 0;
    while !drained && drain.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        drained = export_counts(&client, &base).await?.1 == 0;
    }
    let drain_s = drain.elapsed().as_secs_f64();
    let (exported_all, _) = export_counts(&client, &base).await?;
    print_window(&Measured {
        window,
        db_bytes: 0,
    });
    let largest = pending.iter().copied().max().unwrap_or(0);
    let half = pending.len() / 2;
    let first_half = pending[..half].iter().copied().max().unwrap_or(0);
    let second_half = pending[half..].iter().copied().max().unwrap_or(0);
    println!(
        "exported {} runs in {elapsed:.1} s ({:.0} runs/s) in {} receiver requests; backlog: \
         largest {largest}, largest in the first half {first_half}, in the second {second_half}, \
         {pending_end} at the end, drained {} (load {})",
        exported_end - exported_before,
        (exported_end - exported_before) as f64 / elapsed,
        requests.load(Ordering::Relaxed),
        if drained {
            format!("{drain_s:.1} s after the window ({exported_all} exported in all)")
        } else {
            format!("NOT within {drain_s:.0} s")
        },
        load::loadavg()
    );
    let keeps_up = drained && second_half <= first_half.max(2 * 512);
    println!(
        "exports keep up at {GOAL_RATE}/s: {}",
        if keeps_up {
            "yes (the backlog did not grow through the window and drained)"
        } else {
            "NO (the backlog grew through the window or did not drain)"
        }
    );
    drop(server);
    remove_db(&db);
    Ok(())
}
