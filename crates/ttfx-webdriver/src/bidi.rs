//! A WebDriver BiDi client for a session opened with `webSocketUrl: true`:
//! the session's WebSocket (`capabilities.webSocketUrl`), `session.subscribe`, and the
//! events. BiDi's envelope is the DevTools protocol's (a command `{id, method, params}`,
//! its answer carries the `id` with `result` or `error`, an event has `method` and
//! `params` and no `id`), so the socket is [`Cdp`](crate::devtools::Cdp)'s.
//! [`network`] finds one request in the `network` module's events (Firefox's ground
//! truth).

use serde_json::json;
use tokio::sync::mpsc;

use crate::devtools::{Cdp, DevToolsError, Event};

pub mod network;

/// Why a BiDi connection or command failed.
#[derive(Debug, thiserror::Error)]
pub enum BidiError {
    #[error("the session names no webSocketUrl (the driver has no WebDriver BiDi?)")]
    NoWebSocketUrl,
    #[error("BiDi session.subscribe")]
    Subscribe(#[source] DevToolsError),
    /// The socket, shared with the DevTools client.
    #[error(transparent)]
    Socket(#[from] DevToolsError),
}

/// The capability that asks the driver for a BiDi WebSocket.
pub const WEB_SOCKET_URL: &str = "webSocketUrl";

/// A BiDi connection to one session.
pub struct Bidi {
    socket: Cdp,
}

impl Bidi {
    /// Connects to the WebSocket the session's `capabilities` name and subscribes to
    /// `events` (e.g. `network.responseStarted`; none for commands only) in every
    /// browsing context.
    pub async fn attach(
        capabilities: Option<&serde_json::Map<String, serde_json::Value>>,
        events: &[&str],
    ) -> Result<(Bidi, mpsc::UnboundedReceiver<Event>), BidiError> {
        let url = capabilities
            .and_then(|caps| caps.get(WEB_SOCKET_URL))
            .and_then(|url| url.as_str())
            .ok_or(BidiError::NoWebSocketUrl)?
            .to_owned();
        let (socket, receiver) = Cdp::connect(&url).await?;
        if !events.is_empty() {
            socket
                .call("session.subscribe", json!({ "events": events }))
                .await
                .map_err(BidiError::Subscribe)?;
        }
        Ok((Bidi { socket }, receiver))
    }

    /// Runs a BiDi command and returns its result.
    pub async fn call(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, BidiError> {
        Ok(self.socket.call(method, params).await?)
    }
}
