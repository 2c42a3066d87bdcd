//! The server events of OpenAI's Realtime API (text output), as JSON strings: the shapes
//! a client written against the real API reads (`type`, `event_id`, `response_id`,
//! `item_id`, `output_index`, `content_index`, `response.usage`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

/// Makes the ids of one socket: every event's `event_id`, and the responses' and items'.
/// Shared by the socket's loop and its response task (an atomic counter, so ids never
/// repeat on one socket).
#[derive(Debug, Clone)]
pub struct Ids {
    /// The socket's request id (`x-request-id`), so ids name the socket they came from.
    socket: String,
    next: Arc<AtomicU64>,
}

impl Ids {
    pub fn new(socket: &str) -> Self {
        Ids {
            socket: socket.to_owned(),
            next: Arc::new(AtomicU64::new(1)),
        }
    }

    /// A fresh id with `prefix` (`event`, `resp`, `item`, `sess`).
    pub fn make(&self, prefix: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}_{}_{n}", self.socket)
    }
}

/// What one response's events name.
#[derive(Debug, Clone)]
pub struct Turn {
    pub response_id: String,
    pub item_id: String,
}

/// How a response ended, for `response.done`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Completed,
    /// Cut by the output limit (`max_output_tokens`).
    Incomplete,
    /// An injected in-band failure (`fail=error`).
    Failed,
    /// The client's `response.cancel`.
    Cancelled,
}

/// Token counts for `response.usage`.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    pub input_tokens: usize,
    pub output_tokens: usize,
}

fn with_id(ids: &Ids, mut event: Value) -> String {
    event["event_id"] = json!(ids.make("event"));
    event.to_string()
}

pub fn session(ids: &Ids, kind: &str, session_id: &str, model: &str, max: Option<usize>) -> String {
    with_id(
        ids,
        json!({
            "type": kind,
            "session": {
                "type": "realtime",
                "object": "realtime.session",
                "id": session_id,
                "model": model,
                "output_modalities": ["text"],
                "max_output_tokens": max.map_or(json!("inf"), |n| json!(n)),
            },
        }),
    )
}

/// `conversation.item.created` for a client's item: its id, role and text parts.
pub fn item_created(
    ids: &Ids,
    previous: Option<&str>,
    item_id: &str,
    role: &str,
    texts: &[(String, String)],
) -> String {
    let content: Vec<Value> = texts
        .iter()
        .map(|(kind, text)| json!({ "type": kind, "text": text }))
        .collect();
    with_id(
        ids,
        json!({
            "type": "conversation.item.created",
            "previous_item_id": previous,
            "item": {
                "id": item_id,
                "object": "realtime.item",
                "type": "message",
                "status": "completed",
                "role": role,
                "content": content,
            },
        }),
    )
}

fn item(turn: &Turn, status: &str, text: Option<&str>) -> Value {
    let content = match text {
        Some(text) => json!([{ "type": "output_text", "text": text }]),
        None => json!([]),
    };
    json!({
        "id": turn.item_id,
        "object": "realtime.item",
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    })
}

/// `response.created`, `response.output_item.added`, `response.content_part.added`: sent
/// as soon as the client asks, before the first token (as the real API does).
pub fn opening(ids: &Ids, turn: &Turn) -> [String; 3] {
    [
        with_id(
            ids,
            json!({
                "type": "response.created",
                "response": {
                    "id": turn.response_id,
                    "object": "realtime.response",
                    "status": "in_progress",
                    "status_details": null,
                    "output": [],
                    "usage": null,
                },
            }),
        ),
        with_id(
            ids,
            json!({
                "type": "response.output_item.added",
                "response_id": turn.response_id,
                "output_index": 0,
                "item": item(turn, "in_progress", None),
            }),
        ),
        with_id(
            ids,
            json!({
                "type": "response.content_part.added",
                "response_id": turn.response_id,
                "item_id": turn.item_id,
                "output_index": 0,
                "content_index": 0,
                "part": { "type": "output_text", "text": "" },
            }),
        ),
    ]
}

pub fn delta(ids: &Ids, turn: &Turn, text: &str) -> String {
    with_id(
        ids,
        json!({
            "type": "response.output_text.delta",
            "response_id": turn.response_id,
            "item_id": turn.item_id,
            "output_index": 0,
            "content_index": 0,
            "delta": text,
        }),
    )
}

/// `response.output_text.done`, `response.content_part.done`, `response.output_item.done`:
/// the whole text, once it is complete.
pub fn text_done(ids: &Ids, turn: &Turn, text: &str) -> [String; 3] {
    [
        with_id(
            ids,
            json!({
                "type": "response.output_text.done",
                "response_id": turn.response_id,
                "item_id": turn.item_id,
                "output_index": 0,
                "content_index": 0,
                "text": text,
            }),
        ),
        with_id(
            ids,
            json!({
                "type": "response.content_part.done",
                "response_id": turn.response_id,
                "item_id": turn.item_id,
                "output_index": 0,
                "content_index": 0,
                "part": { "type": "output_text", "text": text },
            }),
        ),
        with_id(
            ids,
            json!({
                "type": "response.output_item.done",
                "response_id": turn.response_id,
                "output_index": 0,
                "item": item(turn, "completed", Some(text)),
            }),
        ),
    ]
}

/// `response.done`: the response's end, its status and usage (null when cancelled before
/// any token was generated, as there is nothing to count).
pub fn done(
    ids: &Ids,
    turn: &Turn,
    status: Status,
    text: &str,
    usage: Option<Usage>,
    error: Option<&str>,
) -> String {
    let (name, details) = match status {
        Status::Completed => ("completed", Value::Null),
        Status::Incomplete => (
            "incomplete",
            json!({ "type": "incomplete", "reason": "max_output_tokens" }),
        ),
        Status::Failed => (
            "failed",
            json!({ "type": "failed", "error": { "type": "server_error", "code": null,
                "message": error.unwrap_or("failed") } }),
        ),
        Status::Cancelled => (
            "cancelled",
            json!({ "type": "cancelled", "reason": "client_cancelled" }),
        ),
    };
    let item_status = if status == Status::Completed {
        "completed"
    } else {
        "incomplete"
    };
    let usage = usage.map_or(Value::Null, |u| {
        json!({
            "total_tokens": u.input_tokens + u.output_tokens,
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "input_token_details": { "text_tokens": u.input_tokens, "audio_tokens": 0,
                "cached_tokens": 0 },
            "output_token_details": { "text_tokens": u.output_tokens, "audio_tokens": 0 },
        })
    });
    with_id(
        ids,
        json!({
            "type": "response.done",
            "response": {
                "id": turn.response_id,
                "object": "realtime.response",
                "status": name,
                "status_details": details,
                "output": [item(turn, item_status, Some(text))],
                "usage": usage,
            },
        }),
    )
}

/// An `error` event: `code` as the real API names it, `event_id` the client event it
/// answers (when the client gave one).
pub fn error(ids: &Ids, code: &str, message: &str, client_event: Option<&str>) -> String {
    with_id(
        ids,
        json!({
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "code": code,
                "message": message,
                "param": null,
                "event_id": client_event,
            },
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_per_socket_and_name_it() {
        let ids = Ids::new("ttfx-1");
        let a = ids.make("event");
        let b = ids.clone().make("event");
        assert_ne!(a, b);
        assert!(a.starts_with("event_ttfx-1_"), "{a}");
    }

    #[test]
    fn done_carries_usage_and_status() {
        let ids = Ids::new("s");
        let turn = Turn {
            response_id: "resp_1".into(),
            item_id: "item_1".into(),
        };
        let usage = Usage {
            input_tokens: 3,
            output_tokens: 4,
        };
        let v: Value = serde_json::from_str(&done(
            &ids,
            &turn,
            Status::Completed,
            "hi",
            Some(usage),
            None,
        ))
        .unwrap();
        assert_eq!(v["type"], "response.done");
        assert_eq!(v["response"]["status"], "completed");
        assert_eq!(v["response"]["usage"]["total_tokens"], 7);
        assert_eq!(v["response"]["output"][0]["content"][0]["text"], "hi");
        let v: Value =
            serde_json::from_str(&done(&ids, &turn, Status::Failed, "", None, Some("boom")))
                .unwrap();
        assert_eq!(v["response"]["status_details"]["error"]["message"], "boom");
        assert!(v["response"]["usage"].is_null());
    }
}
