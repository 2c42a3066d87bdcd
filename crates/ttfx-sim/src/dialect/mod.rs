//! The wire formats of the simulated servers: one encoder per dialect, turning the
//! schedule's pieces and the measured end figures into the bytes that server would send.

use serde_json::{Value, json};

use ttfx_core::ChatApi;

use super::schedule::Channel;

mod anthropic;
mod llamacpp;
mod ollama;
mod openai_chat;
mod openai_responses;

/// What every encoder knows about the request.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub model: String,
    /// Used in the dialect's ids (`chatcmpl-…`, `msg_…`).
    pub request_id: String,
    pub created_unix_s: u64,
    pub prompt_tokens: usize,
    /// OpenAI Chat: `stream_options.include_usage`.
    pub include_usage: bool,
}

/// The figures of the finished reply, measured on the server's clock.
#[derive(Debug, Clone)]
pub struct End {
    pub reasoning_tokens: usize,
    pub visible_tokens: usize,
    pub finish_reason: &'static str,
    /// Request arrival → response headers.
    pub queue_ms: f64,
    /// Headers → first token generated (excludes the queue, like llama.cpp's prompt_ms).
    pub prefill_ms: f64,
    /// First → last token generated.
    pub decode_ms: f64,
    /// Arrival → now.
    pub total_ms: f64,
}

impl End {
    pub fn completion_tokens(&self) -> usize {
        self.reasoning_tokens + self.visible_tokens
    }

    /// Generated tokens per second after the first: n − 1 intervals span `decode_ms`.
    pub fn decode_per_second(&self) -> Option<f64> {
        let n = self.completion_tokens();
        (n >= 2 && self.decode_ms > 0.0).then(|| (n - 1) as f64 * 1000.0 / self.decode_ms)
    }
}

pub trait Encoder: Send {
    /// Sent right after the headers, before prefill ends (Anthropic's `message_start`).
    fn open(&mut self) -> String {
        String::new()
    }
    fn piece(&mut self, channel: Channel, text: &str) -> String;
    fn close(&mut self, end: &End) -> String;
    fn error(&mut self, message: &str) -> String;
}

/// The simulator's side of each API ttfx speaks (`ttfx_core::ChatApi` holds its path,
/// request body and reply dialect): what the server sends.
pub trait ServerSide {
    fn content_type(self) -> &'static str;
    /// Whether the format has a reasoning channel; without one reasoning stays hidden.
    fn has_reasoning_channel(self) -> bool;
    fn encoder(self, ctx: Ctx) -> Box<dyn Encoder>;
    /// The body of an HTTP error response, as this server would write it.
    fn error_body(self, status: u16, message: &str) -> Value;
}

impl ServerSide for ChatApi {
    fn content_type(self) -> &'static str {
        match self {
            ChatApi::OllamaChat | ChatApi::OllamaGenerate => "application/x-ndjson",
            _ => "text/event-stream",
        }
    }

    fn has_reasoning_channel(self) -> bool {
        self != ChatApi::LlamaCppCompletion
    }

    fn encoder(self, ctx: Ctx) -> Box<dyn Encoder> {
        match self {
            ChatApi::OpenAiChat => Box::new(openai_chat::Chat::new(ctx)),
            ChatApi::OpenAiResponses => Box::new(openai_responses::Responses::new(ctx)),
            ChatApi::AnthropicMessages => Box::new(anthropic::Messages::new(ctx)),
            ChatApi::OllamaChat => Box::new(ollama::Ollama::new(ctx, ollama::Api::Chat)),
            ChatApi::OllamaGenerate => Box::new(ollama::Ollama::new(ctx, ollama::Api::Generate)),
            ChatApi::LlamaCppCompletion => Box::new(llamacpp::Completion::new(ctx)),
        }
    }

    fn error_body(self, status: u16, message: &str) -> Value {
        match self {
            ChatApi::OpenAiChat | ChatApi::OpenAiResponses => json!({
                "error": {
                    "message": message,
                    "type": openai_error_type(status),
                    "param": null,
                    "code": null,
                }
            }),
            ChatApi::AnthropicMessages => anthropic::error_body(status, message),
            ChatApi::OllamaChat | ChatApi::OllamaGenerate => json!({ "error": message }),
            ChatApi::LlamaCppCompletion => llamacpp::error_body(status, message),
        }
    }
}

fn openai_error_type(status: u16) -> &'static str {
    match status {
        400 | 404 => "invalid_request_error",
        429 => "rate_limit_exceeded",
        503 | 529 => "overloaded",
        _ => "server_error",
    }
}

/// One SSE event with a type (`event:` line) and JSON data.
fn typed_sse(kind: &str, data: &Value) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

/// One SSE event with JSON data only.
fn data_sse(data: &Value) -> String {
    format!("data: {data}\n\n")
}
