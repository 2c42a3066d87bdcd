//! The proxy's upstreams as the config names them: where each is, how its key is
//! presented, its timeouts and what its chat endpoint speaks.

use std::fmt;

use axum::http::{HeaderName, HeaderValue};
use ttfx_core::ChatApi;
use ttfx_core::decode::DialectKind;

use crate::tls::Tls;

#[derive(Debug, Default)]
pub struct Upstreams(pub Vec<Upstream>);

impl Upstreams {
    pub fn get(&self, name: &str) -> Option<&Upstream> {
        self.0.iter().find(|u| u.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|u| u.name.as_str()).collect()
    }
}

#[derive(Debug)]
pub struct Upstream {
    pub name: String,
    /// `host:port`, where the proxy connects.
    pub authority: String,
    /// The base URL's authority as written: the `Host` header (HTTP/2's `:authority`).
    pub host: String,
    /// Set for an `https` base URL.
    pub tls: Option<Tls>,
    /// The base URL's path, without a trailing slash ("" for the root).
    pub path: String,
    pub key: Option<Secret>,
    pub auth: Auth,
    pub timeouts: Timeouts,
    /// The provider preset it started from, if any.
    pub preset: Option<&'static str>,
    /// What its chat endpoint speaks, when the config or its preset says.
    pub chat: Option<UpstreamChat>,
    /// Sent with every request (a preset's, then the config's `headers`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// `api-version` added to requests whose query has none (Azure OpenAI).
    pub api_version: Option<String>,
    /// The paths below the base URL where the configured key is sent (its API, from the
    /// preset or the config's `key_paths`; the chat endpoint is always one): a path a
    /// client names elsewhere is refused, so the key never reaches it. A name ending in
    /// `/` covers what is below it; `""` covers everything below the base URL.
    pub key_paths: Vec<String>,
    /// Plain HTTP to a host that is not loopback: what a client sends crosses the
    /// network in clear text.
    pub clear_text: bool,
    /// The config's `insecure = true`: keys may cross plain HTTP off loopback.
    pub insecure: bool,
}

impl Upstream {
    /// Whether the configured key may be sent with a request for `rest` (the path below
    /// the base URL, no leading slash).
    pub fn key_goes_to(&self, rest: &str) -> bool {
        let chat = self.chat.as_ref().map(|c| c.path.as_str());
        self.key_paths
            .iter()
            .map(String::as_str)
            .chain(chat)
            .any(|p| path_is_under(rest, p))
    }
}

/// `rest` is `prefix` or below it: `v1/` covers `v1/x`, `chat` covers `chat` and
/// `chat/x` (not `chatter`), `""` covers everything.
fn path_is_under(rest: &str, prefix: &str) -> bool {
    if prefix.is_empty() || prefix.ends_with('/') {
        return rest.starts_with(prefix);
    }
    rest == prefix
        || rest
            .strip_prefix(prefix)
            .is_some_and(|tail| tail.starts_with('/'))
}

/// The chat endpoint of an upstream: what `ttfx run` and the lab page send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamChat {
    pub api: ChatApi,
    /// Below the base URL, no leading slash.
    pub path: String,
    pub dialect: DialectKind,
}

/// How long the proxy waits on an upstream before it ends the request as a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// For the TCP connection and the TLS handshake together.
    pub connect: std::time::Duration,
    /// From the request sent to the response headers: a model's queue and prefill, so
    /// minutes for a long reasoning prompt.
    pub headers: std::time::Duration,
    /// Between two body frames (and from the headers to the first).
    pub idle: std::time::Duration,
}

impl Timeouts {
    pub const DEFAULT: Timeouts = Timeouts {
        connect: std::time::Duration::from_secs(10),
        headers: std::time::Duration::from_secs(300),
        idle: std::time::Duration::from_secs(120),
    };
}

/// How the key is presented to the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Auth {
    /// `Authorization: Bearer KEY` (OpenAI and compatibles).
    Bearer,
    /// `x-api-key: KEY` (Anthropic).
    XApiKey,
    /// `api-key: KEY` (Azure OpenAI).
    ApiKey,
    None,
}

/// An API key. No `Display`, no `Serialize`, and `Debug` redacts: it cannot reach a
/// log line, a response or a record by accident.
pub struct Secret(String);

impl Secret {
    pub fn new(key: String) -> Self {
        Secret(key)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::path_is_under;

    #[test]
    fn key_paths_cover_their_own_segments_only() {
        assert!(path_is_under("v1/chat/completions", "v1/"));
        assert!(!path_is_under("v10/x", "v1/"));
        assert!(!path_is_under("admin", "v1/"));
        assert!(path_is_under("completion", "completion"));
        assert!(path_is_under("completion/x", "completion"));
        assert!(!path_is_under("completions", "completion"));
        assert!(path_is_under("anything", ""));
    }
}
