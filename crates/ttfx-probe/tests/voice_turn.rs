//! The voice turn through headless Chromium's real Web Audio stack: a known signal (an
//! AudioBuffer of silence and a tone) played into a MediaStreamAudioDestinationNode stands
//! in for the microphone, so where speech starts and ends is known to the sample.
#![cfg(target_arch = "wasm32")]
// clippy does not see `#[wasm_bindgen_test]` functions as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audio_support;

use std::cell::RefCell;
use std::rc::Rc;

use audio_support::{SimTts, page_now, report};
use gloo_timers::future::TimeoutFuture;
use js_sys::{Array, Function, Object, Reflect};
use ttfx_core::Milestone;
use ttfx_core::turn::VadSettings;
use ttfx_core::voice_result::TurnMeasurement;
use ttfx_probe::audio::{
    JsVoiceTurn, PlayerOptions, TtsFormat, TtsPlayer, TurnOptions, Vad, VadEvent, VoiceTurn,
};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;
use web_sys::{
    AudioContext, AudioContextState, BaseAudioContext, Blob, BlobPropertyBag, MediaStream,
    OfflineAudioContext, Response, Url,
};

wasm_bindgen_test_configure!(run_in_browser);

/// RMS of the "speech" tone: −20 dBFS (a sine of peak 0.1·√2).
const LOUD_RMS: f64 = 0.1;
/// Below the default −45 dBFS threshold: −50 dBFS.
const QUIET_RMS: f64 = 0.003_162;

/// A context that runs (the test page may start audio without a gesture).
async fn running_context() -> AudioContext {
    let ctx = AudioContext::new().unwrap();
    while ctx.state() != AudioContextState::Running {
        TimeoutFuture::new(5).await;
    }
    ctx
}

/// Samples of silence and tone: `(seconds, rms)` pieces, 0 rms = silence. The tone is a
/// 440 Hz cosine, so its first sample is at full level.
fn signal(rate: f64, pieces: &[(f64, f64)]) -> Vec<f32> {
    let mut out = Vec::new();
    for &(seconds, rms) in pieces {
        let n = (seconds * rate).round() as usize;
        let peak = rms * std::f64::consts::SQRT_2;
        out.extend(
            (0..n).map(|i| {
                (peak * (2.0 * std::f64::consts::PI * 440.0 * i as f64 / rate).cos()) as f32
            }),
        );
    }
    out
}

/// The microphone stand-in: a context playing `pieces` into a MediaStream, starting
/// `lead_s` from now. Returns the stream, the generator, and the page time (on the
/// generator's render clock) at which the pieces start.
struct Mic {
    ctx: AudioContext,
    stream: MediaStream,
}

impl Mic {
    async fn new() -> Mic {
        let ctx = running_context().await;
        let dest = ctx.create_media_stream_destination().unwrap();
        Mic {
            stream: dest.stream(),
            ctx: {
                // Keep the destination alive through the context: the source connects to it.
                Reflect::set(&ctx, &"__ttfxDest".into(), &dest).unwrap();
                ctx
            },
        }
    }

    /// Plays `pieces` from `lead_s` seconds on; returns their start on the page clock
    /// (the generator's render clock, the frame's render time).
    fn play(&self, pieces: &[(f64, f64)], lead_s: f64) -> f64 {
        let rate = f64::from(self.ctx.sample_rate());
        let samples = signal(rate, pieces);
        let buffer = self
            .ctx
            .create_buffer(1, samples.len() as u32, rate as f32)
            .unwrap();
        buffer.copy_to_channel(&samples, 0).unwrap();
        let source = self.ctx.create_buffer_source().unwrap();
        source.set_buffer(Some(&buffer));
        let dest = Reflect::get(&self.ctx, &"__ttfxDest".into()).unwrap();
        source
            .connect_with_audio_node(dest.unchecked_ref())
            .unwrap();
        let (now_s, now_ms) = (self.ctx.current_time(), page_now());
        let when = now_s + lead_s;
        source.start_with_when(when).unwrap();
        now_ms + lead_s * 1000.0
    }

    async fn close(self) {
        JsFuture::from(self.ctx.close().unwrap()).await.unwrap();
    }
}

fn quantum_ms(ctx: &AudioContext) -> f64 {
    128.0 / f64::from(ctx.sample_rate()) * 1000.0
}

fn base_latency_ms(ctx: &AudioContext) -> f64 {
    Reflect::get(ctx, &"baseLatency".into())
        .unwrap()
        .as_f64()
        .unwrap_or(0.0)
        * 1000.0
}

#[wasm_bindgen_test]
async fn the_detector_rule_holds_to_the_sample_offline() {
    // Offline rendering: frame numbers are exact, so the rule is checked sample by
    // sample, with no device clock in the way.
    let rate = 48_000.0;
    let pieces = [
        // Onset 100 samples into frame 10 (4,900); 9,600 samples of tone end 100
        // samples into frame 30 (14,500).
        (4_900.0 / rate, 0.0),
        (0.2, LOUD_RMS),
        // To 48,000 (frame 100): 100 ms of tone, a 300 ms pause (shorter than the
        // hangover), 100 ms of tone: one utterance, 48,000–72,000.
        (33_500.0 / rate, 0.0),
        (0.1, LOUD_RMS),
        (0.3, 0.0),
        (0.1, LOUD_RMS),
        // To 120,000: a 40 ms blip, 4 frames, fewer than min_speech's 6.
        (1.0, 0.0),
        (0.04, LOUD_RMS),
        (0.66, 0.0),
    ];
    let samples = signal(rate, &pieces);
    let ctx = OfflineAudioContext::new_with_number_of_channels_and_length_and_sample_rate(
        1,
        samples.len() as u32,
        rate as f32,
    )
    .unwrap();
    let buffer = ctx
        .create_buffer(1, samples.len() as u32, rate as f32)
        .unwrap();
    buffer.copy_to_channel(&samples, 0).unwrap();
    let source = ctx.create_buffer_source().unwrap();
    source.set_buffer(Some(&buffer));
    let (_, rule) = VadSettings::at_rate(-45.0, 500.0, 60.0, rate, None);
    let events: Rc<RefCell<Vec<VadEvent>>> = Rc::default();
    let sink = Rc::clone(&events);
    let base: &BaseAudioContext = &ctx;
    let vad = Vad::attach(base, &source, rule, move |e, _| sink.borrow_mut().push(e))
        .await
        .unwrap();
    source.start().unwrap();
    JsFuture::from(ctx.start_rendering().unwrap())
        .await
        .unwrap();
    // The processor's messages are delivered after rendering.
    TimeoutFuture::new(200).await;
    vad.detach();
    let events = events.borrow().clone();
    report("offline decisions (frames)", &events);
    assert_eq!(
        events,
        [
            // Speech frames 10..=30: start at frame 10 (4,800), decided when the sixth
            // speech frame ends (frame 15: 7,680).
            VadEvent::Start {
                start: 4_800.0,
                at: 7_680.0
            },
            // End of frame 30 (14,880), decided 50 non-speech frames later (38,880).
            VadEvent::End {
                start: 4_800.0,
                end: 14_880.0,
                at: 38_880.0
            },
            VadEvent::Start {
                start: 48_000.0,
                at: 50_880.0
            },
            // The 300 ms pause stays inside the utterance; it ends at 72,000.
            VadEvent::End {
                start: 48_000.0,
                end: 72_000.0,
                at: 96_000.0
            },
            // The 40 ms blip at 120,000 decides nothing.
        ]
    );
}

/// How far one reading of a tone may stray on a loaded machine: the 150 ms the e2e suite
/// allows one run (e2e/src/bounds.rs). Under load the render threads of the two contexts
/// can underrun, and the MediaStream hop between them then adds or drops silence inside a
/// tone; the median of three tones holds the tight bounds below.
const LOADED_MS: f64 = 150.0;

#[wasm_bindgen_test]
async fn a_known_tone_gives_its_length_and_the_hangover_from_a_mic_stream() {
    const TONES: usize = 3;
    let mic = Mic::new().await;
    let turn = VoiceTurn::new(&mic.stream, None, TurnOptions::default())
        .await
        .unwrap();
    while turn.context().state() != AudioContextState::Running {
        TimeoutFuture::new(5).await;
    }
    // 300 ms silence, then three times: 600 ms tone at −20 dBFS, 1 s silence (longer
    // than the hangover, so each tone is its own utterance).
    let mut pieces = vec![(0.3, 0.0)];
    for _ in 0..TONES {
        pieces.extend([(0.6, LOUD_RMS), (1.0, 0.0)]);
    }
    let next = turn.next_utterance(5000.0);
    let start = mic.play(&pieces, 0.1);
    let mut utterances = vec![next.await.unwrap()];
    for _ in 1..TONES {
        utterances.push(turn.next_utterance(5000.0).await.unwrap());
    }
    let settings = turn.settings();
    let latency = settings.input_latency_ms.unwrap_or(0.0);
    let (q, base) = (quantum_ms(turn.context()), base_latency_ms(turn.context()));
    let (mut lengths, mut delays) = (Vec::new(), Vec::new());
    for (i, u) in utterances.iter().enumerate() {
        let tone_start = start + 300.0 + 1600.0 * i as f64;
        let tone_end = tone_start + 600.0;
        let (length, delay) = (
            u.speech_end_ms - u.speech_start_ms,
            u.detected_at_ms - u.speech_end_ms,
        );
        report(
            "mic tone",
            format!(
                "tone {i}: length {length:.2} ms (tone 600); detectedAt − speechEnd {delay:.2} \
                 ms (hangover {}, input latency {latency}); speech_start − tone start {:.2} \
                 ms, speech_end − tone end {:.2} ms (generator's render clock; includes the \
                 MediaStream hop); quantum {q:.2} ms, baseLatency {base:.2} ms; {settings:?}",
                settings.hangover_ms,
                u.speech_start_ms - tone_start,
                u.speech_end_ms - tone_end,
            ),
        );
        // Against the generator's own clock: the MediaStream hop adds its buffering (some
        // quanta), the frame rounding up to 10 ms, each clock reading up to a callback.
        let end_error = u.speech_end_ms - tone_end;
        assert!(
            end_error > -(settings.frame_ms + 2.0 * base + q) && end_error < LOADED_MS,
            "tone {i}: speech_end − tone end {end_error}"
        );
        lengths.push(length);
        delays.push(delay);
    }
    let median = |v: &[f64]| ttfx_core::stats::percentile(v, 50.0).unwrap();
    // Start and end are mapped with one clock reading, so their distance is exact in
    // frames. 600 ms is 60 whole frames: the onset lies u ∈ [0, 10) ms into a frame,
    // the start rounds down by u and the end (the same offset 60 frames on) up by
    // 10 − u, so the length reads 600 or 610 ms. One quantum more either way for the
    // MediaStream hop between the two contexts, which moves samples in quanta.
    let length = median(&lengths);
    assert!(
        length >= 600.0 - q && length <= 600.0 + settings.frame_ms + q,
        "median length {length}: {lengths:?}"
    );
    assert!(
        lengths.iter().all(|l| (l - 600.0).abs() < LOADED_MS),
        "lengths {lengths:?}"
    );
    // The end is decided exactly `hangover` after it on the frame clock; the page sees
    // the decision when its message arrives. The render thread works a device callback
    // (baseLatency) ahead in bursts and `currentTime` moves with them, so mapping the
    // frame through one reading is off by up to one callback either way; the message
    // takes a task on the main thread (20 ms allowed for the median). No reading is
    // earlier than the rule allows: that would be the detector deciding early.
    let expected = settings.hangover_ms + latency;
    let (early, late) = (expected - base - q, expected + base + q);
    let delay = median(&delays);
    assert!(
        delay >= early && delay <= late + 20.0,
        "median detectedAt − speechEnd {delay}, expected {expected} (base {base}, quantum \
         {q}): {delays:?}"
    );
    assert!(
        delays.iter().all(|d| *d >= early && *d < late + LOADED_MS),
        "detectedAt − speechEnd {delays:?}, expected {expected}"
    );
    turn.close();
    mic.close().await;
}

#[wasm_bindgen_test]
async fn a_tone_below_the_threshold_is_no_utterance() {
    let mic = Mic::new().await;
    let starts = Rc::new(RefCell::new(0u32));
    let counter = Rc::clone(&starts);
    let on_start: Function =
        Closure::<dyn FnMut(f64)>::new(move |_: f64| *counter.borrow_mut() += 1)
            .into_js_value()
            .unchecked_into();
    let options = TurnOptions {
        on_speech_start: Some(on_start),
        ..TurnOptions::default()
    };
    let turn = VoiceTurn::new(&mic.stream, Some(mic.ctx.clone()), options)
        .await
        .unwrap();
    let next = turn.next_utterance(1500.0);
    // −50 dBFS for 600 ms, under the −45 dBFS threshold.
    mic.play(&[(0.1, 0.0), (0.6, QUIET_RMS), (0.3, 0.0)], 0.05);
    let err = next.await.unwrap_err().to_string();
    assert!(err.contains("no utterance within 1500 ms"), "{err}");
    assert_eq!(*starts.borrow(), 0);
    // Closing fails a pending wait at once, and closing again does nothing.
    let pending = turn.next_utterance(10_000.0);
    turn.close();
    turn.close();
    assert!(pending.await.unwrap_err().to_string().contains("closed"));
    // The app's context is the app's: a turn never closes it.
    assert_eq!(mic.ctx.state(), AudioContextState::Running);
    mic.close().await;
}

/// A Blob URL of `body` with `content_type`.
fn blob_url(body: &str, content_type: &str) -> String {
    let bag = BlobPropertyBag::new();
    bag.set_type(content_type);
    let blob = Blob::new_with_str_sequence_and_options(&Array::of1(&body.into()), &bag).unwrap();
    Url::create_object_url_with_blob(&blob).unwrap()
}

async fn text_of(response: &Response) -> String {
    JsFuture::from(response.text().unwrap())
        .await
        .unwrap()
        .as_string()
        .unwrap()
}

#[wasm_bindgen_test]
async fn a_transcription_reaches_the_app_unchanged_and_gives_its_stt_times() {
    let mic = Mic::new().await;
    let turn = VoiceTurn::new(&mic.stream, Some(mic.ctx.clone()), TurnOptions::default())
        .await
        .unwrap();
    let origin = page_now();
    let sse = "data: {\"type\":\"transcript.text.delta\",\"delta\":\"Hello\"}\n\n\
               event: transcript.text.delta\ndata: {\"delta\":\" thére\"}\n\n\
               data: {\"type\":\"transcript.text.done\",\"text\":\"Hello thére\"}\n\n";
    let url = blob_url(sse, "text/event-stream");
    let response = turn
        .fetch_transcription(&url.clone().into(), &JsValue::UNDEFINED)
        .await
        .unwrap();
    assert_eq!(response.url(), url);
    assert_eq!(
        response.headers().get("content-type").unwrap().as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(text_of(&response).await, sse);
    turn.end();
    // The probe's branch may finish a task after the app's.
    TimeoutFuture::new(50).await;
    let m: TurnMeasurement = turn.result(origin, 1000.0).await.unwrap();
    report("sse transcription", &m);
    let request = m.turn.stt_request_ms.unwrap();
    let partial = m.milestones.get(Milestone::SttFirstPartial).unwrap();
    let fin = m.milestones.get(Milestone::SttFinal).unwrap();
    assert!(
        0.0 <= request && request <= partial && partial <= fin,
        "{m:?}"
    );
    // No utterance was asked for: the result says so instead of inventing one.
    assert!(m.milestones.get(Milestone::SpeechEnd).is_none());
    assert!(m.notes.iter().any(|n| n.contains("no utterance")), "{m:?}");

    // A JSON reply: final when its body ends, no partial.
    let json = "{\"text\":\"Hello there\",\"usage\":{\"type\":\"tokens\"}}";
    let json_url = blob_url(json, "application/json");
    let init = Object::new();
    Reflect::set(&init, &"method".into(), &"GET".into()).unwrap();
    let response = turn
        .fetch_transcription(&json_url.into(), &init)
        .await
        .unwrap();
    assert_eq!(text_of(&response).await, json);
    TimeoutFuture::new(50).await;
    let m = turn.result(origin, 1000.0).await.unwrap();
    assert!(m.milestones.get(Milestone::SttFinal).unwrap() >= m.turn.stt_request_ms.unwrap());
    assert_eq!(m.milestones.get(Milestone::SttFirstPartial), None, "{m:?}");

    // The page's fetch rejecting reaches the app as its own error.
    let refused = turn
        .fetch_transcription(&"blob:null/not-there".into(), &JsValue::UNDEFINED)
        .await;
    assert!(refused.is_err());
    let m = turn.result(origin, 1000.0).await.unwrap();
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("the transcription request failed")),
        "{m:?}"
    );
    assert_eq!(m.milestones.get(Milestone::SttFinal), None, "{m:?}");
    turn.close();
    mic.close().await;
}

#[wasm_bindgen_test]
async fn a_barge_in_stops_the_reply_and_is_timed_after_the_turn() {
    let mic = Mic::new().await;
    let starts: Rc<RefCell<Vec<f64>>> = Rc::default();
    let sink = Rc::clone(&starts);
    let on_start: Function =
        Closure::<dyn FnMut(f64)>::new(move |at: f64| sink.borrow_mut().push(at))
            .into_js_value()
            .unchecked_into();
    let options = TurnOptions {
        on_speech_start: Some(on_start),
        hangover_ms: 300.0,
        ..TurnOptions::default()
    };
    let turn = VoiceTurn::new(&mic.stream, Some(mic.ctx.clone()), options)
        .await
        .unwrap();
    // The user's turn: 400 ms of speech.
    let next = turn.next_utterance(5000.0);
    mic.play(&[(0.1, 0.0), (0.4, LOUD_RMS), (0.5, 0.0)], 0.05);
    let own = next.await.unwrap();
    // The LLM request leaves after the utterance; its reply is spoken.
    let request_start = page_now();
    let player = TtsPlayer::new(
        None,
        PlayerOptions {
            format: TtsFormat::Pcm16 {
                sample_rate: 24_000,
                channels: 1,
            },
            request_start_ms: Some(request_start),
            use_worklet: true,
            use_output_timestamp: true,
        },
    )
    .await
    .unwrap();
    while player.context().state() != AudioContextState::Running {
        TimeoutFuture::new(5).await;
    }
    player.mark_request().unwrap();
    let sim = SimTts {
        ttfa_ms: 50,
        rtf: 0.5,
        chunk_ms: 60,
        chunks: 40,
        sample_rate: 24_000,
    };
    let (body, _) = sim.stream();
    // The reply plays while the user speaks over it, 400 ms in.
    let player = Rc::new(player);
    {
        let player = Rc::clone(&player);
        wasm_bindgen_futures::spawn_local(async move {
            player.play(&body).await.ok();
        });
    }
    TimeoutFuture::new(400).await;
    mic.play(&[(0.3, LOUD_RMS), (0.2, 0.0)], 0.0);
    while starts.borrow().len() < 2 {
        TimeoutFuture::new(5).await;
    }
    let called = page_now();
    turn.interrupt(&player).unwrap();
    let m = turn.result(request_start, 1000.0).await.unwrap();
    report("barge-in", &m);
    let speech_start = m.milestones.get(Milestone::SpeechStart).unwrap();
    let speech_end = m.milestones.get(Milestone::SpeechEnd).unwrap();
    assert!(speech_start < speech_end && speech_end < 0.0, "{m:?}");
    assert!(
        (speech_end - speech_start - 400.0).abs() <= 10.0 + quantum_ms(&mic.ctx),
        "{m:?}"
    );
    assert_eq!(speech_end, own.speech_end_ms - request_start);
    let b = m.turn.barge_in.unwrap();
    assert_eq!(b.speech_start_ms, starts.borrow()[1] - request_start);
    assert!(
        0.0 < b.speech_start_ms && b.speech_start_ms <= b.playback_stopped_ms,
        "{b:?}"
    );
    // The last sample leaves the speaker after the call, by at most the output path:
    // base + output latency, one quantum, 20 ms of main-thread slack.
    let ctx = player.context();
    let output = Reflect::get(ctx, &"outputLatency".into())
        .unwrap()
        .as_f64()
        .unwrap_or(0.0)
        * 1000.0;
    let after_call = b.playback_stopped_ms - (called - request_start);
    report(
        "barge-in figures",
        format!(
            "interrupt_ms {:.2}; stopped − interrupt call {after_call:.2} ms (base {:.2}, \
             output {output:.2})",
            b.playback_stopped_ms - b.speech_start_ms,
            base_latency_ms(ctx)
        ),
    );
    assert!(
        after_call >= -quantum_ms(ctx)
            && after_call <= 2.0 * base_latency_ms(ctx) + output + quantum_ms(ctx) + 20.0,
        "{after_call}"
    );
    turn.close();
    JsFuture::from(player.context().close().unwrap())
        .await
        .unwrap();
    mic.close().await;
}

/// `create()`'s rejection message for `options`.
async fn create_error(options: JsValue) -> String {
    let Err(e) = JsVoiceTurn::create(options.unchecked_into()).await else {
        panic!("create accepted bad options");
    };
    Reflect::get(&e, &"message".into())
        .unwrap()
        .as_string()
        .unwrap()
}

fn object(pairs: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in pairs {
        Reflect::set(&o, &(*k).into(), v).unwrap();
    }
    o.into()
}

#[wasm_bindgen_test]
async fn bad_input_is_a_clear_rejection_never_a_panic() {
    assert!(
        create_error(JsValue::UNDEFINED)
            .await
            .contains("stream is required")
    );
    assert!(
        create_error(object(&[("stream", 5.into())]))
            .await
            .contains("stream must be a MediaStream")
    );
    assert!(
        create_error(object(&[("stream", "mic".into())]))
            .await
            .contains("stream must be a MediaStream")
    );
    let empty = MediaStream::new().unwrap();
    assert!(
        create_error(object(&[("stream", empty.into())]))
            .await
            .contains("no audio track")
    );
    let mic = Mic::new().await;
    let stream: JsValue = mic.stream.clone().into();
    for (key, value, says) in [
        ("hangoverMs", JsValue::from(-1.0), "hangoverMs must be ≥ 0"),
        (
            "thresholdDb",
            JsValue::from("loud"),
            "thresholdDb must be a finite number",
        ),
        (
            "onSpeechEnd",
            JsValue::from(3.0),
            "onSpeechEnd must be a function",
        ),
        (
            "context",
            JsValue::from(4.0),
            "context must be an AudioContext",
        ),
    ] {
        let message = create_error(object(&[("stream", stream.clone()), (key, value)])).await;
        assert!(message.contains(says), "{key}: {message}");
    }
    // interrupt before the turn has an utterance: a clear error, and the reply stopped.
    let turn = VoiceTurn::new(&mic.stream, Some(mic.ctx.clone()), TurnOptions::default())
        .await
        .unwrap();
    let player = TtsPlayer::new(Some(mic.ctx.clone()), PlayerOptions::default())
        .await
        .unwrap();
    let err = turn.interrupt(&player).unwrap_err().to_string();
    assert!(err.contains("no utterance yet"), "{err}");
    // A requestStart that is not a time.
    assert!(turn.result(f64::NAN, 10.0).await.is_err());
    turn.close();
    mic.close().await;
}

#[wasm_bindgen_test]
async fn a_run_that_includes_the_turn_reports_it_before_its_request() {
    use ttfx_probe::{Probe, ProbeOptions, VoicePart};
    let mic = Mic::new().await;
    let options = object(&[
        ("stream", mic.stream.clone().into()),
        ("context", mic.ctx.clone().into()),
        ("hangoverMs", 200.0.into()),
    ]);
    // The JS face end to end: its result object is what the analysis reads back.
    let turn = JsFuture::from(JsVoiceTurn::create(options.unchecked_into()))
        .await
        .unwrap();
    let call = |name: &str, args: &[JsValue]| -> JsValue {
        let method: Function = Reflect::get(&turn, &name.into()).unwrap().unchecked_into();
        method
            .apply(&turn, &args.iter().collect::<Array>())
            .unwrap()
    };
    let next: js_sys::Promise = call("nextUtterance", &[5000.0.into()]).unchecked_into();
    mic.play(&[(0.05, 0.0), (0.3, LOUD_RMS), (0.3, 0.0)], 0.05);
    JsFuture::from(next).await.unwrap();
    let probe = Probe::new(ProbeOptions::default()).unwrap();
    let run = probe.start(Some("turn".into()));
    let reply = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi.\"}}]}\n\ndata: [DONE]\n\n";
    let url = blob_url(reply, "text/event-stream");
    let response = run.fetch(&url.into(), &JsValue::UNDEFINED).await.unwrap();
    let start = run.request_start().unwrap();
    run.include_voice(VoicePart::Turn, call("result", &[start.into()]));
    assert_eq!(text_of(&response).await, reply);
    call("end", &[]);
    let finished = run.finished().await.unwrap();
    let t = &finished.run.timeline;
    let speech_end = t.milestones.get(Milestone::SpeechEnd).unwrap();
    assert!(speech_end < 0.0, "{t:?}");
    let turn_record = t.turn.as_ref().unwrap();
    assert!(turn_record.speech_end_detected_ms.unwrap() > speech_end);
    assert!(
        !t.anomalies.iter().any(|a| a.class.starts_with("voice_")),
        "{:?}",
        t.anomalies
    );
    // No audio in this run: the breakdown says where the turn stopped.
    let breakdown = finished.run.metrics.turn.as_ref().unwrap();
    report("run with a turn", breakdown);
    call("close", &[]);
    mic.close().await;
}
