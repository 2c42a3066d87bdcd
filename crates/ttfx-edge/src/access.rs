//! Who may use the proxy's keys: the proxy holds API keys, so a page on another site the
//! user happens to visit must not be able to spend them. `/proxy` answers only
//!
//! - requests whose `Host` is loopback (`localhost`, `127.0.0.0/8`, `[::1]`) or named in
//!   the config, so a DNS-rebound name that resolves to this machine is refused;
//! - requests whose `Origin` is this server's own (`http://` or `https://` + the
//!   request's `Host`) or named in the config, which covers the simple `text/plain` POST
//!   a page may send without a preflight;
//! - requests with no `Origin` only when `Sec-Fetch-Site` is absent (native clients,
//!   curl) or says `same-origin` / `none`.
//!
//! Off loopback, none of that stops a client on the network (curl sends no `Origin`),
//! so there two more rules hold:
//!
//! - a loopback `Host` from a peer that is not loopback is refused (it can only be
//!   forged: a real client off this machine cannot reach a loopback name);
//! - with a [`ProxyToken`] (which `ttfx serve` requires when it listens beyond loopback
//!   and an upstream holds a key), every request carries it in [`PROXY_TOKEN`], compared
//!   in constant time; an IP literal `Host` is then this server's own (rebinding needs a
//!   DNS name).
//!
//! The check runs before anything is sent upstream: a refused request never reaches it.
//! The origin half ([`check_origin`]) is also the collector's (`ttfx serve --collect`),
//! with its own list of allowed origins.

use std::fmt;
use std::net::IpAddr;

use axum::http::{HeaderMap, HeaderName, StatusCode, header};
use subtle::ConstantTimeEq;

/// The header a client carries the proxy token in. It opens this server's `/proxy` only
/// and is never forwarded upstream.
pub const PROXY_TOKEN: HeaderName = HeaderName::from_static("x-ttfx-proxy-token");

/// Random bytes of a token `ttfx serve` makes itself: 256 bits, printed as 64 hex digits.
pub const PROXY_TOKEN_BYTES: usize = 32;

/// Shortest token a file or the environment may give: 32 characters, 128 bits as hex,
/// so a given token is no easier to guess than a record id.
pub const MIN_PROXY_TOKEN_LEN: usize = 32;

/// Longest token a file may give (a token is one line; this bounds what is compared).
pub const MAX_PROXY_TOKEN_LEN: usize = 1024;

/// The secret a client shows to use `/proxy` off loopback. No `Display`, and `Debug`
/// redacts: it is printed once at start (when made there), never logged.
#[derive(Clone)]
pub struct ProxyToken(String);

/// Why a given token is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadToken {
    #[error(
        "the proxy token has {len} characters; it needs {MIN_PROXY_TOKEN_LEN} to \
         {MAX_PROXY_TOKEN_LEN}, printable ASCII without spaces (e.g. `openssl rand -hex 32`)"
    )]
    Shape { len: usize },
}

impl ProxyToken {
    /// A token given by a file or the environment (surrounding whitespace dropped).
    pub fn given(text: &str) -> Result<ProxyToken, BadToken> {
        let t = text.trim();
        let printable = t.bytes().all(|b| b.is_ascii_graphic());
        if !printable || !(MIN_PROXY_TOKEN_LEN..=MAX_PROXY_TOKEN_LEN).contains(&t.len()) {
            return Err(BadToken::Shape { len: t.len() });
        }
        Ok(ProxyToken(t.to_owned()))
    }

    /// A fresh token of [`PROXY_TOKEN_BYTES`] from the OS's CSPRNG.
    pub fn generate() -> Result<ProxyToken, crate::random::NoRandomness> {
        Ok(ProxyToken(crate::random::secret_hex(PROXY_TOKEN_BYTES)?))
    }

    /// The token itself, for the one line that shows it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Constant-time in the token's content: a wrong guess learns nothing of how much
    /// of it was right (only whether its length was, which is no secret).
    fn matches(&self, given: &[u8]) -> bool {
        self.0.as_bytes().ct_eq(given).into()
    }
}

impl fmt::Debug for ProxyToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProxyToken([redacted])")
    }
}

/// The `[proxy]` table of the config, and the token `ttfx serve` adds.
#[derive(Debug, Default, Clone)]
pub struct ProxyAccess {
    /// Origins besides this server's own that may use `/proxy` (`http://host:port`).
    pub allowed_origins: Vec<String>,
    /// `Host` values besides loopback ones that `/proxy` answers (without the port).
    pub allowed_hosts: Vec<String>,
    /// When set, every `/proxy` request must carry it in [`PROXY_TOKEN`].
    pub token: Option<ProxyToken>,
}

/// `host` (no port, brackets allowed) names this machine's loopback interface.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The host of a `Host` header value, without its port.
fn host_of(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('[') {
        // `[::1]:8080`
        return rest.split(']').next().unwrap_or(rest);
    }
    value.rsplit_once(':').map_or(value, |(host, _)| host)
}

fn header<'a>(headers: &'a HeaderMap, name: &header::HeaderName) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Which `Host` values an endpoint answers, against DNS rebinding: a page on a name the
/// attacker re-binds to this machine sends that name as `Host`, and its `Origin` then
/// matches "own origin".
#[derive(Debug, Clone, Copy)]
pub struct HostRule<'a> {
    /// Names besides loopback ones (without the port).
    pub allowed: &'a [String],
    /// Any IP literal passes too: rebinding needs a DNS name, and a page loaded from
    /// this server's address is this server's own (a collector reached by its address).
    pub any_ip: bool,
    /// Where the allowed names are configured, for the refusal's message.
    pub list: &'a str,
}

/// Why a request may not act on an endpoint; its text is the 403's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessDenied {
    #[error("the request has no Host header")]
    NoHost,
    #[error("Host `{name}` is not loopback or in {list} (a guard against DNS rebinding)")]
    Host { name: String, list: String },
    #[error("origin `{origin}` may not {action} (allowed: {own} and {list})")]
    Origin {
        origin: String,
        action: String,
        /// The server's own origin, as the request names it.
        own: String,
        list: String,
    },
    #[error("a {site} request without an Origin may not {action}")]
    NoOrigin { site: String, action: String },
    #[error(
        "Host `{host}` names loopback but the request came from {peer}, off this machine \
         (a forged Host)"
    )]
    LoopbackHostFromNetwork { host: String, peer: IpAddr },
    #[error(
        "this proxy is reachable beyond loopback and holds keys: send its token in the \
         {PROXY_TOKEN} header (ttfx serve prints it at start, or reads --proxy-token-file)"
    )]
    NoToken,
    #[error("the {PROXY_TOKEN} header does not carry this proxy's token")]
    WrongToken,
}

impl AccessDenied {
    /// 401 for a missing or wrong token (the client may retry with it), else 403.
    pub fn status(&self) -> StatusCode {
        match self {
            AccessDenied::NoToken | AccessDenied::WrongToken => StatusCode::UNAUTHORIZED,
            _ => StatusCode::FORBIDDEN,
        }
    }
}

/// The request's `Host` value when the rule allows it.
pub fn check_host<'h>(
    headers: &'h HeaderMap,
    rule: &HostRule<'_>,
) -> Result<&'h str, AccessDenied> {
    let Some(host) = header(headers, &header::HOST) else {
        return Err(AccessDenied::NoHost);
    };
    let name = host_of(host);
    let is_ip = name
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .is_ok();
    let allowed = is_loopback_host(name)
        || (rule.any_ip && is_ip)
        || rule.allowed.iter().any(|h| h.eq_ignore_ascii_case(name));
    if allowed {
        Ok(host)
    } else {
        Err(AccessDenied::Host {
            name: name.into(),
            list: rule.list.into(),
        })
    }
}

impl ProxyAccess {
    /// Whether this request, from `peer` (when the server knows it), may use the proxy.
    pub fn check(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Result<(), AccessDenied> {
        let host = check_host(
            headers,
            &HostRule {
                allowed: &self.allowed_hosts,
                any_ip: self.token.is_some(),
                list: "[proxy] allowed_hosts",
            },
        )?;
        // An IPv4 peer on a dual-stack socket shows as ::ffff:a.b.c.d.
        if let Some(peer) = peer.map(|p| p.to_canonical())
            && !peer.is_loopback()
            && is_loopback_host(host_of(host))
        {
            return Err(AccessDenied::LoopbackHostFromNetwork {
                host: host.into(),
                peer,
            });
        }
        if let Some(token) = &self.token {
            let Some(given) = headers.get(&PROXY_TOKEN) else {
                return Err(AccessDenied::NoToken);
            };
            if !token.matches(given.as_bytes()) {
                return Err(AccessDenied::WrongToken);
            }
        }
        check_origin(
            headers,
            Some(host),
            &OriginRule {
                allowed: &self.allowed_origins,
                action: "use this proxy's keys",
                list: "[proxy] allowed_origins",
            },
        )
    }
}

/// Who besides a server's own origin may act on an endpoint, and how a refusal says it.
#[derive(Debug, Clone, Copy)]
pub struct OriginRule<'a> {
    /// Origins besides the server's own (`https://app.example.com`; a trailing `/` and
    /// case do not matter).
    pub allowed: &'a [String],
    /// What a refused request may not do, e.g. "use this proxy's keys".
    pub action: &'a str,
    /// Where the allowed origins are configured, for the refusal's message.
    pub list: &'a str,
}

/// The origin half of the rule (the proxy's and the collector's): a request with an
/// `Origin` passes when it is this server's own (`http://` or `https://` + `host`, the
/// request's `Host`) or in `rule.allowed`; one without an `Origin` passes when its
/// `Sec-Fetch-Site` is absent (curl, native clients), `same-origin` or `none`.
pub fn check_origin(
    headers: &HeaderMap,
    host: Option<&str>,
    rule: &OriginRule<'_>,
) -> Result<(), AccessDenied> {
    match header(headers, &header::ORIGIN) {
        Some(origin) => {
            let origin = origin.trim_end_matches('/');
            let own = |scheme: &str| {
                host.is_some_and(|h| origin.eq_ignore_ascii_case(&format!("{scheme}://{h}")))
            };
            let allowed = own("http")
                || own("https")
                || rule
                    .allowed
                    .iter()
                    .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin));
            if allowed {
                Ok(())
            } else {
                let own = host.map_or("this server's own origin".to_owned(), |h| {
                    format!("http://{h}")
                });
                Err(AccessDenied::Origin {
                    origin: origin.into(),
                    action: rule.action.into(),
                    own,
                    list: rule.list.into(),
                })
            }
        }
        None => match header(headers, &SEC_FETCH_SITE) {
            None | Some("same-origin" | "none") => Ok(()),
            Some(site) => Err(AccessDenied::NoOrigin {
                site: site.into(),
                action: rule.action.into(),
            }),
        },
    }
}

const SEC_FETCH_SITE: header::HeaderName = header::HeaderName::from_static("sec-fetch-site");

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn own_origin_and_loopback_hosts_pass_other_sites_do_not() {
        let access = ProxyAccess::default();
        for ok in [
            vec![("host", "127.0.0.1:8080")],
            vec![
                ("host", "localhost:8080"),
                ("origin", "http://localhost:8080"),
            ],
            vec![("host", "[::1]:9"), ("origin", "http://[::1]:9")],
            // Behind a TLS terminator that keeps the Host: still this server's origin.
            vec![
                ("host", "localhost:8080"),
                ("origin", "https://localhost:8080"),
            ],
            vec![
                ("host", "127.0.0.1:8080"),
                ("sec-fetch-site", "same-origin"),
            ],
        ] {
            assert_eq!(access.check(&headers(&ok), None), Ok(()), "{ok:?}");
        }
        for (bad, why) in [
            (vec![("host", "evil.example:8080")], "DNS rebinding"),
            (
                vec![
                    ("host", "127.0.0.1:8080"),
                    ("origin", "http://127.0.0.1:9999"),
                ],
                "may not use",
            ),
            (
                vec![("host", "127.0.0.1:8080"), ("origin", "null")],
                "may not use",
            ),
            (
                vec![("host", "127.0.0.1:8080"), ("sec-fetch-site", "cross-site")],
                "cross-site",
            ),
            (
                vec![("host", "127.0.0.1:8080"), ("sec-fetch-site", "same-site")],
                "same-site",
            ),
            (vec![], "no Host"),
        ] {
            let e = access.check(&headers(&bad), None).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn configured_origins_and_hosts_pass() {
        let access = ProxyAccess {
            allowed_origins: vec!["http://localhost:5173/".into()],
            allowed_hosts: vec!["lab.internal".into()],
            token: None,
        };
        let h = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://localhost:5173"),
        ]);
        assert_eq!(access.check(&h, None), Ok(()));
        let h = headers(&[
            ("host", "lab.internal:8080"),
            ("origin", "http://lab.internal:8080"),
        ]);
        assert_eq!(access.check(&h, None), Ok(()));
        assert!(is_loopback_host("127.8.0.1") && !is_loopback_host("128.0.0.1"));
    }

    #[test]
    fn off_loopback_a_forged_loopback_host_and_a_missing_or_wrong_token_are_refused() {
        let token = ProxyToken::generate().unwrap();
        assert_eq!(token.expose().len(), 2 * PROXY_TOKEN_BYTES);
        assert!(!format!("{token:?}").contains(token.expose()));
        let access = ProxyAccess {
            token: Some(token.clone()),
            ..ProxyAccess::default()
        };
        let lan: IpAddr = "10.231.0.2".parse().unwrap();
        let mapped: IpAddr = "::ffff:10.231.0.2".parse().unwrap();
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let with = |host: &str, t: &str| headers(&[("host", host), ("x-ttfx-proxy-token", t)]);
        let good = token.expose();
        let e = access.check(&with("localhost:8080", good), Some(lan));
        assert!(
            matches!(e, Err(AccessDenied::LoopbackHostFromNetwork { .. })),
            "{e:?}"
        );
        let e = access.check(&with("127.0.0.1:8080", good), Some(mapped));
        assert!(
            matches!(e, Err(AccessDenied::LoopbackHostFromNetwork { .. })),
            "{e:?}"
        );
        let e = access.check(&headers(&[("host", "10.231.0.1:8080")]), Some(lan));
        assert_eq!(e, Err(AccessDenied::NoToken));
        assert_eq!(e.unwrap_err().status(), StatusCode::UNAUTHORIZED);
        let mut wrong = good.to_owned();
        wrong.replace_range(..1, if good.starts_with('0') { "1" } else { "0" });
        let e = access.check(&with("10.231.0.1:8080", &wrong), Some(lan));
        assert_eq!(e, Err(AccessDenied::WrongToken));
        let e = access.check(&with("10.231.0.1:8080", &good[..10]), Some(lan));
        assert_eq!(e, Err(AccessDenied::WrongToken));
        // With the token: an IP literal Host passes, so does loopback from loopback.
        assert_eq!(
            access.check(&with("10.231.0.1:8080", good), Some(lan)),
            Ok(())
        );
        assert_eq!(
            access.check(&with("localhost:1", good), Some(local)),
            Ok(())
        );
        // A DNS name still needs allowed_hosts.
        let e = access.check(&with("rebound.example:8080", good), Some(lan));
        assert!(matches!(e, Err(AccessDenied::Host { .. })), "{e:?}");
    }

    #[test]
    fn a_given_token_is_long_enough_and_one_printable_word() {
        assert!(ProxyToken::given(&"a".repeat(31)).is_err());
        assert!(ProxyToken::given(&"a".repeat(MAX_PROXY_TOKEN_LEN + 1)).is_err());
        assert!(ProxyToken::given(&format!("{} {}", "a".repeat(20), "b".repeat(20))).is_err());
        let t = ProxyToken::given(&format!("  {}\n", "x".repeat(40))).unwrap();
        assert_eq!(t.expose(), "x".repeat(40));
    }
}
