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

/// The first `n` visible tokens joined: what a client should read (the binary's tests
/// compare what they decode with it, so the expected text cannot drift from the words).
pub fn answer(n: usize) -> String {
    (0..n).map(word).collect()
}

/// Prompt tokens, estimated as 4 characters per token (OpenAI's rule of thumb) over
/// every string in the request's prompt fields (counted by `body::read`).
pub fn prompt_tokens(prompt_chars: usize) -> usize {
    prompt_chars.div_ceil(4).max(1)
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
    fn prompt_tokens_round_up_and_are_at_least_one() {
        assert_eq!(prompt_tokens(12), 3);
        assert_eq!(prompt_tokens(13), 4);
        assert_eq!(prompt_tokens(0), 1);
    }
}
