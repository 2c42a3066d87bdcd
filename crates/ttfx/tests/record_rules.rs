//! One set of milestone rules: what `ttfx serve` records for a stream (vantage proxy and
//! simulator) equals what the probe's `Recorder` derives from the same bytes at the same
//! times.
//!
//! Every recorded stream of ttfx-core's conformance vectors goes through the proxy from
//! a loopback upstream, in several chunks; every API goes through the simulator. Each
//! server record is then replayed: the body the client received is cut where the
//! record's chunks were cut and fed to a fresh `Recorder` (dialect detected from the
//! content type and first frames, as the probe does) at the record's own chunk times.
//! The milestones must be identical, name for name and value for value.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Path;
use axum::routing::get;
use common::{record, ttfx};
use ttfx_core::decode::Limits;
use ttfx_core::{ChatApi, Milestone, Recorder};
use ttfx_e2e::{ServeProcess, byte_server};

/// Every recorded stream, with the content type its server would send.
fn streams() -> Vec<(String, &'static str)> {
    byte_server::vector_names()
        .into_iter()
        .map(|name| {
            let content_type = byte_server::vector_content_type(&name);
            (name, content_type)
        })
        .collect()
}

/// The upstream: `/v1/{name}` answers with that vector's bytes in five pieces, 3 ms
/// apart, so the proxy sees several chunks (and events split across them).
async fn upstream() -> String {
    let app = Router::new().route(
        "/v1/{name}",
        get(|Path(name): Path<String>| async move {
            let bytes =
                std::fs::read(byte_server::vectors_dir().join(format!("{name}.in"))).unwrap();
            let content_type = streams()
                .into_iter()
                .find(|(n, _)| *n == name)
                .map(|(_, c)| c)
                .unwrap();
            let step = bytes.len().div_ceil(5).max(1);
            let pieces: Vec<Vec<u8>> = bytes.chunks(step).map(<[u8]>::to_vec).collect();
            let body = futures_util::stream::unfold(0usize, move |i| {
                let piece = pieces.get(i).cloned();
                async move {
                    let piece = piece?;
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(3)).await;
                    }
                    Some((Ok::<_, std::io::Error>(piece), i + 1))
                }
            });
            axum::response::Response::builder()
                .header("content-type", content_type)
                .body(Body::from_stream(body))
                .unwrap()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// Milestones by name from a record's JSON.
fn recorded(r: &serde_json::Value) -> BTreeMap<String, f64> {
    r["milestones"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect()
}

/// The record replayed through a fresh `Recorder`: `body` cut at the record's chunk
/// sizes, each piece at the record's time for it.
fn replayed(r: &serde_json::Value, body: &[u8], content_type: &str) -> BTreeMap<String, f64> {
    let at = |m: &str| r["milestones"][m].as_f64().unwrap();
    let mut recorder = Recorder::new(None, Limits::DEFAULT);
    let status = u16::try_from(r["status"].as_u64().unwrap()).unwrap();
    recorder.headers(at("headers"), status, Some(content_type), &[]);
    let mut rest = body;
    for chunk in r["chunks"].as_array().unwrap() {
        let n = usize::try_from(chunk["bytes"].as_u64().unwrap()).unwrap();
        let (piece, tail) = rest.split_at(n);
        recorder.chunk(chunk["at_ms"].as_f64().unwrap(), piece);
        rest = tail;
    }
    assert!(rest.is_empty(), "the record's chunks cover the whole body");
    recorder.end(at("done"));
    recorder
        .finish()
        .milestones
        .iter()
        .filter(|(m, _)| *m != Milestone::RequestStart)
        .map(|(m, ms)| (m.as_str().to_owned(), ms))
        .collect()
}

async fn fetch(url: &str, id: &str, body: Option<String>) -> (String, Vec<u8>) {
    let client = reqwest::Client::new();
    let request = match body {
        Some(b) => client.post(url).body(b),
        None => client.get(url),
    };
    let response = request.header("x-request-id", id).send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (content_type, response.bytes().await.unwrap().to_vec())
}

#[tokio::test]
async fn the_proxy_records_every_dialect_by_the_probes_rules() {
    let upstream = upstream().await;
    let config = std::env::temp_dir().join(format!("ttfx-rules-{}.toml", std::process::id()));
    std::fs::write(
        &config,
        format!("[upstreams.vec]\nbase_url = \"{upstream}/v1\"\n"),
    )
    .unwrap();
    let serve = ServeProcess::start(ttfx(), &["--config", config.to_str().unwrap()]).unwrap();
    let streams = streams();
    assert!(streams.len() >= 20, "{} vectors", streams.len());
    let (mut with_tokens, mut multi_chunk) = (0, 0);
    for (name, _) in &streams {
        let id = format!("rules-{name}");
        let url = format!("{}proxy/vec/{name}", serve.url.as_str());
        let (content_type, body) = fetch(&url, &id, None).await;
        let r = record(serve.url.as_str(), &id).await;
        multi_chunk += usize::from(r["chunks"].as_array().unwrap().len() >= 2);
        let server = recorded(&r);
        assert!(server.contains_key("first_byte"), "{name}: {server:?}");
        with_tokens += usize::from(server.contains_key("first_token"));
        assert_eq!(server, replayed(&r, &body, &content_type), "{name}");
    }
    // Most vectors carry tokens: the comparison covers the token rules, not only bytes.
    assert!(with_tokens >= 15, "{with_tokens} vectors with tokens");
    // Events split across chunks are compared too. (How many streams the proxy reads in
    // pieces depends on load: a late read coalesces pieces 3 ms apart. One is enough.)
    assert!(multi_chunk >= 1, "{multi_chunk} vectors in several chunks");
    let _ = std::fs::remove_file(config);
}

#[tokio::test]
async fn the_simulator_records_every_api_by_the_probes_rules() {
    let serve = ServeProcess::start(ttfx(), &[]).unwrap();
    for api in ChatApi::ALL {
        for profile in ["default", "reasoning"] {
            let id = format!("rules-{api}-{profile}");
            let url = format!(
                "{}sim/{profile}/{}?ttft_ms=5&tokens_per_second=400&output_tokens=12&reasoning_tokens=3",
                serve.url.as_str(),
                api.path()
            );
            let body = api.streaming_body("rules", "hi");
            let (content_type, bytes) = fetch(&url, &id, Some(body)).await;
            let r = record(serve.url.as_str(), &id).await;
            let server = recorded(&r);
            for m in [
                "first_event",
                "first_token",
                "first_visible_token",
                "last_token",
            ] {
                assert!(
                    server.contains_key(m),
                    "{api} {profile}: no {m} in {server:?}"
                );
            }
            assert_eq!(
                server,
                replayed(&r, &bytes, &content_type),
                "{api} {profile}"
            );
        }
    }
}
