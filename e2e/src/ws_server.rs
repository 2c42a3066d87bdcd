//! A loopback WebSocket server that answers like OpenAI's Realtime API, with known
//! messages, so a test can compare what the app received with exactly what was sent.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use tokio_tungstenite::tungstenite::Message;

use crate::byte_server::token;

/// The binary message a reply carries after its first delta when asked for one.
pub const BINARY: [u8; 5] = [0, 1, 2, 254, 255];

/// The text messages of reply `reply` with `tokens` transcript deltas, in order:
/// `response.created`, the deltas (one token each), `response.done` with usage.
pub fn realtime_messages(reply: usize, tokens: usize) -> Vec<String> {
    let id = |k: usize| format!("ev_{reply}_{k}");
    let mut out = vec![
        serde_json::json!({ "type": "response.created", "event_id": id(0),
            "response": { "id": format!("resp_{reply}"), "status": "in_progress" } })
        .to_string(),
    ];
    for i in 0..tokens {
        out.push(
            serde_json::json!({ "type": "response.output_audio_transcript.delta",
                "event_id": id(i + 1), "response_id": format!("resp_{reply}"), "delta": token(i) })
            .to_string(),
        );
    }
    out.push(
        serde_json::json!({ "type": "response.done", "event_id": id(tokens + 1),
            "response": { "id": format!("resp_{reply}"), "status": "completed",
                "usage": { "input_tokens": 7, "output_tokens": tokens } } })
        .to_string(),
    );
    out
}

/// What the page asks for: `{"type":"response.create", tokens, ttft_ms, gap_ms, binary}`.
#[derive(Debug, Deserialize)]
struct Create {
    tokens: usize,
    /// Pause before the first message.
    ttft_ms: u64,
    /// Pause between messages.
    gap_ms: u64,
    /// Whether a binary message follows the first delta.
    #[serde(default)]
    binary: bool,
    /// Whether the reply ends with `response.done` (else it just stops).
    #[serde(default = "yes")]
    done: bool,
    /// After this many text messages the server drops the TCP connection without a
    /// close frame: the browser's close event is unclean (code 1006).
    #[serde(default)]
    drop_after: Option<usize>,
}

fn yes() -> bool {
    true
}

async fn serve(stream: tokio::net::TcpStream) -> anyhow::Result<()> {
    let mut socket = tokio_tungstenite::accept_async(stream).await?;
    let mut reply = 0;
    while let Some(message) = socket.next().await {
        let Message::Text(text) = message? else {
            continue;
        };
        let create: Create = serde_json::from_str(text.as_str())?;
        let mut messages = realtime_messages(reply, create.tokens);
        if !create.done {
            messages.pop();
        }
        for (k, text) in messages.into_iter().enumerate() {
            if create.drop_after == Some(k) {
                // Dropping the stream closes the socket with no close handshake.
                return Ok(());
            }
            let pause = if k == 0 {
                create.ttft_ms
            } else {
                create.gap_ms
            };
            tokio::time::sleep(Duration::from_millis(pause)).await;
            socket.send(Message::text(text)).await?;
            if create.binary && k == 1 {
                socket.send(Message::binary(BINARY.to_vec())).await?;
            }
        }
        reply += 1;
    }
    Ok(())
}

/// Starts the server on an ephemeral loopback port; it stops with the test's runtime.
pub async fn start() -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Err(e) = serve(stream).await {
                    eprintln!("ws_server: {e}");
                }
            });
        }
    });
    Ok(addr)
}
