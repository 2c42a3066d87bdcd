//! One socket: `session.created` on connect, then the client's events in order. A
//! response runs as its own task (so the socket keeps reading: `response.cancel`, a
//! premature `response.create`), and its events come back through a channel to this
//! loop, the only writer on the socket.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::client::{self, ClientEvent};
use super::events::{self, Ids, Status};
use super::turn::{Item, Out, Response};
use crate::limits::MAX_REALTIME_MESSAGE_BYTES;
use crate::llm::check_length;
use crate::load::Deployment;
use crate::profile::Profile;
use crate::rng::Rng;
use crate::schedule;
use crate::{Refusal, text};

/// What the handshake settled.
pub struct Setup {
    pub profile: Profile,
    /// The profile's batch: each response is a stream in it, as an HTTP reply is.
    pub deployment: Arc<Deployment>,
    pub seed: u64,
    pub model: String,
    /// The upgrade request's id (`x-request-id`): the socket's ids carry it.
    pub request_id: String,
}

/// The response in flight.
struct Active {
    number: u64,
    task: JoinHandle<()>,
    turn: events::Turn,
}

struct Session {
    setup: Setup,
    ids: Ids,
    session_id: String,
    /// Characters of every text in the conversation (the client's items and the
    /// replies): a response's input tokens, at 4 characters a token.
    conversation_chars: usize,
    last_item: Option<String>,
    /// The session's output limit (`session.update`).
    max_output_tokens: Option<usize>,
    responses: u64,
    active: Option<Active>,
}

/// Runs the socket until the client closes it (or an injected drop).
pub async fn run(mut socket: WebSocket, setup: Setup) {
    let ids = Ids::new(&setup.request_id);
    let mut s = Session {
        session_id: ids.make("sess"),
        ids,
        setup,
        conversation_chars: 0,
        last_item: None,
        max_output_tokens: None,
        responses: 0,
        active: None,
    };
    let created = s.session_event("session.created");
    if send(&mut socket, created).await.is_err() {
        return;
    }
    let (tx, mut rx) = mpsc::channel::<Item>(16);
    loop {
        tokio::select! {
            // First: a response's `response.done` is sent (and the response is no longer
            // active) before the client's next message is read.
            biased;
            Some((number, out)) = rx.recv() => {
                // Queued by a response cancelled since: it is over for the client.
                if s.active.as_ref().map(|a| a.number) != Some(number) {
                    continue;
                }
                let event = match out {
                    Out::Event(event) => event,
                    Out::Last { event, chars } => {
                        s.active = None;
                        s.conversation_chars = s.conversation_chars.saturating_add(chars);
                        event
                    }
                    // Dropped without a close frame: the client sees an abnormal close.
                    Out::Drop => return,
                };
                if send(&mut socket, event).await.is_err() {
                    break;
                }
            }
            message = socket.recv() => {
                let at = Instant::now();
                let reply = match message {
                    None | Some(Ok(Message::Close(_))) => break,
                    Some(Err(e)) => {
                        // Past the size limit, or a broken frame: say so in the close.
                        let reason = format!(
                            "ttfx sim: message refused (at most {MAX_REALTIME_MESSAGE_BYTES} bytes): {e}"
                        );
                        let _ = socket.send(close(close_code::SIZE, &reason)).await;
                        break;
                    }
                    Some(Ok(Message::Text(text))) => s.on_event(text.as_str(), at, &tx),
                    Some(Ok(Message::Binary(_))) => Some(events::error(
                        &s.ids,
                        "invalid_message",
                        "binary messages are not client events: send JSON text",
                        None,
                    )),
                    // Pings are answered by the socket itself.
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => None,
                };
                if let Some(event) = reply
                    && send(&mut socket, event).await.is_err()
                {
                    break;
                }
            }
        }
    }
    if let Some(active) = s.active.take() {
        active.task.abort();
    }
}

async fn send(socket: &mut WebSocket, event: String) -> Result<(), axum::Error> {
    socket.send(Message::Text(event.into())).await
}

/// A close frame; its reason cut to the 123 bytes a control frame may carry.
fn close(code: u16, reason: &str) -> Message {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    Message::Close(Some(CloseFrame {
        code,
        reason: reason[..end].into(),
    }))
}

impl Session {
    fn session_event(&self, kind: &str) -> String {
        events::session(
            &self.ids,
            kind,
            &self.session_id,
            &self.setup.model,
            self.max_output_tokens,
        )
    }

    /// Handles one client message; the immediate reply, if any (a response's events
    /// come later, through `tx`).
    fn on_event(&mut self, text: &str, at: Instant, tx: &mpsc::Sender<Item>) -> Option<String> {
        let event = match client::parse(text) {
            Ok(event) => event,
            Err(why) => return Some(events::error(&self.ids, "invalid_json", &why, None)),
        };
        let id = event.event_id.clone();
        let result = match event.kind.as_str() {
            "session.update" => Ok(self.update(&event)),
            "conversation.item.create" => self.create_item(event),
            "response.create" => self.create_response(&event, at, tx),
            "response.cancel" => self.cancel(),
            other => Err((
                "unknown_event",
                format!(
                    "unknown client event type `{}`: the simulator takes session.update, \
                     conversation.item.create, response.create and response.cancel",
                    crate::limits::shown(other)
                ),
            )),
        };
        match result {
            Ok(reply) => reply,
            Err((code, why)) => Some(events::error(&self.ids, code, &why, id.as_deref())),
        }
    }

    fn update(&mut self, event: &ClientEvent) -> Option<String> {
        if let Some(session) = &event.session
            && let Some(max) = session
                .max_output_tokens
                .or(session.max_response_output_tokens)
        {
            self.max_output_tokens = max.limit();
        }
        Some(self.session_event("session.updated"))
    }

    fn create_item(
        &mut self,
        event: ClientEvent,
    ) -> Result<Option<String>, (&'static str, String)> {
        let Some(item) = event.item else {
            return Err((
                "missing_required_parameter",
                "conversation.item.create needs an `item`".into(),
            ));
        };
        if item.kind.as_deref().is_some_and(|k| k != "message") {
            return Err((
                "invalid_value",
                "the simulator takes `message` items only".into(),
            ));
        }
        let role = item.role.unwrap_or_else(|| "user".into());
        let texts: Vec<(String, String)> = item
            .content
            .into_iter()
            .filter_map(|part| part.text.map(|text| (part.kind, text)))
            .collect();
        let chars: usize = texts.iter().map(|(_, t)| t.chars().count()).sum();
        self.conversation_chars = self.conversation_chars.saturating_add(chars);
        let item_id = self.ids.make("item");
        let reply = events::item_created(
            &self.ids,
            self.last_item.as_deref(),
            &item_id,
            &role,
            &texts,
        );
        self.last_item = Some(item_id);
        Ok(Some(reply))
    }

    fn create_response(
        &mut self,
        event: &ClientEvent,
        at: Instant,
        tx: &mpsc::Sender<Item>,
    ) -> Result<Option<String>, (&'static str, String)> {
        if let Some(active) = &self.active {
            return Err((
                "conversation_already_has_active_response",
                format!(
                    "response {} is in progress: wait for its response.done or cancel it",
                    active.turn.response_id
                ),
            ));
        }
        let max_tokens = match event.response.as_ref().and_then(|r| r.max_output_tokens) {
            Some(max) => max.limit(),
            None => self.max_output_tokens,
        };
        let input_tokens = text::prompt_tokens(self.conversation_chars);
        let request = schedule::Request {
            prompt_tokens: input_tokens,
            max_tokens,
            // The socket carries text deltas only: reasoning is time and usage.
            reasoning_channel: false,
        };
        // One seed per socket, a different draw per response (lengths, jitter), so a
        // socket is replayed by its seed.
        let number = self.responses;
        let seed = self.setup.seed.wrapping_add(number);
        self.responses += 1;
        let plan = schedule::plan(&self.setup.profile, request, &mut Rng::new(seed));
        if let Err(Refusal(_, why)) = check_length(&self.setup.profile, &plan) {
            return Err(("invalid_value", why));
        }
        let turn = events::Turn {
            response_id: self.ids.make("resp"),
            item_id: self.ids.make("item"),
        };
        self.last_item = Some(turn.item_id.clone());
        let response = Response {
            number,
            plan,
            at,
            turn: turn.clone(),
            ids: self.ids.clone(),
            failure: self.setup.profile.failure,
            input_tokens,
            deployment: self.setup.deployment.clone(),
            profile: self.setup.profile.clone(),
        };
        let task = tokio::spawn(response.run(tx.clone()));
        self.active = Some(Active { number, task, turn });
        Ok(None)
    }

    fn cancel(&mut self) -> Result<Option<String>, (&'static str, String)> {
        let Some(active) = self.active.take() else {
            return Err((
                "response_cancel_not_active",
                "there is no response in progress to cancel".into(),
            ));
        };
        active.task.abort();
        // The text sent so far is the client's; the reply here names the response only.
        Ok(Some(events::done(
            &self.ids,
            &active.turn,
            Status::Cancelled,
            "",
            None,
            None,
        )))
    }
}
