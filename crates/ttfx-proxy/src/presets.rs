//! Provider presets: `[upstreams.NAME] preset = "openai"` fills in what a provider
//! documents — its base URL, how it takes the key, headers every request needs, the API
//! its chat endpoint speaks and the dialect its stream decodes with — so a config names
//! only the environment variable that holds the key. Any field the config gives itself
//! wins (a vLLM on another port is `preset = "vllm"` plus `base_url`).
//!
//! Each preset cites the page it comes from (`source`); docs/serve.md has the table.

use ttfx_core::ChatApi;
use ttfx_core::decode::DialectKind;

use crate::upstream::Auth;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    /// Who serves it, for people reading docs and errors.
    pub provider: &'static str,
    /// `None` where every account has its own host (Azure OpenAI): the config gives it.
    pub base_url: Option<&'static str>,
    pub auth: Auth,
    /// Headers every request carries (Anthropic's API version).
    pub headers: &'static [(&'static str, &'static str)],
    /// The streaming API of its chat endpoint.
    pub api: ChatApi,
    /// That endpoint below `base_url` (no leading slash).
    pub api_path: &'static str,
    /// How its stream decodes.
    pub dialect: DialectKind,
    /// The endpoints below `base_url` the key is sent to (besides `api_path`): the ones
    /// ttfx measures, never another path a client names, such as a provider's files or
    /// admin API ([`crate::upstream::Upstream::key_goes_to`]).
    pub key_paths: &'static [&'static str],
    /// The variable its own SDKs read the key from (named in docs and hints only: the
    /// config still says which variable to read).
    pub key_env: Option<&'static str>,
    /// The provider's documentation of the above.
    pub source: &'static str,
}

/// The OpenAI API's endpoints ttfx measures (chat, responses, legacy completions, speech
/// in and out) and its model list, below the API root. The key goes to these only: not
/// to files, batches, fine-tuning or the organization's admin API.
const OPENAI_ENDPOINTS: [&str; 6] = [
    "chat/completions",
    "completions",
    "responses",
    "audio/speech",
    "audio/transcriptions",
    "models",
];

/// [`OPENAI_ENDPOINTS`] below `v1/` (a base URL without the version).
const OPENAI_V1: [&str; 6] = [
    "v1/chat/completions",
    "v1/completions",
    "v1/responses",
    "v1/audio/speech",
    "v1/audio/transcriptions",
    "v1/models",
];

const fn openai_compatible(
    name: &'static str,
    provider: &'static str,
    base_url: &'static str,
    key_env: Option<&'static str>,
    source: &'static str,
) -> Preset {
    Preset {
        name,
        provider,
        base_url: Some(base_url),
        auth: Auth::Bearer,
        headers: &[],
        api: ChatApi::OpenAiChat,
        api_path: "v1/chat/completions",
        dialect: DialectKind::OpenAiChat,
        key_paths: &OPENAI_V1,
        key_env,
        source,
    }
}

/// Every preset. Local servers take a bearer key only when started with one
/// (`--api-key`); without a configured key none is sent.
pub const PRESETS: [Preset; 15] = [
    openai_compatible(
        "openai",
        "OpenAI",
        "https://api.openai.com",
        Some("OPENAI_API_KEY"),
        "https://platform.openai.com/docs/api-reference/chat/create",
    ),
    Preset {
        name: "anthropic",
        provider: "Anthropic",
        base_url: Some("https://api.anthropic.com"),
        auth: Auth::XApiKey,
        headers: &[("anthropic-version", "2023-06-01")],
        api: ChatApi::AnthropicMessages,
        api_path: "v1/messages",
        dialect: DialectKind::Anthropic,
        key_paths: &["v1/messages", "v1/complete", "v1/models"],
        key_env: Some("ANTHROPIC_API_KEY"),
        source: "https://docs.anthropic.com/en/api/messages (version header: https://docs.anthropic.com/en/api/versioning)",
    },
    Preset {
        name: "azure-openai",
        provider: "Azure OpenAI",
        base_url: None,
        auth: Auth::ApiKey,
        headers: &[],
        api: ChatApi::OpenAiChat,
        api_path: "chat/completions",
        dialect: DialectKind::OpenAiChat,
        // The base URL is the resource's API root (…/openai/v1 or a deployment's path).
        key_paths: &OPENAI_ENDPOINTS,
        key_env: Some("AZURE_OPENAI_API_KEY"),
        source: "https://learn.microsoft.com/azure/ai-foundry/openai/reference (v1 API: https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle)",
    },
    openai_compatible(
        "groq",
        "Groq",
        "https://api.groq.com/openai",
        Some("GROQ_API_KEY"),
        "https://console.groq.com/docs/openai",
    ),
    openai_compatible(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api",
        Some("OPENROUTER_API_KEY"),
        "https://openrouter.ai/docs/api-reference/overview",
    ),
    openai_compatible(
        "mistral",
        "Mistral AI",
        "https://api.mistral.ai",
        Some("MISTRAL_API_KEY"),
        "https://docs.mistral.ai/api/",
    ),
    openai_compatible(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com",
        Some("DEEPSEEK_API_KEY"),
        "https://api-docs.deepseek.com/",
    ),
    openai_compatible(
        "together",
        "Together AI",
        "https://api.together.xyz",
        Some("TOGETHER_API_KEY"),
        "https://docs.together.ai/docs/openai-api-compatibility",
    ),
    openai_compatible(
        "fireworks",
        "Fireworks AI",
        "https://api.fireworks.ai/inference",
        Some("FIREWORKS_API_KEY"),
        "https://docs.fireworks.ai/tools-sdks/openai-compatibility",
    ),
    Preset {
        api_path: "chat/completions",
        // The base URL ends at the OpenAI-compatible API's root (…/v1beta/openai).
        key_paths: &OPENAI_ENDPOINTS,
        ..openai_compatible(
            "gemini",
            "Google Gemini (OpenAI-compatible endpoint)",
            "https://generativelanguage.googleapis.com/v1beta/openai",
            Some("GEMINI_API_KEY"),
            "https://ai.google.dev/gemini-api/docs/openai",
        )
    },
    openai_compatible(
        "vllm",
        "vLLM (local)",
        "http://127.0.0.1:8000",
        None,
        "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html",
    ),
    openai_compatible(
        "sglang",
        "SGLang (local)",
        "http://127.0.0.1:30000",
        None,
        "https://docs.sglang.ai/basic_usage/openai_api_completions.html",
    ),
    Preset {
        // Its OpenAI-compatible stream carries llama.cpp's `timings`: the llamacpp
        // dialect reads both.
        dialect: DialectKind::LlamaCpp,
        // Its own API (`/completion`, `/infill`, …) beside the OpenAI-compatible one.
        key_paths: &[
            "v1/chat/completions",
            "v1/completions",
            "v1/models",
            "completion",
            "infill",
            "tokenize",
            "detokenize",
        ],
        ..openai_compatible(
            "llamacpp",
            "llama.cpp server (local)",
            "http://127.0.0.1:8080",
            None,
            "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md",
        )
    },
    Preset {
        name: "ollama",
        provider: "Ollama (local)",
        base_url: Some("http://127.0.0.1:11434"),
        auth: Auth::None,
        headers: &[],
        api: ChatApi::OllamaChat,
        api_path: "api/chat",
        dialect: DialectKind::Ollama,
        key_paths: &["api/chat", "api/generate", "api/tags"],
        key_env: None,
        source: "https://github.com/ollama/ollama/blob/main/docs/api.md",
    },
    openai_compatible(
        "tgi",
        "Hugging Face TGI (local)",
        "http://127.0.0.1:8080",
        None,
        "https://huggingface.co/docs/text-generation-inference/messages_api",
    ),
];

pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_each_preset_is_complete() {
        let mut seen = std::collections::HashSet::new();
        for p in &PRESETS {
            assert!(seen.insert(p.name), "{} twice", p.name);
            assert!(p.source.starts_with("https://"), "{}: source", p.name);
            assert!(!p.api_path.starts_with('/'), "{}", p.name);
            assert!(!p.key_paths.is_empty(), "{}", p.name);
            assert!(
                p.key_paths.iter().all(|k| !k.starts_with('/')),
                "{}",
                p.name
            );
            if let Some(url) = p.base_url {
                let uri: axum::http::Uri = url.parse().unwrap();
                assert!(uri.authority().is_some(), "{}", p.name);
                // The endpoint's own path is the api_path, so a base must not end in it.
                assert!(!url.ends_with('/'), "{}", p.name);
            }
            // The dialect reads what the API sends.
            assert!(
                p.dialect == p.api.dialect()
                    || (p.dialect == DialectKind::LlamaCpp && p.api == ChatApi::OpenAiChat),
                "{}",
                p.name
            );
        }
        // Hosted providers are reached over TLS only.
        for p in PRESETS.iter().filter(|p| p.key_env.is_some()) {
            assert!(
                p.base_url.is_none_or(|u| u.starts_with("https://")),
                "{}",
                p.name
            );
        }
        assert_eq!(find("anthropic").unwrap().auth, Auth::XApiKey);
        assert!(find("gpt").is_none());
    }
}
