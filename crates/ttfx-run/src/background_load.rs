//! One target's background load for a step of `--under-load` / `--sweep`: ttfx-load's
//! generator on a task of its own, started before the step's browsers and stopped after
//! them; what the step's table needs of its report.

use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinHandle;
use ttfx_load::CancellationToken;

use super::load_level::{LoadKind, LoadLevel};
use super::scenario::{RunTarget, Scenario};
use crate::error::RunError;

/// What a step's table shows of one load, and its whole report for `--json`.
#[derive(Debug, Clone)]
pub struct LoadFigures {
    /// Measured requests per second sent (open loop: the achieved rate).
    pub achieved_rps: f64,
    /// `ttft_ms` at p50, p90, p99.
    pub ttft_ms: [Option<f64>; 3],
    pub tpot_ms_p50: Option<f64>,
    pub e2e_ms_p50: Option<f64>,
    pub output_tokens_per_s: f64,
    /// Requests per second meeting every goodput SLO (the run's `goodput_` budgets);
    /// `None` without SLOs.
    pub goodput_rps: Option<f64>,
    pub errors: u64,
    /// The generator's own lateness p99 (open loop only).
    pub lateness_p99_ms: Option<f64>,
    /// The load's report as `ttfx load --json` writes it.
    pub report: Value,
}

/// A load running in the background until [`BackgroundLoad::stop`].
#[must_use = "the load runs until stopped; dropping the handle stops it unreported"]
pub struct BackgroundLoad {
    cancel: CancellationToken,
    task: JoinHandle<Result<ttfx_load::LoadReport, ttfx_load::LoadError>>,
    label: String,
}

impl BackgroundLoad {
    /// Starts the load of `level` against `url` (the target's endpoint, absolute),
    /// speaking the target's API with the scenario's prompts; requests sent in the first
    /// `warmup` are left out of its figures.
    pub fn start(
        url: String,
        target: &RunTarget,
        scenario: &Scenario,
        level: LoadLevel,
        warmup: Duration,
        seed: u64,
    ) -> Result<BackgroundLoad, RunError> {
        let RunTarget::Endpoint { api, label, .. } = target else {
            return Err(RunError::load(format!(
                "{}: a page cannot be loaded",
                target.label()
            )));
        };
        let mode = match level.kind {
            LoadKind::Rate => ttfx_load::Mode::Rate(level.value),
            // load_level checked it is a whole number in range.
            LoadKind::Concurrency => ttfx_load::Mode::Concurrency(level.value as usize),
        };
        let spec = ttfx_load::LoadSpec {
            endpoint: ttfx_load::Endpoint {
                url,
                api: *api,
                headers: Vec::new(),
                ca_file: None,
            },
            label: label.clone(),
            model: "ttfx".to_owned(),
            prompts: scenario.prompts.clone(),
            mode,
            warmup,
            duration: None,
            seed,
            timeout: scenario.timeout,
            goodput: scenario
                .budgets
                .iter()
                .filter_map(super::budget::RunBudget::goodput_budget)
                .collect(),
        };
        spec.check()
            .map_err(|e| RunError::load(format!("{label}: {e}")))?;
        let cancel = CancellationToken::new();
        let task = tokio::spawn(ttfx_load::run(spec, cancel.clone()));
        Ok(BackgroundLoad {
            cancel,
            task,
            label: label.clone(),
        })
    }

    /// Stops the load (its open requests are awaited up to the timeout) and returns its
    /// figures.
    pub async fn stop(self) -> Result<LoadFigures, RunError> {
        self.cancel.cancel();
        let label = self.label;
        let report = self
            .task
            .await
            .map_err(|e| RunError::load(format!("{label}: the load's task failed: {e}")))?
            .map_err(|e| RunError::load(format!("{label}: {e}")))?;
        Ok(figures(&report))
    }
}

pub(super) fn figures(report: &ttfx_load::LoadReport) -> LoadFigures {
    let metric = |name: &str| report.metrics.get(name);
    let ttft = metric("ttft_ms");
    LoadFigures {
        achieved_rps: report.generator.achieved_per_s,
        ttft_ms: [
            ttft.map(|s| s.p50),
            ttft.map(|s| s.p90),
            ttft.map(|s| s.p99),
        ],
        tpot_ms_p50: metric("tpot_ms").map(|s| s.p50),
        e2e_ms_p50: metric("e2e_ms").map(|s| s.p50),
        output_tokens_per_s: report.throughput.output_tokens_per_s,
        goodput_rps: report.throughput.goodput_per_s,
        errors: report.errors.total,
        lateness_p99_ms: report.generator.lateness_ms.as_ref().map(|s| s.p99),
        report: serde_json::to_value(report).unwrap_or(Value::Null),
    }
}
