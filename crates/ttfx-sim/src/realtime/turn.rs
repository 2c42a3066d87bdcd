//! One response on the socket: the schedule the HTTP routes follow (`schedule::plan`),
//! timed from the moment the client's `response.create` arrived, each delta sent at its
//! absolute deadline as its own message; a stream of the profile's batch as an HTTP
//! reply is (load.rs), from its opening events to its end or its cancel (the task's
//! abort drops its place).

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::events::{self, Ids, Status, Usage};
use crate::deadline;
use crate::llm::INJECTED;
use crate::load::Deployment;
use crate::profile::{Failure, Profile};
use crate::schedule::{Channel, Plan};

/// What a response task hands the socket's loop, in order, with the response's number
/// (the loop drops what a cancelled response had queued before it was stopped).
pub type Item = (u64, Out);

#[derive(Debug)]
pub enum Out {
    /// An event to send.
    Event(String),
    /// The response's last event (`response.done`): the socket may take a new
    /// `response.create` once it is sent. `chars` of text were generated (they join the
    /// conversation, so the next turn's input counts them).
    Last { event: String, chars: usize },
    /// An injected drop (`fail=drop`): the socket closes without a close frame.
    Drop,
}

/// A planned response.
pub struct Response {
    /// The response's number on its socket.
    pub number: u64,
    pub plan: Plan,
    /// When the client's `response.create` arrived: every deadline is counted from it.
    pub at: Instant,
    pub turn: events::Turn,
    pub ids: Ids,
    pub failure: Option<Failure>,
    pub input_tokens: usize,
    pub deployment: Arc<Deployment>,
    /// The socket's profile: its load keys.
    pub profile: Profile,
}

impl Response {
    /// Sends the response's events; stops quietly when the socket's loop is gone (the
    /// client left, and the loop with it).
    pub async fn run(mut self, out: mpsc::Sender<Item>) {
        let n = self.number;
        let send = |event: String| out.send((n, Out::Event(event)));
        for event in events::opening(&self.ids, &self.turn) {
            if send(event).await.is_err() {
                return;
            }
        }
        // Admitted after the opening events, as an HTTP reply after its headers.
        let running = self.deployment.admit(&self.profile).await;
        let origin = self.at + running.shift();
        let mut text = String::new();
        loop {
            self.plan.steps.set_slowdown(running.slowdown());
            let Some(step) = self.plan.steps.next() else {
                break;
            };
            deadline::until(origin + step.at).await;
            // Without a reasoning channel (`schedule::Request::reasoning_channel` false)
            // reasoning is only time; any step here is the answer.
            if step.channel == Channel::Visible {
                text.push_str(&step.text);
                if send(events::delta(&self.ids, &self.turn, &step.text))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
        let output_tokens = self.plan.reasoning_tokens + self.plan.visible_tokens;
        let usage = Some(Usage {
            input_tokens: self.input_tokens,
            output_tokens,
        });
        let chars = text.chars().count();
        if let Some(at) = self.plan.steps.cut {
            deadline::until(origin + at).await;
            let last = if self.failure == Some(Failure::Drop) {
                Out::Drop
            } else {
                Out::Last {
                    event: events::done(
                        &self.ids,
                        &self.turn,
                        Status::Failed,
                        &text,
                        None,
                        Some(INJECTED),
                    ),
                    chars,
                }
            };
            let _ = out.send((n, last)).await;
            return;
        }
        // Hidden reasoning at the end of the plan still takes its time.
        deadline::until(origin + self.plan.steps.last_at).await;
        for event in events::text_done(&self.ids, &self.turn, &text) {
            if send(event).await.is_err() {
                return;
            }
        }
        let status = if self.plan.finish_reason == "length" {
            Status::Incomplete
        } else {
            Status::Completed
        };
        let event = events::done(&self.ids, &self.turn, status, &text, usage, None);
        let _ = out.send((n, Out::Last { event, chars })).await;
    }
}
