//! First audio against the sound server (issue #18 points 4 and 7): the probe's
//! `first_audio_out` against the first non-silent sample a PulseAudio null sink's monitor
//! records, in each engine (docs/fidelity.md, "First audio against the sound server").

use ttfx_e2e::audio_truth::{AudioLab, CLOCK_RESOLUTION_MS, capture};
use ttfx_e2e::engines;
use ttfx_e2e::engines::{Engine, missing};

/// Replies per engine: a few, as the bench (`audio_bench`) gives the distribution. Odd,
/// for a median that is one run.
const RUNS: u32 = 5;

/// Tones for the capture path's latency.
const TONES: usize = 5;

/// How far the tones' median recorded time may lie from the moment their writes began:
/// measured within ±0.4 ms of it in all but 1 or 2 of 20 tones (the pipe, pacat, the
/// server's wake-up and parec's 2 ms fragments); 10 ms leaves room for a loaded 2-core
/// machine and still catches a recording that lost its timing (a lost fragment is 2 ms,
/// a broken line tens of ms).
const CAPTURE_BOUND_MS: f64 = 10.0;

async fn first_audio_out_matches_the_first_sample_the_sound_server_plays(
    engine: Engine,
) -> anyhow::Result<()> {
    let name = "first_audio_out_matches_the_first_sample_the_sound_server_plays";
    let lab = AudioLab::start(engine).await?;
    let tones = lab.capture_latency(TONES).await?;
    println!(
        "capture path (pacat tone → recorded line − write): {tones:.2?} ms; monitor {:?}",
        lab.monitor_latency()
    );
    // The median: one tone can meet a busy scheduler (seen once: 24 ms).
    let mut sorted = tones.clone();
    sorted.sort_by(f64::total_cmp);
    let capture_ms = sorted[sorted.len() / 2];
    assert!(
        capture_ms.abs() <= CAPTURE_BOUND_MS,
        "the recording's line is {capture_ms:.2} ms off the tones' writes: {tones:?}"
    );
    let device = lab.open().await?;
    println!("device start: {device:?}");
    if device.state != "running" {
        missing(
            engine,
            name,
            "first audio against the sound server",
            &format!(
                "the page's AudioContext stays `{}` with a PulseAudio server running",
                device.state
            ),
        );
        return lab.close().await;
    }
    // A frame is handed to the device with its render quantum (128 frames at the
    // context's rate); the prediction names when the sink says it plays the sample, its
    // configured latency (parec's 2 ms request) after the truth, when the sample entered
    // it (the tones show the line is that moment); and the page ties its clock to the
    // system clock at a 1 ms step of Date.now().
    let quantum_ms = 128.0 * 1000.0 / device.sample_rate;
    let late_bound = quantum_ms + f64::from(capture::LATENCY_MS) + CLOCK_RESOLUTION_MS;
    // Never earlier than the sample could have entered the sound server: the line lies
    // at most `capture_ms` after the entry (when that is positive), and the clocks are
    // tied at a 1 ms step.
    let early_bound = -(capture_ms.max(0.0) + CLOCK_RESOLUTION_MS);
    // A single run may be early by more: Chromium's delay estimate (outputLatency, and
    // the output timestamp made with it) now and then reads far below the stream's real
    // latency (8 ms against ~32 ms), and a frame timed then is heard later than the probe
    // said (up to 22 ms in a test); within a page load its prediction also drifts ahead
    // (down to −5 ms; 0, 6 and 8 runs in 100 early in three bench runs; docs/fidelity.md).
    // The estimate cannot read below zero, so no run may be earlier than the largest
    // latency the page saw. The median of the runs must hold the tight bounds.
    let worst_early = -(device.max_output_latency_ms.unwrap_or(0.0) + CLOCK_RESOLUTION_MS);
    // The mirror case: the estimate may also read above the stream's real latency, when
    // the sound server has drained the stream's buffer ahead of it (Firefox's
    // outputLatency is one figure for the whole stream, ~31 ms here); the frame is then
    // heard sooner than the probe said (+8.0 ms once in a CI run, where the same page's other
    // runs were +1.2 and −1.7 ms).
    // The real latency cannot be below zero, so no run may be later than the latency
    // the probe added, on top of the tight bound.
    let worst_late = late_bound + device.max_output_latency_ms.unwrap_or(0.0);
    let mut diffs = Vec::new();
    let mut render_clock = false;
    for i in 0..RUNS {
        let ttfa = 150 + 37 * i;
        let s = lab.run(ttfa).await?;
        println!(
            "ttfa {ttfa} ms: first_audio_out − truth {:+7.2} ms ({}), with outputLatency \
             added {:?} ms, outputLatency at the hit {:?} ms, truth − first_audio_scheduled \
             {:?} ms, line − read {:+.2} ms, line shift {:?} ms, skew {:.3} ms",
            s.probe_minus_truth_ms,
            s.method,
            s.with_output_latency_minus_truth_ms,
            s.output_latency_ms,
            s.truth_minus_scheduled_ms,
            s.line_minus_read_ms,
            s.line_shift_ms,
            s.skew_ms
        );
        assert!(
            (worst_early..=worst_late).contains(&s.probe_minus_truth_ms),
            "first_audio_out − truth {:+.2} ms, outside [{worst_early:.2}, {worst_late:.2}] ms: \
             {s:?}",
            s.probe_minus_truth_ms
        );
        render_clock |= s.method == "worklet_plus_latency";
        diffs.push(s.probe_minus_truth_ms);
    }
    // Mapped through the render clock (Firefox: its output timestamp carries no delay),
    // `currentTime` moves a render quantum at a time while `performance.now()` is read
    // anywhere within one: such a reading is held to one render quantum either way
    // (issue #32; the bench checks p99), plus the witness's own terms (the capture path
    // and the 1 ms clock tie). Its outputLatency holds no sink latency (Firefox's lacks
    // the sink's 2 ms), so the late side has none either.
    let (early_bound, late_bound) = if render_clock {
        let witness = capture_ms.abs() + CLOCK_RESOLUTION_MS;
        println!(
            "render clock: held to one render quantum ({quantum_ms:.2} ms at {} Hz) plus \
             the witness's {witness:.2} ms",
            device.sample_rate
        );
        (-(quantum_ms + witness), quantum_ms + witness)
    } else {
        (early_bound, late_bound)
    };
    // The typical run: the median holds to the tight bounds.
    diffs.sort_by(f64::total_cmp);
    let median = diffs[diffs.len() / 2];
    assert!(
        median >= early_bound,
        "first_audio_out a median {:.2} ms before the sound server played the sample (bound \
         {early_bound:.2} ms): {diffs:.2?}",
        -median
    );
    assert!(
        median <= late_bound,
        "first_audio_out a median {median:.2} ms after the sound server played the sample \
         (bound {late_bound:.2} ms): {diffs:.2?}"
    );
    lab.close().await
}

engines!(
    first_audio_out_matches_the_first_sample_the_sound_server_plays,
    webkit = #[ignore = "FAILS in WebKit: WebKitGTK 2.50 plays (with --autoplay-policy=allow) \
        but its outputLatency reads 0 while PulseAudio buffers ~55 ms, so first_audio_out \
        is ~67 ms early (docs/fidelity.md, first audio)"]
);
