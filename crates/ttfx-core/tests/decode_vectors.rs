//! Conformance vectors under `testdata/decode/` (each names its source in its `.json`),
//! decoded whole, one byte at a time and at many other splits: every split must give
//! the same events, and those must match the vector's expectation.

// The helpers below run only inside tests; a malformed vector should stop the run loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::{Value, json};
use ttfx_core::decode::dialect::Framing;
use ttfx_core::decode::{
    Decoder, DialectKind, Event, Limits, NdjsonFramer, SseFramer, Transcript, coalesce,
};

struct Vector {
    name: String,
    input: Vec<u8>,
    meta: Value,
}

impl Vector {
    fn mode(&self) -> &str {
        self.meta["dialect"].as_str().unwrap()
    }
}

fn vectors() -> Vec<Vector> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/decode");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".json").map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 25, "vectors missing from {}", dir.display());
    names
        .into_iter()
        .map(|name| {
            let meta: Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap(),
            )
            .unwrap_or_else(|e| panic!("{name}.json: {e}"));
            assert!(
                meta["source"].as_str().is_some_and(|s| s.len() > 10),
                "{name}: every vector names its source"
            );
            let input = std::fs::read(dir.join(format!("{name}.in"))).unwrap();
            Vector { name, input, meta }
        })
        .collect()
}

/// Cuts `input` at `cuts` (positions, any order, duplicates allowed).
fn chunks<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([input.len()]) {
        out.push(&input[start..cut]);
        start = cut;
    }
    out
}

fn frames(mode: &str, pieces: &[&[u8]]) -> Vec<Value> {
    match mode {
        "sse" => {
            let mut framer = SseFramer::new(Limits::DEFAULT);
            let mut items = Vec::new();
            for p in pieces {
                framer.push(p, &mut items);
            }
            framer.finish(&mut items);
            items.iter().map(|i| i.to_json()).collect()
        }
        _ => {
            let mut framer = NdjsonFramer::new(Limits::DEFAULT);
            let mut items = Vec::new();
            for p in pieces {
                framer.push(p, &mut items);
            }
            framer.finish(&mut items);
            items.iter().map(|i| i.to_json()).collect()
        }
    }
}

fn decode(mut decoder: Decoder, pieces: &[&[u8]]) -> (Option<DialectKind>, Vec<Event>) {
    let mut events = Vec::new();
    for p in pieces {
        decoder.push_into(p, &mut events);
    }
    events.extend(decoder.finish());
    let dialect = decoder.dialect();
    // Raw bodies have no frames: their deltas follow the chunks, so only the content,
    // not the grouping, can be split-proof. Framed dialects are compared as they are.
    let events = if dialect.is_some_and(|d| d.framing() == Framing::Raw) {
        coalesce(events)
    } else {
        events
    };
    (dialect, events)
}

/// What a vector's expectation is matched against, for one decoding of it.
fn outcome(vector: &Vector, pieces: &[&[u8]]) -> Value {
    let mode = vector.mode();
    if mode == "sse" || mode == "ndjson" {
        return json!({ "frames": frames(mode, pieces) });
    }
    let kind: DialectKind = mode.parse().unwrap();
    let (_, events) = decode(Decoder::new(kind, Limits::DEFAULT), pieces);
    json!({
        "events": serde_json::to_value(&events).unwrap(),
        "summary": serde_json::to_value(Transcript::from_events(&events)).unwrap(),
    })
}

/// `expected` is a pattern: every key it names must match (objects may have more keys);
/// arrays must match element for element and in length; scalars must be equal.
fn check(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, ev) in e {
                let av = a.get(key).unwrap_or(&Value::Null);
                check(ev, av, &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!(
                    "{path}: expected {} items, got {}: {actual}",
                    e.len(),
                    a.len()
                ));
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                check(ev, av, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (Value::Number(e), Value::Number(a)) => {
            let (e, a) = (e.as_f64().unwrap(), a.as_f64().unwrap());
            if (e - a).abs() <= 1e-9 * e.abs().max(1.0) {
                Ok(())
            } else {
                Err(format!("{path}: expected {e}, got {a}"))
            }
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{path}: expected {expected}, got {actual}")),
    }
}

/// A small deterministic generator, so the fixed split set is the same on every run.
fn pseudo_random_cuts(len: usize, seed: u64, count: usize) -> Vec<usize> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (len as u64 + 1)) as usize
        })
        .collect()
}

#[test]
fn every_vector_matches_its_expectation_at_every_split() {
    let mut failures = Vec::new();
    for vector in vectors() {
        let whole = outcome(&vector, &[&vector.input]);
        if let Err(e) = check(&vector.meta["expect"], &whole, &vector.name) {
            failures.push(e);
            continue;
        }
        let len = vector.input.len();
        let mut splits: Vec<Vec<usize>> = vec![(1..len).collect()];
        for step in [2, 3, 5, 7, 64] {
            splits.push((step..len).step_by(step).collect());
        }
        for seed in 1..40 {
            splits.push(pseudo_random_cuts(len, seed, (seed as usize % 9) + 1));
        }
        for cuts in splits {
            let split = outcome(&vector, &chunks(&vector.input, &cuts));
            if split != whole {
                failures.push(format!(
                    "{}: cuts {cuts:?} give\n{split}\ninstead of\n{whole}",
                    vector.name
                ));
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn auto_detects_each_vectors_dialect_and_decodes_it_the_same() {
    let mut checked = 0;
    for vector in vectors() {
        let Some(expected) = vector.meta["auto_dialect"].as_str() else {
            continue;
        };
        let content_type = vector.meta["content_type"].as_str();
        let explicit = outcome(&vector, &[&vector.input]);
        for (content_type, pieces) in [
            (content_type, vec![vector.input.as_slice()]),
            (
                None,
                chunks(&vector.input, &(1..vector.input.len()).collect::<Vec<_>>()),
            ),
        ] {
            let (dialect, events) = decode(Decoder::auto(content_type, Limits::DEFAULT), &pieces);
            assert_eq!(
                dialect.map(DialectKind::as_str),
                Some(expected),
                "{} with content type {content_type:?}",
                vector.name
            );
            assert_eq!(
                serde_json::to_value(&events).unwrap(),
                explicit["events"],
                "{} (auto, content type {content_type:?})",
                vector.name
            );
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} vectors exercise auto");
}

#[test]
fn the_pattern_matcher_rejects_what_it_should() {
    assert!(check(&json!({"a": [1, 2]}), &json!({"a": [1, 2], "b": 3}), "x").is_ok());
    assert!(check(&json!({"a": [1, 2]}), &json!({"a": [1]}), "x").is_err());
    assert!(check(&json!({"a": "s"}), &json!({"a": "t"}), "x").is_err());
    assert!(check(&json!({"a": null}), &json!({}), "x").is_ok());
    assert!(check(&json!({"a": 1}), &json!({}), "x").is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any split of any vector decodes to the same result as the whole.
    #[test]
    fn vectors_are_split_proof(which in any::<prop::sample::Index>(), cuts in prop::collection::vec(any::<usize>(), 0..40)) {
        let vectors = vectors();
        let vector = &vectors[which.index(vectors.len())];
        let whole = outcome(vector, &[&vector.input]);
        let split = outcome(vector, &chunks(&vector.input, &cuts));
        prop_assert_eq!(split, whole, "{}", vector.name);
    }

    /// Random SSE streams (every field, CR/LF/CRLF line ends, multi-byte UTF-8, NUL in
    /// ids, a BOM) frame identically under random splits, including cuts inside UTF-8
    /// sequences and between CR and LF.
    #[test]
    fn random_sse_streams_are_split_proof(stream in sse_stream(), cuts in prop::collection::vec(any::<usize>(), 0..64)) {
        let whole = frames("sse", &[&stream]);
        let split = frames("sse", &chunks(&stream, &cuts));
        prop_assert_eq!(&split, &whole);
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        prop_assert_eq!(frames("sse", &bytes), whole);
    }

    /// Random bodies of random bytes never panic any dialect and stay split-proof.
    #[test]
    fn random_bytes_never_panic_and_are_split_proof(bytes in prop::collection::vec(any::<u8>(), 0..300), cuts in prop::collection::vec(any::<usize>(), 0..20), which in 0..DialectKind::ALL.len()) {
        let kind = DialectKind::ALL[which];
        let whole = decode(Decoder::new(kind, Limits::DEFAULT), &[&bytes]);
        let split = decode(Decoder::new(kind, Limits::DEFAULT), &chunks(&bytes, &cuts));
        prop_assert_eq!(split, whole);
    }
}

fn sse_stream() -> impl Strategy<Value = Vec<u8>> {
    let text = prop::collection::vec(
        prop::sample::select(vec!["a", "Z", " ", ":", "é", "€", "😀", "\u{0}", "{", "\""]),
        0..6,
    )
    .prop_map(|parts| parts.concat());
    let line = (
        prop::sample::select(vec![
            "data: ", "data:", "data", "event: ", "event:", "id: ", "id", "retry: ", "retry:",
            ": ", "", "other: ",
        ]),
        text,
        prop::sample::select(vec!["\n", "\r", "\r\n"]),
    )
        .prop_map(|(field, value, end)| {
            let value = if field.starts_with("retry") && value.len() % 2 == 0 {
                value.len().to_string()
            } else {
                value
            };
            format!("{field}{value}{end}")
        });
    (any::<bool>(), prop::collection::vec(line, 0..30)).prop_map(|(bom, lines)| {
        let mut out = if bom {
            "\u{FEFF}".to_owned()
        } else {
            String::new()
        };
        out.push_str(&lines.concat());
        out.into_bytes()
    })
}
