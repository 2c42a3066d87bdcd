//! Warming the analysis up where it loads, before the page's first reply reaches it.
//!
//! Engines run a freshly instantiated wasm module in their baseline tier (Chromium's
//! Liftoff, Firefox's baseline, WebKit's BBQ) and compile a function with their
//! optimizing tier only once it has run a while. So the page's first reply ran its
//! decoders in baseline code: a 2,000-event OpenAI reply took 33 ms there against
//! 2.2 ms warm in Chromium 156 (`cargo xtask bench decode-browser`, #35). The Worker
//! loads the analysis when the page's first measured request starts, seconds before its
//! reply ends, so it runs this first: a few synthetic replies in the three common
//! shapes, through the same calls the page makes, their reports thrown away. The
//! optimizing tiers then compile in the background while the first reply streams;
//! measured, that reply's run fell to 6 ms (docs/probe.md, "Decode speed in the
//! browser"). The main-thread fallback does not call it in one go: it would be one
//! long task on the page.

use crate::Runs;

/// Tokens per synthetic reply: fewer left the first real run at 13–14 ms (300), 24 ms
/// (40) in Chromium; 1,500 brought it to 6–7 ms.
pub const TOKENS: usize = 1_500;

/// The page's chunk and batch sizes (its body tap: 16 KiB batches).
const CHUNK: usize = 1024;
const BATCH: usize = 16 * 1024;

/// A synthetic reply's body of so many tokens.
type Body = fn(usize) -> String;

/// Runs `tokens` tokens of each common shape through a private [`Runs`]: nothing of it
/// reaches the page's runs. Returns the reports' JSON (a shape that failed has none; the
/// caller may ignore that: this only warms code up).
pub fn warm_up(tokens: usize) -> Vec<String> {
    let mut runs = Runs::default();
    let shapes: [(&str, Body); 3] = [
        ("text/event-stream", openai_chat),
        ("text/event-stream", anthropic),
        ("application/x-ndjson", ollama),
    ];
    (1..)
        .zip(shapes)
        .filter_map(|(run, (content_type, body))| {
            reply(&mut runs, run, content_type, body(tokens).as_bytes())
        })
        .collect()
}

/// One reply as the page hands it over, the dialect found from the content type and
/// the body (the page's default, `auto`).
fn reply(runs: &mut Runs, run: u32, content_type: &str, body: &[u8]) -> Option<String> {
    runs.begin(run, None).ok()?;
    runs.recorder(run)
        .ok()?
        .headers(1.0, 200, Some(content_type), &[]);
    let mut at = 2.0;
    let mut meta = Vec::with_capacity(2 * BATCH / CHUNK);
    for batch in body.chunks(BATCH) {
        meta.clear();
        for chunk in batch.chunks(CHUNK) {
            meta.extend([at, chunk.len() as f64]);
            at += 0.25;
        }
        runs.chunks(run, &meta, batch).ok()?;
    }
    runs.end(run, at).ok()?;
    runs.finish(run).ok().map(|finished| finished.report)
}

/// A word per token, some with multi-byte text, as replies have.
fn token(i: usize) -> &'static str {
    const WORDS: [&str; 6] = [" the", " stream", "ing", " é", ",", " 😀"];
    WORDS[i % WORDS.len()]
}

fn openai_chat(tokens: usize) -> String {
    let mut body = String::new();
    for i in 0..tokens {
        body.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-w\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}},\"finish_reason\":null}}]}}\n\n",
            token(i)
        ));
    }
    body.push_str(&format!("data: {{\"id\":\"chatcmpl-w\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}],\"usage\":{{\"prompt_tokens\":3,\"completion_tokens\":{tokens}}}}}\n\ndata: [DONE]\n\n"));
    body
}

fn anthropic(tokens: usize) -> String {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_w\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    );
    for i in 0..tokens {
        body.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}\n\n",
            token(i)
        ));
    }
    body.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    body
}

fn ollama(tokens: usize) -> String {
    let mut body = String::new();
    for i in 0..tokens {
        body.push_str(&format!(
            "{{\"model\":\"m\",\"created_at\":\"2026-12-06T00:00:00Z\",\"message\":{{\"role\":\"assistant\",\"content\":\"{}\"}},\"done\":false}}\n",
            token(i)
        ));
    }
    body.push_str("{\"model\":\"m\",\"created_at\":\"2026-12-06T00:00:00Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"eval_count\":1,\"eval_duration\":1000}\n");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape is decoded whole: a shape the decoders did not take (a typo in a
    /// body) would warm nothing up.
    #[test]
    fn every_shape_is_decoded_token_by_token() {
        let reports = warm_up(50);
        assert_eq!(reports.len(), 3);
        for (report, dialect) in reports.iter().zip(["openai-chat", "anthropic", "ollama"]) {
            let v: serde_json::Value = serde_json::from_str(report).unwrap();
            let timeline = &v["run"]["timeline"];
            let tokens: u64 = timeline["chunks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["visible_tokens"].as_u64().unwrap_or(0))
                .sum();
            assert_eq!(tokens, 50, "{dialect}: {report}");
            assert_eq!(
                v["run"]["metrics"]["outcome"], "completed",
                "{dialect}: {report}"
            );
            assert!(report.contains(dialect), "{dialect}: {report}");
        }
    }
}
