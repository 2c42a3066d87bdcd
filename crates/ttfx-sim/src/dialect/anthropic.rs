//! Anthropic Messages streaming: `message_start` right after the headers (as Anthropic
//! does, before the first token), one content block per channel (`thinking`, then
//! `text`), `message_delta` with the stop reason and output count, `message_stop`.

use serde_json::{Value, json};

use super::{Ctx, Encoder, End, typed_sse};
use crate::schedule::Channel;

pub struct Messages {
    ctx: Ctx,
    block: Option<Channel>,
    blocks: u64,
}

impl Messages {
    pub fn new(ctx: Ctx) -> Self {
        Messages {
            ctx,
            block: None,
            blocks: 0,
        }
    }

    fn stop_block(&mut self) -> String {
        match self.block.take() {
            Some(_) => {
                let index = self.blocks;
                self.blocks += 1;
                typed_sse(
                    "content_block_stop",
                    &json!({ "type": "content_block_stop", "index": index }),
                )
            }
            None => String::new(),
        }
    }
}

impl Encoder for Messages {
    fn open(&mut self) -> String {
        typed_sse(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": format!("msg_{}", self.ctx.request_id),
                    "type": "message",
                    "role": "assistant",
                    "model": self.ctx.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": { "input_tokens": self.ctx.prompt_tokens, "output_tokens": 1 },
                }
            }),
        )
    }

    fn piece(&mut self, channel: Channel, text: &str) -> String {
        let mut out = String::new();
        if self.block != Some(channel) {
            out += &self.stop_block();
            let block = match channel {
                Channel::Reasoning => json!({ "type": "thinking", "thinking": "" }),
                Channel::Visible => json!({ "type": "text", "text": "" }),
            };
            out += &typed_sse(
                "content_block_start",
                &json!({ "type": "content_block_start", "index": self.blocks, "content_block": block }),
            );
            self.block = Some(channel);
        }
        let delta = match channel {
            Channel::Reasoning => json!({ "type": "thinking_delta", "thinking": text }),
            Channel::Visible => json!({ "type": "text_delta", "text": text }),
        };
        out += &typed_sse(
            "content_block_delta",
            &json!({ "type": "content_block_delta", "index": self.blocks, "delta": delta }),
        );
        out
    }

    fn close(&mut self, end: &End) -> String {
        let mut out = self.stop_block();
        let stop = if end.finish_reason == "length" {
            "max_tokens"
        } else {
            "end_turn"
        };
        out += &typed_sse(
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": { "stop_reason": stop, "stop_sequence": null },
                "usage": { "output_tokens": end.completion_tokens() },
            }),
        );
        out += &typed_sse("message_stop", &json!({ "type": "message_stop" }));
        out
    }

    fn error(&mut self, message: &str) -> String {
        typed_sse("error", &error_body(500, message))
    }
}

pub fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({ "type": "error", "error": { "type": kind, "message": message } })
}
