//! The streaming TTS player through the real Web Audio stack of headless Chromium,
//! against a simulated TTS stream with injected time to first audio and RTF.
#![cfg(target_arch = "wasm32")]
// clippy does not see `#[wasm_bindgen_test]` functions as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audio_support;

use audio_support::{SimTts, page_now, report};
use ttfx_core::Milestone;
use ttfx_core::RequestMetrics;
use ttfx_core::timeline::{AudioOutMethod, ContextState, Timeline};
use ttfx_probe::audio::{AudioMeasurement, PlayerOptions, TtsFormat, TtsPlayer};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;
use web_sys::AudioContext;

wasm_bindgen_test_configure!(run_in_browser);

const RATE: u32 = 24_000;

fn sim(ttfa_ms: u32, rtf: f64, chunks: u32) -> SimTts {
    SimTts {
        ttfa_ms,
        rtf,
        chunk_ms: 60,
        chunks,
        sample_rate: RATE,
    }
}

fn options(use_worklet: bool, use_output_timestamp: bool) -> PlayerOptions {
    PlayerOptions {
        format: TtsFormat::Pcm16 {
            sample_rate: RATE,
            channels: 1,
        },
        request_start_ms: None,
        use_worklet,
        use_output_timestamp,
    }
}

/// Plays `sim` on a fresh player and returns the measurement (ms since the page time
/// taken just before the player was made) and when, on the same scale, the simulator
/// actually enqueued its first chunk.
async fn measure(opts: PlayerOptions, sim: SimTts) -> (AudioMeasurement, f64) {
    let (m, enqueued) = measure_with_times(opts, sim).await;
    (m, enqueued[0])
}

/// The measurement and the times (ms since the origin) at which the simulated stream
/// actually enqueued each chunk.
async fn measure_with_times(opts: PlayerOptions, sim: SimTts) -> (AudioMeasurement, Vec<f64>) {
    let origin = page_now();
    let opts = PlayerOptions {
        request_start_ms: Some(origin),
        ..opts
    };
    let player = TtsPlayer::new(None, opts).await.unwrap();
    // The player is made ahead of the request, as an app would: a new context is
    // `suspended` for a moment until its device runs.
    while player.context().state() != web_sys::AudioContextState::Running {
        gloo_timers::future::TimeoutFuture::new(5).await;
    }
    player.mark_request().unwrap();
    let (stream, enqueued) = sim.stream();
    player.play(&stream).await.unwrap();
    let m = player.result(3000.0).await.unwrap();
    player.stop();
    JsFuture::from(player.context().close().unwrap())
        .await
        .unwrap();
    let times = enqueued.borrow().iter().map(|t| t - origin).collect();
    (m, times)
}

fn at(m: &AudioMeasurement, milestone: Milestone) -> f64 {
    m.milestones
        .get(milestone)
        .unwrap_or_else(|| panic!("no {milestone} in {m:#?}"))
}

/// The bound on how long after its bytes were handed to the stream the first audible
/// sample may be measured, from what the engine reports:
///
/// - 20 ms of main-thread work: the stream handing the chunk to the reader, decoding and
///   scheduling (about 1 ms on an idle page; room for a loaded CI machine);
/// - two render quanta (2 × 128 frames): the source starts at the next quantum and the
///   tap reports a frame inside one;
/// - one device callback (`baseLatency`): `currentTime` advances a callback at a time,
///   so audio scheduled "now" can wait for the next one;
/// - the device path `baseLatency` + `outputLatency`: the render-clock methods add it,
///   and the output timestamp contains it (it names the frame at the speaker).
fn bound_ms(m: &AudioMeasurement) -> f64 {
    let output = m.audio.output.as_ref().unwrap();
    let quantum_ms = 128.0 / output.sample_rate * 1000.0;
    let base = output.base_latency_ms.unwrap_or(0.0);
    20.0 + 2.0 * quantum_ms + base + base + output.output_latency_ms.unwrap_or(0.0)
}

/// First audio: never before the injected TTFA nor before the bytes existed, and after
/// the bytes by less than `bound_ms`. The simulator's own timer lateness (the bytes
/// leaving later than injected) is the environment's, reported apart.
fn check_ttfa(m: &AudioMeasurement, injected: f64, enqueued: f64, method: AudioOutMethod) {
    assert_eq!(m.audio_out_method, Some(method), "{m:#?}");
    let tts = at(m, Milestone::TtsRequest);
    let byte = at(m, Milestone::FirstAudioByte) - tts;
    let scheduled = at(m, Milestone::FirstAudioScheduled) - tts;
    let out = at(m, Milestone::FirstAudioOut) - tts;
    let enqueued = enqueued - tts;
    let bound = bound_ms(m);
    report(
        &format!("{method:?}"),
        format!(
            "injected {injected} ms; enqueued {enqueued:.2}, byte {byte:.2}, scheduled \
             {scheduled:.2}, out {out:.2}: out − injected {:.2} ms, out − enqueued {:.2} ms \
             (bound {bound:.2}); output {:?}",
            out - injected,
            out - enqueued,
            m.audio.output
        ),
    );
    assert!(
        enqueued >= injected,
        "simulator enqueued at {enqueued} < {injected}"
    );
    assert!(
        byte >= enqueued,
        "first byte {byte} before it was enqueued at {enqueued}"
    );
    assert!(
        scheduled >= byte,
        "scheduled {scheduled} before the byte {byte}"
    );
    assert!(
        out >= injected,
        "first audio out {out} before the injected {injected}"
    );
    assert!(
        out - enqueued < bound,
        "out {out} − enqueued {enqueued} ≥ {bound}"
    );
}

#[wasm_bindgen_test]
async fn ttfa_through_the_worklet_and_output_timestamp() {
    let (m, enqueued) = measure(options(true, true), sim(300, 0.5, 10)).await;
    // Chromium has getOutputTimestamp; once the device runs it is usable.
    check_ttfa(&m, 300.0, enqueued, AudioOutMethod::OutputTimestamp);
    assert!(m.audio.output.as_ref().unwrap().output_timestamp.is_some());
}

#[wasm_bindgen_test]
async fn ttfa_through_the_worklet_without_output_timestamp() {
    let (m, enqueued) = measure(options(true, false), sim(250, 0.5, 6)).await;
    check_ttfa(&m, 250.0, enqueued, AudioOutMethod::WorkletPlusLatency);
}

#[wasm_bindgen_test]
async fn ttfa_without_a_worklet_uses_the_scheduled_sample() {
    let (m, enqueued) = measure(options(false, true), sim(250, 0.5, 6)).await;
    check_ttfa(&m, 250.0, enqueued, AudioOutMethod::ScheduledPlusLatency);
}

#[wasm_bindgen_test]
async fn a_stream_faster_than_real_time_plays_gaplessly_and_its_rate_is_measured() {
    let injected_rtf = 0.5;
    let s = sim(100, injected_rtf, 12);
    let (m, enqueued) = measure_with_times(options(true, true), s).await;
    let mut t = Timeline::default();
    t.milestones.set(Milestone::RequestStart, 0.0);
    m.apply_to(&mut t);
    let metrics = RequestMetrics::compute(&t).unwrap();
    let rate = metrics.audio_arrival_rate.unwrap().value;
    report(
        "rtf 0.5 stream",
        format!("arrival rate {rate:.3} audio s / wall s; {metrics:?}"),
    );
    // Every chunk arrived in full: 12 × 60 ms.
    assert!(
        (m.audio.audio_ms - 720.0).abs() < 1e-6,
        "{}",
        m.audio.audio_ms
    );
    // The stream never runs faster than injected (timers are chained, so lateness only
    // slows it): 1 / rate ≥ 0.5.
    assert!(
        1.0 / rate >= injected_rtf - 1e-3,
        "steady RTF {}",
        1.0 / rate
    );
    // How much slower it ran depends on the machine's load, so the measured rate is held
    // against the stream's actual pace: the probe timestamps each chunk when it reads it,
    // a task after the enqueue, so the measured span differs from the enqueue span by the
    // difference of two such delays (≤ 10 ms even on a loaded 2-core machine).
    let (first, last) = (enqueued[0], enqueued[enqueued.len() - 1]);
    let after_first_ms = 11.0 * 60.0;
    let measured_span = after_first_ms / rate;
    assert!(
        (measured_span - (last - first)).abs() <= 10.0,
        "measured span {measured_span} ms vs enqueued span {} ms",
        last - first
    );
    // Each chunk arrives 30 ms after the previous one while that one plays for 60 ms:
    // playback never catches up (a 30 ms margin at the second chunk, growing after).
    assert!(m.audio.underruns.is_empty(), "{:?}", m.audio.underruns);
}

#[wasm_bindgen_test]
async fn a_stream_slower_than_real_time_underruns_and_the_silence_is_measured() {
    // 100 ms chunks every 150 ms (RTF 1.5): each of the 7 chunks after the first finds
    // the previous one over and 50 ms of silence behind it.
    let s = SimTts {
        chunk_ms: 100,
        ..sim(100, 1.5, 8)
    };
    let (m, _) = measure(options(true, true), s).await;
    let underruns = &m.audio.underruns;
    let silence: f64 = underruns.iter().map(|u| u.silence_ms).sum();
    report(
        "rtf 1.5 stream",
        format!(
            "{} underruns, {silence:.1} ms of silence: {underruns:?}",
            underruns.len()
        ),
    );
    // `currentTime` is read when a chunk is scheduled and moves a callback (here about
    // 3 ms) at a time, so one silence can read short and the next long by the same
    // amount; a main-thread stall that delays one chunk's scheduling does the same, by
    // the stall's length. Idle, every run shows all 7 at 48–60 ms. A stall longer than
    // the 50 ms gap (a loaded machine) can close one gap and hide that underrun, so one
    // may go missing; two would take two such stalls in one second.
    assert!((6..=7).contains(&underruns.len()), "{underruns:?}");
    assert!(
        underruns.iter().all(|u| u.silence_ms > 0.0),
        "{underruns:?}"
    );
    // The total does not suffer the jitter (it telescopes to the last read minus the
    // first): at least 7 × 50 ms minus one jitter at each end; timer lateness only
    // adds, by at most a few ms per chunk on an idle page (15 ms allowed).
    let expected = 7.0 * 50.0;
    assert!(silence >= expected - 2.0 * 30.0, "{silence}");
    assert!(silence < expected + 7.0 * 15.0, "{silence}");
    // The silences lie inside the stream, after the first audio.
    let first_out = at(&m, Milestone::FirstAudioOut);
    assert!(
        underruns.iter().all(|u| u.at_ms > first_out),
        "{underruns:?}"
    );
}

#[wasm_bindgen_test]
async fn a_suspended_context_is_reported_as_such_not_as_a_huge_latency() {
    let ctx = AudioContext::new().unwrap();
    JsFuture::from(ctx.suspend().unwrap()).await.unwrap();
    let player = TtsPlayer::new(Some(ctx.clone()), options(true, true))
        .await
        .unwrap();
    player.mark_request().unwrap();
    player.play(&sim(50, 0.5, 3).stream().0).await.unwrap();
    let before = page_now();
    let m = player.result(3000.0).await.unwrap();
    // A suspended context can never be heard: the result does not sit out the timeout.
    assert!(page_now() - before < 100.0);
    let output = m.audio.output.clone().unwrap();
    assert_eq!(
        output.state_at_first_schedule,
        Some(ContextState::Suspended)
    );
    assert_eq!(m.milestones.get(Milestone::FirstAudioOut), None, "{m:#?}");
    assert!(m.milestones.get(Milestone::FirstAudioScheduled).is_some());
    let mut t = Timeline::default();
    m.apply_to(&mut t);
    let notes = RequestMetrics::compute(&t).unwrap().notes;
    assert!(notes.iter().any(|n| n.contains("suspended")), "{notes:?}");

    // When the policy lets it run, the wait is recorded apart.
    JsFuture::from(ctx.resume().unwrap()).await.unwrap();
    let m = player.result(1000.0).await.unwrap();
    let output = m.audio.output.unwrap();
    assert!(output.resumed_at_ms.is_some(), "{output:?}");
    assert_eq!(m.milestones.get(Milestone::FirstAudioOut), None);
    player.stop();
    JsFuture::from(ctx.close().unwrap()).await.unwrap();
}

#[wasm_bindgen_test]
async fn wav_and_openai_speech_bodies_play_too() {
    // A 44-byte WAV header for 24 kHz mono 16-bit, then the same tone.
    let s = sim(0, 0.5, 3);
    let pcm: Vec<u8> = (0..3).flat_map(|k| s.chunk_bytes(k)).collect();
    let mut wav = Vec::new();
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + pcm.len() as u32).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes());
    wav.extend_from_slice(&RATE.to_le_bytes());
    wav.extend_from_slice(&(RATE * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(pcm.len() as u32).to_le_bytes());
    wav.extend_from_slice(&pcm);

    let b64 = base64(&pcm);
    let sse = format!(
        "data: {{\"type\":\"speech.audio.delta\",\"audio\":\"{b64}\"}}\n\n\
         data: {{\"type\":\"speech.audio.done\"}}\n\n"
    );
    for (format, body) in [
        (TtsFormat::Wav, wav),
        (TtsFormat::OpenAiSpeech, sse.into_bytes()),
    ] {
        let player = TtsPlayer::new(
            None,
            PlayerOptions {
                format,
                ..options(true, true)
            },
        )
        .await
        .unwrap();
        player.mark_request().unwrap();
        // Split the body at an odd offset: the decoders are incremental.
        let (a, b) = body.split_at(37);
        player.push(a).unwrap();
        player.push(b).unwrap();
        player.finish().unwrap();
        let m = player.result(3000.0).await.unwrap();
        assert!(
            (m.audio.audio_ms - 180.0).abs() < 1e-6,
            "{format:?}: {m:#?}"
        );
        assert!(
            m.milestones.get(Milestone::FirstAudioOut).is_some(),
            "{format:?}: {m:#?}"
        );
        player.stop();
        JsFuture::from(player.context().close().unwrap())
            .await
            .unwrap();
    }
}

/// RFC 4648 base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[wasm_bindgen_test]
async fn tap_mode_times_the_apps_own_player() {
    use ttfx_probe::audio::JsAudioTap;
    // The app's player: an oscillator through its own gain to the destination.
    let ctx = AudioContext::new().unwrap();
    while ctx.state() != web_sys::AudioContextState::Running {
        gloo_timers::future::TimeoutFuture::new(5).await;
    }
    let gain = ctx.create_gain().unwrap();
    gain.connect_with_audio_node(&ctx.destination()).unwrap();
    let origin = page_now();
    let tap = JsAudioTap::attach(ctx.clone(), gain.clone().into(), Some(origin), None)
        .await
        .unwrap();
    // The app starts its sound 200 ms after the request: nothing can be heard before.
    let injected = 200.0;
    gloo_timers::future::TimeoutFuture::new(200).await;
    let started = page_now() - origin;
    let osc = ctx.create_oscillator().unwrap();
    osc.connect_with_audio_node(&gain).unwrap();
    osc.start().unwrap();
    let m = JsFuture::from(js_sys::Promise::from(wasm_bindgen::JsValue::from(
        tap.result(Some(3000.0)),
    )))
    .await
    .unwrap();
    let get = |o: &wasm_bindgen::JsValue, k: &str| js_sys::Reflect::get(o, &k.into()).unwrap();
    let out = get(&get(&m, "milestones"), "first_audio_out")
        .as_f64()
        .unwrap();
    let method = get(&m, "audio_out_method").as_string().unwrap();
    let output = get(&get(&m, "audio"), "output");
    let latency = get(&output, "output_latency_ms").as_f64().unwrap_or(0.0);
    let base = get(&output, "base_latency_ms").as_f64().unwrap_or(0.0);
    report(
        "tap mode",
        format!("started {started:.2} ms, first_audio_out {out:.2} ms via {method}"),
    );
    assert_eq!(method, "output_timestamp");
    assert!(out >= injected, "{out}");
    // Same bound as the player's, from the moment the app started its sound: the
    // oscillator starts at the next quantum/callback and passes the device path.
    let rate = get(&output, "sample_rate").as_f64().unwrap();
    let bound = 20.0 + 2.0 * 128.0 / rate * 1000.0 + 2.0 * base + latency;
    assert!(out - started < bound, "{out} − {started} ≥ {bound}");
    tap.detach();
    JsFuture::from(ctx.close().unwrap()).await.unwrap();
}
