//! The bench's figures: medians of the page's times, printed as tables.

use ttfx_core::stats::Summary;

/// One body's alternating rounds in one engine.
pub struct Warm {
    pub engine: &'static str,
    pub dialect: &'static str,
    pub events: usize,
    pub bytes: f64,
    /// ms per run.
    pub analysis: Vec<f64>,
    pub peer: Vec<f64>,
}

/// One body's first calls, each on a fresh browser, in one engine (ms).
pub struct First {
    pub engine: &'static str,
    pub dialect: &'static str,
    pub analysis_load: Vec<f64>,
    pub analysis_run: Vec<f64>,
    pub peer_load: Vec<f64>,
    pub peer_run: Vec<f64>,
}

pub fn median(values: &[f64]) -> f64 {
    Summary::of(values).map_or(f64::NAN, |s| s.p50)
}

/// Pairwise sums (load + run of the same first call).
fn sums(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// MB/s (10^6 bytes) of `bytes` decoded in `ms`.
fn rate(bytes: f64, ms: f64) -> f64 {
    bytes / 1e6 / (ms / 1e3)
}

pub fn print_warm(rows: &[Warm]) {
    println!(
        "\n{:<9} {:<12} {:>7} {:>7} {:>9} {:>9} {:>7} {:>10} {:>9} {:>7}",
        "engine", "body", "events", "MB", "analysis", "peer", "ratio", "analysis", "peer", "rounds"
    );
    println!(
        "{:<9} {:<12} {:>7} {:>7} {:>9} {:>9} {:>7} {:>10} {:>9} {:>7}",
        "", "", "", "", "MB/s", "MB/s", "a/p", "ms/reply", "ms/reply", ""
    );
    for w in rows {
        let (a, p) = (median(&w.analysis), median(&w.peer));
        println!(
            "{:<9} {:<12} {:>7} {:>7.2} {:>9.1} {:>9.1} {:>7.2} {:>10.2} {:>9.2} {:>7}",
            w.engine,
            w.dialect,
            w.events,
            w.bytes / 1e6,
            rate(w.bytes, a),
            rate(w.bytes, p),
            p / a,
            a,
            p,
            w.analysis.len()
        );
    }
}

pub fn print_first(rows: &[First]) {
    println!(
        "\n{:<9} {:<12} {:>16} {:>10} {:>9} {:>16} {:>10} {:>9} {:>6}",
        "engine", "body", "analysis first", "load", "run", "peer first", "load", "run", "pages"
    );
    for f in rows {
        println!(
            "{:<9} {:<12} {:>13.2} ms {:>7.2} ms {:>6.2} ms {:>13.2} ms {:>7.2} ms {:>6.2} ms {:>6}",
            f.engine,
            f.dialect,
            median(&sums(&f.analysis_load, &f.analysis_run)),
            median(&f.analysis_load),
            median(&f.analysis_run),
            median(&sums(&f.peer_load, &f.peer_run)),
            median(&f.peer_load),
            median(&f.peer_run),
            f.analysis_run.len()
        );
    }
}

/// The tables' medians as JSON: `warm` rows (engine, body, events, MB/s of each side, the
/// ratio, ms per reply) and `first` rows (load and run medians, ms).
pub fn summary(warm: &[Warm], first: &[First]) -> serde_json::Value {
    let warm: Vec<_> = warm
        .iter()
        .map(|w| {
            let (a, p) = (median(&w.analysis), median(&w.peer));
            serde_json::json!({
                "engine": w.engine, "body": w.dialect, "events": w.events,
                "analysisMBps": rate(w.bytes, a), "peerMBps": rate(w.bytes, p),
                "ratio": p / a, "analysisMs": a, "peerMs": p,
            })
        })
        .collect();
    let first: Vec<_> = first
        .iter()
        .map(|f| {
            serde_json::json!({
                "engine": f.engine, "body": f.dialect,
                "analysisLoadMs": median(&f.analysis_load),
                "analysisRunMs": median(&f.analysis_run),
                "peerLoadMs": median(&f.peer_load), "peerRunMs": median(&f.peer_run),
            })
        })
        .collect();
    serde_json::json!({ "warm": warm, "first": first })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_mb_per_second() {
        assert!((rate(8_400_000.0, 180.0) - 46.666).abs() < 0.01);
        assert_eq!(sums(&[1.0, 2.0], &[3.0, 4.0]), vec![4.0, 6.0]);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn summary_holds_the_printed_medians() {
        let warm = [Warm {
            engine: "chromium",
            dialect: "openai-chat",
            events: 2_000,
            bytes: 2_000_000.0,
            analysis: vec![10.0, 20.0, 30.0],
            peer: vec![40.0, 50.0, 60.0],
        }];
        let first = [First {
            engine: "chromium",
            dialect: "openai-chat",
            analysis_load: vec![30.0],
            analysis_run: vec![5.0],
            peer_load: vec![7.0],
            peer_run: vec![3.0],
        }];
        let s = summary(&warm, &first);
        assert_eq!(s["warm"][0]["ratio"], 2.5);
        assert_eq!(s["warm"][0]["analysisMBps"], 100.0);
        assert_eq!(s["warm"][0]["peerMBps"], 40.0);
        assert_eq!(s["first"][0]["analysisRunMs"], 5.0);
        assert_eq!(s["first"][0]["peerLoadMs"], 7.0);
    }
}
