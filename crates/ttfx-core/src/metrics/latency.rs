//! Latency family: `ttft`, `ttft_visible`, `e2e`, `submit_delay`, and how the request
//! ended.

use serde::{Deserialize, Serialize};

use super::Measured;
use crate::milestone::Milestone;
use crate::timeline::Timeline;

/// How the request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The stream closed (`done`) with no error and no abort.
    Completed,
    /// The user abandoned it (`aborted`) before anything failed.
    Aborted,
    /// It failed (`error`, or a recorded failure) before any abort.
    Failed,
    /// Neither closed nor failed nor aborted: the timeline was cut short.
    Incomplete,
}

/// Whichever of `aborted` and `error` happened first decides, because an abort makes the
/// fetch reject (that error is a consequence, not a failure) and a failure can make a user
/// give up (that abort is a consequence too).
pub fn outcome(t: &Timeline) -> Outcome {
    let aborted = t.milestones.get(Milestone::Aborted);
    let error = t.milestones.get(Milestone::Error);
    match (aborted, error) {
        (Some(a), Some(e)) if a <= e => Outcome::Aborted,
        (Some(_), Some(_)) => Outcome::Failed,
        (Some(_), None) => Outcome::Aborted,
        (None, Some(_)) => Outcome::Failed,
        (None, None) if t.failure.is_some() => Outcome::Failed,
        (None, None) if t.milestones.get(Milestone::Done).is_some() => Outcome::Completed,
        (None, None) => Outcome::Incomplete,
    }
}

/// A milestone read as a latency from `request_start`.
pub fn at(t: &Timeline, m: Milestone) -> Option<Measured> {
    t.milestones.get(m).map(Measured::client)
}

/// `submit_delay` = `request_start` − `submit`: how long the UI took, after the user's
/// click or key press, to send the request (inject mode's flows).
pub fn submit_delay(t: &Timeline) -> Option<Measured> {
    t.milestones
        .get(Milestone::Submit)
        .map(|at| Measured::client(-at))
}

/// `e2e` = `last_token`, only for completed requests: the last token of an aborted or
/// failed stream is not the end of the answer.
pub fn e2e(t: &Timeline, outcome: Outcome) -> Option<Measured> {
    match outcome {
        Outcome::Completed => at(t, Milestone::LastToken),
        _ => None,
    }
}
