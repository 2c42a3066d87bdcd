//! What the e2e bench binaries (`src/bin/*_bench.rs`) share: the `--runs N` flag and the
//! line a distribution of differences prints as.

use anyhow::{Context, bail};
use ttfx_core::stats::Summary;

/// Runs per case when `--runs` is not given.
pub const DEFAULT_RUNS: usize = 100;

/// The value after `--runs`: a number, at least 1.
pub fn runs_value(value: Option<String>) -> anyhow::Result<usize> {
    let runs: usize = value
        .context("--runs needs a number")?
        .parse()
        .context("--runs needs a number")?;
    if runs == 0 {
        bail!("--runs must be at least 1");
    }
    Ok(runs)
}

/// The arguments of a bench whose only flag is `--runs N`.
pub fn runs_flag() -> anyhow::Result<usize> {
    let mut args = std::env::args().skip(1);
    let mut runs = DEFAULT_RUNS;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = runs_value(args.next())?,
            other => bail!("unknown argument {other} (expected --runs N)"),
        }
    }
    Ok(runs)
}

/// `what: median …, p90 …, p99 …, min …, max … (n = …)`, in ms.
pub fn line(what: &str, s: &Summary) {
    println!(
        "{what}: median {:+.2} ms, p90 {:+.2} ms, p99 {:+.2} ms, min {:+.2} ms, max {:+.2} ms (n = {})",
        s.p50, s.p90, s.p99, s.min, s.max, s.count
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_must_be_a_positive_number() {
        assert_eq!(runs_value(Some("7".into())).unwrap(), 7);
        for bad in [None, Some("0".into()), Some("x".into()), Some("-3".into())] {
            assert!(runs_value(bad.clone()).is_err(), "{bad:?}");
        }
    }
}
