//! What a run measures: a simulated profile of `ttfx serve` or a URL the user gives, and
//! the API it speaks (`ttfx_core::ChatApi`: path, body, reply dialect). Pure data, so it
//! is tested without a browser.

use ttfx_core::ChatApi;

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

/// One thing to measure.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// `POST /sim/{profile}/{path}` on the serving origin, with override query parameters
    /// (`stall_at=10&stall_ms=800`, …) passed through as typed.
    Sim {
        profile: String,
        api: ChatApi,
        overrides: String,
    },
    /// Any URL (a vantage proxy route `/proxy/{upstream}/…`, or another server that
    /// allows this origin), spoken to in `api`.
    Direct { url: String, api: ChatApi },
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
                api,
                overrides,
            } => {
                let query = overrides.trim().trim_start_matches('?');
                let path = api.path();
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
        self.sim_url("v1/audio/speech")
    }

    /// The simulator's STT endpoint for a voice turn, with the same override query (so
    /// `stt_first_partial_ms`, `stt_final_ms`, … apply); `None` for other targets.
    pub fn stt_url(&self) -> Option<String> {
        self.sim_url("v1/audio/transcriptions")
    }

    /// `path` on the simulated profile, with the target's overrides.
    fn sim_url(&self, path: &str) -> Option<String> {
        match self {
            Target::Sim {
                profile, overrides, ..
            } => {
                let query = overrides.trim().trim_start_matches('?');
                Some(if query.is_empty() {
                    format!("/sim/{profile}/{path}")
                } else {
                    format!("/sim/{profile}/{path}?{query}")
                })
            }
            Target::Direct { .. } => None,
        }
    }

    pub fn api(&self) -> ChatApi {
        match self {
            Target::Sim { api, .. } | Target::Direct { api, .. } => *api,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_url_carries_path_and_overrides() {
        let t = Target::Sim {
            profile: "default".into(),
            api: ChatApi::AnthropicMessages,
            overrides: "?stall_at=5&stall_ms=900".into(),
        };
        assert_eq!(t.url(), "/sim/default/v1/messages?stall_at=5&stall_ms=900");
        assert_eq!(t.label(), "sim/default?stall_at=5&stall_ms=900");
        assert_eq!(
            t.tts_url().as_deref(),
            Some("/sim/default/v1/audio/speech?stall_at=5&stall_ms=900")
        );
        assert_eq!(
            t.stt_url().as_deref(),
            Some("/sim/default/v1/audio/transcriptions?stall_at=5&stall_ms=900")
        );
        assert!(t.validate().is_ok());
    }

    #[test]
    fn bad_inputs_are_named() {
        let t = Target::Sim {
            profile: "../x".into(),
            api: ChatApi::OpenAiChat,
            overrides: String::new(),
        };
        assert!(t.validate().unwrap_err().contains("../x"));
        let d = Target::Direct {
            url: "ftp://x".into(),
            api: ChatApi::OpenAiChat,
        };
        assert!(d.validate().is_err());
    }

    #[test]
    fn direct_label_drops_the_query() {
        let d = Target::Direct {
            url: "http://h/v1/chat/completions?key=secret".into(),
            api: ChatApi::OpenAiChat,
        };
        assert_eq!(d.label(), "http://h/v1/chat/completions");
        assert_eq!(d.tts_url(), None);
        assert_eq!(d.stt_url(), None);
    }
}
