//! Framers and dialects on arbitrary bytes: no panic, bounded output, and the same
//! result for the whole body as for the body cut into chunks.
//!
//! Input layout: byte 0 picks the decoder (each dialect, auto, or a bare framer with a
//! tiny line limit), byte 1 seeds the chunk sizes, the rest is the body.

#![no_main]

use libfuzzer_sys::fuzz_target;
use ttfx_core::decode::{
    Decoder, DialectKind, Event, Limits, NdjsonFramer, SseFramer, SseItem, coalesce,
};

/// Small limits so the fuzzer reaches the overlong-line paths with short inputs.
const TINY: Limits = Limits {
    max_line_bytes: 24,
    max_event_bytes: 40,
};

fn cuts(body: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut step = usize::from(seed % 7) + 1;
    while !rest.is_empty() {
        let (head, tail) = rest.split_at(step.min(rest.len()));
        out.push(head);
        rest = tail;
        step = (step * 5 + usize::from(seed)) % 11 + 1;
    }
    out
}

fn decode(mut decoder: Decoder, pieces: &[&[u8]]) -> Vec<Event> {
    let mut events = Vec::new();
    for p in pieces {
        decoder.push_into(p, &mut events);
    }
    events.extend(decoder.finish());
    events
}

fn sse_frames(pieces: &[&[u8]]) -> Vec<SseItem> {
    let mut framer = SseFramer::new(TINY);
    let mut items = Vec::new();
    for p in pieces {
        framer.push(p, &mut items);
    }
    framer.finish(&mut items);
    items
}

fuzz_target!(|input: &[u8]| {
    let [selector, seed, body @ ..] = input else {
        return;
    };
    let pieces = cuts(body, *seed);
    let kinds = DialectKind::ALL;
    let which = usize::from(*selector) % (kinds.len() + 3);
    match kinds.get(which) {
        Some(&kind) => {
            let limits = if seed % 2 == 0 { Limits::DEFAULT } else { TINY };
            let whole = coalesce(decode(Decoder::new(kind, limits), &[body]));
            let split = coalesce(decode(Decoder::new(kind, limits), &pieces));
            assert_eq!(whole, split, "{kind} differs under chunking");
        }
        None if which == kinds.len() => {
            let whole = decode(Decoder::auto(None, Limits::DEFAULT), &[body]);
            let split = decode(Decoder::auto(None, Limits::DEFAULT), &pieces);
            assert_eq!(
                coalesce(whole),
                coalesce(split),
                "auto differs under chunking"
            );
        }
        None if which == kinds.len() + 1 => {
            let whole = sse_frames(&[body]);
            assert_eq!(
                whole,
                sse_frames(&pieces),
                "SSE frames differ under chunking"
            );
            for item in &whole {
                if let SseItem::Event(e) = item {
                    assert!(e.data.len() <= TINY.max_event_bytes, "event over its limit");
                }
            }
        }
        None => {
            let mut framer = NdjsonFramer::new(TINY);
            let (mut whole, mut split) = (Vec::new(), Vec::new());
            framer.push(body, &mut whole);
            framer.finish(&mut whole);
            let mut framer = NdjsonFramer::new(TINY);
            for p in &pieces {
                framer.push(p, &mut split);
            }
            framer.finish(&mut split);
            assert_eq!(whole, split, "NDJSON lines differ under chunking");
        }
    }
});
