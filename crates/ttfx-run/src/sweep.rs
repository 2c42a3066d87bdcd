//! `ttfx run --under-load` and `--sweep`: the browsers measure while `ttfx load` drives
//! the same endpoints, step by step. Each step: the load starts and warms up, then the
//! browsers make their runs while it goes on, then the load stops and reports. The
//! browsers' runs are not in the load's figures and the load's requests are not in the
//! browsers' (each side counts only what it sent).

use std::time::{Duration, Instant};

use ttfx_core::report::BatchReport;

use super::background_load::{BackgroundLoad, LoadFigures};
use super::load_level::{LoadLevel, LoadPlan};
use super::measure::Bench;
use super::scenario::{RunTarget, Scenario};
use crate::RunArgs;
use crate::error::RunError;

/// One step's outcome: the load level, each target's browser batch and load figures.
pub struct Step {
    pub level: LoadLevel,
    /// Per target, in the scenario's order: its label and the browsers' runs.
    pub batches: Vec<(String, BatchReport)>,
    /// Per target, in the same order: the load generator's figures.
    pub loads: Vec<LoadFigures>,
    /// Warm-up start to the load's stop.
    pub seconds: f64,
}

/// Every step of `plan`, in order, on one server and driver.
pub async fn run_steps(
    scenario: &Scenario,
    args: &RunArgs,
    plan: &LoadPlan,
    batches: impl Fn(Vec<Vec<ttfx_core::report::Run>>) -> Vec<(String, BatchReport)>,
) -> Result<(Vec<Step>, Option<ttfx_webdriver::sandbox::Sandbox>), RunError> {
    let bench = Bench::prepare(scenario, args).await?;
    let mut steps = Vec::new();
    let mut sandbox = None;
    for (i, level) in plan.levels.iter().enumerate() {
        eprintln!(
            "ttfx run: step {} of {}: {} ({:.0} s warm-up, at least {:.0} s measured)",
            i + 1,
            plan.levels.len(),
            level.label(),
            plan.warmup.as_secs_f64(),
            plan.duration.as_secs_f64()
        );
        let started = Instant::now();
        let loads = scenario
            .targets
            .iter()
            .enumerate()
            .map(|(t, target)| {
                BackgroundLoad::start(
                    load_url(target, bench.base.as_deref())?,
                    target,
                    scenario,
                    *level,
                    plan.warmup,
                    // Each target's load has its own schedule, the same at every step.
                    t as u64,
                )
            })
            .collect::<Result<Vec<_>, RunError>>()?;
        tokio::time::sleep(plan.warmup).await;
        let measured_from = Instant::now();
        let measured = bench.measure(scenario, args).await;
        // The load runs its whole duration, whatever the browsers took.
        let rest = plan.duration.saturating_sub(measured_from.elapsed());
        if measured.is_ok() && rest > Duration::ZERO {
            tokio::time::sleep(rest).await;
        }
        let mut figures = Vec::new();
        for load in loads {
            figures.push(load.stop().await?);
        }
        let mut measured = measured?;
        sandbox = measured.sandbox.take();
        steps.push(Step {
            level: *level,
            batches: batches(std::mem::take(&mut measured.runs)),
            loads: figures,
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    Ok((steps, sandbox))
}

/// Where the load goes for a target: its endpoint, absolute (a `sim/` or `proxy/`
/// target's path on the runner's own server).
fn load_url(target: &RunTarget, base: Option<&str>) -> Result<String, RunError> {
    match target {
        RunTarget::Endpoint { url, .. } if ttfx_core::target::is_http(url) => Ok(url.clone()),
        RunTarget::Endpoint { url, .. } => match base {
            Some(base) => Ok(format!("{}{url}", base.trim_end_matches('/'))),
            None => Err(RunError::load(format!(
                "{}: no server of the runner to send the load to",
                target.label()
            ))),
        },
        RunTarget::Page { label, .. } => Err(RunError::load(format!(
            "{label}: a page cannot be loaded (--under-load drives endpoints)"
        ))),
    }
}
