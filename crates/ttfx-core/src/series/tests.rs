//! The summarized series against the series kept whole: exact where the module says
//! exact, within [`GAP_RELATIVE_ERROR`] where it says so.

use super::*;
use crate::Recorder;
use crate::decode::Limits;
use crate::metrics::buffered;
use crate::report::RunReport;
use crate::stats::percentile;
use crate::timeline::Timeline;

/// SplitMix64: deterministic streams without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    fn below(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

fn chunk(at_ms: f64, visible_tokens: u32) -> Chunk {
    Chunk {
        at_ms,
        bytes: 100,
        events: 1,
        visible_tokens,
        reasoning_tokens: 0,
    }
}

/// `a` is within `rel` of `b`, relative to `b` (plus float noise).
fn within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs() + 1e-9
}

// ---------------------------------------------------------------------------------
// The digest on its own.

#[test]
fn a_bucket_holds_its_gap_and_its_middle_is_within_the_stated_error() {
    let mut rng = Rng(7);
    for _ in 0..20_000 {
        // Log-uniform over 1 µs … 1,000 s, and the grid values browsers produce.
        let exponent = (rng.next() % 10_000) as f64 / 10_000.0 * 9.0 - 3.0;
        for gap in [10f64.powf(exponent), rng.below(1, 100_000) as f64 / 10.0] {
            let lower = bucket_lower(gap);
            let upper = f64::from_bits(lower.to_bits() + (1 << BUCKET_DROPPED_BITS));
            assert!(
                lower <= gap && gap < upper,
                "{gap} not in [{lower}, {upper})"
            );
            assert!((upper - lower) / lower <= 1.0 / 64.0);
            let middle = bucket_middle(lower);
            assert!(within(middle, gap, GAP_RELATIVE_ERROR), "{gap} → {middle}");
        }
    }
    assert_eq!(bucket_lower(0.0), 0.0, "zero has a bucket of its own");
    assert_eq!(bucket_middle(0.0), 0.0);
    // Outside the bucketed range gaps are clamped, so the digest stays bounded.
    assert_eq!(bucket_lower(1e-12), GAP_BUCKETED_MIN_MS);
    assert_eq!(bucket_lower(1e300), bucket_lower(GAP_BUCKETED_MAX_MS));
    // 200 ms, the stall floor, is a bucket boundary (1.5625 × 2^7).
    assert_eq!(bucket_lower(200.0), 200.0);
}

#[test]
fn digest_percentiles_are_numpy_linear_within_the_stated_error() {
    let mut rng = Rng(11);
    let shapes: [(&str, Vec<f64>); 4] = [
        (
            "steady stream on a 0.1 ms clock",
            (0..5_000)
                .map(|_| rng.below(150, 250) as f64 / 10.0)
                .collect(),
        ),
        (
            "heavy tail with zeros and stalls",
            (0..2_000)
                .map(|i| match i % 97 {
                    0 => 0.0,
                    1 => rng.below(300, 5_000) as f64,
                    _ => rng.below(1, 60_000) as f64 / 1000.0,
                })
                .collect(),
        ),
        ("two values", vec![30.0, 2_000.0]),
        ("one value", vec![42.25]),
    ];
    for (name, gaps) in shapes {
        let mut digest = GapDigest::default();
        for &g in &gaps {
            digest.insert(g);
        }
        assert_eq!(digest.count, gaps.len() as u64, "{name}");
        let mut p = 0.0;
        while p <= 100.0 {
            let exact = percentile(&gaps, p).unwrap();
            let estimate = digest.percentile(p).unwrap();
            assert!(
                within(estimate, exact, GAP_RELATIVE_ERROR),
                "{name}: p{p} = {estimate}, exactly {exact}"
            );
            p += 0.5;
        }
        let exact = Summary::of(&gaps).unwrap();
        let s = digest.summary().unwrap();
        assert_eq!((s.count, s.min, s.max), (exact.count, exact.min, exact.max));
        assert!(within(s.mean, exact.mean, 1e-12), "{name}");
    }
    assert_eq!(GapDigest::default().percentile(50.0), None);
    assert_eq!(GapDigest::default().summary(), None);
}

#[test]
fn digests_merge_as_if_every_gap_was_inserted_into_one() {
    let mut rng = Rng(3);
    let gaps: Vec<f64> = (0..3_000)
        .map(|_| rng.below(0, 400_000) as f64 / 1000.0)
        .collect();
    let (mut whole, mut left, mut right) = Default::default();
    for (i, &g) in gaps.iter().enumerate() {
        GapDigest::insert(&mut whole, g);
        GapDigest::insert(if i % 3 == 0 { &mut left } else { &mut right }, g);
    }
    let mut merged: GapDigest = left;
    merged.merge(&right);
    merged.merge(&GapDigest::default());
    assert_eq!(merged.buckets, whole.buckets);
    assert_eq!(
        (
            merged.count,
            merged.min_ms,
            merged.max_ms,
            merged.above_floor
        ),
        (whole.count, whole.min_ms, whole.max_ms, whole.above_floor)
    );
    assert!(within(merged.sum_ms, whole.sum_ms, 1e-12));
}

#[test]
fn an_inconsistent_digest_read_from_a_file_is_refused() {
    let mut t = Timeline::default();
    let mut summary = ChunkSummary::default();
    for g in [10.0, 20.0, 30.0] {
        summary.gaps.insert(g);
    }
    t.chunk_summary = Some(summary.clone());
    t.validate().unwrap();
    summary.gaps.buckets.swap(0, 2);
    t.chunk_summary = Some(summary.clone());
    assert_eq!(
        t.validate().unwrap_err().to_string(),
        "chunk_summary: gap buckets are not ascending"
    );
    summary.gaps.buckets.swap(0, 2);
    summary.gaps.count = 4;
    t.chunk_summary = Some(summary.clone());
    assert!(t.validate().is_err());
    summary.gaps.count = 3;
    summary.bins.push(ChunkBin {
        from_ms: f64::NAN,
        ..ChunkBin::default()
    });
    t.chunk_summary = Some(summary);
    assert_eq!(
        t.validate().unwrap_err().to_string(),
        "chunk_summary.bins[0].from_ms is not a finite number"
    );
}

// ---------------------------------------------------------------------------------
// The summarizer on chunk series, against the metrics' own rules.

#[test]
fn the_burst_window_gives_the_buffered_rule_s_largest_window() {
    let mut rng = Rng(5);
    for round in 0..200 {
        // Times on a 12.5 ms grid put many chunks exactly 100 ms apart (the window's
        // edge), and repeated times come up often.
        let mut at = 0.0;
        let chunks: Vec<Chunk> = (0..rng.below(1, 120))
            .map(|_| {
                at += 12.5 * rng.below(0, 12) as f64;
                chunk(at, rng.below(0, 4) as u32)
            })
            .collect();
        let kept = rng.below(0, chunks.len() as u64 + 1) as usize;
        let (mut s, mut summary) = Summarizer::start(&chunks[..kept], SeriesBound::keeping(kept));
        for c in &chunks[kept..] {
            assert!(s.push(&mut summary, c));
        }
        let total: u64 = chunks.iter().map(|c| u64::from(c.visible_tokens)).sum();
        assert_eq!(
            buffered::of_counts(summary.burst_visible_tokens, total),
            buffered::verdict(&chunks),
            "round {round}: {chunks:?}"
        );
        assert!(!summary.burst_lower_bound);
    }
}

#[test]
fn an_overfull_burst_window_stays_bounded_and_says_its_count_is_a_lower_bound() {
    // 6,000 visible chunks 10 µs apart: all inside one 100 ms window.
    let chunks: Vec<Chunk> = (0..6_000).map(|i| chunk(f64::from(i) / 100.0, 1)).collect();
    let (mut s, mut summary) = Summarizer::start(&[], SeriesBound::keeping(0));
    for c in &chunks {
        s.push(&mut summary, c);
    }
    assert!(summary.burst_lower_bound);
    assert!(s.held_bytes() <= BURST_TIMES_MAX * 16, "{}", s.held_bytes());
    let exact = buffered::verdict(&chunks);
    let kept = buffered::of_counts(summary.burst_visible_tokens, 6_000);
    assert!(kept.burst_share <= exact.burst_share);
    // Here nothing left the window early, so the bound is the value.
    assert_eq!(kept, exact);
}

#[test]
fn bins_hold_equal_numbers_of_chunks_and_every_byte() {
    let bound = SeriesBound::keeping(32); // at most 4 bins
    let (mut s, mut summary) = Summarizer::start(&[], bound);
    for n in 1..=75u32 {
        let mut c = chunk(f64::from(n), n % 3);
        c.bytes = u64::from(n);
        s.push(&mut summary, &c);
        let bins = &summary.bins;
        assert!(bins.len() <= 4, "{n}: {bins:?}");
        let width = bins[0].chunks;
        assert!(width.is_power_of_two());
        assert!(bins[..bins.len() - 1].iter().all(|b| b.chunks == width));
        assert!(bins.last().unwrap().chunks <= width);
        assert_eq!(bins.iter().map(|b| b.chunks).sum::<u64>(), u64::from(n));
        assert_eq!(
            bins.iter().map(|b| b.bytes).sum::<u64>(),
            u64::from(n * (n + 1) / 2)
        );
        assert!(bins.windows(2).all(|w| w[0].to_ms < w[1].from_ms));
    }
    // 75 chunks in bins of 32: 32, 32, 11.
    let widths: Vec<u64> = summary.bins.iter().map(|b| b.chunks).collect();
    assert_eq!(widths, [32, 32, 11]);
    assert_eq!(summary.bins[2].from_ms, 65.0);
    assert_eq!(summary.bins[2].to_ms, 75.0);
}

fn sse(content: &str) -> String {
    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":{content:?}}}}}]}}\n\n")
}

#[test]
fn a_chunk_timed_before_an_earlier_one_is_an_anomaly_and_counts_as_arriving_with_it() {
    let mut r = Recorder::new(None, Limits::DEFAULT).with_chunk_limit(2);
    r.headers(1.0, 200, Some("text/event-stream"), &[]);
    for at in [10.0, 20.0, 30.0, 25.0, 40.0] {
        r.chunk(at, sse("w").as_bytes());
    }
    let t = r.finish();
    let s = t.chunk_summary.as_ref().unwrap();
    assert_eq!(t.anomalies[0].class, "chunk_out_of_order");
    // Gaps 10, 10, 0 (25 counted at 30), 10.
    assert_eq!((s.gaps.count, s.gaps.min_ms, s.gaps.sum_ms), (4, 0.0, 30.0));
    // The bins keep the times as they came: the first bin spans 25–30.
    assert_eq!(
        (s.bins[0].from_ms, s.bins.last().unwrap().to_ms),
        (25.0, 40.0)
    );
}

#[test]
fn the_bound_is_exact_a_series_one_chunk_longer_is_summarized() {
    let run = |n: u32| {
        let mut r = Recorder::new(None, Limits::DEFAULT).with_chunk_limit(16);
        r.headers(1.0, 200, Some("text/event-stream"), &[]);
        for i in 0..n {
            r.chunk(10.0 * f64::from(i + 1), sse("w").as_bytes());
        }
        r.end(10.0 * f64::from(n + 1));
        let t = r.finish();
        let json = serde_json::to_string(&RunReport::of_timeline(None, None, t.clone()).unwrap());
        (t, json.unwrap())
    };
    let (t, json) = run(16);
    assert_eq!(t.chunks.len(), 16);
    assert!(t.chunk_summary.is_none());
    // Nothing new in the report of a series kept whole: it is a version-1 document.
    assert!(
        !json.contains("chunk_summary") && !json.contains("icl_summary"),
        "{json}"
    );
    assert!(json.starts_with(r#"{"schema_version":1,"#), "{json}");

    let (t, json) = run(17);
    assert_eq!(t.chunks.len(), 16);
    assert_eq!(t.chunk_summary.as_ref().map(|s| s.chunks), Some(1));
    assert!(json.starts_with(r#"{"schema_version":2,"#), "{json}");
    assert!(json.contains(r#""icl_summary":{"count":16,"#), "{json}");
}
