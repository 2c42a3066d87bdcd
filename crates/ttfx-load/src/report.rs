//! A load's report: what `ttfx load --json` writes (schema `ttfx-load`, version
//! [`SCHEMA_VERSION`]; docs/load.md documents every field) and what its table prints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ttfx_core::stats::{Goodput, Summary};

/// The document's kind, in its `schema` field.
pub const SCHEMA: &str = "ttfx-load";
/// Bumped when a field changes meaning or goes away (new fields do not bump it).
pub const SCHEMA_VERSION: u32 = 1;

/// The generator holds its rate when its own lateness p99 is at most this (issue #33).
pub const LATENESS_P99_LIMIT_MS: f64 = 2.0;
/// …and it sent at least this share of the schedule's own rate over the window.
pub const ACHIEVED_SHARE_MIN: f64 = 0.98;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Always [`SCHEMA`].
    pub schema: String,
    pub schema_version: u32,
    /// The target as written (`sim/default?ttft_ms=200`), or its URL without userinfo,
    /// query or fragment.
    pub target: String,
    /// The URL requests went to, without userinfo, query or fragment.
    pub url: String,
    pub api: String,
    pub mode: ModeReport,
    pub seed: u64,
    pub warmup_s: f64,
    /// The measured window asked for; `None`: until stopped.
    pub duration_s: Option<f64>,
    pub timeout_s: f64,
    /// The measured window as run: from the warm-up's end to the last send (the
    /// duration, or less when stopped early).
    pub window_s: f64,
    /// From the warm-up's end until the last measured request ended (the window, plus
    /// the wait for requests still open at its end): the rates' denominator.
    pub elapsed_s: f64,
    /// The load was stopped before its duration was over.
    pub stopped: bool,
    pub requests: Requests,
    pub throughput: Throughput,
    /// Per metric (`ttft_ms`, `icl_ms`, …): count, mean, min, max, p50, p90, p95, p99
    /// over the measured requests that have it.
    pub metrics: BTreeMap<String, Summary>,
    pub errors: Errors,
    pub generator: Generator,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeReport {
    /// `rate` (open loop) or `concurrency` (closed loop).
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
}

/// Counts of requests; every figure but `warmup` is over the measured window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    /// Sent in the window, whatever became of them (cancelled ones included).
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    /// In flight when the load was stopped: in no other figure.
    pub cancelled: u64,
    /// Still open at the window's end, awaited (up to the timeout), and counted.
    pub finished_after_window: u64,
    /// Sent during the warm-up and left out of every figure.
    pub warmup: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Completed requests per second of `elapsed_s`.
    pub requests_per_s: f64,
    /// Output tokens of the completed requests (usage, else the recorder's count) per
    /// second of `elapsed_s`.
    pub output_tokens_per_s: f64,
    pub output_tokens: f64,
    /// Requests per second of `elapsed_s` that completed within every SLO (vLLM's
    /// `--goodput`); `None` without SLOs.
    pub goodput_per_s: Option<f64>,
    /// The same as a share of the measured requests (ttfx-core's goodput: failed ones
    /// stay in the denominator); `None` without SLOs.
    pub goodput: Option<Goodput>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Errors {
    pub total: u64,
    /// `connect`, `http_<status>`, `in_band`, `dropped`, `timeout`, `unreadable`.
    pub by_class: BTreeMap<String, u64>,
}

/// The generator's own account: how faithfully it sent what it was asked to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generator {
    /// Open loop: actual send − scheduled send of each measured request, ms.
    pub lateness_ms: Option<Summary>,
    /// Open loop: the Poisson schedule's own rate over the window (its requests / the
    /// span from the window's start to its last scheduled send).
    pub scheduled_per_s: Option<f64>,
    /// Requests sent per second: the same requests over the span to their last actual
    /// send (closed loop: sends over the window).
    pub achieved_per_s: f64,
    /// Open loop: lateness p99 ≤ [`LATENESS_P99_LIMIT_MS`] and achieved ≥
    /// [`ACHIEVED_SHARE_MIN`] of scheduled. `None` in a closed loop (no schedule) or with
    /// no measured request.
    pub held: Option<bool>,
}
