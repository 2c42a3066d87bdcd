//! How `ttfx run --inject` chose what it measured in a page that does not embed the
//! probe: which of the page's requests was the reply's stream, and which element showed
//! the reply (`timeline.selection`, docs/report.md).

use serde::{Deserialize, Serialize};

/// How the stream was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamChoice {
    /// The first request after the submit whose response streamed (two or more chunks,
    /// with tokens the decoder found).
    FirstStreamingAfterSubmit,
    /// The first request after the submit whose URL matched `--match`.
    Match,
}

/// How the reply's element was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyChoice {
    /// The deepest element holding at least 90 % of the text the page added while the
    /// stream arrived.
    Growth,
    /// The element matching `--reply` (nearest ancestor-or-self of the growing text).
    Selector,
}

/// What inject mode chose, and from how much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    pub stream: StreamChoice,
    /// Requests the page made between the submit and the chosen one's end (the chosen
    /// one included).
    pub requests_seen: u32,
    pub reply: ReplyChoice,
    /// The reply's element, as `tag#id.class`; absent when no element's text grew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_element: Option<String>,
    /// The share of the text added in that time that the element holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_share: Option<f64>,
    /// The turn of a multi-turn flow, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_turn: Option<u32>,
    /// The probe the runner injected: its version and where it came from (`ttfx-probe
    /// 0.1.0, built into ttfx`, or the `--probe-pkg` file). Absent in reports written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
}
