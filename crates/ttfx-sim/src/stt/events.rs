//! What a simulated transcription says, in OpenAI's shapes
//! (<https://developers.openai.com/api/reference/resources/audio/subresources/transcriptions/streaming-events>,
//! and the `Transcription` object of "Create transcription"): `{"text", "usage"}` for
//! `response_format=json`, the bare text for `text`, and with `stream=true`
//! `transcript.text.delta` events (`{"type", "delta"}`) then one `transcript.text.done`
//! (`{"type", "text", "usage"}`). Usage is the token variant gpt-4o-transcribe reports
//! (`type: "tokens"`, input with its audio/text split, output, total).

use serde_json::{Value, json};

/// The text a simulated transcription returns when the request names none: a simulator
/// cannot recognise speech, so it says something fixed a test can expect.
pub const DEFAULT_TRANSCRIPT: &str =
    "Could you tell me how long the first words of the answer take to arrive?";

/// Audio input tokens per second of audio. OpenAI does not publish the rate of its
/// transcription models; its Realtime API counts one input audio token per 100 ms, so
/// the simulator uses that, for a plausible non-zero count. Unknown lengths count 0.
const AUDIO_TOKENS_PER_SECOND: f64 = 10.0;

/// The transcript cut into deltas of `words` words each; each delta keeps the space
/// before its first word (`" wonderful"`, as OpenAI's deltas do), so the deltas joined
/// are the text exactly.
pub fn deltas(text: &str, words: usize) -> Vec<&str> {
    let words = words.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    let mut seen = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !space && !in_word {
            // A word starts here: the delta ends before the spaces that lead to it.
            if seen == words {
                let cut = text[..i].trim_end().len();
                out.push(&text[start..cut]);
                start = cut;
                seen = 0;
            }
            seen += 1;
        }
        in_word = !space;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The usage object, in the token variant.
pub fn usage(audio_ms: Option<f64>, prompt_chars: usize, output_tokens: usize) -> Value {
    let audio = audio_ms.map_or(0, |ms| {
        (ms / 1000.0 * AUDIO_TOKENS_PER_SECOND).ceil() as u64
    });
    // 4 characters per token, as the other simulated endpoints count prompts.
    let text = prompt_chars.div_ceil(4) as u64;
    let output = output_tokens as u64;
    json!({
        "type": "tokens",
        "input_tokens": audio + text,
        "input_token_details": { "text_tokens": text, "audio_tokens": audio },
        "output_tokens": output,
        "total_tokens": audio + text + output,
    })
}

fn event(value: &Value) -> String {
    format!("data: {value}\n\n")
}

pub fn delta_event(delta: &str) -> String {
    event(&json!({ "type": "transcript.text.delta", "delta": delta }))
}

pub fn done_event(text: &str, usage: &Value) -> String {
    event(&json!({ "type": "transcript.text.done", "text": text, "usage": usage }))
}

/// The non-streamed `json` reply.
pub fn json_reply(text: &str, usage: &Value) -> String {
    json!({ "text": text, "usage": usage }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_join_to_the_text_and_keep_their_leading_space() {
        let text = "Hi there,  how are\nyou?";
        assert_eq!(
            deltas(text, 1),
            ["Hi", " there,", "  how", " are", "\nyou?"]
        );
        assert_eq!(deltas(text, 2), ["Hi there,", "  how are", "\nyou?"]);
        assert_eq!(deltas(text, 100), [text]);
        for words in 1..6 {
            assert_eq!(deltas(text, words).concat(), text);
            assert_eq!(
                deltas(DEFAULT_TRANSCRIPT, words).concat(),
                DEFAULT_TRANSCRIPT
            );
        }
        // Leading and trailing spaces stay in the first and last delta; a text of spaces
        // is one delta.
        assert_eq!(deltas(" a b ", 1), [" a", " b "]);
        assert_eq!(deltas("   ", 1), ["   "]);
        assert_eq!(deltas("héllo wörld", 1), ["héllo", " wörld"]);
    }

    #[test]
    fn events_have_openais_shapes() {
        let u = usage(Some(1_500.0), 10, 3);
        assert_eq!(
            u,
            json!({
                "type": "tokens", "input_tokens": 18,
                "input_token_details": { "text_tokens": 3, "audio_tokens": 15 },
                "output_tokens": 3, "total_tokens": 21,
            })
        );
        assert_eq!(usage(None, 0, 2)["input_tokens"], 0);
        // One `data:` line, JSON-escaped, then the blank line that ends an event.
        let d = delta_event(" wonder\"ful\n");
        let body = d
            .strip_prefix("data: ")
            .unwrap()
            .strip_suffix("\n\n")
            .unwrap();
        assert!(!body.contains('\n'), "{d}");
        let delta: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            delta,
            json!({ "type": "transcript.text.delta", "delta": " wonder\"ful\n" })
        );
        let done: Value =
            serde_json::from_str(done_event("a b", &u).strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(
            done,
            json!({ "type": "transcript.text.done", "text": "a b", "usage": u })
        );
        let reply: Value = serde_json::from_str(&json_reply("a b", &u)).unwrap();
        assert_eq!(reply, json!({ "text": "a b", "usage": u }));
    }
}
