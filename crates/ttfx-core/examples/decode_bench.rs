//! Native decode throughput for OpenAI-style SSE at one token per event, the shape of
//! most chat streams. `cargo xtask bench` runs this in release mode and prints its
//! lines; run it alone with `cargo run --release -p ttfx-core --example decode_bench`.
//!
//! Two figures per chunk size: the SSE framer alone, and the whole decoder (framing +
//! the openai-chat dialect's JSON). Each is the median of several runs over the same
//! generated stream.

use std::hint::black_box;
use std::time::Instant;

use ttfx_core::decode::{Decoder, DialectKind, Limits, SseFramer};

const EVENTS: usize = 50_000;
const RUNS: usize = 7;
const WORDS: [&str; 8] = [
    " the",
    " stream",
    "ing",
    " feels",
    " fast",
    ",",
    " é",
    "\u{1F600}",
];

fn stream() -> Vec<u8> {
    let mut body = String::new();
    for i in 0..EVENTS {
        let token = WORDS[i % WORDS.len()];
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"bench-model\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{token}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// Median seconds of `RUNS` runs of `f`, which returns how many events it produced.
fn median_secs(mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut times = Vec::with_capacity(RUNS);
    let mut events = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        events = black_box(f());
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    (times[RUNS / 2], events)
}

fn main() {
    let body = stream();
    let mb = body.len() as f64 / 1e6;
    println!(
        "stream: {EVENTS} events + [DONE], {:.2} MB, one token per event; median of {RUNS} runs",
        mb
    );
    println!(
        "{:<28} {:>8} {:>10} {:>14}",
        "what", "chunk B", "MB/s", "events/s"
    );
    for chunk in [1024usize, 16 * 1024, body.len()] {
        let (secs, events) = median_secs(|| {
            let mut framer = SseFramer::new(Limits::DEFAULT);
            let mut items = Vec::new();
            let mut count = 0;
            for piece in body.chunks(chunk) {
                framer.push(piece, &mut items);
                count += items.len();
                items.clear();
            }
            framer.finish(&mut items);
            count + items.len()
        });
        assert_eq!(events, EVENTS + 1, "the framer lost events");
        row("sse framer", chunk, mb, secs, events);

        let (secs, events) = median_secs(|| {
            let mut decoder = Decoder::new(DialectKind::OpenAiChat, Limits::DEFAULT);
            let mut out = Vec::new();
            let mut count = 0;
            for piece in body.chunks(chunk) {
                decoder.push_into(piece, &mut out);
                count += out.len();
                out.clear();
            }
            count + decoder.finish().len()
        });
        // One text event per token plus the done event.
        assert_eq!(events, EVENTS + 1, "the decoder lost events");
        row("decoder (openai-chat)", chunk, mb, secs, events);
    }
}

fn row(what: &str, chunk: usize, mb: f64, secs: f64, events: usize) {
    println!(
        "{what:<28} {chunk:>8} {:>10.1} {:>14.0}",
        mb / secs,
        events as f64 / secs
    );
}
