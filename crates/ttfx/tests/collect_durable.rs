//! Nothing the collector acknowledged is lost (#31 point 3). A real `ttfx serve --collect
//! FILE.db` is killed with SIGKILL at random moments while a separate process posts
//! beacons at a steady rate and readers query; after every restart each beacon that got
//! a 204 is stored exactly once, the file passes `PRAGMA integrity_check` and the OTLP
//! outbox holds every run its receiver has not accepted. And retention counts from a
//! run's arrival, not from the client's clock: a new user's 20 runs of docs/report.md's
//! example (its clock says 2026-01-01) stay after a restart.

// Test code: a failure here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{doc_run_report, ttfx};
use prost::Message as _;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};
use ttfx_e2e::ServeProcess;
use ttfx_otlp::proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use ttfx_otlp::proto::tonic::common::v1::any_value::Value as AnyValue;

const DAY_MS: f64 = 86_400_000.0;

/// SIGKILLs of the server (the issue asks for at least 10).
const KILLS: usize = 12;
/// The poster's senders, each posting once per `SEND_EVERY`: 120 posts/s in all, about
/// half of what one `synchronous = FULL` writer commits per second on this disk
/// (docs/field.md), so the writer is busy when a kill lands but the queue does not grow.
const SENDERS: u64 = 3;
const SEND_EVERY: Duration = Duration::from_millis(25);
/// How long a server runs before its kill: drawn from this range by the seeded RNG.
const UP_MS: std::ops::Range<u64> = 150..1200;

/// The poster's directory, given to the child process; its files:
/// `url` (the current server, rewritten at each restart), `acked` (one run id a line,
/// appended after each 204), `stop` (made by the test when it is done).
const POSTER_DIR: &str = "TTFX_DURABLE_POSTER_DIR";
/// The test that is the poster (run by `acknowledged_beacons_survive_sigkill` in a child
/// process of this same test binary; ignored otherwise).
const POSTER_TEST: &str = "poster_posts_beacons_at_a_steady_rate";

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// splitmix64: the kill moments, repeatable from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn in_range(&mut self, r: std::ops::Range<u64>) -> u64 {
        r.start + self.next() % (r.end - r.start)
    }
}

/// A field report as the probe beacons it, one completed run with this id.
fn beacon(id: &str, now: f64) -> Value {
    json!({
        "schema_version": 1,
        "kind": "field",
        "generator": "ttfx durable test",
        "run": {
            "id": id,
            "label": "durable",
            "target": "https://api.example.com/v1/chat/completions",
            "page_path": "/chat",
            "engine": "chromium",
            "outcome": "completed",
            "hidden": false,
            "sample_rate": 1.0,
            "request_start_unix_ms": now,
            "milestones": {"request_start": 0.0, "first_token": 300.0,
                           "first_visible_token": 310.0, "done": 600.0},
            "metrics": {"ttft_ms": 300.0, "ttft_visible_ms": 310.0},
            "chunks": {"count": 3, "bytes": 300, "visible_tokens": 3, "reasoning_tokens": 0,
                       "bins": []}
        }
    })
}

/// Writes `url` for the poster, whole (a rename), so it never reads half of one.
fn publish_url(dir: &Path, url: &str) {
    let tmp = dir.join("url.tmp");
    std::fs::write(&tmp, url).unwrap();
    std::fs::rename(tmp, dir.join("url")).unwrap();
}

/// The run ids the poster has had a 204 for so far (whole lines only).
fn acked(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("acked")).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole.lines().map(str::to_owned).collect()
}

/// What the poster did, as it prints it when stopped.
#[derive(Debug, Default)]
struct Tally {
    /// Posts sent.
    posts: u64,
    /// Posts answered 204, and their runs.
    acked_posts: u64,
    acked_runs: u64,
    /// Posts that failed in transport (refused, reset, cut by the kill): their runs may
    /// or may not be stored, but never twice.
    failed: u64,
    /// Posts answered with another status, by status: none expected.
    other: HashMap<u16, u64>,
}

impl Tally {
    /// One line, as the poster prints it and the test reads it back.
    fn line(&self) -> String {
        let other: Vec<String> = self.other.iter().map(|(s, n)| format!("{s}x{n}")).collect();
        format!(
            "{} {} {} {} {}",
            self.posts,
            self.acked_posts,
            self.acked_runs,
            self.failed,
            other.join(",")
        )
    }

    fn parse(line: &str) -> Tally {
        let fields: Vec<&str> = line.split(' ').collect();
        let n = |i: usize| fields[i].parse::<u64>().unwrap();
        let other = fields[4]
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (status, count) = s.split_once('x').unwrap();
                (status.parse().unwrap(), count.parse().unwrap())
            })
            .collect();
        Tally {
            posts: n(0),
            acked_posts: n(1),
            acked_runs: n(2),
            failed: n(3),
            other,
        }
    }
}

/// The poster's body: `SENDERS` loops, each posting an NDJSON body of 1 to 3 beacons
/// with ids never used before, every `SEND_EVERY`, to whatever server `url` names, and
/// appending each 204'd post's ids to `acked`. It never retries a post: a failed post's
/// runs may be stored (committed before the kill cut the answer), so a retry could store
/// them twice (the collector does not deduplicate: docs/field.md).
async fn post_until_stopped(dir: PathBuf) -> Tally {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let acked = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("acked"))
            .unwrap(),
    ));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut senders = Vec::new();
    for sender in 0..SENDERS {
        let (client, dir, acked, tally) =
            (client.clone(), dir.clone(), acked.clone(), tally.clone());
        senders.push(tokio::spawn(async move {
            let mut every = tokio::time::interval(SEND_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for seq in 0u64.. {
                every.tick().await;
                if dir.join("stop").exists() {
                    return;
                }
                let Ok(url) = std::fs::read_to_string(dir.join("url")) else {
                    continue;
                };
                let now = now_ms();
                let ids: Vec<String> = (0..1 + seq % 3)
                    .map(|j| format!("s{sender}-{seq}-{j}"))
                    .collect();
                let body: String = ids
                    .iter()
                    .map(|id| format!("{}\n", beacon(id, now)))
                    .collect();
                let sent = client.post(format!("{url}collect")).body(body).send().await;
                let mut t = tally.lock().unwrap();
                t.posts += 1;
                match sent.map(|r| r.status().as_u16()) {
                    Ok(204) => {
                        t.acked_posts += 1;
                        t.acked_runs += ids.len() as u64;
                        let lines: String = ids.iter().map(|id| format!("{id}\n")).collect();
                        // One write per post (O_APPEND): the test reads whole lines only.
                        acked.lock().unwrap().write_all(lines.as_bytes()).unwrap();
                    }
                    Ok(status) => *t.other.entry(status).or_default() += 1,
                    Err(_) => t.failed += 1,
                }
            }
        }));
    }
    for s in senders {
        s.await.unwrap();
    }
    Arc::try_unwrap(tally).unwrap().into_inner().unwrap()
}

/// The poster process: this test binary, run again with `POSTER_DIR` set. Ignored in a
/// plain `cargo test` (it posts until told to stop).
#[tokio::test]
#[ignore = "the poster process of acknowledged_beacons_survive_sigkill, started by it"]
async fn poster_posts_beacons_at_a_steady_rate() {
    let dir = std::env::var(POSTER_DIR)
        .expect("run by acknowledged_beacons_survive_sigkill, which sets TTFX_DURABLE_POSTER_DIR");
    let tally = post_until_stopped(PathBuf::from(dir)).await;
    println!("TALLY {}", tally.line());
}

/// The poster child process; killed if the test fails before stopping it.
struct Poster(Option<Child>);

impl Poster {
    fn start(dir: &Path) -> Poster {
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                POSTER_TEST,
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(POSTER_DIR, dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        Poster(Some(child))
    }

    /// Tells it to stop (the `stop` file), waits and reads its tally.
    fn stop(mut self, dir: &Path) -> Tally {
        std::fs::write(dir.join("stop"), "").unwrap();
        let mut child = self.0.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        // Read to the end (libtest writes after the tally: a closed pipe would fail it).
        let lines: Vec<String> = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect();
        // libtest may print `test NAME ... ` before it on the same line.
        let tally = lines
            .iter()
            .find_map(|line| line.split_once("TALLY ").map(|(_, t)| t.to_owned()));
        let status = child.wait().unwrap();
        assert!(status.success(), "the poster failed: {status}");
        Tally::parse(&tally.expect("the poster printed no tally"))
    }
}

impl Drop for Poster {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The OTLP receiver the killed collector exports to: it accepts everything and keeps
/// the `ttfx.run.id` of every span it accepted (decoded with the official definitions).
struct Exported {
    url: String,
    runs: Arc<Mutex<HashSet<String>>>,
}

impl Exported {
    async fn start() -> Exported {
        let runs: Arc<Mutex<HashSet<String>>> = Arc::default();
        let kept = runs.clone();
        let app = axum::Router::new()
            .route(
                "/v1/traces",
                axum::routing::post(move |body: axum::body::Bytes| async move {
                    let req = ExportTraceServiceRequest::decode(body).unwrap();
                    let spans = req
                        .resource_spans
                        .into_iter()
                        .flat_map(|r| r.scope_spans)
                        .flat_map(|s| s.spans);
                    let mut kept = kept.lock().unwrap();
                    for span in spans {
                        let id = span.attributes.iter().find(|a| a.key == "ttfx.run.id");
                        if let Some(AnyValue::StringValue(id)) = id
                            .and_then(|a| a.value.as_ref())
                            .and_then(|v| v.value.as_ref())
                        {
                            kept.insert(id.clone());
                        }
                    }
                    axum::http::StatusCode::OK
                }),
            )
            .route(
                "/v1/metrics",
                axum::routing::post(|| async { axum::http::StatusCode::OK }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Exported { url, runs }
    }
}

/// The outbox holds every stored run the receiver has not accepted (a run leaves the
/// outbox only after its export was accepted; a kill between the two exports it again,
/// which is allowed). The receiver's set is read after the file's, so a run that left
/// the outbox before the file was read is in it. Returns the runs still queued.
fn check_outbox(conn: &Connection, exported: &Exported, cycle: usize, seed: u64) -> usize {
    let mut stmt = conn
        .prepare(
            "SELECT runs.run_id, otlp_outbox.run IS NOT NULL FROM runs \
             LEFT JOIN otlp_outbox ON otlp_outbox.run = runs.id",
        )
        .unwrap();
    let rows: Vec<(String, bool)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let received = exported.runs.lock().unwrap().clone();
    let lost: Vec<&String> = rows
        .iter()
        .filter(|(id, queued)| !queued && !received.contains(id))
        .map(|(id, _)| id)
        .collect();
    assert!(
        lost.is_empty(),
        "after kill {cycle} (seed {seed}): {} stored runs are neither queued for export nor \
         exported, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    rows.iter().filter(|(_, queued)| *queued).count()
}

/// After a restart: the file is whole, every acknowledged run is stored exactly once,
/// and no run is stored twice (a failed post's runs at most once). Returns the rows.
fn check_after_restart(
    db: &Path,
    acked: &[String],
    exported: &Exported,
    cycle: usize,
    seed: u64,
) -> usize {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(db, flags).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok", "after kill {cycle} (seed {seed})");
    let mut stored: HashMap<String, i64> = HashMap::new();
    let mut stmt = conn
        .prepare("SELECT run_id, COUNT(*) FROM runs GROUP BY run_id")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap();
    for row in rows {
        let (id, n) = row.unwrap();
        assert_eq!(
            n, 1,
            "run {id} stored {n} times after kill {cycle} (seed {seed})"
        );
        stored.insert(id, n);
    }
    let missing: Vec<&String> = acked
        .iter()
        .filter(|id| !stored.contains_key(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "after kill {cycle} (seed {seed}): {} of {} acknowledged runs are missing, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    let unique: HashSet<&String> = acked.iter().collect();
    assert_eq!(unique.len(), acked.len(), "the poster reused a run id");
    let queued = check_outbox(&conn, exported, cycle, seed);
    eprintln!(
        "after kill {cycle}: {} runs stored, {queued} queued for export",
        stored.len()
    );
    stored.len()
}

/// Readers querying the collector while it is killed: every answer they get is a 200
/// (a transport error is the kill; a 500, say `database disk image is malformed`, is a
/// failure).
struct Readers {
    ok: Arc<AtomicU64>,
    cut: Arc<AtomicU64>,
    bad: Arc<Mutex<Vec<String>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Readers {
    fn start(url: Arc<Mutex<String>>) -> Readers {
        let ok = Arc::new(AtomicU64::new(0));
        let cut = Arc::new(AtomicU64::new(0));
        let bad = Arc::new(Mutex::new(Vec::new()));
        let queries = [
            "field/summary?metric=ttft_ms",
            "field/series?metric=ttft_visible_ms&bucket=1m&since=1h",
            "field/health",
        ];
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let tasks = queries
            .into_iter()
            .map(|query| {
                let (url, ok, cut, bad, client) = (
                    url.clone(),
                    ok.clone(),
                    cut.clone(),
                    bad.clone(),
                    client.clone(),
                );
                tokio::spawn(async move {
                    loop {
                        let base = url.lock().unwrap().clone();
                        match client.get(format!("{base}{query}")).send().await {
                            Ok(r) if r.status() == 200 => {
                                ok.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(r) => {
                                let status = r.status();
                                let text = r.text().await.unwrap_or_default();
                                bad.lock()
                                    .unwrap()
                                    .push(format!("{query}: {status} {text}"));
                            }
                            Err(_) => {
                                cut.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(30)).await;
                    }
                })
            })
            .collect();
        Readers {
            ok,
            cut,
            bad,
            tasks,
        }
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_beacons_survive_sigkill() {
    let seed = std::env::var("TTFX_DURABLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!(
        "acknowledged_beacons_survive_sigkill: seed {seed} (TTFX_DURABLE_SEED={seed} repeats the kill moments)"
    );
    let mut rng = Rng(seed);
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("field.db");
    let poster_dir = dir.path().join("poster");
    std::fs::create_dir(&poster_dir).unwrap();
    let db_arg = db.to_str().unwrap().to_owned();
    // Every stored run is exported to a receiver on loopback (the outbox's promise is
    // checked after each restart).
    let exported = Exported::start().await;
    // The poster is one client at 120 posts/s: past the default rate limit on purpose.
    let args = [
        "--collect",
        &db_arg,
        "--collect-rate",
        "100000",
        "--collect-burst",
        "100000",
        "--otlp-endpoint",
        &exported.url,
    ];
    let mut server = ServeProcess::start(ttfx(), &args).unwrap();
    publish_url(&poster_dir, &server.url);
    let url = Arc::new(Mutex::new(server.url.clone()));
    let readers = Readers::start(url.clone());
    let poster = Poster::start(&poster_dir);
    // The kills start once the poster has a 204 (its process takes a moment to start).
    let waiting = Instant::now();
    while acked(&poster_dir).is_empty() {
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "the poster had no 204 within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (mut acked_before, mut stored) = (0, 0);
    for kill in 1..=KILLS {
        tokio::time::sleep(Duration::from_millis(rng.in_range(UP_MS))).await;
        // ServeProcess's drop is Child::kill: SIGKILL, then wait.
        drop(server);
        server = ServeProcess::start(ttfx(), &args).unwrap();
        publish_url(&poster_dir, &server.url);
        *url.lock().unwrap() = server.url.clone();
        let acked = acked(&poster_dir);
        stored = check_after_restart(&db, &acked, &exported, kill, seed);
        // Each kill lands while beacons are being posted (the test cannot pass idle).
        assert!(
            acked.len() > acked_before,
            "no post was acknowledged before kill {kill}"
        );
        acked_before = acked.len();
    }
    let tally = poster.stop(&poster_dir);
    let acked = acked(&poster_dir);
    stored = stored.max(check_after_restart(&db, &acked, &exported, KILLS, seed));
    drop(server);
    let bad = readers.bad.lock().unwrap().clone();
    let (reads, cut) = (
        readers.ok.load(Ordering::Relaxed),
        readers.cut.load(Ordering::Relaxed),
    );
    drop(readers);
    eprintln!(
        "acknowledged_beacons_survive_sigkill: {KILLS} kills in {:.1} s; {} posts, {} \
         acknowledged ({} runs, all stored once), {} failed in transport, {stored} runs \
         stored; readers: {reads} answers, {cut} cut by kills",
        started.elapsed().as_secs_f64(),
        tally.posts,
        tally.acked_posts,
        tally.acked_runs,
        tally.failed,
    );
    assert_eq!(tally.acked_runs as usize, acked.len());
    assert!(
        tally.other.is_empty(),
        "statuses other than 204: {:?}",
        tally.other
    );
    assert!(bad.is_empty(), "readers got errors: {bad:?}");
    assert!(reads > 0, "no reader got an answer");
    // Failed posts exist only because of the kills; their runs may or may not be stored.
    assert!(stored >= acked.len());
    assert!(stored as u64 <= tally.acked_runs + 3 * tally.failed);
}

/// The story, as a new user would try it: 20 runs of docs/report.md's example
/// (its `request_start_unix_ms` is 2026-01-01) each get a 204 and are all still there
/// after the next start-up with the default 30-day retention, in "the last 24 h" too;
/// a run that *arrived* 31 days ago is removed at that start-up.
#[tokio::test]
async fn twenty_example_runs_stay_and_retention_counts_from_arrival() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("field.db");
    let db_arg = db.to_str().unwrap();
    let example = doc_run_report();
    let example_start = 1_767_225_599_880.0;
    assert!(example.contains(&format!("\"request_start_unix_ms\": {example_start:.1}")));
    let client = reqwest::Client::new();
    {
        let server = ServeProcess::start(ttfx(), &["--collect", db_arg]).unwrap();
        for i in 0..20 {
            let status = client
                .post(format!("{}collect", server.url))
                .body(example.clone())
                .send()
                .await
                .unwrap()
                .status();
            assert_eq!(status, 204, "post {i}");
        }
    }
    // Before the next start-up: one run that arrived 31 days ago, as the file would hold
    // it had it been posted then (its own clock says now).
    let conn = Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO runs (at_unix_ms, received_unix_ms, source, outcome, hidden, \
         sample_rate, run_id, report) VALUES (?1, ?2, 'field', 'completed', 0, 1, \
         'arrived-31-days-ago', '{}')",
        rusqlite::params![now_ms(), now_ms() - 31.0 * DAY_MS],
    )
    .unwrap();
    drop(conn);
    let server = ServeProcess::start(ttfx(), &["--collect", db_arg]).unwrap();
    for query in ["field/summary", "field/summary?since=24h"] {
        let doc: Value = client
            .get(format!("{}{query}", server.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(doc["runs"], 20, "{query}: {doc}");
    }
    drop(server);
    let conn = Connection::open(&db).unwrap();
    let (runs, oldest_own, newest_own): (i64, f64, f64) = conn
        .query_row(
            "SELECT COUNT(*), MIN(at_unix_ms), MAX(at_unix_ms) FROM runs WHERE run_id = 'req-7f3a'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    // All 20 kept, each with its own time as the client said it.
    assert_eq!(
        (runs, oldest_own, newest_own),
        (20, example_start, example_start)
    );
    let old: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM runs WHERE run_id = 'arrived-31-days-ago'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        old, 0,
        "the run that arrived 31 days ago outlived the retention"
    );
}
