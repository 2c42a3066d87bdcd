//! The vantage proxy's configured upstreams (`GET /proxy` on the serving origin), for the
//! run form's picker: choosing one fills the URL and API with that upstream's chat
//! endpoint (a preset's, or what its config says), so a hosted model is measured in its
//! own API without typing its route.

use serde::Deserialize;

/// One upstream as the proxy lists it: never a key or a header.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Upstream {
    pub name: String,
    #[serde(default)]
    pub preset: Option<String>,
    pub host: String,
    #[serde(default)]
    pub chat: Option<Chat>,
}

/// The upstream's chat endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Chat {
    /// A `ChatApi` name.
    pub api: String,
    pub url: String,
}

#[derive(Deserialize)]
struct List {
    upstreams: Vec<Upstream>,
}

impl Upstream {
    /// What the picker shows.
    pub fn title(&self) -> String {
        match &self.preset {
            Some(p) => format!("{} ({p}, {})", self.name, self.host),
            None => format!("{} ({})", self.name, self.host),
        }
    }

    /// The URL and API to measure: the chat endpoint, or (an upstream whose API the
    /// config does not say) its OpenAI Chat route.
    pub fn target(&self) -> (String, String) {
        match &self.chat {
            Some(c) => (c.url.clone(), c.api.clone()),
            None => (
                format!("/proxy/{}/v1/chat/completions", self.name),
                ttfx_core::ChatApi::OpenAiChat.as_str().to_owned(),
            ),
        }
    }
}

const WHAT: &str = "the proxy's upstream list";

pub fn parse(text: &str) -> Result<Vec<Upstream>, String> {
    crate::origin::parse_json::<List>(text, WHAT).map(|l| l.upstreams)
}

/// The list from the serving origin.
pub async fn load() -> Result<Vec<Upstream>, String> {
    parse(&crate::origin::get_text("/proxy", WHAT).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn the_list_parses_and_each_upstream_gives_its_endpoint() {
        let list = parse(
            r#"{"upstreams":[
              {"name":"claude","preset":"anthropic","host":"api.anthropic.com:443","key":true,
               "chat":{"api":"anthropic","dialect":"anthropic","url":"/proxy/claude/v1/messages"}},
              {"name":"local","preset":null,"host":"127.0.0.1:8000","key":false,"chat":null}]}"#,
        )
        .unwrap();
        assert_eq!(list[0].title(), "claude (anthropic, api.anthropic.com:443)");
        assert_eq!(
            list[0].target(),
            ("/proxy/claude/v1/messages".into(), "anthropic".into())
        );
        assert_eq!(
            list[1].target(),
            (
                "/proxy/local/v1/chat/completions".into(),
                "openai-chat".into()
            )
        );
        assert!(parse("[]").unwrap_err().contains("unreadable"));
    }
}
