//! `cargo xtask bench fidelity`: first paint against pixels in headless Chromium.
//!
//! For each paint method (`presentation_time`, with Element Timing's `paintTime` beside it
//! as `paint_time`; `raf_next_frame`, the probe's fallback, with Element Timing hidden
//! from it), N replies from `ttfx serve`'s simulator with injected
//! TTFTs, each measured against the first DevTools screencast frame whose reply box shows
//! text. Prints median, p90, p99 and max of `first_paint` − truth, the share of runs in
//! which the probe came before the truth, and issues #18's and #32's goal lines. `--runs N`
//! (default 100) per method.

use anyhow::{Context, bail};
use ttfx_core::stats::Summary;
use ttfx_e2e::bench::{line, runs_flag};
use ttfx_e2e::paint_truth::{CLOCK_RESOLUTION_MS, FRAME_INTERVAL_MS, PaintLab, PaintMethod};

/// One paint method's runs: the differences kept and why the others were not.
#[derive(Default)]
struct MethodRuns {
    /// `first_paint` − truth, ms.
    diffs: Vec<f64>,
    /// `paint_time` − truth, ms, where the report has `paint_time`.
    paint_times: Vec<f64>,
    /// truth − `first_dom`, ms.
    after_dom: Vec<f64>,
    /// truth − the blank frame before it, ms.
    gaps: Vec<f64>,
    /// Runs without a truth frame.
    failures: usize,
    /// Runs set aside: the screencast lost frames.
    lost_frames: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let runs = runs_flag()?;
    let lab = PaintLab::start().await?;
    println!(
        "\n## first paint against pixels (headless Chromium, DevTools screencast; {runs} runs \
         per paint method, injected TTFT 100–297 ms)"
    );
    println!(
        "truth: the first screencast frame whose reply box shows ink, at its \
         metadata.timestamp; the probe's times are placed on the system clock through \
         performance.timeOrigin and the page's offset from Date.now()"
    );
    let stamp_error_ms = stamp_section(&lab).await?;
    for method in PaintMethod::ALL {
        let measured = measure(&lab, method, runs).await?;
        method_section(method.name(), &measured, stamp_error_ms)?;
    }
    lab.close().await
}

/// What the stamp means: marker changes made in requestAnimationFrame callbacks, placed
/// against the frame's start and the callback. Returns the stamp's own error as a time of
/// the frame: its largest distance from the frame grid over the markers, plus the 1 ms
/// step of `Date.now()` through which the page's clock is tied to the system's.
async fn stamp_section(lab: &PaintLab) -> anyhow::Result<f64> {
    lab.open(PaintMethod::PresentationTime).await?;
    let marks = lab.marks(40).await?;
    let frames: Vec<f64> = marks
        .iter()
        .map(|m| m.after_frame_start_ms / FRAME_INTERVAL_MS)
        .collect();
    let on_grid = frames
        .iter()
        .filter(|f| (*f - f.round()).abs() * FRAME_INTERVAL_MS < 0.05)
        .count();
    let mut counts = std::collections::BTreeMap::new();
    for f in &frames {
        *counts.entry(f.round() as i64).or_insert(0) += 1;
    }
    println!(
        "\n### what the stamp means ({} marker changes, each made in a requestAnimationFrame \
         callback)",
        marks.len()
    );
    let after_start: Vec<f64> = marks.iter().map(|m| m.after_frame_start_ms).collect();
    let after_callback: Vec<f64> = marks.iter().map(|m| m.after_callback_ms).collect();
    if let Some(s) = Summary::of(&after_start) {
        line("stamp − the frame's start (rAF argument)", &s);
    }
    if let Some(s) = Summary::of(&after_callback) {
        line("stamp − the rAF callback", &s);
    }
    println!(
        "on the frame grid (stamp − frame start within 0.05 ms of a multiple of {FRAME_INTERVAL_MS:.3} \
         ms): {on_grid} of {}; frames later: {}",
        frames.len(),
        counts
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let painted: Vec<f64> = marks
        .iter()
        .filter_map(|m| m.paint_after_frame_start_ms)
        .collect();
    let presented: Vec<f64> = marks
        .iter()
        .filter_map(|m| m.presented_after_frame_start_ms)
        .collect();
    let stamp_after_presented: Vec<f64> = marks
        .iter()
        .filter_map(|m| Some(m.after_frame_start_ms - m.presented_after_frame_start_ms?))
        .collect();
    if let Some(s) = Summary::of(&painted) {
        line(
            "marker (black changes) Element Timing paintTime − the frame's start",
            &s,
        );
    }
    if let Some(s) = Summary::of(&presented) {
        line("marker presentationTime − the frame's start", &s);
    }
    if let Some(s) = Summary::of(&stamp_after_presented) {
        line("marker stamp − its presentationTime", &s);
    }
    let off_grid = frames
        .iter()
        .map(|f| (f - f.round()).abs() * FRAME_INTERVAL_MS)
        .fold(0.0, f64::max);
    // The stamp is a frame start: as a time of the presentation it names, it is late by
    // however far into the frames before it the presentation came. Measured against the
    // marker's own presentationTime where Chromium gives it; without markers that
    // carry one, the grid alone (a frame start names a moment within one interval).
    let late = stamp_after_presented
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let late = if late.is_finite() {
        late
    } else {
        FRAME_INTERVAL_MS
    };
    let error = late.max(off_grid) + CLOCK_RESOLUTION_MS;
    println!(
        "the stamp's own error: it lies {off_grid:.3} ms off the frame grid at most, and up \
         to {late:.3} ms after the marker's presentationTime; with the {CLOCK_RESOLUTION_MS} ms \
         clock tie, {error:.3} ms"
    );
    Ok(error)
}

/// `runs` replies measured with `method`; an error if the probe used another method.
async fn measure(lab: &PaintLab, method: PaintMethod, runs: usize) -> anyhow::Result<MethodRuns> {
    lab.open(method).await?;
    let mut out = MethodRuns::default();
    for i in 0..runs {
        // TTFTs spread over 198 ms (not a multiple of the frame interval), so the
        // token lands at every phase of the frame clock.
        let ttft = 100 + (i as u32 * 37) % 198;
        match lab.run(ttft).await {
            Ok(s) => {
                if s.method != method.name() {
                    bail!("asked for {}, the probe used {}", method.name(), s.method);
                }
                if let Some(lost) = s.lost_frames() {
                    out.lost_frames += 1;
                    eprintln!(
                        "{} run {i}: set aside, no frame showed {lost} text changes",
                        method.name()
                    );
                    continue;
                }
                out.diffs.push(s.paint_minus_truth_ms);
                out.paint_times.extend(s.paint_time_minus_truth_ms);
                out.after_dom.push(s.truth_minus_dom_ms);
                if let Some(blank) = s.blank_before_unix_ms {
                    out.gaps.push(s.truth_unix_ms - blank);
                }
            }
            Err(e) => {
                out.failures += 1;
                eprintln!("{} run {i}: {e:#}", method.name());
            }
        }
    }
    Ok(out)
}

/// The figures of the method named `name`, then issue #18's goal lines for it.
fn method_section(name: &str, runs: &MethodRuns, stamp_error_ms: f64) -> anyhow::Result<()> {
    println!("\n### {name}");
    let MethodRuns {
        diffs,
        paint_times,
        after_dom,
        gaps,
        failures,
        lost_frames,
    } = runs;
    let Some(diff) = Summary::of(diffs) else {
        println!("no run found its truth frame ({failures} failed)");
        return Ok(());
    };
    line(&format!("{name} first_paint − truth"), &diff);
    if let Some(s) = Summary::of(paint_times) {
        line("paint_time (Element Timing paintTime) − truth", &s);
    }
    if let Some(s) = Summary::of(after_dom) {
        line("truth − first_dom", &s);
    }
    if let Some(s) = Summary::of(gaps) {
        line("truth − the blank frame before it", &s);
    }
    // The truth is the compositor's frame that drew the text, up to two frame intervals
    // after the main-thread frame a paint method names (docs/fidelity.md), plus the 1 ms
    // step of `Date.now()` that ties the page's clock to the system's.
    let early_bound = -(2.0 * FRAME_INTERVAL_MS + CLOCK_RESOLUTION_MS);
    let earlier = diffs.iter().filter(|d| **d < 0.0).count();
    let beyond = diffs.iter().filter(|d| **d < early_bound).count();
    let share = |n: usize| 100.0 * n as f64 / diffs.len() as f64;
    println!(
        "probe earlier than the truth: {earlier} of {} runs ({:.1} %); earlier by more than \
         two frames + clock resolution ({:.1} ms): {beyond} ({:.1} %); runs without a truth \
         frame: {failures}; set aside, the screencast lost frames: {lost_frames}",
        diffs.len(),
        share(earlier),
        -early_bound,
        share(beyond),
    );
    goal_lines(name, diffs, earlier)?;
    let beyond_stamp = diffs.iter().filter(|d| **d < -stamp_error_ms).count();
    println!(
        "#32 goal, {name} never earlier than the first frame with text by more than the \
         stamp's own error ({stamp_error_ms:.3} ms): {beyond_stamp} of {} → {}",
        diffs.len(),
        if beyond_stamp == 0 { "met" } else { "not met" }
    );
    Ok(())
}

/// Issue #18's goals for one paint method: within a frame at p90, never earlier.
fn goal_lines(name: &str, diffs: &[f64], earlier: usize) -> anyhow::Result<()> {
    let off: Vec<f64> = diffs.iter().map(|d| d.abs()).collect();
    let off = Summary::of(&off).context("no runs")?;
    println!(
        "#18 goal, {name} first paint within one frame ({FRAME_INTERVAL_MS:.1} ms) of the \
         truth at p90: p90 of |first_paint − truth| {:.2} ms → {}",
        off.p90,
        if off.p90 <= FRAME_INTERVAL_MS {
            "met"
        } else {
            "not met"
        }
    );
    println!(
        "#18 goal, {name} never earlier than the truth: {earlier} earlier → {}",
        if earlier == 0 { "met" } else { "not met" }
    );
    Ok(())
}
