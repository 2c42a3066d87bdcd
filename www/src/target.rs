//! What a run measures: a simulated profile of `ttfx serve` or a URL the user gives, and
//! the request body each dialect expects. Pure data, so it is tested without a browser.

use ttfx_core::decode::DialectKind;

/// The profiles `ttfx serve` has built in (docs/serve.md); a config file can add more,
/// so the page also takes any other name.
pub const SIM_PROFILES: [&str; 7] = [
    "default",
    "fast-start-slow-stream",
    "slow-start-fast-stream",
    "reasoning",
    "hidden-reasoning",
    "buffered-pipeline",
    "proxy-buffering",
];

/// The LLM dialects the simulator speaks (TTS and raw bodies are not chat replies).
pub const CHAT_DIALECTS: [DialectKind; 5] = [
    DialectKind::OpenAiChat,
    DialectKind::OpenAiResponses,
    DialectKind::Anthropic,
    DialectKind::Ollama,
    DialectKind::LlamaCpp,
];

/// One thing to measure.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// `POST /sim/{profile}/{path}` on the serving origin, with override query parameters
    /// (`stall_at=10&stall_ms=800`, …) passed through as typed.
    Sim {
        profile: String,
        dialect: DialectKind,
        overrides: String,
    },
    /// Any URL (a vantage proxy route `/proxy/{upstream}/…`, or another server that
    /// allows this origin), spoken to in `dialect`.
    Direct { url: String, dialect: DialectKind },
}

impl Target {
    /// Checks what the user typed; the message says what to fix.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Target::Sim { profile, .. } => {
                let plain = !profile.is_empty()
                    && profile
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
                if plain {
                    Ok(())
                } else {
                    Err(format!(
                        "profile {profile:?} is not a plain name (letters, digits, - _ .)"
                    ))
                }
            }
            Target::Direct { url, .. } => {
                if url.starts_with("http://") || url.starts_with("https://") || url.starts_with('/')
                {
                    Ok(())
                } else {
                    Err(format!(
                        "URL {url:?} must start with http://, https:// or / (same origin)"
                    ))
                }
            }
        }
    }

    /// The URL to POST to.
    pub fn url(&self) -> String {
        match self {
            Target::Sim {
                profile,
                dialect,
                overrides,
            } => {
                let query = overrides.trim().trim_start_matches('?');
                let path = sim_path(*dialect);
                if query.is_empty() {
                    format!("/sim/{profile}/{path}")
                } else {
                    format!("/sim/{profile}/{path}?{query}")
                }
            }
            Target::Direct { url, .. } => url.clone(),
        }
    }

    /// The simulator's TTS endpoint for a voice turn, with the same override query (so
    /// `ttfa_ms`, `rtf`, … apply); `None` for other targets, which have no TTS here.
    pub fn tts_url(&self) -> Option<String> {
        match self {
            Target::Sim {
                profile, overrides, ..
            } => {
                let query = overrides.trim().trim_start_matches('?');
                Some(if query.is_empty() {
                    format!("/sim/{profile}/v1/audio/speech")
                } else {
                    format!("/sim/{profile}/v1/audio/speech?{query}")
                })
            }
            Target::Direct { .. } => None,
        }
    }

    pub fn dialect(&self) -> DialectKind {
        match self {
            Target::Sim { dialect, .. } | Target::Direct { dialect, .. } => *dialect,
        }
    }

    /// The name runs are grouped by when two targets are compared. Overrides are part of
    /// the name: the same profile with a stall is another target.
    pub fn label(&self) -> String {
        match self {
            Target::Sim {
                profile, overrides, ..
            } => {
                let query = overrides.trim().trim_start_matches('?');
                if query.is_empty() {
                    format!("sim/{profile}")
                } else {
                    format!("sim/{profile}?{query}")
                }
            }
            // Reports hold origin + path only: a query string may carry a key.
            Target::Direct { url, .. } => url.split('?').next().unwrap_or_default().to_owned(),
        }
    }
}

/// Where the simulator serves each dialect.
pub fn sim_path(dialect: DialectKind) -> &'static str {
    match dialect {
        DialectKind::OpenAiResponses => "v1/responses",
        DialectKind::Anthropic => "v1/messages",
        DialectKind::Ollama => "api/chat",
        DialectKind::LlamaCpp => "completion",
        _ => "v1/chat/completions",
    }
}

/// A streaming request body for `prompt` in the dialect's own shape.
pub fn request_body(dialect: DialectKind, prompt: &str) -> String {
    let messages = serde_json::json!([{ "role": "user", "content": prompt }]);
    let body = match dialect {
        DialectKind::OpenAiResponses => serde_json::json!({
            "model": "ttfx-lab", "stream": true, "input": prompt,
        }),
        DialectKind::Anthropic => serde_json::json!({
            "model": "ttfx-lab", "stream": true, "max_tokens": 1024, "messages": messages,
        }),
        DialectKind::Ollama => serde_json::json!({
            "model": "ttfx-lab", "stream": true, "messages": messages,
        }),
        DialectKind::LlamaCpp => serde_json::json!({ "stream": true, "prompt": prompt }),
        _ => serde_json::json!({
            "model": "ttfx-lab", "stream": true, "messages": messages,
            "stream_options": { "include_usage": true },
        }),
    };
    body.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_url_carries_path_and_overrides() {
        let t = Target::Sim {
            profile: "default".into(),
            dialect: DialectKind::Anthropic,
            overrides: "?stall_at=5&stall_ms=900".into(),
        };
        assert_eq!(t.url(), "/sim/default/v1/messages?stall_at=5&stall_ms=900");
        assert_eq!(t.label(), "sim/default?stall_at=5&stall_ms=900");
        assert_eq!(
            t.tts_url().as_deref(),
            Some("/sim/default/v1/audio/speech?stall_at=5&stall_ms=900")
        );
        assert!(t.validate().is_ok());
    }

    #[test]
    fn bad_inputs_are_named() {
        let t = Target::Sim {
            profile: "../x".into(),
            dialect: DialectKind::OpenAiChat,
            overrides: String::new(),
        };
        assert!(t.validate().unwrap_err().contains("../x"));
        let d = Target::Direct {
            url: "ftp://x".into(),
            dialect: DialectKind::OpenAiChat,
        };
        assert!(d.validate().is_err());
    }

    #[test]
    fn direct_label_drops_the_query() {
        let d = Target::Direct {
            url: "http://h/v1/chat/completions?key=secret".into(),
            dialect: DialectKind::OpenAiChat,
        };
        assert_eq!(d.label(), "http://h/v1/chat/completions");
        assert_eq!(d.tts_url(), None);
    }

    #[test]
    fn bodies_are_json_with_the_prompt() {
        for d in CHAT_DIALECTS {
            let body: serde_json::Value = serde_json::from_str(&request_body(d, "hi \"you\""))
                .unwrap_or(serde_json::Value::Null);
            assert_eq!(body["stream"], true, "{d}");
            assert!(body.to_string().contains("hi \\\"you\\\""), "{d}");
        }
    }
}
