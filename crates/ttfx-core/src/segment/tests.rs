use super::*;

/// Feeds `deltas` one per millisecond (delta i at i ms) and finishes at the next
/// millisecond; returns the segments' texts.
fn texts(config: SegmenterConfig, deltas: &[&str]) -> Vec<String> {
    run(config, deltas).into_iter().map(|s| s.text).collect()
}

fn run(config: SegmenterConfig, deltas: &[&str]) -> Vec<Segment> {
    let mut s = Segmenter::new(config);
    let mut out = Vec::new();
    for (i, d) in deltas.iter().enumerate() {
        out.extend(s.push(d, i as f64));
    }
    out.extend(s.finish(deltas.len() as f64));
    out
}

fn sentences(text: &str) -> Vec<String> {
    texts(SegmenterConfig::default(), &[text])
}

/// Every split of `text` into two deltas gives the same segments as one delta: where
/// chunks break must not change where sentences break.
fn split_proof(text: &str) -> Vec<String> {
    let whole = sentences(text);
    for (i, _) in text.char_indices().skip(1) {
        let (a, b) = text.split_at(i);
        assert_eq!(
            texts(SegmenterConfig::default(), &[a, b]),
            whole,
            "split at {i}: {a:?} | {b:?}"
        );
    }
    whole
}

#[test]
fn plain_sentences_end_at_terminators_followed_by_space() {
    assert_eq!(
        split_proof("Hello there. How are you? Fine! Good."),
        ["Hello there.", "How are you?", "Fine!", "Good."]
    );
}

#[test]
fn numbers_do_not_end_sentences() {
    assert_eq!(
        split_proof("Pi is 3.14 and a grand is 1,000 dollars. Next one."),
        ["Pi is 3.14 and a grand is 1,000 dollars.", "Next one."]
    );
    // A number with inner dots at the end of a sentence still ends it before a capital.
    assert_eq!(
        split_proof("The version is 1.2.3. Update now."),
        ["The version is 1.2.3.", "Update now."]
    );
    // "In 2024." is an ordinary sentence end; "1." opening a segment is a list marker.
    assert_eq!(
        split_proof("It shipped in 2024. 1. Install it.\n2. Run it."),
        ["It shipped in 2024.", "1. Install it.", "2. Run it."]
    );
}

#[test]
fn titles_latin_abbreviations_and_initials_never_end_sentences() {
    assert_eq!(
        split_proof("Dr. Smith met Mr. J. Jones, e.g. at noon, i.e. early. Then he left."),
        [
            "Dr. Smith met Mr. J. Jones, e.g. at noon, i.e. early.",
            "Then he left."
        ]
    );
}

#[test]
fn ambiguous_abbreviations_wait_for_the_next_word() {
    assert_eq!(
        split_proof("Buy apples, pears, etc. and bake. Add sugar etc. Then serve at 5 p.m. Enjoy."),
        [
            "Buy apples, pears, etc. and bake.",
            "Add sugar etc.",
            "Then serve at 5 p.m.",
            "Enjoy."
        ]
    );
    assert_eq!(
        split_proof("He moved to the U.S. Later he returned."),
        ["He moved to the U.S.", "Later he returned."]
    );
}

#[test]
fn ellipses_trail_off_or_end() {
    assert_eq!(
        split_proof("Well... maybe. I think… Yes. Wait...and see."),
        ["Well... maybe.", "I think…", "Yes.", "Wait...and see."]
    );
}

#[test]
fn quotes_and_brackets_stay_with_their_sentence() {
    assert_eq!(
        split_proof("He said \"Stop.\" Then he ran. (It was late.) \"Go!\" she said. Fine."),
        [
            "He said \"Stop.\"",
            "Then he ran.",
            "(It was late.)",
            "\"Go!\" she said.",
            "Fine."
        ]
    );
    assert_eq!(
        split_proof("This is **important.** Read it."),
        ["This is **important.**", "Read it."]
    );
}

#[test]
fn line_breaks_end_segments_and_blank_segments_are_never_emitted() {
    assert_eq!(
        split_proof("# Title\n\n- first item\n- second item\n\nLast"),
        ["# Title", "- first item", "- second item", "Last"]
    );
    assert!(sentences("  \n\n \n").is_empty());
    assert!(sentences("").is_empty());
}

#[test]
fn clauses_are_cut_only_when_configured_and_long_enough() {
    let text = "Sure, I can help with that: first, open the settings menu; then pick a voice.";
    assert_eq!(sentences(text), [text]);
    let clauses = SegmenterConfig {
        clause_min_chars: Some(20),
    };
    assert_eq!(
        texts(clauses, &[text]),
        [
            // "Sure," (5 chars) is too short to leave alone.
            "Sure, I can help with that:",
            "first, open the settings menu;",
            "then pick a voice."
        ]
    );
    // Commas inside numbers are glued and never a clause end.
    assert_eq!(
        texts(clauses, &["That costs 1,000,000 dollars in total."]),
        ["That costs 1,000,000 dollars in total."]
    );
}

#[test]
fn times_are_the_last_characters_arrival_and_the_proof_of_completion() {
    // Token stream: "Hello" @0, " world" @1, "." @2, " How" @3, " are" @4, " you?" @5.
    let segments = run(
        SegmenterConfig::default(),
        &["Hello", " world", ".", " How", " are", " you?"],
    );
    assert_eq!(
        segments,
        [
            Segment {
                index: 0,
                text: "Hello world.".into(),
                // The "." arrived at 2 ms; the space proving the end arrived at 3 ms.
                last_token_at_ms: 2.0,
                complete_at_ms: 3.0,
            },
            Segment {
                index: 1,
                text: "How are you?".into(),
                last_token_at_ms: 5.0,
                // Nothing followed "?": only the end of the stream (6 ms) completed it.
                complete_at_ms: 6.0,
            },
        ]
    );
}

#[test]
fn a_segment_is_returned_by_the_push_that_completes_it() {
    let mut s = Segmenter::default();
    assert!(s.push("Use etc.", 0.0).is_empty());
    // Whitespace alone cannot tell "etc." from the end of the sentence.
    assert!(s.push(" ", 1.0).is_empty());
    let done = s.push("Next", 2.0);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].text, "Use etc.");
    assert_eq!(
        (done[0].last_token_at_ms, done[0].complete_at_ms),
        (0.0, 2.0)
    );
    assert_eq!(s.emitted(), 1);
    let last = s.finish(3.0).unwrap();
    assert_eq!((last.index, last.text.as_str()), (1, "Next"));
    assert_eq!(s.finish(4.0), None);
}

#[test]
fn multibyte_text_is_split_on_char_boundaries() {
    assert_eq!(
        split_proof("Café — naïve… ünïcode works… Ünïcode too. 日本語のテキスト. Done."),
        [
            "Café — naïve… ünïcode works…",
            "Ünïcode too.",
            "日本語のテキスト.",
            "Done."
        ]
    );
}
