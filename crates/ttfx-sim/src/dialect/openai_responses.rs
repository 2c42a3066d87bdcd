//! OpenAI Responses streaming: typed events with a `sequence_number`; reasoning as a
//! reasoning item with summary text deltas, the answer as a message item with
//! `response.output_text.delta`; usage in `response.completed` (or
//! `response.incomplete` when `max_output_tokens` cut the reply).

use serde_json::{Value, json};

use super::{Ctx, Encoder, End, typed_sse};
use crate::schedule::Channel;

pub struct Responses {
    ctx: Ctx,
    seq: u64,
    /// The open output item: its channel and the text so far.
    item: Option<(Channel, String)>,
    items: u64,
}

impl Responses {
    pub fn new(ctx: Ctx) -> Self {
        Responses {
            ctx,
            seq: 0,
            item: None,
            items: 0,
        }
    }

    fn event(&mut self, kind: &str, mut data: Value) -> String {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        typed_sse(kind, &data)
    }

    fn response(&self, status: &str, usage: Option<Value>) -> Value {
        json!({
            "id": format!("resp_{}", self.ctx.request_id),
            "object": "response",
            "created_at": self.ctx.created_unix_s,
            "status": status,
            "model": self.ctx.model,
            "output": [],
            "usage": usage,
        })
    }

    fn item_id(&self) -> String {
        format!("item_{}_{}", self.ctx.request_id, self.items)
    }

    fn open_item(&mut self, channel: Channel) -> String {
        let id = self.item_id();
        let index = self.items;
        self.item = Some((channel, String::new()));
        match channel {
            Channel::Reasoning => {
                let mut out = self.event(
                    "response.output_item.added",
                    json!({ "output_index": index, "item": { "type": "reasoning", "id": id, "summary": [] } }),
                );
                out += &self.event(
                    "response.reasoning_summary_part.added",
                    json!({ "item_id": id, "output_index": index, "summary_index": 0,
                            "part": { "type": "summary_text", "text": "" } }),
                );
                out
            }
            Channel::Visible => {
                let mut out = self.event(
                    "response.output_item.added",
                    json!({ "output_index": index, "item": { "type": "message", "id": id,
                            "role": "assistant", "status": "in_progress", "content": [] } }),
                );
                out += &self.event(
                    "response.content_part.added",
                    json!({ "item_id": id, "output_index": index, "content_index": 0,
                            "part": { "type": "output_text", "text": "", "annotations": [] } }),
                );
                out
            }
        }
    }

    fn close_item(&mut self) -> String {
        let Some((channel, text)) = self.item.take() else {
            return String::new();
        };
        let id = self.item_id();
        let index = self.items;
        self.items += 1;
        let (done, part_done, item) = match channel {
            Channel::Reasoning => (
                (
                    "response.reasoning_summary_text.done",
                    json!({ "item_id": id, "output_index": index, "summary_index": 0, "text": text }),
                ),
                (
                    "response.reasoning_summary_part.done",
                    json!({ "item_id": id, "output_index": index, "summary_index": 0, "part": { "type": "summary_text", "text": text } }),
                ),
                json!({ "type": "reasoning", "id": id, "summary": [{ "type": "summary_text", "text": text }] }),
            ),
            Channel::Visible => (
                (
                    "response.output_text.done",
                    json!({ "item_id": id, "output_index": index, "content_index": 0, "text": text }),
                ),
                (
                    "response.content_part.done",
                    json!({ "item_id": id, "output_index": index, "content_index": 0, "part": { "type": "output_text", "text": text, "annotations": [] } }),
                ),
                json!({ "type": "message", "id": id, "role": "assistant", "status": "completed",
                        "content": [{ "type": "output_text", "text": text, "annotations": [] }] }),
            ),
        };
        let mut out = self.event(done.0, done.1);
        out += &self.event(part_done.0, part_done.1);
        out += &self.event(
            "response.output_item.done",
            json!({ "output_index": index, "item": item }),
        );
        out
    }
}

impl Encoder for Responses {
    fn open(&mut self) -> String {
        let created = self.response("in_progress", None);
        let mut out = self.event("response.created", json!({ "response": created }));
        let progress = self.response("in_progress", None);
        out += &self.event("response.in_progress", json!({ "response": progress }));
        out
    }

    fn piece(&mut self, channel: Channel, text: &str) -> String {
        let mut out = String::new();
        if self.item.as_ref().map(|(c, _)| *c) != Some(channel) {
            out += &self.close_item();
            out += &self.open_item(channel);
        }
        if let Some((_, so_far)) = &mut self.item {
            so_far.push_str(text);
        }
        let (id, index) = (self.item_id(), self.items);
        out += &match channel {
            Channel::Reasoning => self.event(
                "response.reasoning_summary_text.delta",
                json!({ "item_id": id, "output_index": index, "summary_index": 0, "delta": text }),
            ),
            Channel::Visible => self.event(
                "response.output_text.delta",
                json!({ "item_id": id, "output_index": index, "content_index": 0, "delta": text }),
            ),
        };
        out
    }

    fn close(&mut self, end: &End) -> String {
        let mut out = self.close_item();
        let usage = json!({
            "input_tokens": self.ctx.prompt_tokens,
            "input_tokens_details": { "cached_tokens": 0 },
            "output_tokens": end.completion_tokens(),
            "output_tokens_details": { "reasoning_tokens": end.reasoning_tokens },
            "total_tokens": self.ctx.prompt_tokens + end.completion_tokens(),
        });
        let (kind, status) = if end.finish_reason == "length" {
            ("response.incomplete", "incomplete")
        } else {
            ("response.completed", "completed")
        };
        let mut response = self.response(status, Some(usage));
        if status == "incomplete" {
            response["incomplete_details"] = json!({ "reason": "max_output_tokens" });
        }
        out += &self.event(kind, json!({ "response": response }));
        out
    }

    fn error(&mut self, message: &str) -> String {
        self.event(
            "error",
            json!({ "code": "server_error", "message": message, "param": null }),
        )
    }
}
