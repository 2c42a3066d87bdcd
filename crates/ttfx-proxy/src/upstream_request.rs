//! What the upstream gets for a client's request: the path after `/proxy/{name}` checked
//! and put under the upstream's base path, the client's headers less those that belong to
//! one connection or to this server, the upstream's own headers and its key.
//!
//! The configured key goes only to the upstream's API paths ([`Upstream::key_goes_to`]),
//! and a client's own key never crosses plain HTTP off loopback unless the config says
//! `insecure`: both are refused before anything is sent.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri, header};
use http_body_util::Full;

use ttfx_edge::access::PROXY_TOKEN;
use ttfx_edge::arrival::REQUEST_ID;

use crate::hop::HopByHop;
use crate::upstream::{Auth, Upstream};

/// Headers that carry an API key: the config's key replaces the client's, and a config
/// may not set one as a plain header.
pub const KEY_HEADERS: [&str; 3] = ["authorization", "x-api-key", "api-key"];

/// Why a client's request is not sent: its status and a message for a person.
#[derive(Debug)]
pub struct Refused {
    pub status: StatusCode,
    pub message: String,
}

fn bad_request(message: String) -> Refused {
    Refused {
        status: StatusCode::BAD_REQUEST,
        message,
    }
}

/// The request for `upstream` from the client's path, query, method, headers and body.
pub fn build(
    upstream: &Upstream,
    request_id: &str,
    uri: &Uri,
    method: Method,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Request<Full<Bytes>>, Refused> {
    let rest = raw_rest(uri.path(), &upstream.name).map_err(bad_request)?;
    if upstream.key.is_some() && !upstream.key_goes_to(&rest) {
        return Err(Refused {
            status: StatusCode::FORBIDDEN,
            message: format!(
                "upstream `{}` sends its key only to its API paths ({}); `{}` is not one \
                 (key_paths in the config)",
                upstream.name,
                key_paths_text(upstream),
                uri.path()
            ),
        });
    }
    if upstream.key.is_none()
        && upstream.clear_text
        && !upstream.insecure
        && let Some(name) = KEY_HEADERS.iter().find(|k| headers.contains_key(**k))
    {
        return Err(Refused {
            status: StatusCode::FORBIDDEN,
            message: format!(
                "upstream `{}` is plain HTTP to a host that is not loopback: the client's \
                 `{name}` would cross the network in clear text (use an https base_url, or \
                 set insecure = true)",
                upstream.name
            ),
        });
    }
    let target = upstream_target(upstream, &rest, uri.query());
    upstream_request(upstream, request_id, method, headers, &target, body).map_err(bad_request)
}

/// The upstream's key paths as a person reads them: `/`-rooted, below its base path.
fn key_paths_text(upstream: &Upstream) -> String {
    let chat = upstream.chat.as_ref().map(|c| c.path.as_str());
    let mut paths: Vec<String> = upstream
        .key_paths
        .iter()
        .map(String::as_str)
        .chain(chat)
        .map(|p| format!("/proxy/{}/{p}", upstream.name))
        .collect();
    paths.dedup();
    paths.join(", ")
}

/// The path after `/proxy/{name}` exactly as the client sent it (still percent-encoded:
/// the upstream gets the bytes the client chose). Dot segments, plain or encoded, and
/// encoded `/`, `?`, `#` and `\` are refused: they would let a request reach another
/// path of the upstream than the one it names, or mean something else after decoding.
fn raw_rest(raw_path: &str, name: &str) -> Result<String, String> {
    let prefix = format!("/proxy/{name}");
    let rest = raw_path
        .strip_prefix(&prefix)
        .ok_or_else(|| format!("path `{raw_path}` is not under {prefix}"))?;
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    for segment in rest.split('/') {
        let lower = segment.to_ascii_lowercase();
        let decoded_dots = lower.replace("%2e", ".");
        if decoded_dots == "." || decoded_dots == ".." {
            return Err(format!("path `{raw_path}`: dot segments are refused"));
        }
        for (encoded, what) in [("%2f", "/"), ("%3f", "?"), ("%23", "#"), ("%5c", "\\")] {
            if lower.contains(encoded) {
                return Err(format!("path `{raw_path}`: an encoded `{what}` is refused"));
            }
        }
    }
    Ok(rest.to_owned())
}

/// Headers that belong to one connection (`hop`), or that the proxy sets itself, or
/// that are for this server only.
fn dropped_request_header(name: &HeaderName, hop: &HopByHop) -> bool {
    // The proxy token opens this server, never the upstream.
    hop.contains(name)
        || *name == PROXY_TOKEN
        || matches!(
            name.as_str(),
            "host" | "content-length"
            // Asked uncompressed, so the record can decode the stream as it passes.
            | "accept-encoding"
            // The proxy sends its own (the arrival's), so the upstream gets exactly one.
            | "x-request-id"
            // The browser's origin and cookies are for this server, not the upstream.
            | "origin" | "referer" | "cookie"
        )
}

/// The upstream's path and query for `rest`: the client's query, plus the upstream's
/// `api-version` when the client sent none.
fn upstream_target(upstream: &Upstream, rest: &str, query: Option<&str>) -> String {
    let has_version = query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("api-version"))
    });
    let version = upstream
        .api_version
        .as_deref()
        .filter(|_| !has_version)
        .map(|v| format!("api-version={v}"));
    let query = [query.filter(|q| !q.is_empty()).map(str::to_owned), version]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("&");
    match query.is_empty() {
        true => format!("{}/{rest}", upstream.path),
        false => format!("{}/{rest}?{query}", upstream.path),
    }
}

fn upstream_request(
    upstream: &Upstream,
    request_id: &str,
    method: Method,
    headers: &HeaderMap,
    target: &str,
    body: Bytes,
) -> Result<Request<Full<Bytes>>, String> {
    let mut builder = Request::builder().method(method).uri(target);
    let hop = HopByHop::of(headers);
    for (k, v) in headers {
        let is_key = KEY_HEADERS.contains(&k.as_str());
        // The client's own key goes through only when the config adds none.
        if dropped_request_header(k, &hop) || (is_key && upstream.key.is_some()) {
            continue;
        }
        builder = builder.header(k, v);
    }
    // The upstream's own headers (Anthropic's version) are defaults: a client that sends
    // its own value keeps it.
    for (name, value) in &upstream.headers {
        if !headers.contains_key(name) {
            builder = builder.header(name, value);
        }
    }
    // In origin form with `Host`; over HTTP/2 the sender moves both into the URI.
    builder = builder.header(header::HOST, upstream.host.as_str());
    builder = builder.header(REQUEST_ID, request_id);
    if let Some(key) = &upstream.key {
        let (name, value) = match upstream.auth {
            Auth::Bearer => ("authorization", format!("Bearer {}", key.expose())),
            Auth::XApiKey => ("x-api-key", key.expose().to_owned()),
            Auth::ApiKey => ("api-key", key.expose().to_owned()),
            Auth::None => ("", String::new()),
        };
        if !name.is_empty() {
            let mut value = HeaderValue::from_str(&value)
                // Never echo the value: it is the secret.
                .map_err(|_| {
                    format!(
                        "upstream `{}`: the API key is not a valid header value",
                        upstream.name
                    )
                })?;
            value.set_sensitive(true);
            builder = builder.header(name, value);
        }
    }
    builder
        .body(Full::new(body))
        .map_err(|e| format!("cannot build the upstream request for `{target}`: {e}"))
}
