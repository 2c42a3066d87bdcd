//! What `synchronous = FULL` costs the collector's insert path beside `NORMAL` (issue #31
//! point 3): `cargo run -p ttfx-collect --example sync_cost --release [DIR]`. Each line:
//! the mode, rows per transaction, commits per second, rows per second and the
//! per-commit latency's p50 and p99, through `db::insert` (the writer thread's own
//! call) on a fresh file in DIR (default: the temp dir; give a directory on the disk
//! the collector will use, since the figure is the disk's fsync).

use std::time::Instant;

use ttfx_collect::db;

/// A field report as the probe beacons it, one run with the given id.
fn beacon(id: usize) -> String {
    format!(
        r#"{{"schema_version":1,"kind":"field","generator":"sync_cost","run":{{"id":"r-{id}",
        "label":"bench","target":"https://api.example.com/v1/chat/completions",
        "page_path":"/chat","engine":"chromium","engine_version":"141.0",
        "outcome":"completed","paint_method":"element_timing","cross_origin_isolated":false,
        "hidden":false,"sample_rate":1.0,"request_start_unix_ms":1796000000000.0,
        "dialect":"openai-chat","milestones":{{"request_start":0.0,"headers":200.0,
        "first_token":400.0,"first_visible_token":412.0,"done":900.0}},
        "metrics":{{"ttft_ms":400.0,"ttft_visible_ms":412.0}},"gaps":{{"first_token":12.5}},
        "chunks":{{"count":3,"bytes":300,"visible_tokens":3,"reasoning_tokens":0,"bins":[]}}}}}}"#
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p / 100.0).round() as usize;
    sorted[i]
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    println!(
        "mode    rows/tx  commits/s     rows/s   p50 ms   p99 ms   ({})",
        dir.display()
    );
    for mode in ["NORMAL", "FULL"] {
        // One-row commits: a beacon each; 60: a full NDJSON body of beacons.
        for (batch, commits) in [(1usize, 400usize), (60, 100)] {
            let path = dir.join(format!(
                "ttfx-sync-cost-{}-{mode}-{batch}.db",
                std::process::id()
            ));
            let mut conn = match db::open(&path, true) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("sync_cost: {e}");
                    std::process::exit(2);
                }
            };
            if let Err(e) = conn.pragma_update(None, "synchronous", mode) {
                eprintln!("sync_cost: synchronous = {mode}: {e}");
                std::process::exit(2);
            }
            let body: String = (0..batch).map(|i| beacon(i) + "\n").collect();
            let rows = match ttfx_collect::ingest::parse(&body, 1.796e12) {
                Ok(rows) => rows,
                Err(e) => {
                    eprintln!("sync_cost: the beacon was refused: {}", e.message);
                    std::process::exit(2);
                }
            };
            let mut took = Vec::with_capacity(commits);
            let start = Instant::now();
            for _ in 0..commits {
                let t = Instant::now();
                if let Err(e) = db::insert(&mut conn, &rows) {
                    eprintln!("sync_cost: insert: {e}");
                    std::process::exit(2);
                }
                took.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            let seconds = start.elapsed().as_secs_f64();
            took.sort_by(f64::total_cmp);
            println!(
                "{mode:6} {batch:8} {:10.0} {:10.0} {:8.3} {:8.3}",
                commits as f64 / seconds,
                (commits * batch) as f64 / seconds,
                percentile(&took, 50.0),
                percentile(&took, 99.0),
            );
            drop(conn);
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}
