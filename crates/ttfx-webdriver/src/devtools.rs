//! A DevTools protocol client for the page a chromedriver session drives: commands and
//! their answers, and the target's events (which chromedriver's `goog/cdp/execute`
//! endpoint cannot deliver).
//!
//! chromedriver names the browser's DevTools address in the session's capabilities
//! (`goog:chromeOptions.debuggerAddress`); `http://ADDR/json` lists the targets, each with
//! its `webSocketDebuggerUrl`. Several clients may attach to one target, so chromedriver
//! keeps driving the page while this one listens.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

type Sink = futures_util::stream::SplitSink<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    Message,
>;
type Pending = Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// How long a command may wait for its answer.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// One DevTools event: its method and params.
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub params: Value,
}

/// A connection to one target's DevTools WebSocket.
pub struct Cdp {
    sink: Mutex<Sink>,
    next_id: AtomicU64,
    pending: Pending,
    reader: tokio::task::JoinHandle<()>,
}

impl Cdp {
    /// Attaches to the page of the chromedriver session whose `capabilities` are given
    /// (its first `page` target).
    pub async fn attach(
        capabilities: Option<&serde_json::Map<String, Value>>,
    ) -> anyhow::Result<(Cdp, mpsc::UnboundedReceiver<Event>)> {
        let address = capabilities
            .and_then(|caps| caps.get("goog:chromeOptions"))
            .and_then(|options| options["debuggerAddress"].as_str())
            .context("the session names no goog:chromeOptions.debuggerAddress (not chromedriver?)")?
            .to_owned();
        let targets: Value = serde_json::from_str(&http_get(&address, "/json").await?)
            .context("DevTools /json is not JSON")?;
        let url = targets
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .with_context(|| format!("no page target at {address}: {targets}"))?
            .to_owned();
        Cdp::connect(&url).await
    }

    /// Connects to a `ws://` DevTools URL; events arrive on the returned channel.
    pub async fn connect(url: &str) -> anyhow::Result<(Cdp, mpsc::UnboundedReceiver<Event>)> {
        let (socket, _) = tokio_tungstenite::connect_async(url)
            .await
            .with_context(|| format!("cannot open the DevTools WebSocket {url}"))?;
        let (sink, mut stream) = socket.split();
        let pending: Pending = Arc::default();
        let (events, receiver) = mpsc::unbounded_channel();
        let answers = pending.clone();
        let reader = tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let Message::Text(text) = message else {
                    continue;
                };
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if let Some(id) = value["id"].as_u64() {
                    let waiter = answers.lock().ok().and_then(|mut p| p.remove(&id));
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(value);
                    }
                } else if let Some(method) = value["method"].as_str() {
                    let _ = events.send(Event {
                        method: method.to_owned(),
                        params: value["params"].clone(),
                    });
                }
            }
        });
        let cdp = Cdp {
            sink: Mutex::new(sink),
            next_id: AtomicU64::new(1),
            pending,
            reader,
        };
        Ok((cdp, receiver))
    }

    /// Runs `method` with `params` and returns its result (an error answer is an error).
    pub async fn call(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .map_err(|_| anyhow::anyhow!("DevTools client poisoned"))?
            .insert(id, tx);
        self.write(id, method, params).await?;
        let answer = tokio::time::timeout(COMMAND_TIMEOUT, rx)
            .await
            .with_context(|| format!("{method}: no answer within {COMMAND_TIMEOUT:?}"))?
            .with_context(|| format!("{method}: the DevTools connection closed"))?;
        if let Some(error) = answer.get("error") {
            bail!("{method} failed: {error}");
        }
        Ok(answer["result"].clone())
    }

    /// Sends `method` without waiting for its answer (for acknowledgements that must not
    /// hold up the event loop).
    pub async fn send(&self, method: &str, params: Value) -> anyhow::Result<()> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.write(id, method, params).await
    }

    /// Writes one command to the socket.
    async fn write(&self, id: u64, method: &str, params: Value) -> anyhow::Result<()> {
        let message = json!({ "id": id, "method": method, "params": params }).to_string();
        self.sink
            .lock()
            .await
            .send(Message::Text(message.into()))
            .await
            .with_context(|| format!("cannot send {method}"))
    }
}

impl Drop for Cdp {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// `GET path` from the DevTools HTTP endpoint at `address` (loopback `host:port`).
async fn http_get(address: &str, path: &str) -> anyhow::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .with_context(|| format!("cannot reach DevTools at {address}"))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    // Chromium's DevTools HTTP server keeps the connection open: read the head, then
    // Content-Length bytes of body.
    let read = async {
        let mut response = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                bail!("DevTools closed the connection mid-answer");
            }
            response.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&response);
            let Some((head, body)) = text.split_once("\r\n\r\n") else {
                continue;
            };
            if !head.starts_with("HTTP/1.1 200") {
                bail!("GET {path} at {address}: {head}");
            }
            let length = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .context("DevTools answered without Content-Length")?;
            if body.len() >= length {
                return Ok(body[..length].to_owned());
            }
        }
    };
    tokio::time::timeout(COMMAND_TIMEOUT, read)
        .await
        .context("DevTools /json did not answer")?
}
