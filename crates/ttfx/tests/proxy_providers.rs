//! Provider presets and the providers' own timing headers, through a real `ttfx serve`
//! in front of a real loopback fixture upstream that answers the way each provider
//! documents (its auth header, its version header, its timing headers).

// The fixture server is test code outside #[test] functions: a failure there is a
// failed test.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::RawQuery;
use axum::http::HeaderMap;
use axum::routing::post;
use common::{post_with, record, ttfx};
use ttfx_e2e::ServeProcess;

const ANTHROPIC_KEY: &str = "sk-ant-fixture-1";
const AZURE_KEY: &str = "azure-fixture-2";

/// What the fixture saw of one request: header facts, never a key's value.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    query: Option<String>,
    headers: HeaderMap,
}

fn sse_reply() -> &'static str {
    "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n"
}

async fn fixture() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = |path: &'static str, seen: Arc<Mutex<Vec<Seen>>>| {
        // The body is read, as a provider does: a server that answers without reading
        // it may close while the proxy is still writing.
        move |RawQuery(query): RawQuery, headers: HeaderMap, _body: axum::body::Bytes| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(Seen {
                    path: path.to_owned(),
                    query,
                    headers,
                });
                axum::response::Response::builder()
                    .header("content-type", "text/event-stream")
                    // What OpenAI, an Envoy in front of a model and a CDN send.
                    .header("openai-processing-ms", "318")
                    .header("x-envoy-upstream-service-time", "305")
                    .header("server-timing", "queue;dur=12.5, prefill;dur=40")
                    .header("server-timing", "cfL4;desc=\"?proto=TCP\"")
                    .body(axum::body::Body::from(sse_reply()))
                    .unwrap()
            }
        }
    };
    let app = Router::new()
        .route("/v1/messages", post(log("/v1/messages", seen.clone())))
        .route(
            "/openai/deployments/gpt/chat/completions",
            post(log("azure-deployment", seen.clone())),
        )
        .route(
            "/v1/chat/completions",
            post(log("/v1/chat/completions", seen.clone())),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

/// A config per test (`name`): tests run at once, each with its own fixture.
fn config(name: &str, upstream: &str) -> std::path::PathBuf {
    let text = format!(
        "[upstreams.claude]\npreset = \"anthropic\"\nbase_url = \"{upstream}\"\n\
         api_key = \"{ANTHROPIC_KEY}\"\n\
         [upstreams.azure]\npreset = \"azure-openai\"\n\
         base_url = \"{upstream}/openai/deployments/gpt\"\napi_version = \"2024-10-21\"\n\
         api_key = \"{AZURE_KEY}\"\n\
         [upstreams.local]\npreset = \"vllm\"\nbase_url = \"{upstream}\"\n"
    );
    let path =
        std::env::temp_dir().join(format!("ttfx-providers-{}-{name}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn presets_send_each_providers_auth_and_headers_and_list_without_secrets() {
    let (upstream, seen) = fixture().await;
    let config = config("presets", &upstream);
    let serve = ServeProcess::start(ttfx(), &["--config", config.to_str().unwrap()]).unwrap();

    // Anthropic: x-api-key and its version header; the client's bearer is not forwarded.
    let c = post_with(
        &format!("{}proxy/claude/v1/messages", serve.url),
        "{}",
        &[("authorization", "Bearer client-key")],
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.text());
    // Azure OpenAI deployment path: api-key and api-version; a client's own version wins.
    let c = post_with(
        &format!("{}proxy/azure/chat/completions", serve.url),
        "{}",
        &[],
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.text());
    let url = format!(
        "{}proxy/azure/chat/completions?api-version=2025-01-01",
        serve.url
    );
    let c = post_with(&url, "{}", &[]).await;
    assert_eq!(c.status, 200, "{}", c.text());
    // A local preset without a key sends none, and a client's anthropic-version stays.
    let c = post_with(
        &format!("{}proxy/local/v1/chat/completions", serve.url),
        "{}",
        &[("anthropic-version", "client-chosen")],
    )
    .await;
    assert_eq!(c.status, 200);

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    let claude = &seen[0];
    assert_eq!(claude.path, "/v1/messages");
    assert_eq!(header(&claude.headers, "x-api-key"), Some(ANTHROPIC_KEY));
    assert_eq!(
        header(&claude.headers, "anthropic-version"),
        Some("2023-06-01")
    );
    assert_eq!(header(&claude.headers, "authorization"), None);
    let azure = &seen[1];
    assert_eq!(azure.path, "azure-deployment");
    assert_eq!(header(&azure.headers, "api-key"), Some(AZURE_KEY));
    assert_eq!(azure.query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(seen[2].query.as_deref(), Some("api-version=2025-01-01"));
    let local = &seen[3];
    assert_eq!(header(&local.headers, "authorization"), None);
    assert_eq!(
        header(&local.headers, "anthropic-version"),
        Some("client-chosen")
    );

    // The list the lab page picks from: names, hosts, chat endpoints; never a key.
    let list = reqwest::get(format!("{}proxy", serve.url)).await.unwrap();
    assert_eq!(list.status(), 200);
    let text = list.text().await.unwrap();
    assert!(
        !text.contains(ANTHROPIC_KEY) && !text.contains(AZURE_KEY),
        "{text}"
    );
    let list: serde_json::Value = serde_json::from_str(&text).unwrap();
    let find = |name: &str| {
        list["upstreams"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["name"] == name)
            .unwrap()
            .clone()
    };
    let claude = find("claude");
    assert_eq!(claude["preset"], "anthropic");
    assert_eq!(claude["key"], true);
    assert_eq!(claude["chat"]["api"], "anthropic");
    assert_eq!(claude["chat"]["url"], "/proxy/claude/v1/messages");
    assert_eq!(
        find("azure")["chat"]["url"],
        "/proxy/azure/chat/completions"
    );
    assert_eq!(find("local")["key"], false);
    // Another site cannot read it either.
    let refused = reqwest::Client::new()
        .get(format!("{}proxy", serve.url))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
}

#[tokio::test]
async fn provider_timing_headers_reach_the_record_and_server_timing_reaches_the_page() {
    let (upstream, _) = fixture().await;
    let config = config("timing", &upstream);
    let serve = ServeProcess::start(ttfx(), &["--config", config.to_str().unwrap()]).unwrap();
    let own_origin = serve.url.trim_end_matches('/').to_owned();
    let c = post_with(
        &format!("{}proxy/local/v1/chat/completions", serve.url),
        "{}",
        &[("x-request-id", "timing-1"), ("origin", &own_origin)],
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.text());
    // The page gets every Server-Timing header as sent, readable by its scripts, and
    // ttfx serve's own naming its record (the runner joins a page's request by it).
    let server_timing: Vec<&str> = c
        .headers
        .get_all("server-timing")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(
        server_timing,
        [
            "queue;dur=12.5, prefill;dur=40",
            "cfL4;desc=\"?proto=TCP\"",
            "ttfx-record;desc=timing-1"
        ]
    );
    let exposed = c.header("access-control-expose-headers").unwrap_or("");
    assert!(exposed.contains("server-timing"), "{exposed}");
    assert_eq!(c.header("openai-processing-ms"), Some("318"));

    let r = record(&serve.url, "timing-1").await;
    let timings = r["server"]["timings"].as_array().unwrap();
    let find = |name: &str| {
        timings
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {timings:?}"))
    };
    assert_eq!(find("openai-processing-ms")["duration_ms"], 318.0);
    assert_eq!(find("openai-processing-ms")["source"], "response_header");
    assert!(
        find("openai-processing-ms")["description"]
            .as_str()
            .unwrap()
            .starts_with("OpenAI")
    );
    assert_eq!(find("x-envoy-upstream-service-time")["duration_ms"], 305.0);
    assert_eq!(find("queue")["duration_ms"], 12.5);
    assert_eq!(find("queue")["source"], "server_timing_header");
    assert_eq!(find("prefill")["duration_ms"], 40.0);
    // The proxy's own milestones stay beside them, with their own source.
    assert_eq!(find("first_token")["source"], "vantage_proxy");
    assert!(r.get("header_problems").is_none(), "{r}");
    // What a client reads back is the same record.
    ttfx_core::ServerRecord::from_json(&r.to_string()).unwrap();
}
