//! The field reports the collector's load bench posts and stores: a chat run as the
//! probe beacons it (eleven milestones, eleven metrics, three client − server gaps and
//! 32 chunk bins, times at the 0.1 ms a page's clock gives without isolation), varied
//! by a seeded generator so no two rows are alike and percentiles have work to do.
//! Also the fill of a database with a million of them, straight through the
//! collector's own insert (posting them would take as long as the load bench itself).

use std::path::Path;

use serde_json::{Value, json};
use ttfx_collect::db::{self, Row, Source};
use ttfx_core::field::FieldReport;

/// splitmix64: small, seeded, good enough to spread values.
pub struct Seeded(u64);

impl Seeded {
    pub fn new(seed: u64) -> Seeded {
        Seeded(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
        choices[(self.next_u64() % choices.len() as u64) as usize]
    }
}

/// A time as a page without cross-origin isolation reads it: 0.1 ms steps.
fn tenth(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

const LABELS: [&str; 4] = ["prod-chat", "canary", "support-bot", "search-answers"];
const ENGINES: [(&str, &str); 3] = [
    ("chromium", "141.0"),
    ("gecko", "143.0"),
    ("webkit", "26.0"),
];
const PAGES: [&str; 3] = ["/chat", "/help", "/search"];

/// Run `i` of the seeded stream: a completed chat run started at `start_unix_ms`.
pub fn field_report(rng: &mut Seeded, i: u64, start_unix_ms: f64) -> Value {
    // A long-tailed TTFT: 250 ms and up, a few seconds at the tail.
    let ttft = tenth(250.0 + 150.0 * (-(1.0 - rng.unit()).ln()).powf(1.5));
    let headers = tenth(ttft * (0.3 + 0.2 * rng.unit()));
    let first_byte = tenth(headers + 1.0 + 30.0 * rng.unit());
    let first_token = tenth(ttft.max(first_byte));
    let visible = tenth(first_token + 40.0 * rng.unit());
    let first_dom = tenth(visible + 0.4 + 2.0 * rng.unit());
    let first_paint = tenth(first_dom + 4.0 + 12.0 * rng.unit());
    let tokens = 60 + (rng.unit() * 600.0) as u64;
    let tpot = 8.0 + 25.0 * rng.unit();
    let last_token = tenth(visible + tokens as f64 * tpot);
    let done = tenth(last_token + 0.5 + 3.0 * rng.unit());
    let chunks = tokens;
    let per_bin = chunks.div_ceil(32);
    let bins: Vec<Value> = (0..chunks.div_ceil(per_bin))
        .map(|b| {
            let n = per_bin.min(chunks - b * per_bin);
            let from = tenth(
                first_byte + (b * per_bin) as f64 * (last_token - first_byte) / chunks as f64,
            );
            let to = tenth(from + (n as f64 - 1.0) * tpot);
            json!({"from_ms": from, "to_ms": to.max(from), "chunks": n, "bytes": n * 92,
                   "events": n, "visible_tokens": n, "reasoning_tokens": 0})
        })
        .collect();
    let (engine, version) = ENGINES[(rng.unit() * 3.0) as usize % 3];
    let label = rng.pick(&LABELS);
    let e2e = done;
    json!({
        "schema_version": 1,
        "kind": "field",
        "generator": "ttfx-probe 0.1.0",
        "run": {
            "id": format!("{:032x}", u128::from(i) * 0x9e37_79b9_7f4a_7c15 + 17),
            "label": label,
            "target": "https://api.example.com/v1/chat/completions",
            "page_path": rng.pick(&PAGES),
            "engine": engine,
            "engine_version": version,
            "outcome": "completed",
            "http_status": 200,
            "paint_method": if engine == "chromium" { "presentation_time" } else { "raf_next_frame" },
            "cross_origin_isolated": false,
            "hidden": rng.unit() < 0.03,
            "sample_rate": if label == "prod-chat" { 0.25 } else { 1.0 },
            "request_start_unix_ms": start_unix_ms,
            "dialect": "openai-chat",
            "transport": "fetch",
            "milestones": {
                "request_start": 0.0, "headers": headers, "first_byte": first_byte,
                "first_event": first_byte, "first_token": first_token,
                "first_visible_token": visible, "first_dom": first_dom,
                "first_paint": first_paint, "first_sentence": tenth(visible + 20.0 * tpot),
                "last_token": last_token, "done": done
            },
            "metrics": {
                "ttft_ms": first_token, "ttft_visible_ms": visible, "e2e_ms": e2e,
                "tpot_ms": tenth(tpot), "output_tokens": tokens,
                "output_tokens_per_s": tenth(1000.0 / tpot),
                "decode_tokens_per_s": tenth(1000.0 / tpot * 1.02),
                "dom_lag_ms": tenth(first_dom - visible), "render_lag_ms": tenth(first_paint - first_dom),
                "stall_count": (rng.unit() * 1.3) as u64, "submit_delay_ms": tenth(2.0 + 6.0 * rng.unit())
            },
            "gaps": {"headers": tenth(4.0 + 8.0 * rng.unit()), "first_byte": tenth(5.0 + 9.0 * rng.unit()),
                     "first_token": tenth(6.0 + 30.0 * rng.unit())},
            "chunks": {"count": chunks, "bytes": chunks * 92, "visible_tokens": tokens,
                       "reasoning_tokens": 0, "bins": bins}
        }
    })
}

/// Stores `runs` reports in the collector database at `path` (created and migrated by
/// the collector's own code), `per_tx` rows per transaction, their start times spread
/// evenly over the `span_ms` before `now_unix_ms`.
pub fn fill(
    path: &Path,
    runs: u64,
    per_tx: u64,
    now_unix_ms: f64,
    span_ms: f64,
) -> anyhow::Result<()> {
    let mut conn = db::open(path, true)?;
    let mut rng = Seeded::new(31);
    let mut i = 0;
    while i < runs {
        let n = per_tx.min(runs - i);
        let mut rows = Vec::with_capacity(n as usize);
        for j in i..i + n {
            let at = now_unix_ms - span_ms + span_ms * j as f64 / runs as f64;
            let report: FieldReport = serde_json::from_value(field_report(&mut rng, j, at))?;
            rows.push(Row {
                report,
                source: Source::Field,
                received_unix_ms: at + 1_000.0,
            });
        }
        db::insert(&mut conn, &rows)?;
        i += n;
    }
    // Back into the main file, so its size is the store's and the WAL starts empty.
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every generated report is one the collector accepts, and a realistic size.
    #[test]
    fn generated_reports_pass_the_collectors_checks() {
        let mut rng = Seeded::new(7);
        for i in 0..500 {
            let doc = field_report(&mut rng, i, 1.8e12);
            let text = doc.to_string();
            let rows = ttfx_collect::ingest::parse(&text, 1.8e12 + 5.0)
                .unwrap_or_else(|e| panic!("report {i} refused: {}", e.message));
            assert_eq!(rows.len(), 1);
            assert!((1_500..8_000).contains(&text.len()), "{}", text.len());
        }
    }
}
