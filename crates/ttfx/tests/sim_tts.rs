//! The simulated TTS endpoint over real loopback HTTP: every format decodes with
//! ttfx-core to audible audio of the asked length, at the injected TTFA and RTF.

mod common;

use common::{decode, ms, post, ttfx};
use ttfx_core::decode::Event;
use ttfx_e2e::ServeProcess;

/// As in sim_dialects.rs: tokio's timer is ≤ 1 ms late and a chunk measures 3–4 ms late
/// at the client when idle; parallel tests on 2 cores with debug builds add scheduling
/// delay. 80 ms stays well below every injected delay used here.
const LATE_MS: f64 = 80.0;

fn rms(events: &[Event]) -> (usize, f64) {
    let samples: Vec<f64> = events
        .iter()
        .flat_map(|e| match e {
            Event::AudioSamples { samples } => samples.iter().map(|s| f64::from(*s)).collect(),
            _ => Vec::new(),
        })
        .collect();
    let energy = samples.iter().map(|s| s * s).sum::<f64>() / samples.len().max(1) as f64;
    (samples.len(), energy.sqrt())
}

#[tokio::test]
async fn every_format_streams_audible_audio_at_the_injected_ttfa_and_rtf() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    // 1 s of audio in 100 ms chunks; first at 150 ms, then 50 ms per chunk (RTF 0.5):
    // the 10th chunk at 150 + 9 × 50 = 600 ms.
    let url = format!(
        "{}sim/default/v1/audio/speech?ttfa_ms=150&rtf=0.5&audio_chunk_ms=100&audio_ms=1000",
        server.url
    );
    for (format, stream, content_type) in [
        ("pcm", "audio", "audio/pcm"),
        ("wav", "audio", "audio/wav"),
        ("pcm", "sse", "text/event-stream"),
        ("wav", "sse", "text/event-stream"),
    ] {
        let body = format!(
            r#"{{"model":"tts","input":"hello","voice":"alloy","response_format":"{format}","stream_format":"{stream}"}}"#
        );
        let c = post(&url, &body).await;
        assert_eq!(c.status, 200);
        assert_eq!(c.header("content-type"), Some(content_type));
        let d = decode(&c, None);
        let (n, loudness) = rms(&d.events);
        assert_eq!(n, 24_000, "{format}/{stream}: one second at 24 kHz");
        // Speech-like level: far above silence, below clipping.
        assert!(
            loudness > 2000.0 && loudness < 20_000.0,
            "{format}/{stream}: rms {loudness}"
        );
        let audio = d.summary.audio.as_ref().unwrap();
        assert_eq!(audio.sample_rate, Some(24_000));
        assert!(
            d.summary.errors.is_empty(),
            "{format}/{stream}: {:?}",
            d.summary.errors
        );
        if stream == "sse" {
            assert!(d.summary.done);
        }
        let first = ms(c.chunks[0].0);
        let last = ms(c.chunks.last().unwrap().0);
        assert!(
            (150.0..150.0 + LATE_MS).contains(&first),
            "{format}/{stream}: first audio {first}"
        );
        assert!(
            (600.0..600.0 + LATE_MS).contains(&last),
            "{format}/{stream}: last audio {last}"
        );
    }
}

#[tokio::test]
async fn stalls_failures_and_unsupported_formats() {
    let server = ServeProcess::start(ttfx(), &[]).unwrap();
    let base = format!("{}sim/default/v1/audio/speech", server.url);
    let stalled = post(
        &format!("{base}?ttfa_ms=0&rtf=0.1&audio_ms=1000&stall_at=5&stall_ms=300"),
        r#"{"input":"x"}"#,
    )
    .await;
    let gaps: Vec<f64> = stalled
        .chunks
        .windows(2)
        .map(|w| ms(w[1].0) - ms(w[0].0))
        .collect();
    let longest = gaps.iter().cloned().fold(0.0, f64::max);
    assert!((300.0..310.0 + LATE_MS).contains(&longest), "gaps {gaps:?}");

    let dropped = post(
        &format!("{base}?ttfa_ms=0&rtf=0.1&audio_ms=1000&fail=drop&fail_after=3"),
        "{}",
    )
    .await;
    assert!(dropped.broken.is_some());
    // At most the three chunks before the drop: bytes still in the server's write buffer
    // when the connection breaks are lost, as in a real crash (it happens under load).
    let len = dropped.body().len();
    assert!(
        len <= 3 * 2400 * 2 && len % 2 == 0,
        "{len} bytes before the drop"
    );

    let failed = post(
        &format!("{base}?ttfa_ms=0&rtf=0.1&fail=error"),
        r#"{"stream_format":"sse"}"#,
    )
    .await;
    let d = decode(&failed, None);
    assert!(
        d.summary
            .errors
            .iter()
            .any(|e| e.class == ttfx_core::decode::ErrorClass::Server)
    );

    let mp3 = post(&base, r#"{"response_format":"mp3"}"#).await;
    assert_eq!(mp3.status, 400);
    assert!(
        mp3.text().contains("`pcm` and `wav` only"),
        "{}",
        mp3.text()
    );
    let status = post(&format!("{base}?fail=429"), "{}").await;
    assert_eq!(status.status, 429);
}
