//! A loopback server that streams known bytes, so a test can compare what the app
//! received with exactly what was sent (the simulators put request ids in their bodies),
//! that replays ttfx-core's recorded streams, and that collects beacons, so a test can
//! read what the probe sent.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;

/// The bytes `/bytes?seed=S&len=N` sends: every byte value, in a seeded order.
pub fn bytes(seed: u64, len: usize) -> Vec<u8> {
    // xorshift64*: deterministic, and covers all byte values (invalid UTF-8 included).
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

#[derive(Debug, Deserialize)]
struct Params {
    seed: u64,
    len: usize,
    /// Bytes per chunk.
    chunk: usize,
    /// Pause between chunks.
    gap_ms: u64,
}

/// `data` in pieces of `piece` bytes, each sent `gap_ms` after the one before, readable
/// from any origin.
fn paced(data: &[u8], piece: usize, gap_ms: u64, content_type: &str) -> Response {
    let pieces: Vec<Vec<u8>> = data.chunks(piece.max(1)).map(<[u8]>::to_vec).collect();
    let gap = Duration::from_millis(gap_ms);
    let body = futures_util::stream::unfold(pieces.into_iter(), move |mut rest| async move {
        let piece = rest.next()?;
        tokio::time::sleep(gap).await;
        Some((
            Ok::<_, std::convert::Infallible>(bytes::Bytes::from(piece)),
            rest,
        ))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .body(Body::from_stream(body))
        .unwrap_or_default()
}

#[derive(Debug, Deserialize)]
struct LargeParams {
    /// Total bytes.
    len: u64,
    /// Bytes per chunk.
    chunk: usize,
}

/// `/large?len=N&chunk=C`: N bytes of SSE comment lines (`: xxxx…\n`, which carry no
/// event), as fast as the connection takes them, made as they are sent: the server holds
/// one chunk, however long the body.
async fn large(Query(p): Query<LargeParams>) -> Response {
    let chunk = p.chunk.clamp(2, 1 << 20);
    let mut line = vec![b'x'; chunk];
    line[0] = b':';
    line[chunk - 1] = b'\n';
    let line = bytes::Bytes::from(line);
    let body = futures_util::stream::unfold(p.len, move |left| {
        let line = line.clone();
        async move {
            if left == 0 {
                return None;
            }
            let n = usize::try_from(left.min(line.len() as u64)).unwrap_or(line.len());
            let piece = if n == line.len() {
                line
            } else {
                // The last piece still ends its line.
                let mut tail = vec![b'x'; n];
                tail[n - 1] = b'\n';
                bytes::Bytes::from(tail)
            };
            Some((Ok::<_, std::convert::Infallible>(piece), left - n as u64))
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .body(Body::from_stream(body))
        .unwrap_or_default()
}

async fn stream(Query(p): Query<Params>) -> Response {
    paced(
        &bytes(p.seed, p.len),
        p.chunk,
        p.gap_ms,
        "application/octet-stream",
    )
}

/// The visible text of token `i` in the transport tests' streams: ASCII, a two-byte and a
/// four-byte character, so a decoding that splits or re-encodes UTF-8 wrongly shows.
pub fn token(i: usize) -> String {
    match i % 3 {
        0 => format!("tok{i} "),
        1 => format!("é{i} "),
        _ => format!("🙂{i} "),
    }
}

/// The `data` of each event `/chat_sse?tokens=N` sends, in order: N OpenAI chat deltas,
/// one token each, then `[DONE]`.
pub fn chat_sse_data(tokens: usize) -> Vec<String> {
    let mut data: Vec<String> = (0..tokens)
        .map(|i| {
            serde_json::json!({ "object": "chat.completion.chunk",
                "choices": [{ "index": 0, "delta": { "content": token(i) } }] })
            .to_string()
        })
        .collect();
    data.push("[DONE]".to_owned());
    data
}

/// The events `/chat_sse?tokens=N&format=anthropic` sends, as (type, data, id): an
/// Anthropic Messages stream, every event named and numbered (EventSource apps listen to
/// named types with addEventListener, and see the ids as `lastEventId`).
pub fn anthropic_sse_events(tokens: usize) -> Vec<(String, String, String)> {
    let mut events = vec![
        (
            "message_start",
            serde_json::json!({ "type": "message_start", "message": { "id": "msg_1",
            "type": "message", "role": "assistant", "content": [], "model": "sim",
            "usage": { "input_tokens": 5, "output_tokens": 1 } } }),
        ),
        (
            "content_block_start",
            serde_json::json!({ "type": "content_block_start", "index": 0,
            "content_block": { "type": "text", "text": "" } }),
        ),
    ];
    for i in 0..tokens {
        events.push((
            "content_block_delta",
            serde_json::json!({ "type": "content_block_delta",
            "index": 0, "delta": { "type": "text_delta", "text": token(i) } }),
        ));
    }
    events.push((
        "content_block_stop",
        serde_json::json!({ "type": "content_block_stop", "index": 0 }),
    ));
    events.push((
        "message_delta",
        serde_json::json!({ "type": "message_delta",
        "delta": { "stop_reason": "end_turn" }, "usage": { "output_tokens": tokens } }),
    ));
    events.push((
        "message_stop",
        serde_json::json!({ "type": "message_stop" }),
    ));
    events
        .into_iter()
        .enumerate()
        .map(|(k, (t, d))| (t.to_owned(), d.to_string(), format!("e{k}")))
        .collect()
}

#[derive(Debug, Deserialize)]
struct ChatSseParams {
    tokens: usize,
    /// Pause before the first event (the headers go at once).
    ttft_ms: u64,
    /// Pause between events.
    gap_ms: u64,
    /// `anthropic` for [`anthropic_sse_events`]; else OpenAI chat ([`chat_sse_data`]).
    format: Option<String>,
    /// After this many events the body errors: the connection is cut mid-body, without
    /// the chunked encoding's last chunk, so the browser sees a network error.
    cut_after: Option<usize>,
}

/// `/chat_sse?tokens=N&ttft_ms=T&gap_ms=G[&cut_after=K]`: `text/event-stream` by GET
/// (EventSource can only GET), the headers at once, the first event T ms later, then one
/// every G ms; with `cut_after`, the connection is cut after K events.
async fn chat_sse(Query(p): Query<ChatSseParams>) -> Response {
    let texts: Vec<String> = if p.format.as_deref() == Some("anthropic") {
        anthropic_sse_events(p.tokens)
            .into_iter()
            .map(|(t, d, id)| format!("event: {t}\nid: {id}\ndata: {d}\n\n"))
            .collect()
    } else {
        chat_sse_data(p.tokens)
            .into_iter()
            .map(|d| format!("data: {d}\n\n"))
            .collect()
    };
    let events: Vec<(u64, bytes::Bytes)> = texts
        .into_iter()
        .enumerate()
        .map(|(i, text)| {
            let pause = if i == 0 { p.ttft_ms } else { p.gap_ms };
            (pause, bytes::Bytes::from(text))
        })
        .collect();
    let cut_after = p.cut_after.unwrap_or(usize::MAX);
    let body =
        futures_util::stream::unfold(events.into_iter().enumerate(), move |mut rest| async move {
            let (i, (pause, event)) = rest.next()?;
            tokio::time::sleep(Duration::from_millis(pause)).await;
            // An error from the body stream makes hyper drop the connection mid-body.
            let item = if i < cut_after {
                Ok(event)
            } else {
                Err(std::io::Error::other(
                    "cut_after: the test cuts the connection",
                ))
            };
            Some((item, rest))
        });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .body(Body::from_stream(body))
        .unwrap_or_default()
}

/// Where ttfx-core keeps its conformance vectors: recorded streams of every dialect.
pub fn vectors_dir() -> std::path::PathBuf {
    crate::paths::workspace_root().join("crates/ttfx-core/testdata/decode")
}

/// The names of every recorded stream (`NAME.in` in [`vectors_dir`]), sorted.
pub fn vector_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(vectors_dir())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".in").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// The content type the server of a recorded stream sends, by the vector's name.
pub fn vector_content_type(name: &str) -> &'static str {
    if name.starts_with("ollama") || name.starts_with("ndjson") {
        "application/x-ndjson"
    } else if name.starts_with("pcm16") {
        "audio/pcm"
    } else {
        "text/event-stream"
    }
}

#[derive(Debug, Deserialize)]
struct VectorParams {
    name: String,
    /// How many pieces the stream is sent in.
    pieces: usize,
    gap_ms: u64,
}

/// `/vector?name=N&pieces=P&gap_ms=G`: a recorded stream in P pieces, G ms apart.
async fn vector(Query(p): Query<VectorParams>) -> Response {
    let plain = p
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-');
    let data = if plain {
        std::fs::read(vectors_dir().join(format!("{}.in", p.name))).ok()
    } else {
        None
    };
    let Some(data) = data else {
        return Response::builder()
            .status(404)
            .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
            .body(Body::from(format!("no vector `{}`", p.name)))
            .unwrap_or_default();
    };
    let step = data.len().div_ceil(p.pieces.max(1));
    paced(&data, step, p.gap_ms, vector_content_type(&p.name))
}

/// One request received at `POST /collect`.
#[derive(Debug, Clone)]
pub struct Beacon {
    pub content_type: Option<String>,
    pub body: String,
}

/// Beacons received at `POST /collect`, in arrival order.
pub type Beacons = Arc<Mutex<Vec<Beacon>>>;

/// A running byte server.
pub struct ByteServer {
    pub addr: SocketAddr,
    pub beacons: Beacons,
}

/// A collector's CORS answer to the page at `Origin`. `sendBeacon` sends credentials,
/// and an `application/json` body needs a preflight: a cross-origin collector names the
/// page's origin (not `*`) and allows credentials, or the browser never sends the body.
fn collector_cors(headers: &HeaderMap) -> axum::http::response::Builder {
    let origin = headers
        .get(header::ORIGIN)
        .cloned()
        .unwrap_or(HeaderValue::from_static("*"));
    Response::builder()
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin)
        .header(header::ACCESS_CONTROL_ALLOW_CREDENTIALS, "true")
        .header(header::VARY, "origin")
}

async fn collect(State(beacons): State<Beacons>, headers: HeaderMap, body: String) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Ok(mut b) = beacons.lock() {
        b.push(Beacon { content_type, body });
    }
    collector_cors(&headers)
        .status(204)
        .body(Body::empty())
        .unwrap_or_default()
}

/// The preflight of a beacon or keepalive fetch with a JSON body.
async fn collect_preflight(headers: HeaderMap) -> Response {
    collector_cors(&headers)
        .status(204)
        .header(header::ACCESS_CONTROL_ALLOW_METHODS, "POST")
        .header(header::ACCESS_CONTROL_ALLOW_HEADERS, "content-type")
        .header(header::ACCESS_CONTROL_MAX_AGE, "600")
        .body(Body::empty())
        .unwrap_or_default()
}

/// Starts the server on an ephemeral loopback port; it stops with the test's runtime.
pub async fn start() -> anyhow::Result<ByteServer> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let beacons = Beacons::default();
    let app = Router::new()
        .route("/bytes", get(stream))
        .route("/large", get(large))
        .route("/chat_sse", get(chat_sse))
        .route("/vector", get(vector))
        .route("/collect", post(collect).options(collect_preflight))
        .with_state(beacons.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(ByteServer { addr, beacons })
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_are_deterministic_and_cover_every_value() {
        let a = super::bytes(7, 65_536);
        assert_eq!(a, super::bytes(7, 65_536));
        assert_ne!(a, super::bytes(8, 65_536));
        let mut seen = [false; 256];
        for b in &a {
            seen[usize::from(*b)] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
