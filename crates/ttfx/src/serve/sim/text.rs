//! The words a simulated model says: a fixed text, cycled, so tests know the reply.

const ANSWER: &[&str] = &[
    "Streaming",
    "feels",
    "fast",
    "when",
    "the",
    "first",
    "words",
    "arrive",
    "early,",
    "and",
    "slow",
    "when",
    "a",
    "proxy",
    "holds",
    "them",
    "back",
    "until",
    "the",
    "end.",
];

const THOUGHT: &[&str] = &[
    "Let", "me", "think", "about", "what", "the", "user", "waits", "for", "first.",
];

fn nth(words: &[&str], i: usize) -> String {
    let word = words[i % words.len()];
    if i == 0 {
        word.to_owned()
    } else {
        format!(" {word}")
    }
}

/// The i-th visible token.
pub fn word(i: usize) -> String {
    nth(ANSWER, i)
}

/// The i-th reasoning token.
pub fn reasoning_word(i: usize) -> String {
    nth(THOUGHT, i)
}

/// The first `n` visible tokens joined: what a client should read.
#[cfg(test)]
pub fn answer(n: usize) -> String {
    (0..n).map(word).collect()
}

/// Prompt tokens, estimated as 4 characters per token (OpenAI's rule of thumb) over
/// every string in the request's prompt fields.
pub fn estimate_prompt_tokens(body: &serde_json::Value) -> usize {
    fn chars(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::String(s) => s.chars().count(),
            serde_json::Value::Array(a) => a.iter().map(chars).sum(),
            serde_json::Value::Object(o) => o.values().map(chars).sum(),
            _ => 0,
        }
    }
    let total: usize = ["messages", "input", "prompt", "system", "instructions"]
        .iter()
        .filter_map(|k| body.get(*k))
        .map(chars)
        .sum();
    total.div_ceil(4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_join_into_readable_text() {
        assert_eq!(answer(4), "Streaming feels fast when");
        assert_eq!(reasoning_word(0) + &reasoning_word(1), "Let me");
    }

    #[test]
    fn prompt_tokens_count_prompt_strings_only() {
        let body = serde_json::json!({
            "model": "a-very-long-model-name-that-is-not-prompt",
            "messages": [{"role": "user", "content": "12345678"}],
        });
        // "user" (4) + "12345678" (8) = 12 characters → 3 tokens.
        assert_eq!(estimate_prompt_tokens(&body), 3);
        assert_eq!(estimate_prompt_tokens(&serde_json::json!({})), 1);
    }
}
