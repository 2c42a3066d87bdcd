//! One `[upstreams.NAME]` table of the config file into an [`Upstream`]: its preset,
//! where it is (base_url, TLS), its key and how it is sent, timeouts, the chat endpoint
//! and extra headers. The steps of [`upstream`] run in a fixed order, and a table with
//! several problems is refused for the first one met.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use axum::http::uri::{Authority, InvalidUri};
use axum::http::{HeaderName, HeaderValue, Uri};
use serde::Deserialize;
use ttfx_core::ChatApi;
use ttfx_core::chat_api::UnknownChatApi;
use ttfx_core::decode::DialectKind;
use ttfx_core::decode::dialect::UnknownDialect;

use ttfx_edge::access::is_loopback_host;
use ttfx_proxy::presets::{self, Preset};
use ttfx_proxy::tls::TlsError;
use ttfx_proxy::upstream::{Auth, Secret, Timeouts, Upstream, UpstreamChat};
use ttfx_proxy::upstream_conn::Tls;

use super::{BadName, check_name};

/// What is wrong in one `[upstreams.NAME]` table; the config names the upstream around
/// it. Each text carries its cause (no `source` chain).
#[derive(Debug, thiserror::Error)]
pub enum UpstreamProblem {
    #[error(transparent)]
    Name(BadName),
    #[error("preset `{name}` is not a provider preset ({})", presets::names().join(", "))]
    UnknownPreset { name: String },
    #[error(
        "preset `{preset}` needs base_url: {provider} gives every resource its own host (e.g. \
         https://RESOURCE.openai.azure.com/openai/v1)"
    )]
    PresetNeedsBaseUrl {
        preset: &'static str,
        provider: &'static str,
    },
    #[error("base_url is missing (or name a provider preset)")]
    NoBaseUrl,
    #[error("base_url `{url}` is not a URL: {cause}")]
    NotAUrl { url: String, cause: InvalidUri },
    #[error("base_url `{url}` must start with http:// or https://")]
    NotHttp { url: String },
    #[error("base_url `{url}` has no host")]
    NoHost { url: String },
    #[error(
        "base_url `{url}`: credentials in the URL are refused (give the key as api_key or \
         api_key_env)"
    )]
    CredentialsInUrl { url: String },
    #[error("base_url `{url}` must not have a query")]
    QueryInUrl { url: String },
    #[error(
        "base_url `{url}`: the key would cross the network in clear text over plain HTTP to a \
         host that is not loopback; use https, or a loopback server, or set insecure = true"
    )]
    KeyInClear { url: String },
    #[error(transparent)]
    Tls(TlsError),
    #[error("ca_file is for https upstreams; base_url `{url}` is plain HTTP")]
    CaFileOnPlainHttp { url: String },
    #[error(
        "insecure = true only lets a key go over plain HTTP; it does not turn off certificate \
         checks, and an https upstream never needs it (for a private CA, give its PEM as \
         ca_file)"
    )]
    InsecureOnHttps,
    #[error("give api_key or api_key_env, not both")]
    TwoKeys,
    #[error("api_key_env: the environment variable `{var}` is not set")]
    KeyEnvUnset { var: String },
    #[error("auth `{auth}`: expected bearer, x-api-key, api-key or none")]
    UnknownAuth { auth: String },
    #[error("{key} = {ms}: expected 1 to 3600000 ms")]
    TimeoutOutOfRange { key: &'static str, ms: u64 },
    #[error("api: {0}")]
    UnknownApi(UnknownChatApi),
    #[error("api_path and dialect need api (a preset gives one)")]
    PathWithoutApi,
    #[error(
        "api_path or key_paths `{path}`: a plain path below base_url, without query, \
         percent-encoding or dot segments"
    )]
    NotAPlainPath { path: String },
    #[error("dialect: {0}")]
    UnknownDialect(UnknownDialect),
    #[error("headers: `{name}` is not a header name")]
    NotAHeaderName { name: String },
    // The run of spaces is in the text users have seen; this change keeps texts as they are.
    #[error(
        "headers: `{name}` carries a key; give it with api_key_env (and auth) so it                  stays out of logs and the client's copy is dropped"
    )]
    KeyHeader { name: String },
    #[error("headers: the value of `{name}` is not a header value")]
    NotAHeaderValue { name: String },
    #[error("api_version applies to preset = \"azure-openai\" only")]
    ApiVersionNotAzure,
    #[error("api_version `{version}`: expected a version like 2024-10-21")]
    NotAnApiVersion { version: String },
    #[error(
        "preset azure-openai: a deployment base_url needs api_version (e.g. \"2024-10-21\"); \
         the v1 API (…/openai/v1) needs none"
    )]
    NoApiVersion,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileUpstream {
    /// A provider preset (presets.rs) the other fields start from.
    preset: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    api_key: Option<String>,
    auth: Option<String>,
    /// Allows a key over plain HTTP to a host that is not loopback.
    #[serde(default)]
    insecure: bool,
    /// PEM certificates of a private CA, trusted besides the public roots (https only).
    ca_file: Option<String>,
    connect_timeout_ms: Option<u64>,
    header_timeout_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
    /// The chat endpoint's API (a ChatApi name), its path below base_url, its dialect.
    api: Option<String>,
    api_path: Option<String>,
    dialect: Option<String>,
    /// Extra headers for every request (not the key: that is api_key / api_key_env).
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Azure OpenAI's `api-version`, for its deployment paths.
    api_version: Option<String>,
    /// Paths below base_url where the key is sent (its API); the preset's otherwise.
    key_paths: Option<Vec<String>>,
}

pub(super) fn upstream(
    name: &str,
    u: FileUpstream,
    dir: &Path,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Upstream, UpstreamProblem> {
    check_name(name).map_err(UpstreamProblem::Name)?;
    let preset = preset(u.preset.as_deref())?;
    let base = BaseUrl::parse(base_url(&u, preset)?)?;
    let tls = tls(&base, &u, dir)?;
    let key = key(&u, env)?;
    if key.is_some() && !u.insecure {
        base.check_key_in_clear()?;
    }
    let auth = auth(preset, u.auth.as_deref())?;
    let timeouts = timeouts(&u)?;
    let chat = chat(preset, &u)?;
    let headers = headers(preset, &u.headers)?;
    let api_version = azure_api_version(preset, base.uri.path(), u.api_version.as_deref())?;
    let key_paths = key_paths(preset, chat.as_ref(), u.key_paths.as_deref())?;
    Ok(Upstream {
        key_paths,
        clear_text: !base.https && !is_loopback_host(base.authority.host()),
        insecure: u.insecure,
        name: name.to_owned(),
        preset: preset.map(|p| p.name),
        chat,
        headers,
        api_version,
        timeouts,
        authority: format!("{}:{}", base.authority.host(), base.port()),
        host: base.authority.as_str().to_owned(),
        tls,
        path: base.uri.path().trim_end_matches('/').to_owned(),
        key,
        auth,
    })
}

fn preset(name: Option<&str>) -> Result<Option<&'static Preset>, UpstreamProblem> {
    let Some(name) = name else {
        return Ok(None);
    };
    let preset = presets::find(name).ok_or_else(|| UpstreamProblem::UnknownPreset {
        name: name.to_owned(),
    })?;
    Ok(Some(preset))
}

/// The config's base_url, else its preset's; a preset without one (Azure: a host per
/// resource) needs it from the config.
fn base_url(u: &FileUpstream, preset: Option<&Preset>) -> Result<String, UpstreamProblem> {
    Ok(
        match (u.base_url.clone(), preset.and_then(|p| p.base_url)) {
            (Some(url), _) => url,
            (None, Some(url)) => url.to_owned(),
            (None, None) => match preset {
                Some(p) => {
                    return Err(UpstreamProblem::PresetNeedsBaseUrl {
                        preset: p.name,
                        provider: p.provider,
                    });
                }
                None => return Err(UpstreamProblem::NoBaseUrl),
            },
        },
    )
}

/// A base_url that names where to connect: http or https, a host, no credentials, no
/// query.
struct BaseUrl {
    /// As written, for messages.
    text: String,
    uri: Uri,
    authority: Authority,
    https: bool,
}

impl BaseUrl {
    fn parse(text: String) -> Result<BaseUrl, UpstreamProblem> {
        let uri: Uri = match text.parse() {
            Ok(uri) => uri,
            Err(cause) => return Err(UpstreamProblem::NotAUrl { url: text, cause }),
        };
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(UpstreamProblem::NotHttp { url: text }),
        };
        let Some(authority) = uri.authority().cloned() else {
            return Err(UpstreamProblem::NoHost { url: text });
        };
        // The key has its own fields, kept out of logs; a URL is printed.
        if authority.as_str().contains('@') {
            return Err(UpstreamProblem::CredentialsInUrl { url: text });
        }
        if uri.query().is_some() {
            return Err(UpstreamProblem::QueryInUrl { url: text });
        }
        Ok(BaseUrl {
            text,
            uri,
            authority,
            https,
        })
    }

    fn port(&self) -> u16 {
        self.authority
            .port_u16()
            .unwrap_or(if self.https { 443 } else { 80 })
    }

    /// A key may cross plain HTTP only to loopback (or when the config says `insecure`).
    fn check_key_in_clear(&self) -> Result<(), UpstreamProblem> {
        if !self.https && !is_loopback_host(self.authority.host()) {
            return Err(UpstreamProblem::KeyInClear {
                url: self.text.clone(),
            });
        }
        Ok(())
    }
}

/// The TLS settings of an https upstream (its private CA read now, at startup); none
/// for plain HTTP, where `ca_file` is a mistake.
fn tls(base: &BaseUrl, u: &FileUpstream, dir: &Path) -> Result<Option<Tls>, UpstreamProblem> {
    let tls = match (base.https, &u.ca_file) {
        (true, ca_file) => {
            let ca_file = ca_file.as_deref().map(|f| dir.join(f));
            Some(
                Tls::new(base.authority.host(), ca_file.as_deref())
                    .map_err(UpstreamProblem::Tls)?,
            )
        }
        (false, Some(_)) => {
            return Err(UpstreamProblem::CaFileOnPlainHttp {
                url: base.text.clone(),
            });
        }
        (false, None) => None,
    };
    // Refused rather than ignored: someone setting it on https may think it skips checks.
    if base.https && u.insecure {
        return Err(UpstreamProblem::InsecureOnHttps);
    }
    Ok(tls)
}

/// The key, given in the file or (better) named by its environment variable.
fn key(
    u: &FileUpstream,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Option<Secret>, UpstreamProblem> {
    Ok(match (u.api_key.clone(), u.api_key_env.clone()) {
        (Some(_), Some(_)) => return Err(UpstreamProblem::TwoKeys),
        (Some(k), None) => Some(Secret::new(k)),
        (None, Some(var)) => match env(&var) {
            Some(k) if !k.is_empty() => Some(Secret::new(k)),
            _ => return Err(UpstreamProblem::KeyEnvUnset { var }),
        },
        (None, None) => None,
    })
}

/// How the key is sent: the config's `auth`, else its preset's, else a bearer token.
fn auth(preset: Option<&Preset>, given: Option<&str>) -> Result<Auth, UpstreamProblem> {
    Ok(match given {
        None => preset.map_or(Auth::Bearer, |p| p.auth),
        Some("bearer") => Auth::Bearer,
        Some("x-api-key") => Auth::XApiKey,
        Some("api-key") => Auth::ApiKey,
        Some("none") => Auth::None,
        Some(other) => {
            return Err(UpstreamProblem::UnknownAuth {
                auth: other.to_owned(),
            });
        }
    })
}

fn timeouts(u: &FileUpstream) -> Result<Timeouts, UpstreamProblem> {
    let ms = |key: &'static str, value: Option<u64>, default: Duration| match value {
        None => Ok(default),
        Some(v) if (1..=3_600_000).contains(&v) => Ok(Duration::from_millis(v)),
        Some(v) => Err(UpstreamProblem::TimeoutOutOfRange { key, ms: v }),
    };
    Ok(Timeouts {
        connect: ms(
            "connect_timeout_ms",
            u.connect_timeout_ms,
            Timeouts::DEFAULT.connect,
        )?,
        headers: ms(
            "header_timeout_ms",
            u.header_timeout_ms,
            Timeouts::DEFAULT.headers,
        )?,
        idle: ms("idle_timeout_ms", u.idle_timeout_ms, Timeouts::DEFAULT.idle)?,
    })
}

/// The chat endpoint: the config's `api`, `api_path` and `dialect` over its preset's.
fn chat(
    preset: Option<&Preset>,
    u: &FileUpstream,
) -> Result<Option<UpstreamChat>, UpstreamProblem> {
    let api = match u.api.as_deref() {
        Some(name) => Some(
            name.parse::<ChatApi>()
                .map_err(UpstreamProblem::UnknownApi)?,
        ),
        None => preset.map(|p| p.api),
    };
    let Some(api) = api else {
        if u.api_path.is_some() || u.dialect.is_some() {
            return Err(UpstreamProblem::PathWithoutApi);
        }
        return Ok(None);
    };
    // The preset's path and dialect belong to its API; another API brings its own.
    let preset = preset.filter(|p| p.api == api);
    let path = match &u.api_path {
        Some(p) => p.trim_start_matches('/').to_owned(),
        None => preset.map_or(api.path(), |p| p.api_path).to_owned(),
    };
    if !is_plain_path(&path) {
        return Err(UpstreamProblem::NotAPlainPath { path });
    }
    let dialect = match u.dialect.as_deref() {
        Some(name) => name
            .parse::<DialectKind>()
            .map_err(UpstreamProblem::UnknownDialect)?,
        None => preset.map_or(api.dialect(), |p| p.dialect),
    };
    Ok(Some(UpstreamChat { api, path, dialect }))
}

/// Where below base_url the key goes: the config's `key_paths`, else its preset's, else
/// the directory of its chat endpoint (`v1/` for `v1/chat/completions`), else (no API
/// named) all of base_url. The chat endpoint itself is always one.
fn key_paths(
    preset: Option<&Preset>,
    chat: Option<&UpstreamChat>,
    given: Option<&[String]>,
) -> Result<Vec<String>, UpstreamProblem> {
    if let Some(given) = given {
        let mut out = Vec::new();
        for path in given {
            let path = path.trim_start_matches('/');
            if !is_plain_path(path) {
                return Err(UpstreamProblem::NotAPlainPath { path: path.into() });
            }
            out.push(path.to_owned());
        }
        return Ok(out);
    }
    if let Some(p) = preset {
        return Ok(p.key_paths.iter().map(|k| (*k).to_owned()).collect());
    }
    Ok(match chat {
        Some(c) => c
            .path
            .rsplit_once('/')
            .map(|(dir, _)| vec![format!("{dir}/")])
            .unwrap_or_default(),
        None => vec![String::new()],
    })
}

/// A path below base_url that names one place: no query, fragment, dot segment or
/// percent-encoding.
fn is_plain_path(path: &str) -> bool {
    !path.contains(['?', '#', '%']) && !path.split('/').any(|s| s == "." || s == "..")
}

/// Headers for every request: the preset's, then the config's (which win by name).
fn headers(
    preset: Option<&Preset>,
    extra: &BTreeMap<String, String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, UpstreamProblem> {
    let mut out: Vec<(HeaderName, HeaderValue)> = Vec::new();
    let given = preset
        .map_or(&[][..], |p| p.headers)
        .iter()
        .map(|(n, v)| (*n, *v))
        .chain(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    for (name, value) in given {
        let header = HeaderName::try_from(name)
            .map_err(|_| UpstreamProblem::NotAHeaderName { name: name.into() })?;
        if ttfx_proxy::KEY_HEADERS.contains(&header.as_str()) {
            return Err(UpstreamProblem::KeyHeader { name: name.into() });
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| UpstreamProblem::NotAHeaderValue { name: name.into() })?;
        out.retain(|(n, _)| *n != header);
        out.push((header, value));
    }
    Ok(out)
}

/// Azure OpenAI's deployment paths need `api-version` on every request; its v1 API
/// (`/openai/v1`) takes none. Other upstreams may not set one.
fn azure_api_version(
    preset: Option<&Preset>,
    base_path: &str,
    given: Option<&str>,
) -> Result<Option<String>, UpstreamProblem> {
    let azure = preset.is_some_and(|p| p.name == "azure-openai");
    match given {
        Some(_) if !azure => Err(UpstreamProblem::ApiVersionNotAzure),
        Some(v) if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            Err(UpstreamProblem::NotAnApiVersion {
                version: v.to_owned(),
            })
        }
        Some(v) => Ok(Some(v.to_owned())),
        None if azure && base_path.contains("/openai/deployments/") => {
            Err(UpstreamProblem::NoApiVersion)
        }
        None => Ok(None),
    }
}
