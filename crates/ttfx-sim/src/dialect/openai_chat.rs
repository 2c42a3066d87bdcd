//! OpenAI Chat Completions streaming: `chat.completion.chunk` objects, `data: [DONE]`.
//! Reasoning goes in `delta.reasoning_content` (DeepSeek, vLLM, SGLang); usage comes in
//! its own chunk with empty `choices` when the client asked with
//! `stream_options.include_usage`, as OpenAI does.

use serde_json::{Value, json};

use super::{Ctx, Encoder, End, data_sse};
use crate::schedule::Channel;

pub struct Chat {
    ctx: Ctx,
    role_sent: bool,
}

impl Chat {
    pub fn new(ctx: Ctx) -> Self {
        Chat {
            ctx,
            role_sent: false,
        }
    }

    fn chunk(&self, choices: Value, usage: Option<Value>) -> String {
        let mut chunk = json!({
            "id": format!("chatcmpl-{}", self.ctx.request_id),
            "object": "chat.completion.chunk",
            "created": self.ctx.created_unix_s,
            "model": self.ctx.model,
            "choices": choices,
        });
        if let Some(usage) = usage {
            chunk["usage"] = usage;
        }
        data_sse(&chunk)
    }
}

impl Encoder for Chat {
    fn piece(&mut self, channel: Channel, text: &str) -> String {
        let key = match channel {
            Channel::Reasoning => "reasoning_content",
            Channel::Visible => "content",
        };
        let mut delta = json!({ key: text });
        // The role rides on the first delta, so every chunk carries a token.
        if !self.role_sent {
            self.role_sent = true;
            delta["role"] = json!("assistant");
        }
        self.chunk(
            json!([{ "index": 0, "delta": delta, "finish_reason": null }]),
            None,
        )
    }

    fn close(&mut self, end: &End) -> String {
        let finish = if end.finish_reason == "length" {
            "length"
        } else {
            "stop"
        };
        let mut out = self.chunk(
            json!([{ "index": 0, "delta": {}, "finish_reason": finish }]),
            None,
        );
        if self.ctx.include_usage {
            let usage = json!({
                "prompt_tokens": self.ctx.prompt_tokens,
                "completion_tokens": end.completion_tokens(),
                "total_tokens": self.ctx.prompt_tokens + end.completion_tokens(),
                "completion_tokens_details": { "reasoning_tokens": end.reasoning_tokens },
            });
            out.push_str(&self.chunk(json!([]), Some(usage)));
        }
        out.push_str("data: [DONE]\n\n");
        out
    }

    fn error(&mut self, message: &str) -> String {
        data_sse(&json!({
            "error": { "message": message, "type": "server_error", "code": "ttfx_injected" }
        }))
    }
}
