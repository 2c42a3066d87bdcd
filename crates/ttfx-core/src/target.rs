//! The target grammar: what a run measures, as a person writes it (`ttfx run --target`,
//! a scenario file) or picks in the lab page. One grammar, so a target's label in a report
//! names the same thing wherever the report was made.
//!
//! - `sim/PROFILE[?key=value&…]`: a simulated profile of `ttfx serve`, with overrides;
//! - `proxy/UPSTREAM[?query]`: an upstream of the vantage proxy;
//! - `http(s)://ENDPOINT`: any streaming endpoint (the lab page also takes a same-origin
//!   `/path`, see [`Target::endpoint`]);
//! - `page:http(s)://PAGE`: a page that embeds the probe.
//!
//! Which API a target speaks, and so the path below a profile or an upstream, is not part
//! of the grammar: the caller adds it ([`Target::endpoint_url`]).

use std::fmt;

/// One thing to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/sim/{profile}/…` on the serving origin; `query` holds the overrides, without
    /// the `?`.
    Sim { profile: String, query: String },
    /// `/proxy/{upstream}/…` on the serving origin; `query` without the `?`.
    Proxy { upstream: String, query: String },
    /// A streaming endpoint: an absolute http(s) URL, or a same-origin path.
    Endpoint { url: String },
    /// A page that embeds the probe.
    Page { url: String },
}

/// What is wrong with a target as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// None of the forms.
    Unknown { text: String },
    /// `page:` followed by something other than an http(s) URL.
    PageNotHttp { text: String },
    /// A profile or upstream name that cannot stand in a URL path.
    NotAPlainName { kind: &'static str, name: String },
    /// An endpoint that is neither an http(s) URL nor a same-origin path.
    NotAnEndpoint { url: String },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Unknown { text } => write!(
                f,
                "target `{}`: expected sim/PROFILE[?key=value&…], proxy/UPSTREAM, \
                 http(s)://ENDPOINT or page:http(s)://PAGE",
                without_userinfo(text)
            ),
            TargetError::PageNotHttp { text } => write!(
                f,
                "target `{}`: a page target is page:http(s)://…",
                without_userinfo(text)
            ),
            TargetError::NotAPlainName { kind, name } => write!(
                f,
                "{kind} {name:?} is not a plain name (letters, digits, - _ .)"
            ),
            TargetError::NotAnEndpoint { url } => write!(
                f,
                "URL {:?} must start with http://, https:// or / (same origin)",
                without_userinfo(url)
            ),
        }
    }
}

impl std::error::Error for TargetError {}

/// Whether `url` is an absolute http(s) URL.
pub fn is_http(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// A profile or upstream name as `ttfx serve` accepts it in a path: letters, digits,
/// `-`, `_` and `.` (the server's config allows at most 64 of them).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl Target {
    /// Parses the written form (leading and trailing white space ignored; slashes around
    /// `sim/PROFILE` and `proxy/UPSTREAM` too).
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        let text = text.trim();
        if let Some(url) = text.strip_prefix("page:") {
            if !is_http(url) {
                return Err(TargetError::PageNotHttp { text: text.into() });
            }
            return Ok(Target::Page { url: url.into() });
        }
        if is_http(text) {
            return Ok(Target::Endpoint { url: text.into() });
        }
        let (path, query) = text.split_once('?').unwrap_or((text, ""));
        let unknown = || TargetError::Unknown { text: text.into() };
        let (kind, name) = path.trim_matches('/').split_once('/').ok_or_else(unknown)?;
        if name.is_empty() || name.contains('/') {
            return Err(unknown());
        }
        match kind {
            "sim" => Target::sim(name, query),
            "proxy" => Target::proxy(name, query),
            _ => Err(unknown()),
        }
    }

    /// A simulated profile with override query parameters (a leading `?` is dropped).
    pub fn sim(profile: &str, query: &str) -> Result<Target, TargetError> {
        Ok(Target::Sim {
            profile: plain("profile", profile)?,
            query: bare_query(query),
        })
    }

    /// A vantage-proxy upstream with a query for it (a leading `?` is dropped).
    pub fn proxy(upstream: &str, query: &str) -> Result<Target, TargetError> {
        Ok(Target::Proxy {
            upstream: plain("upstream", upstream)?,
            query: bare_query(query),
        })
    }

    /// An endpoint URL as the lab page takes it: absolute http(s), or a same-origin
    /// path starting with `/` (the page's own server).
    pub fn endpoint(url: &str) -> Result<Target, TargetError> {
        let url = url.trim();
        if is_http(url) || url.starts_with('/') {
            Ok(Target::Endpoint { url: url.into() })
        } else {
            Err(TargetError::NotAnEndpoint { url: url.into() })
        }
    }

    /// The name runs are grouped by. Overrides are part of it (the same profile with a
    /// stall is another target); a URL's query and fragment are not, since a query may
    /// carry a key and labels go into reports and logs.
    pub fn label(&self) -> String {
        match self {
            Target::Sim { profile, query } => with_query(format!("sim/{profile}"), query),
            Target::Proxy { upstream, query } => with_query(format!("proxy/{upstream}"), query),
            Target::Endpoint { url } | Target::Page { url } => url_for_report(url),
        }
    }

    /// The URL a request goes to when it speaks the API at `api_path` (below the profile
    /// or the upstream; an endpoint is its own URL). A page has none.
    pub fn endpoint_url(&self, api_path: &str) -> Option<String> {
        let api_path = api_path.trim_start_matches('/');
        match self {
            Target::Sim { profile, query } => {
                Some(with_query(format!("/sim/{profile}/{api_path}"), query))
            }
            Target::Proxy { upstream, query } => {
                Some(with_query(format!("/proxy/{upstream}/{api_path}"), query))
            }
            Target::Endpoint { url } => Some(url.clone()),
            Target::Page { .. } => None,
        }
    }

    /// `path` on a simulated profile, with the target's overrides (the simulator's TTS
    /// and STT read their own keys from them); `None` for every other target.
    pub fn sim_url(&self, path: &str) -> Option<String> {
        match self {
            Target::Sim { .. } => self.endpoint_url(path),
            _ => None,
        }
    }

    /// The simulator's TTS for a `sim/PROFILE` target.
    pub fn tts_url(&self) -> Option<String> {
        self.sim_url("v1/audio/speech")
    }

    /// The simulator's STT for a `sim/PROFILE` target.
    pub fn stt_url(&self) -> Option<String> {
        self.sim_url("v1/audio/transcriptions")
    }
}

/// Origin and path of a URL, without query or fragment (they may carry keys).
pub fn url_without_query(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

/// A URL as a report, a log line, a message or JUnit may show it: origin and path, with
/// no userinfo (`user:pass@`), query or fragment, each of which may carry a secret. The
/// one function every place that writes a target's or a request's URL goes through.
pub fn url_for_report(url: &str) -> String {
    without_userinfo(url_without_query(url)).into_owned()
}

/// `url` without the `user:pass@` before its host (the rest as it is).
pub fn without_userinfo(url: &str) -> std::borrow::Cow<'_, str> {
    let start = url.find("://").map_or(0, |i| i + 3);
    // The authority ends at the path, query or fragment (a `\` is a `/` to browsers).
    let end = url[start..]
        .find(['/', '\\', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => {
            // Two pushes, not `format!`: this ships in the probe's analysis wasm.
            let mut shown = String::with_capacity(url.len());
            shown.push_str(&url[..start]);
            shown.push_str(&url[start + at + 1..]);
            shown.into()
        }
        None => url.into(),
    }
}

fn plain(kind: &'static str, name: &str) -> Result<String, TargetError> {
    let name = name.trim();
    if is_plain_name(name) {
        Ok(name.into())
    } else {
        Err(TargetError::NotAPlainName {
            kind,
            name: name.into(),
        })
    }
}

fn bare_query(query: &str) -> String {
    query.trim().trim_start_matches('?').to_owned()
}

fn with_query(path: String, query: &str) -> String {
    if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_a_url_never_reaches_a_report() {
        for (url, shown) in [
            (
                "http://alice:s3cret@127.0.0.1:9/v1?key=k#f",
                "http://127.0.0.1:9/v1",
            ),
            ("https://alice@h/a@b", "https://h/a@b"),
            ("http://a:b@c@h", "http://h"),
            ("http://a:b@h\\x", "http://h\\x"),
            ("page://u:p@h", "page://h"),
            ("http://h/p?u=a@b", "http://h/p"),
            ("/sim/x", "/sim/x"),
        ] {
            assert_eq!(url_for_report(url), shown, "{url}");
        }
        assert_eq!(without_userinfo("http://u:p@h/?q=@"), "http://h/?q=@");
    }

    #[test]
    fn every_form_parses_and_labels_as_written() {
        let sim = Target::parse(" sim/default?ttft_ms=300&seed=1 ").unwrap();
        assert_eq!(sim.label(), "sim/default?ttft_ms=300&seed=1");
        assert_eq!(
            sim.endpoint_url("/v1/messages").as_deref(),
            Some("/sim/default/v1/messages?ttft_ms=300&seed=1")
        );
        let proxy = Target::parse("proxy/up").unwrap();
        assert_eq!(proxy.label(), "proxy/up");
        assert_eq!(
            proxy.endpoint_url("v1/chat/completions").as_deref(),
            Some("/proxy/up/v1/chat/completions")
        );
        let endpoint = Target::parse("http://h:1/api/chat?key=secret#x").unwrap();
        assert_eq!(endpoint.label(), "http://h:1/api/chat");
        assert_eq!(
            endpoint.endpoint_url("ignored").as_deref(),
            Some("http://h:1/api/chat?key=secret#x")
        );
        let page = Target::parse("page:https://app.example/chat?k=1").unwrap();
        assert_eq!(page.label(), "https://app.example/chat");
        assert_eq!(page.endpoint_url("x"), None);
    }

    #[test]
    fn only_a_sim_target_has_tts_and_stt() {
        let sim = Target::sim("default", "?stall_at=5&stall_ms=900").unwrap();
        assert_eq!(sim.label(), "sim/default?stall_at=5&stall_ms=900");
        assert_eq!(
            sim.tts_url().as_deref(),
            Some("/sim/default/v1/audio/speech?stall_at=5&stall_ms=900")
        );
        assert_eq!(
            sim.stt_url().as_deref(),
            Some("/sim/default/v1/audio/transcriptions?stall_at=5&stall_ms=900")
        );
        for other in ["proxy/up", "http://h/x", "page:http://h/"] {
            let t = Target::parse(other).unwrap();
            assert_eq!((t.tts_url(), t.stt_url()), (None, None), "{other}");
        }
    }

    #[test]
    fn bad_targets_say_what_to_fix() {
        let err = |text: &str| Target::parse(text).unwrap_err().to_string();
        assert!(err("simulator/x").contains("expected sim/PROFILE"));
        assert!(err("sim/").contains("expected sim/PROFILE"));
        assert!(err("sim/a/b").contains("expected sim/PROFILE"));
        assert!(err("page:ftp://x").contains("a page target is page:http(s)://"));
        assert!(err("sim/a b").contains("profile \"a b\" is not a plain name"));
        assert!(
            Target::sim("../x", "")
                .unwrap_err()
                .to_string()
                .contains("../x")
        );
        assert!(Target::endpoint("ftp://x").is_err());
        assert_eq!(
            Target::endpoint("/sim/default/v1/chat/completions").unwrap(),
            Target::Endpoint {
                url: "/sim/default/v1/chat/completions".into()
            }
        );
    }
}
