//! llama.cpp server's native `/completion`: `content` pieces, then `stop: true` with the
//! `timings` object (prompt and predicted counts and milliseconds), measured here. The
//! native endpoint has no reasoning channel, so reasoning is generated silently.

use serde_json::{Value, json};

use super::{Ctx, Encoder, End, data_sse};
use crate::schedule::Channel;

pub struct Completion {
    ctx: Ctx,
}

impl Completion {
    pub fn new(ctx: Ctx) -> Self {
        Completion { ctx }
    }
}

impl Encoder for Completion {
    fn piece(&mut self, _channel: Channel, text: &str) -> String {
        data_sse(&json!({ "content": text, "stop": false, "id_slot": 0, "index": 0 }))
    }

    fn close(&mut self, end: &End) -> String {
        let prompt_n = self.ctx.prompt_tokens;
        let predicted_n = end.completion_tokens();
        let per = |ms: f64, n: usize| if n > 0 { ms / n as f64 } else { 0.0 };
        let rate = |ms: f64, n: usize| {
            if ms > 0.0 {
                n as f64 * 1000.0 / ms
            } else {
                0.0
            }
        };
        data_sse(&json!({
            "content": "",
            "stop": true,
            "stop_type": if end.finish_reason == "length" { "limit" } else { "eos" },
            "model": self.ctx.model,
            "tokens_predicted": predicted_n,
            "tokens_evaluated": prompt_n,
            "timings": {
                "prompt_n": prompt_n,
                "prompt_ms": end.prefill_ms,
                "prompt_per_token_ms": per(end.prefill_ms, prompt_n),
                "prompt_per_second": rate(end.prefill_ms, prompt_n),
                "predicted_n": predicted_n,
                "predicted_ms": end.decode_ms,
                "predicted_per_token_ms": end.decode_per_second().map_or(0.0, |r| 1000.0 / r),
                "predicted_per_second": end.decode_per_second().unwrap_or(0.0),
                "cache_n": 0,
            }
        }))
    }

    fn error(&mut self, message: &str) -> String {
        data_sse(&error_body(500, message))
    }
}

pub fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        404 => "not_found_error",
        503 => "unavailable_error",
        _ => "server_error",
    };
    json!({ "error": { "code": status, "message": message, "type": kind } })
}
