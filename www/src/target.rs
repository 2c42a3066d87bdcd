//! What a run measures: a simulated profile of `ttfx serve` or a URL the user gives, in
//! ttfx-core's target grammar, and the API it speaks (`ttfx_core::ChatApi`: path, body,
//! reply dialect). Pure data, so it is tested without a browser.

use ttfx_core::ChatApi;

/// One thing to measure: a target in ttfx-core's grammar (the one `ttfx run --target`
/// reads, so a label names the same thing in the lab page and in the runner's reports)
/// and the API it speaks.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Private: a target is made only by the checked constructors below.
    written: ttfx_core::target::Target,
    api: ChatApi,
}

impl Target {
    /// `POST /sim/{profile}/{path}` on the serving origin, with override query parameters
    /// (`stall_at=10&stall_ms=800`, …) passed through as typed; the message says what to
    /// fix.
    pub fn sim(profile: &str, overrides: &str, api: ChatApi) -> Result<Self, String> {
        let written =
            ttfx_core::target::Target::sim(profile, overrides).map_err(|e| e.to_string())?;
        Ok(Target { written, api })
    }

    /// Any URL (a vantage proxy route `/proxy/{upstream}/…`, or another server that
    /// allows this origin), spoken to in `api`.
    pub fn endpoint(url: &str, api: ChatApi) -> Result<Self, String> {
        let written = ttfx_core::target::Target::endpoint(url).map_err(|e| e.to_string())?;
        Ok(Target { written, api })
    }

    /// The URL to POST to.
    pub fn url(&self) -> String {
        self.written
            .endpoint_url(self.api.path())
            .unwrap_or_default()
    }

    /// The simulator's TTS endpoint for a voice turn, with the same override query (so
    /// `ttfa_ms`, `rtf`, … apply); `None` for other targets, which have no TTS here.
    pub fn tts_url(&self) -> Option<String> {
        self.written.tts_url()
    }

    /// The simulator's STT endpoint for a voice turn, with the same override query (so
    /// `stt_first_partial_ms`, `stt_final_ms`, … apply); `None` for other targets.
    pub fn stt_url(&self) -> Option<String> {
        self.written.stt_url()
    }

    pub fn api(&self) -> ChatApi {
        self.api
    }

    /// The name runs are grouped by when two targets are compared. Overrides are part of
    /// the name: the same profile with a stall is another target.
    pub fn label(&self) -> String {
        self.written.label()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_url_carries_path_and_overrides() {
        let t = Target::sim(
            "default",
            "?stall_at=5&stall_ms=900",
            ChatApi::AnthropicMessages,
        )
        .unwrap();
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
    }

    #[test]
    fn bad_inputs_are_named() {
        let t = Target::sim("../x", "", ChatApi::OpenAiChat);
        assert!(t.unwrap_err().contains("../x"));
        let d = Target::endpoint("ftp://x", ChatApi::OpenAiChat);
        assert!(d.is_err());
    }

    #[test]
    fn direct_label_drops_the_query() {
        let d = Target::endpoint(
            "http://h/v1/chat/completions?key=secret",
            ChatApi::OpenAiChat,
        )
        .unwrap();
        assert_eq!(d.label(), "http://h/v1/chat/completions");
        assert_eq!(d.tts_url(), None);
        assert_eq!(d.stt_url(), None);
    }
}
