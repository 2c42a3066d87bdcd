//! `/proxy/{upstream}/…` forwards to an upstream named in the config
//! and times it the way a benchmark client next to the endpoint would (connect, headers,
//! first byte, first event, first token, every chunk, end), keeping that record under the
//! request id.
//!
//! Bytes pass through unchanged and unbuffered (`relay`): each upstream body frame is
//! handed to the client before it is decoded for the record. The record derives its
//! milestones with ttfx-core's `Recorder`, the probe's own rules, so the gaps compare
//! like with like.
//! Each request opens its own upstream connection (`upstream_conn`), so the TCP connect
//! and the TLS handshake are measured every time (a pooled client would hide them).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Extension, OriginalUri, Path, State};
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use http_body_util::Full;
use hyper::body::Incoming;
use serde_json::json;
use tokio::time::Instant;

use ttfx_edge::arrival::Arrival;
use ttfx_edge::error::json_error;
use ttfx_records::{IdInUse, Kind, Record, RecordHandle, RecordOutcome, lock};

use crate::ProxyState;
use crate::upstream::Upstream;
use crate::upstream_conn::{self, Sender};
use crate::{relay, upstream_request};

/// `GET /` lists the upstreams; every other path is forwarded to the upstream it names.
/// Every route checks who calls first ([`guard`]).
pub fn router(state: Arc<ProxyState>) -> Router {
    Router::new()
        .route("/", get(list))
        .route("/{upstream}", any(root))
        .route("/{upstream}/{*rest}", any(forward))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Before anything else, and before any record: a refused request reaches no upstream
/// and learns nothing of them. The peer's address comes from the server's connect info
/// (`ttfx serve` always gives it; without it the peer rule is skipped).
async fn guard(
    State(state): State<Arc<ProxyState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    match state.access.check(request.headers(), peer) {
        Ok(()) => next.run(request).await,
        Err(why) => error(why.status(), &why.to_string()),
    }
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
async fn list(State(state): State<Arc<ProxyState>>) -> Response {
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

fn error(status: StatusCode, message: &str) -> Response {
    json_error(
        status,
        &json!({ "error": { "message": message, "type": "ttfx_proxy_error" } }),
    )
}

async fn forward(
    State(state): State<Arc<ProxyState>>,
    Extension(arrival): Extension<Arrival>,
    Path((name, _decoded_rest)): Path<(String, String)>,
    OriginalUri(uri): OriginalUri,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(upstream) = state.upstreams.get(&name) else {
        return error(StatusCode::NOT_FOUND, &unknown_upstream(&state, &name));
    };
    let record = match open_record(&state, &arrival, uri.path(), &name) {
        Ok(record) => record,
        Err(in_use) => return error(StatusCode::CONFLICT, &in_use.to_string()),
    };
    let built = upstream_request::build(upstream, &arrival.id, &uri, method, &headers, body);
    let request = match built {
        Ok(r) => r,
        Err(refused) => return fail(&record, refused.status, &refused.message),
    };
    let mut sender = match connect(upstream, &record).await {
        Ok(sender) => sender,
        Err(res) => return res,
    };
    let response = match send(&mut sender, request, upstream, &record).await {
        Ok(response) => response,
        Err(res) => return res,
    };
    relay::respond(record, response, upstream.timeouts.idle, sender)
}

/// Why `name` is not forwarded: only the config's upstreams are reachable.
fn unknown_upstream(state: &ProxyState, name: &str) -> String {
    let known = state.upstreams.names();
    if known.is_empty() {
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
    }
}

/// The request's record, kept under its id from now on (a refused path is recorded too);
/// an id a kept record holds is refused (records are write-once), before anything is sent.
fn open_record(
    state: &ProxyState,
    arrival: &Arrival,
    path: &str,
    name: &str,
) -> Result<RecordHandle, IdInUse> {
    // The dialect comes from the response's content type and first frames.
    let mut record = Record::new(
        &arrival.id,
        Kind::Proxy,
        path,
        None,
        arrival.at,
        arrival.unix_ms,
    );
    record.upstream = Some(name.to_owned());
    state.records.insert(record)
}

/// A connection of this request's own, its TCP, TLS and total connect times recorded;
/// a failure is answered (504 for a timeout, else 502) and ends the record.
async fn connect(upstream: &Upstream, record: &RecordHandle) -> Result<Sender, Response> {
    let connection = match upstream_conn::connect(upstream).await {
        Ok(c) => c,
        Err(e) => {
            if let Some(tcp) = e.tcp_connect_ms {
                lock(record).duration("tcp_connect", tcp);
            }
            return Err(if e.timed_out {
                timed_out(record, &e.message)
            } else {
                fail(record, StatusCode::BAD_GATEWAY, &e.message)
            });
        }
    };
    let t = connection.timings;
    let mut r = lock(record);
    r.duration("tcp_connect", t.tcp_connect_ms);
    if let Some(tls) = t.tls_handshake_ms {
        r.duration("tls_handshake", tls);
    }
    r.duration("connect", t.connect_ms());
    r.protocol = Some(t.protocol.as_str());
    Ok(connection.sender)
}

/// Sends the request and waits for the response headers, at most `header_timeout_ms`.
async fn send(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
    upstream: &Upstream,
    record: &RecordHandle,
) -> Result<axum::http::Response<Incoming>, Response> {
    let (name, wait) = (&upstream.name, upstream.timeouts.headers);
    match tokio::time::timeout(wait, sender.send(request)).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => {
            let message = format!("upstream `{name}`: no response: {e}");
            Err(fail(record, StatusCode::BAD_GATEWAY, &message))
        }
        Err(_) => {
            let message = format!(
                "upstream `{name}`: no response headers within {} ms (header_timeout_ms)",
                wait.as_millis()
            );
            Err(timed_out(record, &message))
        }
    }
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
