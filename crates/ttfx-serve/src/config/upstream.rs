//! One `[upstreams.NAME]` table of the config file into an [`Upstream`]: its preset,
//! where it is (base_url, TLS), its key and how it is sent, timeouts, the chat endpoint
//! and extra headers. The steps of [`upstream`] run in a fixed order, and a table with
//! several problems is refused for the first one met.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail};
use axum::http::uri::Authority;
use axum::http::{HeaderName, HeaderValue, Uri};
use serde::Deserialize;
use ttfx_core::ChatApi;
use ttfx_core::decode::DialectKind;

use ttfx_edge::access::is_loopback_host;
use ttfx_proxy::presets::{self, Preset};
use ttfx_proxy::upstream::{Auth, Secret, Timeouts, Upstream, UpstreamChat};
use ttfx_proxy::upstream_conn::Tls;

use super::check_name;

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
}

pub(super) fn upstream(
    name: &str,
    u: FileUpstream,
    dir: &Path,
    env: &impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Upstream> {
    check_name(name)?;
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
    Ok(Upstream {
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

fn preset(name: Option<&str>) -> anyhow::Result<Option<&'static Preset>> {
    let Some(name) = name else {
        return Ok(None);
    };
    let preset = presets::find(name).ok_or_else(|| {
        anyhow!(
            "preset `{name}` is not a provider preset ({})",
            presets::names().join(", ")
        )
    })?;
    Ok(Some(preset))
}

/// The config's base_url, else its preset's; a preset without one (Azure: a host per
/// resource) needs it from the config.
fn base_url(u: &FileUpstream, preset: Option<&Preset>) -> anyhow::Result<String> {
    Ok(
        match (u.base_url.clone(), preset.and_then(|p| p.base_url)) {
            (Some(url), _) => url,
            (None, Some(url)) => url.to_owned(),
            (None, None) => match preset {
                Some(p) => bail!(
                    "preset `{}` needs base_url: {} gives every resource its own host (e.g. \
                 https://RESOURCE.openai.azure.com/openai/v1)",
                    p.name,
                    p.provider
                ),
                None => bail!("base_url is missing (or name a provider preset)"),
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
    fn parse(text: String) -> anyhow::Result<BaseUrl> {
        let uri: Uri = text
            .parse()
            .map_err(|e| anyhow!("base_url `{}` is not a URL: {e}", text))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => bail!("base_url `{}` must start with http:// or https://", text),
        };
        let Some(authority) = uri.authority().cloned() else {
            bail!("base_url `{}` has no host", text);
        };
        // The key has its own fields, kept out of logs; a URL is printed.
        if authority.as_str().contains('@') {
            bail!(
                "base_url `{}`: credentials in the URL are refused (give the key as api_key or \
                 api_key_env)",
                text
            );
        }
        if uri.query().is_some() {
            bail!("base_url `{}` must not have a query", text);
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
    fn check_key_in_clear(&self) -> anyhow::Result<()> {
        if !self.https && !is_loopback_host(self.authority.host()) {
            bail!(
                "base_url `{}`: the key would cross the network in clear text over plain HTTP \
                 to a host that is not loopback; use https, or a loopback server, or set \
                 insecure = true",
                self.text
            );
        }
        Ok(())
    }
}

/// The TLS settings of an https upstream (its private CA read now, at startup); none
/// for plain HTTP, where `ca_file` is a mistake.
fn tls(base: &BaseUrl, u: &FileUpstream, dir: &Path) -> anyhow::Result<Option<Tls>> {
    let tls = match (base.https, &u.ca_file) {
        (true, ca_file) => {
            let ca_file = ca_file.as_deref().map(|f| dir.join(f));
            Some(Tls::new(base.authority.host(), ca_file.as_deref())?)
        }
        (false, Some(_)) => bail!(
            "ca_file is for https upstreams; base_url `{}` is plain HTTP",
            base.text
        ),
        (false, None) => None,
    };
    // Refused rather than ignored: someone setting it on https may think it skips checks.
    if base.https && u.insecure {
        bail!(
            "insecure = true only lets a key go over plain HTTP; it does not turn off \
             certificate checks, and an https upstream never needs it (for a private CA, \
             give its PEM as ca_file)"
        );
    }
    Ok(tls)
}

/// The key, given in the file or (better) named by its environment variable.
fn key(u: &FileUpstream, env: &impl Fn(&str) -> Option<String>) -> anyhow::Result<Option<Secret>> {
    Ok(match (u.api_key.clone(), u.api_key_env.clone()) {
        (Some(_), Some(_)) => bail!("give api_key or api_key_env, not both"),
        (Some(k), None) => Some(Secret::new(k)),
        (None, Some(var)) => match env(&var) {
            Some(k) if !k.is_empty() => Some(Secret::new(k)),
            _ => bail!("api_key_env: the environment variable `{var}` is not set"),
        },
        (None, None) => None,
    })
}

/// How the key is sent: the config's `auth`, else its preset's, else a bearer token.
fn auth(preset: Option<&Preset>, given: Option<&str>) -> anyhow::Result<Auth> {
    Ok(match given {
        None => preset.map_or(Auth::Bearer, |p| p.auth),
        Some("bearer") => Auth::Bearer,
        Some("x-api-key") => Auth::XApiKey,
        Some("api-key") => Auth::ApiKey,
        Some("none") => Auth::None,
        Some(other) => bail!("auth `{other}`: expected bearer, x-api-key, api-key or none"),
    })
}

fn timeouts(u: &FileUpstream) -> anyhow::Result<Timeouts> {
    let ms = |key: &str, value: Option<u64>, default: Duration| match value {
        None => Ok(default),
        Some(v) if (1..=3_600_000).contains(&v) => Ok(Duration::from_millis(v)),
        Some(v) => Err(anyhow!("{key} = {v}: expected 1 to 3600000 ms")),
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
fn chat(preset: Option<&Preset>, u: &FileUpstream) -> anyhow::Result<Option<UpstreamChat>> {
    let api = match u.api.as_deref() {
        Some(name) => Some(name.parse::<ChatApi>().map_err(|e| anyhow!("api: {e}"))?),
        None => preset.map(|p| p.api),
    };
    let Some(api) = api else {
        if u.api_path.is_some() || u.dialect.is_some() {
            bail!("api_path and dialect need api (a preset gives one)");
        }
        return Ok(None);
    };
    // The preset's path and dialect belong to its API; another API brings its own.
    let preset = preset.filter(|p| p.api == api);
    let path = match &u.api_path {
        Some(p) => p.trim_start_matches('/').to_owned(),
        None => preset.map_or(api.path(), |p| p.api_path).to_owned(),
    };
    if path.contains(['?', '#']) || path.split('/').any(|s| s == "." || s == "..") {
        bail!("api_path `{path}`: a plain path below base_url, without query or dot segments");
    }
    let dialect = match u.dialect.as_deref() {
        Some(name) => name
            .parse::<DialectKind>()
            .map_err(|e| anyhow!("dialect: {e}"))?,
        None => preset.map_or(api.dialect(), |p| p.dialect),
    };
    Ok(Some(UpstreamChat { api, path, dialect }))
}

/// Headers for every request: the preset's, then the config's (which win by name).
fn headers(
    preset: Option<&Preset>,
    extra: &BTreeMap<String, String>,
) -> anyhow::Result<Vec<(HeaderName, HeaderValue)>> {
    let mut out: Vec<(HeaderName, HeaderValue)> = Vec::new();
    let given = preset
        .map_or(&[][..], |p| p.headers)
        .iter()
        .map(|(n, v)| (*n, *v))
        .chain(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    for (name, value) in given {
        let header = HeaderName::try_from(name)
            .map_err(|_| anyhow!("headers: `{name}` is not a header name"))?;
        if ttfx_proxy::KEY_HEADERS.contains(&header.as_str()) {
            bail!(
                "headers: `{name}` carries a key; give it with api_key_env (and auth) so it                  stays out of logs and the client's copy is dropped"
            );
        }
        let value = HeaderValue::from_str(value)
            .map_err(|_| anyhow!("headers: the value of `{name}` is not a header value"))?;
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
) -> anyhow::Result<Option<String>> {
    let azure = preset.is_some_and(|p| p.name == "azure-openai");
    match given {
        Some(_) if !azure => bail!("api_version applies to preset = \"azure-openai\" only"),
        Some(v) if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            bail!("api_version `{v}`: expected a version like 2024-10-21")
        }
        Some(v) => Ok(Some(v.to_owned())),
        None if azure && base_path.contains("/openai/deployments/") => bail!(
            "preset azure-openai: a deployment base_url needs api_version (e.g. \
             \"2024-10-21\"); the v1 API (…/openai/v1) needs none"
        ),
        None => Ok(None),
    }
}
