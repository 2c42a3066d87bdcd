//! The LLM → TTS handoff end to end in headless Chromium: a simulated LLM streams tokens
//! on timers, the segmenter cuts them, a streaming and a buffered pipeline hand the
//! segments to a simulated TTS played through Web Audio, and the verdicts are checked.
#![cfg(target_arch = "wasm32")]
// clippy does not see `#[wasm_bindgen_test]` functions as tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod audio_support;

use std::cell::Cell;
use std::rc::Rc;

use audio_support::{SimTts, page_now, report};
use gloo_timers::future::TimeoutFuture;
use js_sys::{Object, Reflect};
use ttfx_core::handoff::HandoffVerdict;
use ttfx_core::segment::{Segment, SegmenterConfig};
use ttfx_core::timeline::Timeline;
use ttfx_core::{Milestone, RequestMetrics};
use ttfx_probe::audio::{
    HandoffRecorder, JsTtsPlayer, JsVoiceHandoff, PlayerOptions, TtsFormat, TtsPlayer,
};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Three sentences, one token per 25 ms: the reply takes ~0.9 s to stream.
const TOKENS: &[&str] = &[
    "Sure", ",", " the", " meeting", " is", " at", " 3", ".", "30", " p", ".", "m", ".", " Dr",
    ".", " Lee", " will", " join", " too", ".", " Bring", " the", " notes", ",", " e", ".", "g",
    ".", " slides", " and", " the", " 1", ",", "000", "-", "row", " sheet", ".",
];
const TOKEN_MS: u32 = 25;

/// Runs one pipeline: the LLM starts at `request_start`; `streaming` hands each segment
/// to TTS as it completes, else everything at the end. The first handed segment starts
/// a simulated TTS (150 ms to first audio) played on a real player.
async fn pipeline(streaming: bool) -> (Timeline, Vec<String>) {
    // The "LLM request" starts here; the player (made ahead, as an app would) measures
    // from the same origin.
    let request_start = page_now();
    let player = Rc::new(
        TtsPlayer::new(
            None,
            PlayerOptions {
                format: TtsFormat::Pcm16 {
                    sample_rate: 24_000,
                    channels: 1,
                },
                request_start_ms: Some(request_start),
                ..PlayerOptions::default()
            },
        )
        .await
        .unwrap(),
    );
    while player.context().state() != web_sys::AudioContextState::Running {
        TimeoutFuture::new(5).await;
    }
    let mut handoff = HandoffRecorder::new(SegmenterConfig::default(), request_start).unwrap();
    let mut timeline = Timeline::default();
    timeline.milestones.set(Milestone::RequestStart, 0.0);
    let mut texts = Vec::new();
    let mut held = Vec::new();
    // Set when the TTS stream has been played to its end.
    let played: Rc<Cell<bool>> = Rc::default();
    for (i, token) in TOKENS.iter().enumerate() {
        TimeoutFuture::new(TOKEN_MS).await;
        let at = page_now();
        if i == 0 {
            timeline
                .milestones
                .set(Milestone::FirstToken, at - request_start);
            timeline
                .milestones
                .set(Milestone::FirstVisibleToken, at - request_start);
        }
        held.extend(handoff.push_text_at(token, at));
        if streaming {
            hand_all(&mut held, &mut handoff, &player, &played, &mut texts);
        }
    }
    timeline
        .milestones
        .set(Milestone::LastToken, page_now() - request_start);
    held.extend(handoff.llm_done().unwrap());
    hand_all(&mut held, &mut handoff, &player, &played, &mut texts);
    while !played.get() {
        TimeoutFuture::new(10).await;
    }
    let audio = player.result(3000.0).await.unwrap();
    player.stop();
    JsFuture::from(player.context().close().unwrap())
        .await
        .unwrap();
    audio.apply_to(&mut timeline);
    handoff.apply_to(&mut timeline);
    (timeline, texts)
}

/// Hands the `held` segments to TTS in order; the first handoff of the run sends the
/// TTS request, whose stream the player reads concurrently with the rest of the LLM
/// stream, as a real app would.
fn hand_all(
    held: &mut Vec<Segment>,
    handoff: &mut HandoffRecorder,
    player: &Rc<TtsPlayer>,
    played: &Rc<Cell<bool>>,
    texts: &mut Vec<String>,
) {
    for segment in held.drain(..) {
        handoff.handed(segment.index).unwrap();
        if texts.is_empty() {
            player.mark_request().unwrap();
            let (stream, _) = SimTts {
                ttfa_ms: 150,
                rtf: 0.3,
                chunk_ms: 60,
                chunks: 4,
                sample_rate: 24_000,
            }
            .stream();
            let (player, played) = (Rc::clone(player), Rc::clone(played));
            wasm_bindgen_futures::spawn_local(async move {
                player.play(&stream).await.unwrap();
                played.set(true);
            });
        }
        texts.push(segment.text);
    }
}

#[wasm_bindgen_test]
async fn a_streaming_pipeline_is_called_streaming_and_a_buffered_one_buffered() {
    let (streamed, texts) = pipeline(true).await;
    assert_eq!(
        texts,
        [
            "Sure, the meeting is at 3.30 p.m.",
            "Dr. Lee will join too.",
            "Bring the notes, e.g. slides and the 1,000-row sheet."
        ]
    );
    let s = RequestMetrics::compute(&streamed).unwrap();
    let (buffered, _) = pipeline(false).await;
    let b = RequestMetrics::compute(&buffered).unwrap();
    let (sh, bh) = (s.handoff.clone().unwrap(), b.handoff.clone().unwrap());
    report(
        "handoff",
        format!(
            "streaming: {sh:?}, ttfa {:?}, behind text {:?}; buffered: {bh:?}, ttfa {:?}, \
             behind text {:?}",
            s.ttfa_ms, s.audio_behind_text_ms, b.ttfa_ms, b.audio_behind_text_ms
        ),
    );
    assert_eq!(sh.verdict, HandoffVerdict::Streaming);
    assert_eq!(bh.verdict, HandoffVerdict::Buffered);
    // The streaming pipeline hands a segment as soon as the segmenter has it: its time
    // lost is the main thread's, a few ms (20 allowed for a loaded machine). The
    // buffered one waits for the rest of the reply: the first sentence is proved
    // complete by token 14 of 38 (the " Dr" after "p.m."), so it waits for 24 more
    // tokens, at least 24 × 25 ms since timers only run late.
    assert!(sh.time_lost_ms.unwrap() < 20.0, "{sh:?}");
    assert!(
        bh.time_lost_ms.unwrap() >= 24.0 * f64::from(TOKEN_MS),
        "{bh:?}"
    );
    // What the listener hears follows: the streaming pipeline's voice starts while the
    // LLM is still streaming (first segment at 0.35–0.55 s + 150 ms TTS + ~40 ms device,
    // against an LLM end near 1 s: a margin of 300 ms or more), the buffered one's only
    // after it ended.
    let (s_ttfa, b_ttfa) = (s.ttfa_ms.unwrap().value, b.ttfa_ms.unwrap().value);
    assert!(s_ttfa < sh.llm_end_ms.unwrap(), "{s_ttfa} vs {sh:?}");
    assert!(b_ttfa > bh.llm_end_ms.unwrap(), "{b_ttfa} vs {bh:?}");
    // first_sentence is the moment the first segment was complete.
    assert_eq!(
        streamed.milestones.get(Milestone::FirstSentence),
        sh.first_complete_ms
    );
}

fn error_text(e: wasm_bindgen::JsError) -> String {
    let v = JsValue::from(e);
    Reflect::get(&v, &"message".into())
        .unwrap()
        .as_string()
        .unwrap()
}

#[wasm_bindgen_test]
async fn the_js_edge_rejects_bad_input_with_clear_errors() {
    let bad = Object::new();
    Reflect::set(&bad, &"clauseMinChars".into(), &"many".into()).unwrap();
    let err = JsVoiceHandoff::new(Some(bad.unchecked_into()))
        .err()
        .unwrap();
    assert!(error_text(err).contains("clauseMinChars must be a finite number"));

    let mut h = JsVoiceHandoff::new(None).unwrap();
    let segments = h.push_text("Hello there. Next").unwrap();
    let segments: js_sys::Array = JsValue::from(segments).unchecked_into();
    assert_eq!(segments.length(), 1);
    h.handed(0).unwrap();
    let err = h.handed(7).err().unwrap();
    assert!(error_text(err).contains("segment 7 was never produced"));
    let result = h.result().unwrap();
    let verdict = Reflect::get(
        &Reflect::get(&result, &"verdict".into()).unwrap(),
        &"verdict".into(),
    )
    .unwrap();
    // The LLM has not ended: no verdict yet, and the reason says why.
    assert_eq!(verdict.as_string().as_deref(), Some("undetermined"));

    let bad = Object::new();
    Reflect::set(&bad, &"format".into(), &"mp3".into()).unwrap();
    let err = JsTtsPlayer::create(Some(bad.unchecked_into()))
        .await
        .err()
        .unwrap();
    assert!(error_text(err).contains("unknown TTS format `mp3`"));
    let bad = Object::new();
    Reflect::set(&bad, &"sampleRate".into(), &JsValue::from(12.5)).unwrap();
    let err = JsTtsPlayer::create(Some(bad.unchecked_into()))
        .await
        .err()
        .unwrap();
    assert!(error_text(err).contains("sampleRate must be a positive whole number"));
}
