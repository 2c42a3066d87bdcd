//! The gap digest on its own: buckets, percentiles within [`GAP_RELATIVE_ERROR`], merging,
//! and the checks on a digest read from a file. (The digest against whole streams is
//! tested with the summarizer, in `series`.)

use super::*;
use crate::percentile::percentile;
use crate::test_support::{Rng, within};
use crate::timeline::Timeline;

#[test]
fn a_bucket_holds_its_gap_and_its_middle_is_within_the_stated_error() {
    let mut rng = Rng::new(7);
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
    let mut rng = Rng::new(11);
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
    let mut rng = Rng::new(3);
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
    summary.gaps.min_ms = 40.0;
    t.chunk_summary = Some(summary.clone());
    assert_eq!(
        t.validate().unwrap_err().to_string(),
        "chunk_summary: min_ms is above max_ms"
    );
    // Reading such a digest never panics (no f64::clamp on its figures).
    assert!(summary.gaps.percentile(50.0).is_some());
    summary.gaps.min_ms = 10.0;
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
