//! `/proxy/{upstream}/…` forwards to an upstream named in the config
//! and times it the way a benchmark client next to the endpoint would (connect, headers,
//! first byte, first event, first token, every chunk, end), keeping that record under the
//! request id.
//!
//! Bytes pass through unchanged and unbuffered: each upstream body frame is handed to
//! the client before it is decoded for the record. The record derives its milestones
//! with ttfx-core's `Recorder`, the probe's own rules, so the gaps compare like with like.
//! Each request opens its own upstream connection (`upstream_conn`), so the TCP connect
//! and the TLS handshake are measured every time (a pooled client would hide them).

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Extension, OriginalUri, Path, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http_body_util::{BodyExt, Full};
use serde_json::json;
use tokio::time::Instant;

use ttfx_edge::arrival::{Arrival, REQUEST_ID};
use ttfx_edge::error::json_error;
use ttfx_records::{Kind, Record, RecordHandle, RecordOutcome, lock};

use crate::ProxyState;
use crate::provider_timing;
use crate::upstream::{Auth, Upstream};
use crate::upstream_conn::{self, Sender};

/// `GET /` lists the upstreams; every other path is forwarded to the upstream it names.
pub fn router(state: Arc<ProxyState>) -> Router {
    Router::new()
        .route("/", get(list))
        .route("/{upstream}", any(root))
        .route("/{upstream}/{*rest}", any(forward))
        .with_state(state)
}

async fn root(
    state: State<Arc<ProxyState>>,
    arrival: Extension<Arrival>,
    Path(name): Path<String>,
    uri: OriginalUri,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    forward(
        state,
        arrival,
        Path((name, String::new())),
        uri,
        method,
        headers,
        body,
    )
    .await
}

/// `GET /proxy`: the configured upstreams and their chat endpoints, for the lab page's
/// target picker and for people. Names, hosts and APIs only: never a key or a header.
async fn list(State(state): State<Arc<ProxyState>>, headers: HeaderMap) -> Response {
    if let Err(why) = state.access.check(&headers) {
        return error(StatusCode::FORBIDDEN, &why);
    }
    let upstreams: Vec<_> = state
        .upstreams
        .0
        .iter()
        .map(|u| {
            let chat = u.chat.as_ref().map(|c| {
                json!({
                    "api": c.api.as_str(),
                    "dialect": c.dialect.as_str(),
                    "url": format!("/proxy/{}/{}", u.name, c.path),
                })
            });
            json!({
                "name": u.name,
                "preset": u.preset,
                "host": u.authority,
                "key": u.key.is_some(),
                "chat": chat,
            })
        })
        .collect();
    axum::Json(json!({ "upstreams": upstreams })).into_response()
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

fn error(status: StatusCode, message: &str) -> Response {
    json_error(
        status,
        &json!({ "error": { "message": message, "type": "ttfx_proxy_error" } }),
    )
}

/// Headers that belong to one connection, or that the proxy sets itself.
fn dropped_request_header(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection" | "keep-alive" | "proxy-connection" | "proxy-authorization" | "te"
            | "trailer" | "transfer-encoding" | "upgrade" | "host" | "content-length"
            // Asked uncompressed, so the record can decode the stream as it passes.
            | "accept-encoding"
            // The proxy sends its own (the arrival's), so the upstream gets exactly one.
            | "x-request-id"
            // The browser's origin and cookies are for this server, not the upstream.
            | "origin" | "referer" | "cookie"
    )
}

fn dropped_response_header(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection" | "keep-alive" | "transfer-encoding" | "upgrade" | "trailer"
            // This server's CORS layer answers for the upstream.
            | "access-control-allow-origin" | "access-control-expose-headers"
            | "access-control-allow-credentials"
    )
}

pub const KEY_HEADERS: [&str; 3] = ["authorization", "x-api-key", "api-key"];

async fn forward(
    State(state): State<Arc<ProxyState>>,
    Extension(arrival): Extension<Arrival>,
    Path((name, _decoded_rest)): Path<(String, String)>,
    OriginalUri(uri): OriginalUri,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Before anything else, and before any record: a refused request reaches no upstream.
    if let Err(why) = state.access.check(&headers) {
        return error(StatusCode::FORBIDDEN, &why);
    }
    let Some(upstream) = state.upstreams.get(&name) else {
        let known = state.upstreams.names();
        let message = if known.is_empty() {
            format!(
                "unknown upstream `{name}`: no upstreams are configured (name them in the \
                 [upstreams] table of `ttfx serve --config FILE`); this is not an open proxy"
            )
        } else {
            format!(
                "unknown upstream `{name}`; configured: {}. Only upstreams named in the \
                 config are reachable",
                known.join(", ")
            )
        };
        return error(StatusCode::NOT_FOUND, &message);
    };
    // The dialect comes from the response's content type and first frames.
    let mut record = Record::new(
        &arrival.id,
        Kind::Proxy,
        uri.path(),
        None,
        arrival.at,
        arrival.unix_ms,
    );
    record.upstream = Some(name.clone());
    let record = state.records.insert(record);
    let rest = match raw_rest(uri.path(), &name) {
        Ok(rest) => rest,
        Err(message) => return fail(&record, StatusCode::BAD_REQUEST, &message),
    };

    let target = upstream_target(upstream, &rest, uri.query());
    let request = match upstream_request(upstream, &arrival.id, method, &headers, &target, body) {
        Ok(r) => r,
        Err(message) => return fail(&record, StatusCode::BAD_REQUEST, &message),
    };

    let timeouts = upstream.timeouts;
    let connection = match upstream_conn::connect(upstream).await {
        Ok(c) => c,
        Err(e) => {
            if let Some(tcp) = e.tcp_connect_ms {
                lock(&record).duration("tcp_connect", tcp);
            }
            return if e.timed_out {
                timed_out(&record, &e.message)
            } else {
                fail(&record, StatusCode::BAD_GATEWAY, &e.message)
            };
        }
    };
    let mut sender = connection.sender;
    {
        let t = connection.timings;
        let mut r = lock(&record);
        r.duration("tcp_connect", t.tcp_connect_ms);
        if let Some(tls) = t.tls_handshake_ms {
            r.duration("tls_handshake", tls);
        }
        r.duration("connect", t.connect_ms());
        r.protocol = Some(t.protocol.as_str());
    }
    let response = match tokio::time::timeout(timeouts.headers, sender.send(request)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let message = format!("upstream `{name}`: no response: {e}");
            return fail(&record, StatusCode::BAD_GATEWAY, &message);
        }
        Err(_) => {
            let message = format!(
                "upstream `{name}`: no response headers within {} ms (header_timeout_ms)",
                timeouts.headers.as_millis()
            );
            return timed_out(&record, &message);
        }
    };
    let status = response.status();
    let (parts, incoming) = response.into_parts();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let now = Instant::now();
    let (timings, problems) = provider_timing::read(&parts.headers);
    {
        let mut r = lock(&record);
        r.headers(status.as_u16(), content_type, now);
        r.header_timings = timings;
        r.header_problems = problems;
    }
    let (tx, body) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let body = Body::from_stream(futures_util::stream::unfold(body, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }));
    let mut res = Response::new(body);
    *res.status_mut() = status;
    for (k, v) in &parts.headers {
        if !dropped_response_header(k) {
            res.headers_mut().append(k.clone(), v.clone());
        }
    }
    // The upstream's own id stays readable; ours replaces it in `x-request-id`.
    if let Some(v) = parts.headers.get(&REQUEST_ID) {
        res.headers_mut().insert("x-upstream-request-id", v.clone());
    }
    let tap = Tap {
        record,
        failed: !status.is_success(),
        idle: timeouts.idle,
        _connection: sender,
    };
    tokio::spawn(tap.pump(incoming, tx));
    res
}

fn fail(record: &RecordHandle, status: StatusCode, message: &str) -> Response {
    end_early(record, status, message, RecordOutcome::Failed)
}

/// The upstream took longer than its configured timeout: 504 to the client, `timeout`
/// in the record.
fn timed_out(record: &RecordHandle, message: &str) -> Response {
    end_early(
        record,
        StatusCode::GATEWAY_TIMEOUT,
        message,
        RecordOutcome::Timeout,
    )
}

fn end_early(
    record: &RecordHandle,
    status: StatusCode,
    message: &str,
    outcome: RecordOutcome,
) -> Response {
    let now = Instant::now();
    let mut r = lock(record);
    r.headers(status.as_u16(), None, now);
    r.error = Some(message.to_owned());
    r.end(outcome, now);
    error(status, message)
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
    for (k, v) in headers {
        let is_key = KEY_HEADERS.contains(&k.as_str());
        // The client's own key goes through only when the config adds none.
        if dropped_request_header(k) || (is_key && upstream.key.is_some()) {
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

/// Reads the upstream body: each frame goes to the client first, then into the record.
struct Tap {
    record: RecordHandle,
    /// An HTTP error status (a server-reported failure in the stream is the record's).
    failed: bool,
    /// Longest wait for the next body frame.
    idle: std::time::Duration,
    /// Held until the body ends: the connection is this request's alone.
    _connection: Sender,
}

impl Tap {
    /// The upstream body broke (`error`): the client's stream breaks too, as it would
    /// without the proxy, and the record ends with `outcome` and the error's text.
    async fn broken(
        &self,
        tx: &tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
        error: std::io::Error,
        outcome: RecordOutcome,
    ) {
        let now = Instant::now();
        let message = error.to_string();
        let _ = tx.send(Err(error)).await;
        let mut r = lock(&self.record);
        r.error = Some(message);
        r.end(outcome, now);
    }

    async fn pump(
        self,
        mut incoming: hyper::body::Incoming,
        tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    ) {
        loop {
            let next = match tokio::time::timeout(self.idle, incoming.frame()).await {
                Ok(next) => next,
                Err(_) => {
                    let message = format!(
                        "upstream body: no bytes for {} ms (idle_timeout_ms)",
                        self.idle.as_millis()
                    );
                    let timeout = std::io::Error::new(std::io::ErrorKind::TimedOut, message);
                    return self.broken(&tx, timeout, RecordOutcome::Timeout).await;
                }
            };
            let frame = match next {
                None => break,
                Some(Ok(frame)) => frame,
                Some(Err(e)) => {
                    let message = format!("upstream body: {e}");
                    let dropped =
                        std::io::Error::new(std::io::ErrorKind::ConnectionAborted, message);
                    return self.broken(&tx, dropped, RecordOutcome::Dropped).await;
                }
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if data.is_empty() {
                continue;
            }
            let now = Instant::now();
            let sent = tx.send(Ok(data.clone())).await;
            lock(&self.record).chunk(now, &data);
            if sent.is_err() {
                lock(&self.record).end(RecordOutcome::ClientGone, Instant::now());
                return;
            }
        }
        let outcome = if self.failed {
            RecordOutcome::Failed
        } else {
            RecordOutcome::Completed
        };
        lock(&self.record).end(outcome, Instant::now());
    }
}
