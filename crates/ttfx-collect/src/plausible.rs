//! The values a collector stores: each number of a run is one a real run can have, so
//! one poisoned report cannot own a summary (#30). A sample rate of 1e-300 weighed one
//! run as 1e300 others, a `ttft_ms` of 1.7e308 made every weighted percentile its own
//! and the mean overflow, and a negative duration sat below every real one.
//!
//! [`check`] runs on every row before it is stored, after the schema's own checks
//! (`FieldReport::validate`: types, milestone order, finite metrics, string lengths);
//! the message names the field and the bound.

use ttfx_core::field::FieldReport;

/// Smallest `sample_rate`: one run in a million. A run's weight is `1 / sample_rate`, so
/// one report weighs at most a million runs; a page sampling more sparsely sends too few
/// runs to measure anything.
pub const MIN_SAMPLE_RATE: f64 = 1e-6;

/// Longest duration, and furthest any milestone lies from `request_start`: 24 h in ms.
/// No chat or voice request lasts a day; a larger number is a broken clock or poison.
pub const MAX_DURATION_MS: f64 = 86_400_000.0;

/// Most tokens in one run (`output_tokens`, `chunks.visible_tokens`,
/// `chunks.reasoning_tokens`, and the same in each bin): a stream of 24 h at 100
/// tokens per second is 8.64 million.
pub const MAX_TOKENS: u64 = 10_000_000;

/// Most chunks, events, stalls or underruns in one run: as many as tokens (a chunk or an
/// event carries at least one token, or is one of as many keep-alives).
pub const MAX_CHUNKS: u64 = MAX_TOKENS;

/// Most bytes of one stream: 16 GiB, 24 h at about 200 kB/s (audio streams included).
pub const MAX_STREAM_BYTES: u64 = 16 << 30;

/// Largest rate in tokens per second (`output_tokens_per_s`, `decode_tokens_per_s`): a
/// buffered reply delivers its tokens in one chunk, so its decode rate is the token
/// count over the clock's resolution (5 µs) or less; 1e9 leaves room for that and
/// still refuses the 1e300 of a poisoned report.
pub const MAX_TOKENS_PER_S: f64 = 1e9;

/// Largest ratio (`rtf`, `audio_arrival_rate`): wall seconds per audio second and back.
/// Real values are near 1; 1e6 is one audio second in 11 days, or the reverse.
pub const MAX_RATIO: f64 = 1e6;

/// The metrics that are a difference of two times not ordered by the timeline's rules,
/// so they may be negative (audio heard before the text showed, a paint stamped before
/// the token it paints, Firefox's jittered `responseStart` a step after the first byte).
const SIGNED_MS: [&str; 5] = [
    "engine_hop_ms",
    "dom_lag_ms",
    "render_lag_ms",
    "audio_behind_text_ms",
    "handoff_time_lost_ms",
];

/// A number as a message shows it: `1.7e308`, not 309 digits.
fn shown(v: f64) -> String {
    if v != 0.0 && !(1e-4..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A duration: finite, at most [`MAX_DURATION_MS`] from zero, and not negative unless
/// `signed`.
fn duration(field: &str, v: f64, signed: bool) -> Result<(), String> {
    if !v.is_finite() {
        return Err(format!("{field}: not a finite number"));
    }
    if v < 0.0 && !signed {
        return Err(format!("{field}: {} is negative", shown(v)));
    }
    if v.abs() > MAX_DURATION_MS {
        return Err(format!(
            "{field}: {} is over 24 h ({MAX_DURATION_MS} ms)",
            shown(v)
        ));
    }
    Ok(())
}

/// A count: at most `max` (`what` names the cap's constant in the message).
fn count(field: &str, v: f64, max: u64, what: &str) -> Result<(), String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{field}: {} is not a count", shown(v)));
    }
    if v > max as f64 {
        return Err(format!(
            "{field}: {} is over the collector's cap of {max} ({what})",
            shown(v)
        ));
    }
    Ok(())
}

/// A rate or ratio: finite, not negative, at most `max`.
fn rate(field: &str, v: f64, max: f64) -> Result<(), String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{field}: {} is not a rate ≥ 0", shown(v)));
    }
    if v > max {
        return Err(format!(
            "{field}: {} is over the collector's cap of {}",
            shown(v),
            shown(max)
        ));
    }
    Ok(())
}

/// Checks every number of `report` against the bounds above; the error names the field.
pub fn check(report: &FieldReport) -> Result<(), String> {
    let r = &report.run;
    if !(MIN_SAMPLE_RATE..=1.0).contains(&r.sample_rate) {
        return Err(format!(
            "run.sample_rate: {} is outside [{}, 1] (a run may stand for at most a \
             million)",
            shown(r.sample_rate),
            shown(MIN_SAMPLE_RATE)
        ));
    }
    if let Some(t) = r.request_start_unix_ms
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(format!(
            "run.request_start_unix_ms: {} is not a time since 1970",
            shown(t)
        ));
    }
    for (m, at) in r.milestones.iter() {
        // Milestones before the request (a voice turn's speech) are negative.
        duration(&format!("run.milestones.{}", m.as_str()), at, true)?;
    }
    for (name, v) in r.gaps.iter() {
        // A gap is the client's time minus the server's: either may be ahead.
        duration(&format!("run.gaps.{name}"), v, true)?;
    }
    for (name, v) in r.metrics.iter() {
        let field = format!("run.metrics.{name}");
        match name {
            "output_tokens" => count(&field, v, MAX_TOKENS, "MAX_TOKENS")?,
            "underrun_count" | "stall_count" => count(&field, v, MAX_CHUNKS, "MAX_CHUNKS")?,
            "output_tokens_per_s" | "decode_tokens_per_s" => rate(&field, v, MAX_TOKENS_PER_S)?,
            "rtf" | "audio_arrival_rate" => rate(&field, v, MAX_RATIO)?,
            ms if ms.ends_with("_ms") => duration(&field, v, SIGNED_MS.contains(&ms))?,
            // FieldReport::validate refused names it does not know; a new metric that
            // is none of the above needs its bound here (a test checks every one).
            other => return Err(format!("run.metrics.{other}: no bound for this metric")),
        }
    }
    let c = &r.chunks;
    let counts = |at: &str, chunks, bytes, tokens: [(&str, u64); 2]| -> Result<(), String> {
        count(
            &format!("{at}.count"),
            chunks as f64,
            MAX_CHUNKS,
            "MAX_CHUNKS",
        )?;
        count(
            &format!("{at}.bytes"),
            bytes as f64,
            MAX_STREAM_BYTES,
            "MAX_STREAM_BYTES",
        )?;
        for (name, n) in tokens {
            count(&format!("{at}.{name}"), n as f64, MAX_TOKENS, "MAX_TOKENS")?;
        }
        Ok(())
    };
    counts(
        "run.chunks",
        c.count,
        c.bytes,
        [
            ("visible_tokens", c.visible_tokens),
            ("reasoning_tokens", c.reasoning_tokens),
        ],
    )?;
    for (i, b) in c.bins.iter().enumerate() {
        let at = format!("run.chunks.bins[{i}]");
        counts(
            &at,
            b.chunks,
            b.bytes,
            [
                ("visible_tokens", b.visible_tokens),
                ("reasoning_tokens", b.reasoning_tokens),
            ],
        )?;
        count(
            &format!("{at}.events"),
            b.events as f64,
            MAX_CHUNKS,
            "MAX_CHUNKS",
        )?;
        duration(&format!("{at}.from_ms"), b.from_ms, false)?;
        duration(&format!("{at}.to_ms"), b.to_ms, false)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ttfx_core::metrics::SCALAR_NAMES;

    /// Every metric has a bound: a new one cannot slip in unchecked.
    #[test]
    fn every_metric_has_a_bound() {
        let mut report: FieldReport = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "kind": "field", "generator": "t",
            "run": {"outcome": "completed", "hidden": false, "sample_rate": 1.0,
                    "milestones": {"request_start": 0.0},
                    "chunks": {"count": 0, "bytes": 0, "visible_tokens": 0,
                               "reasoning_tokens": 0}}
        }))
        .unwrap();
        for name in SCALAR_NAMES {
            report.run.metrics.0 = vec![(name.to_owned(), 1.0)];
            assert_eq!(check(&report), Ok(()), "{name}");
            report.run.metrics.0 = vec![(name.to_owned(), 1e300)];
            let e = check(&report).unwrap_err();
            assert!(
                e.starts_with(&format!("run.metrics.{name}: 1e300 is over")),
                "{e}"
            );
        }
    }

    #[test]
    fn numbers_are_shown_short() {
        assert_eq!(shown(1.7e308), "1.7e308");
        assert_eq!(shown(1e-300), "1e-300");
        assert_eq!(shown(-5.0), "-5");
        assert_eq!(shown(86_400_001.0), "86400001");
    }
}
