//! What the format tests share: reading a fixture and comparing figures.

#![allow(dead_code)]

use std::path::PathBuf;

use ttfx_import::{BenchRun, Imported, Metric, Origin};

pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Reads a fixture, recognising its tool from the content.
pub fn read(rel: &str) -> Imported {
    match ttfx_import::read_path(&fixture(rel), None) {
        Ok(file) => file,
        Err(e) => panic!("{rel}: {e}"),
    }
}

/// Within 1e-9 relative: the figures are worked with numpy from the same decimal text.
pub fn close(got: Option<f64>, want: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("{what}: no value, want {want}"));
    assert!(
        (got - want).abs() <= want.abs() * 1e-9 + 1e-9,
        "{what}: got {got}, want {want}"
    );
}

/// p50, p90, p95, p99 of one metric, and where they came from. The wanted figures are
/// printed to 6 decimals (µs of a ms), so within half of that last digit.
pub fn expect(run: &BenchRun, metric: Metric, origin: Origin, want: [f64; 4]) {
    let f = run
        .metric(metric)
        .unwrap_or_else(|| panic!("{}: missing", metric.name()));
    assert_eq!(f.origin, origin, "{}", metric.name());
    for (p, w) in [50.0, 90.0, 95.0, 99.0].into_iter().zip(want) {
        let got = f.percentile(p).unwrap_or(f64::NAN);
        assert!(
            (got - w).abs() <= 5e-7,
            "{} p{p}: got {got}, want {w}",
            metric.name()
        );
    }
}
