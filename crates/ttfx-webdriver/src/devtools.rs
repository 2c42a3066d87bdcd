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

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::time::error::Elapsed;
use tokio_tungstenite::tungstenite::{self, Message};

pub mod network;

type Sink = futures_util::stream::SplitSink<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    Message,
>;
type Pending = Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// How long a command may wait for its answer.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a DevTools connection or command failed.
#[derive(Debug, thiserror::Error)]
pub enum DevToolsError {
    #[error("the session names no goog:chromeOptions.debuggerAddress (not chromedriver?)")]
    NoDebuggerAddress,
    #[error("DevTools /json is not JSON")]
    TargetsNotJson(#[source] serde_json::Error),
    #[error("no page target at {address}: {targets}")]
    NoPageTarget { address: String, targets: Value },
    #[error("cannot open the DevTools WebSocket {url}")]
    Connect {
        url: String,
        #[source]
        source: tungstenite::Error,
    },
    #[error("DevTools client poisoned")]
    Poisoned,
    #[error("{method}: no answer within {:?}", COMMAND_TIMEOUT)]
    NoAnswer {
        method: String,
        #[source]
        source: Elapsed,
    },
    #[error("{method}: the DevTools connection closed")]
    Closed {
        method: String,
        #[source]
        source: oneshot::error::RecvError,
    },
    /// The command's answer was an error.
    #[error("{method} failed: {error}")]
    Failed { method: String, error: Value },
    #[error("cannot send {method}")]
    Send {
        method: String,
        #[source]
        source: tungstenite::Error,
    },
    #[error("cannot reach DevTools at {address}")]
    Reach {
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("DevTools closed the connection mid-answer")]
    ClosedMidAnswer,
    #[error("GET {path} at {address}: {head}")]
    HttpStatus {
        path: String,
        address: String,
        head: String,
    },
    #[error("DevTools answered without Content-Length")]
    NoContentLength,
    #[error("DevTools /json did not answer")]
    HttpTimeout(#[source] Elapsed),
    /// Reading or writing the DevTools HTTP endpoint.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

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
    ) -> Result<(Cdp, mpsc::UnboundedReceiver<Event>), DevToolsError> {
        let address = capabilities
            .and_then(|caps| caps.get("goog:chromeOptions"))
            .and_then(|options| options["debuggerAddress"].as_str())
            .ok_or(DevToolsError::NoDebuggerAddress)?
            .to_owned();
        let targets: Value = serde_json::from_str(&http_get(&address, "/json").await?)
            .map_err(DevToolsError::TargetsNotJson)?;
        let url = targets
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "page")
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .map(str::to_owned);
        let Some(url) = url else {
            return Err(DevToolsError::NoPageTarget { address, targets });
        };
        Cdp::connect(&url).await
    }

    /// Connects to a `ws://` DevTools URL; events arrive on the returned channel.
    pub async fn connect(
        url: &str,
    ) -> Result<(Cdp, mpsc::UnboundedReceiver<Event>), DevToolsError> {
        let (socket, _) = tokio_tungstenite::connect_async(url)
            .await
            .map_err(|source| DevToolsError::Connect {
                url: url.to_owned(),
                source,
            })?;
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
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, DevToolsError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .map_err(|_| DevToolsError::Poisoned)?
            .insert(id, tx);
        self.write(id, method, params).await?;
        let answer = tokio::time::timeout(COMMAND_TIMEOUT, rx)
            .await
            .map_err(|source| DevToolsError::NoAnswer {
                method: method.to_owned(),
                source,
            })?
            .map_err(|source| DevToolsError::Closed {
                method: method.to_owned(),
                source,
            })?;
        if let Some(error) = answer.get("error") {
            return Err(DevToolsError::Failed {
                method: method.to_owned(),
                error: error.clone(),
            });
        }
        Ok(answer["result"].clone())
    }

    /// Sends `method` without waiting for its answer (for acknowledgements that must not
    /// hold up the event loop).
    pub async fn send(&self, method: &str, params: Value) -> Result<(), DevToolsError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.write(id, method, params).await
    }

    /// Writes one command to the socket.
    async fn write(&self, id: u64, method: &str, params: Value) -> Result<(), DevToolsError> {
        let message = json!({ "id": id, "method": method, "params": params }).to_string();
        self.sink
            .lock()
            .await
            .send(Message::Text(message.into()))
            .await
            .map_err(|source| DevToolsError::Send {
                method: method.to_owned(),
                source,
            })
    }
}

impl Drop for Cdp {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// `GET path` from the DevTools HTTP endpoint at `address` (loopback `host:port`).
async fn http_get(address: &str, path: &str) -> Result<String, DevToolsError> {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|source| DevToolsError::Reach {
            address: address.to_owned(),
            source,
        })?;
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
                return Err(DevToolsError::ClosedMidAnswer);
            }
            response.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&response);
            let Some((head, body)) = text.split_once("\r\n\r\n") else {
                continue;
            };
            if !head.starts_with("HTTP/1.1 200") {
                return Err(DevToolsError::HttpStatus {
                    path: path.to_owned(),
                    address: address.to_owned(),
                    head: head.to_owned(),
                });
            }
            let length = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .ok_or(DevToolsError::NoContentLength)?;
            if body.len() >= length {
                return Ok(body[..length].to_owned());
            }
        }
    };
    tokio::time::timeout(COMMAND_TIMEOUT, read)
        .await
        .map_err(DevToolsError::HttpTimeout)?
}
