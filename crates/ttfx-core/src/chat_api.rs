//! The streaming chat and completion APIs ttfx speaks to: for each, where its servers
//! serve it, the request body that asks for a streamed reply, and the dialect its reply
//! decodes with.
//!
//! This is the one place those facts live: the simulator routes by [`ChatApi::path`],
//! the lab page and `ttfx run` build their bodies with [`ChatApi::streaming_body`], and
//! both decode replies with [`ChatApi::dialect`]. A new API is a new variant here (and
//! an encoder in the simulator).

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use crate::decode::DialectKind;

/// One streaming text-generation API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatApi {
    /// OpenAI Chat Completions (and its compatibles: vLLM, SGLang, llama.cpp, TGI, …).
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    AnthropicMessages,
    /// Ollama's `/api/chat`.
    OllamaChat,
    /// Ollama's `/api/generate`.
    OllamaGenerate,
    /// llama.cpp server's native `/completion`.
    LlamaCppCompletion,
}

impl ChatApi {
    pub const ALL: [ChatApi; 6] = [
        ChatApi::OpenAiChat,
        ChatApi::OpenAiResponses,
        ChatApi::AnthropicMessages,
        ChatApi::OllamaChat,
        ChatApi::OllamaGenerate,
        ChatApi::LlamaCppCompletion,
    ];

    /// The name used on command lines, in forms and in scenario files.
    pub const fn as_str(self) -> &'static str {
        match self {
            ChatApi::OpenAiChat => "openai-chat",
            ChatApi::OpenAiResponses => "openai-responses",
            ChatApi::AnthropicMessages => "anthropic",
            ChatApi::OllamaChat => "ollama-chat",
            ChatApi::OllamaGenerate => "ollama-generate",
            ChatApi::LlamaCppCompletion => "llamacpp",
        }
    }

    /// The path its servers serve it at, below their base URL (no leading slash).
    pub const fn path(self) -> &'static str {
        match self {
            ChatApi::OpenAiChat => "v1/chat/completions",
            ChatApi::OpenAiResponses => "v1/responses",
            ChatApi::AnthropicMessages => "v1/messages",
            ChatApi::OllamaChat => "api/chat",
            ChatApi::OllamaGenerate => "api/generate",
            ChatApi::LlamaCppCompletion => "completion",
        }
    }

    /// The dialect its streamed reply decodes with.
    pub const fn dialect(self) -> DialectKind {
        match self {
            ChatApi::OpenAiChat => DialectKind::OpenAiChat,
            ChatApi::OpenAiResponses => DialectKind::OpenAiResponses,
            ChatApi::AnthropicMessages => DialectKind::Anthropic,
            ChatApi::OllamaChat | ChatApi::OllamaGenerate => DialectKind::Ollama,
            ChatApi::LlamaCppCompletion => DialectKind::LlamaCpp,
        }
    }

    /// The API an endpoint path serves, by its last segments (`/proxy/x/v1/messages` is
    /// Anthropic Messages); `None` when no known API path ends it.
    pub fn from_path(path: &str) -> Option<ChatApi> {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let path = path.trim_end_matches('/');
        ChatApi::ALL.into_iter().find(|api| {
            path.strip_suffix(api.path())
                .is_some_and(|head| head.is_empty() || head.ends_with('/'))
        })
    }

    /// A request body that asks for `prompt` to be answered as a stream, in the API's own
    /// shape. `model` is sent where the API names one (llama.cpp serves one model).
    pub fn streaming_body(self, model: &str, prompt: &str) -> String {
        let messages = json!([{ "role": "user", "content": prompt }]);
        let body: Value = match self {
            ChatApi::OpenAiChat => json!({
                "model": model,
                "stream": true,
                "messages": messages,
                // Token counts arrive in a last chunk only when asked for.
                "stream_options": { "include_usage": true },
            }),
            ChatApi::OpenAiResponses => json!({
                "model": model, "stream": true, "input": prompt,
            }),
            // `max_tokens` is required by the Messages API.
            ChatApi::AnthropicMessages => json!({
                "model": model, "stream": true, "max_tokens": 1024, "messages": messages,
            }),
            ChatApi::OllamaChat => json!({
                "model": model, "stream": true, "messages": messages,
            }),
            ChatApi::OllamaGenerate => json!({
                "model": model, "stream": true, "prompt": prompt,
            }),
            ChatApi::LlamaCppCompletion => json!({ "stream": true, "prompt": prompt }),
        };
        body.to_string()
    }
}

impl fmt::Display for ChatApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name is not an API ttfx speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownChatApi(pub String);

impl fmt::Display for UnknownChatApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = ChatApi::ALL.iter().map(|a| a.as_str()).collect();
        write!(f, "unknown API `{}` (known: {})", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownChatApi {}

impl FromStr for ChatApi {
    type Err = UnknownChatApi;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ChatApi::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| UnknownChatApi(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_paths_are_distinct() {
        let mut paths = std::collections::HashSet::new();
        for api in ChatApi::ALL {
            assert_eq!(api.as_str().parse::<ChatApi>(), Ok(api));
            assert!(paths.insert(api.path()), "{api}: path used twice");
            assert_eq!(ChatApi::from_path(api.path()), Some(api), "{api}");
        }
        let err = "gemini".parse::<ChatApi>().unwrap_err().to_string();
        assert!(
            err.contains("`gemini`") && err.contains("ollama-generate"),
            "{err}"
        );
    }

    #[test]
    fn the_api_follows_from_a_full_endpoint_path() {
        let from = ChatApi::from_path;
        assert_eq!(
            from("/proxy/claude/v1/messages"),
            Some(ChatApi::AnthropicMessages)
        );
        assert_eq!(
            from("https://h:1/sim/default/v1/chat/completions?stall_at=3"),
            Some(ChatApi::OpenAiChat)
        );
        assert_eq!(from("/sim/x/api/generate/"), Some(ChatApi::OllamaGenerate));
        assert_eq!(from("/sim/x/completion"), Some(ChatApi::LlamaCppCompletion));
        // A segment must match whole: `mycompletion` is not llama.cpp's path.
        assert_eq!(from("/v1/mycompletion"), None);
        assert_eq!(from("/v1/embeddings"), None);
    }

    #[test]
    fn bodies_ask_for_a_stream_in_each_apis_shape() {
        for api in ChatApi::ALL {
            let body: Value = serde_json::from_str(&api.streaming_body("m", "hi \"you\"")).unwrap();
            assert_eq!(body["stream"], true, "{api}");
            let prompt = match api {
                ChatApi::OpenAiResponses => &body["input"],
                ChatApi::OllamaGenerate | ChatApi::LlamaCppCompletion => &body["prompt"],
                _ => &body["messages"][0]["content"],
            };
            assert_eq!(prompt, "hi \"you\"", "{api}");
            let model = if api == ChatApi::LlamaCppCompletion {
                Value::Null
            } else {
                json!("m")
            };
            assert_eq!(body["model"], model, "{api}");
        }
        let anthropic: Value =
            serde_json::from_str(&ChatApi::AnthropicMessages.streaming_body("m", "x")).unwrap();
        assert_eq!(anthropic["max_tokens"], 1024);
        let chat: Value =
            serde_json::from_str(&ChatApi::OpenAiChat.streaming_body("m", "x")).unwrap();
        assert_eq!(chat["stream_options"]["include_usage"], true);
    }
}
